/** The small pieces of the catalog page's views: badges, dates, links, commands to copy. */
import { STABILITY_ORDER } from '../core/listing.js';
import { humanDate } from './format.js';
import { safeUrl } from './html.js';
import { h, type ViewElement } from './view.js';

/** What a view needs to know of the page it is drawn on. */
export interface ViewContext {
  /** The name of a category id (the registry's categories), the id itself when unknown. */
  categoryName(id: string): string;
  /** Now, for "3 days ago"; undefined (the generator, whose page is read later) writes calendar dates. */
  now?: number;
  /** Where registry.json is: relative links of the registry's files resolve against it, commands name it. */
  registryUrl: string;
  /** The page's own URL without its fragment. */
  pageUrl: string;
}

export function badge(label: string, className?: string): ViewElement {
  return h('span', { class: className ? `badge ${className}` : 'badge' }, label);
}

/** A badge for any stability but stable. */
export function stabilityBadge(stability: string): ViewElement | null {
  if (stability === '' || stability === 'stable') return null;
  return badge(stability, (STABILITY_ORDER as readonly string[]).includes(stability) ? `stability-${stability}` : '');
}

/** A date for people, the ISO time as its title ("unknown" when there is none). */
export function timeView(iso: string, now: number | undefined): ViewElement {
  const time = Date.parse(iso);
  if (!iso || Number.isNaN(time)) return h('span', null, 'unknown');
  return h('time', { datetime: iso, title: iso }, humanDate(time, now));
}

/** A link to an http(s) or relative URL (resolved against `base`); null for any other URL. */
export function link(url: unknown, label: string, base: string): ViewElement | null {
  const safe = safeUrl(url);
  if (safe === undefined) return null;
  let href: string;
  try {
    href = new URL(safe, base).href;
  } catch {
    return null;
  }
  return h('a', { href, rel: 'nofollow noopener noreferrer' }, label);
}

/** A command to copy: the page's script copies `data-copy` when its button is pressed. */
export function commandBlock(label: string, command: string): ViewElement {
  return h('div', { class: 'command' }, h('pre', null, h('code', null, command)), h('button', { type: 'button', 'aria-label': `Copy ${label}`, 'data-copy': command }, 'Copy'));
}
