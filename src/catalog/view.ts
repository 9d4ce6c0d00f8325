/**
 * What the catalog page shows, as a small tree of elements and text: the generator writes it as
 * HTML (`toHtml`, the first page of results in index.html) and the page's script makes the same
 * tree into DOM nodes (browser/dom.ts), so the page drawn by either is the same.
 *
 * Tag and attribute names come from this code only; every string from a template's files is a text
 * child or an attribute value, escaped by `toHtml` and set through textContent / setAttribute by
 * the script, never parsed as HTML.
 */
import { escapeHtml } from './html.js';

export interface ViewElement {
  readonly tag: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: readonly View[];
}

/** An element, or text. */
export type View = ViewElement | string;

/** What `h` takes as a child: absent ones (null, undefined, false, '') are left out; arrays are spread. */
export type ViewChild = View | null | undefined | false | readonly ViewChild[];

/** What `h` takes as attributes: absent ones (undefined, null, false) are left out; true is an empty value. */
export type ViewAttrs = Readonly<Record<string, string | number | boolean | null | undefined>>;

function flatten(children: readonly ViewChild[], into: View[]): View[] {
  for (const child of children) {
    if (child === null || child === undefined || child === false || child === '') continue;
    if (typeof child === 'string' || !Array.isArray(child)) into.push(child as View);
    else flatten(child as readonly ViewChild[], into);
  }
  return into;
}

/** An element with `attrs` and `children`. */
export function h(tag: string, attrs: ViewAttrs | null = null, ...children: ViewChild[]): ViewElement {
  const kept: Record<string, string> = {};
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      kept[name] = value === true ? '' : String(value);
    }
  }
  return { tag, attrs: kept, children: flatten(children, []) };
}

/** Elements that have no end tag. */
const VOID = new Set(['br', 'hr', 'input', 'meta', 'img', 'wbr']);

/** The HTML of a view: text and attribute values escaped. */
export function toHtml(view: View | readonly View[]): string {
  if (Array.isArray(view)) return (view as readonly View[]).map((item) => toHtml(item)).join('');
  if (typeof view === 'string') return escapeHtml(view);
  const element = view as ViewElement;
  const attrs = Object.entries(element.attrs)
    .map(([name, value]) => (value === '' ? ` ${name}` : ` ${name}="${escapeHtml(value)}"`))
    .join('');
  if (VOID.has(element.tag)) return `<${element.tag}${attrs}>`;
  return `<${element.tag}${attrs}>${element.children.map((child) => toHtml(child)).join('')}</${element.tag}>`;
}
