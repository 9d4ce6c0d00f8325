/**
 * The list of templates as the catalog page shows it: one card per template, the count and the
 * "Show more" button. The generator draws the first page of the default list into index.html with
 * these very functions, and the page's script draws every later list with them.
 */
import { formatNumber, plural } from './format.js';
import type { CatalogItem } from './list.js';
import { detailHash } from './list.js';
import { badge, stabilityBadge, timeView, type ViewContext } from './parts.js';
import { h, type ViewChild, type ViewElement } from './view.js';

/** How many cards are added at a time. */
export const PAGE_SIZE = 50;

/** The name of the performance mark the page sets when its first results are on it. */
export const FIRST_RESULTS_MARK = 'catalog-first-results';

function filterButton(kind: 'tag' | 'feature', value: string): ViewElement {
  return h(
    'button',
    { type: 'button', class: kind === 'tag' ? 'tag' : 'tag feature', [`data-${kind}`]: value, title: `Show only templates with the ${kind} ${value}` },
    value,
  );
}

/** What follows a template's name in its title: its version and (unless stable) its stability. */
export function titleBadges(item: CatalogItem): ViewChild[] {
  return [badge(item.version), stabilityBadge(item.stability)];
}

/** The card of one template. */
export function card(item: CatalogItem, context: ViewContext): ViewElement {
  const tags =
    item.tags.length > 0 || item.features.length > 0
      ? h(
          'ul',
          { class: 'tags', 'aria-label': 'Tags and features' },
          item.tags.map((tag) => h('li', null, filterButton('tag', tag))),
          item.features.map((feature) => h('li', null, filterButton('feature', feature))),
        )
      : null;
  const meta = h(
    'p',
    { class: 'muted meta' },
    `${context.categoryName(item.category)} · ${plural(item.downloads, 'download', 'downloads')}`,
    item.updatedAt ? [' · updated ', timeView(item.updatedAt, context.now)] : null,
  );
  return h(
    'li',
    { class: 'card' },
    h('h3', null, h('a', { href: detailHash(item.id) }, item.name), titleBadges(item)),
    h('p', null, item.description),
    tags,
    meta,
  );
}

/** The cards of `matches` from `from` to `to` (exclusive). */
export function cards(matches: readonly CatalogItem[], from: number, to: number, context: ViewContext): ViewElement[] {
  const out: ViewElement[] = [];
  for (let k = from; k < Math.min(to, matches.length); k++) out.push(card(matches[k] as CatalogItem, context));
  return out;
}

/** "12 templates", or "3 of 12 templates" for a narrowed list. */
export function countText(matches: number, total: number): string {
  return matches === total ? plural(total, 'template', 'templates') : `${formatNumber(matches)} of ${plural(total, 'template', 'templates')}`;
}

/** The "Show more" button's text when `left` cards are not shown. */
export function moreText(left: number): string {
  return `Show ${Math.min(left, PAGE_SIZE)} more (${formatNumber(left)} not shown)`;
}
