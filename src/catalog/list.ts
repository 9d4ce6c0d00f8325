/**
 * The catalog's list: the templates of index.json, the view a reader asked for (search, filters,
 * sort: the URL fragment) and the templates that view shows. Orders and matches through core
 * alone: the spec's listing order (core/listing.ts) is the default order and breaks every tie, and
 * the search rule and list filters are core/search.ts's, answered by its token index, so the page
 * finds what `template-registry search` and `GET /templates?q=` find.
 */
import { compareText, listingOrder, STABILITY_ORDER } from '../core/listing.js';
import { buildSearchIndex, findEntries, matchesFilters, searchTerms, type SearchIndex, type TemplateFilters } from '../core/search.js';

/** One template of the list: a line of index.json, only the expected types kept. */
export interface CatalogItem {
  id: string;
  /** index.json has no names: the id. */
  name: string;
  version: string;
  stability: string;
  category: string;
  description: string;
  tags: string[];
  features: string[];
  /** Downloads of all its versions. */
  downloads: number;
  /** What the listing order reads: `downloads`. */
  stats: { downloads: number };
  updatedAt: string;
  /** `updatedAt` as a time; 0 when there is none. */
  time: number;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const texts = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
const amount = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The item of one line of index.json (strangers' data: only the expected types are kept); null without an id. */
export function readItem(raw: unknown): CatalogItem | null {
  if (!isObject(raw) || text(raw.id) === '') return null;
  const id = raw.id as string;
  const downloads = amount(raw.downloads);
  const updatedAt = text(raw.updatedAt);
  return {
    id,
    name: text(raw.name) || id,
    version: text(raw.version),
    stability: text(raw.stability),
    category: text(raw.category),
    description: text(raw.description),
    tags: texts(raw.tags),
    features: texts(raw.features),
    downloads,
    stats: { downloads },
    updatedAt,
    time: Date.parse(updatedAt) || 0,
  };
}

/** The sorts a reader may pick; `popular` is the spec's listing order. */
export const SORTS = ['popular', 'name', 'updated', 'downloads'] as const;
export type SortName = (typeof SORTS)[number];

/** What the list shows: the URL fragment of the page. */
export interface ListState {
  q: string;
  category: string;
  stability: string;
  tags: string[];
  features: string[];
  sort: SortName;
}

export function defaultState(): ListState {
  return { q: '', category: '', stability: '', tags: [], features: [], sort: 'popular' };
}

const unique = (values: readonly string[]): string[] => values.filter((value, i) => value !== '' && values.indexOf(value) === i);
const isSort = (value: string | null): value is SortName => (SORTS as readonly (string | null)[]).includes(value);

/** The state of a URL fragment (without its `#`); anything unknown is left out. */
export function parseState(fragment: string): ListState {
  const params = new URLSearchParams(fragment);
  const sort = params.get('sort');
  return {
    q: params.get('q') ?? '',
    category: params.get('category') ?? '',
    stability: params.get('stability') ?? '',
    tags: unique(params.getAll('tag')),
    features: unique(params.getAll('feature')),
    sort: isSort(sort) ? sort : 'popular',
  };
}

/** The URL fragment of a state (`#q=node&tag=rest`); '' for the default list. */
export function stateHash(state: ListState): string {
  const params = new URLSearchParams();
  if (state.q) params.append('q', state.q);
  if (state.category) params.append('category', state.category);
  if (state.stability) params.append('stability', state.stability);
  for (const tag of state.tags) params.append('tag', tag);
  for (const feature of state.features) params.append('feature', feature);
  if (state.sort !== 'popular') params.append('sort', state.sort);
  const encoded = params.toString();
  return encoded ? `#${encoded}` : '';
}

/** True when the state narrows the list. */
export function isFiltered(state: ListState): boolean {
  return state.q !== '' || state.category !== '' || state.stability !== '' || state.tags.length > 0 || state.features.length > 0;
}

/** The URL fragment of a template's page. */
export function detailHash(id: string): string {
  return `#t-${encodeURIComponent(id)}`;
}

/** The template id of a page's URL fragment; null for a list fragment. */
export function detailIdOf(hash: string): string | null {
  if (!hash.startsWith('#t-')) return null;
  try {
    return decodeURIComponent(hash.slice(3));
  } catch {
    return hash.slice(3);
  }
}

/** The reader's sorts other than `popular`: a key, ties in listing order. */
const SORT_KEYS: Record<Exclude<SortName, 'popular'>, (a: CatalogItem, b: CatalogItem) => number> = {
  name: (a, b) => compareText(a.name, b.name),
  updated: (a, b) => b.time - a.time,
  downloads: (a, b) => b.downloads - a.downloads,
};

/** The spec's list filters of a state. */
function filtersOf(state: ListState): TemplateFilters {
  return {
    ...(state.category === '' ? {} : { category: state.category }),
    ...(state.stability === '' ? {} : { stability: state.stability }),
    ...(state.tags.length === 0 ? {} : { tags: state.tags }),
    ...(state.features.length === 0 ? {} : { features: state.features }),
  };
}

/** The templates of the catalog, in listing order, and what each view of them shows. */
export class CatalogList {
  /** Every item, in the spec's listing order; an id appears once (its first line). */
  readonly items: readonly CatalogItem[];
  readonly byId: ReadonlyMap<string, CatalogItem>;
  readonly #orders = new Map<SortName, readonly CatalogItem[]>();
  /** Where each item is in `items`. */
  readonly #position = new Map<CatalogItem, number>();
  #index: SearchIndex | undefined;

  constructor(items: readonly CatalogItem[]) {
    const byId = new Map<string, CatalogItem>();
    for (const item of items) if (!byId.has(item.id)) byId.set(item.id, item);
    const kept = [...byId.values()];
    this.items = Array.from(listingOrder(kept).order, (position) => kept[position] as CatalogItem);
    this.items.forEach((item, position) => this.#position.set(item, position));
    this.byId = byId;
    this.#orders.set('popular', this.items);
  }

  /** Every item in the order of `sort` (made once per sort). */
  ordered(sort: SortName): readonly CatalogItem[] {
    let order = this.#orders.get(sort);
    if (order === undefined) {
      const compare = SORT_KEYS[sort as Exclude<SortName, 'popular'>];
      // Array.prototype.sort is stable: ties keep the listing order.
      this.#orders.set(sort, (order = [...this.items].sort(compare)));
    }
    return order;
  }

  /** Builds the search's token index now (the page does it once its first results are shown). */
  prepareSearch(): void {
    this.#index ??= buildSearchIndex(this.items);
  }

  /** The items `state` shows, in its order. */
  find(state: ListState): CatalogItem[] {
    const terms = searchTerms(state.q);
    const filters = filtersOf(state);
    const filtered = Object.keys(filters).length > 0;
    if (terms.length === 0) {
      const all = this.ordered(state.sort);
      return filtered ? all.filter((item) => matchesFilters(item, filters)) : [...all];
    }
    this.prepareSearch();
    const found = findEntries(this.#index as SearchIndex, terms, this.items);
    const matching = filtered ? found.filter((item) => matchesFilters(item, filters)) : found;
    if (state.sort === 'popular' || matching.length < 2) return matching;
    // Few matches: sorted themselves; many: read off the sort's whole order.
    if (matching.length * 8 < this.items.length) return matching.sort(this.#compare(state.sort));
    const wanted = new Uint8Array(this.items.length);
    for (const item of matching) wanted[this.#position.get(item) as number] = 1;
    return this.ordered(state.sort).filter((item) => wanted[this.#position.get(item) as number] === 1);
  }

  /** The comparison of a sort, ties in listing order. */
  #compare(sort: Exclude<SortName, 'popular'>): (a: CatalogItem, b: CatalogItem) => number {
    const key = SORT_KEYS[sort];
    return (a, b) => key(a, b) || (this.#position.get(a) as number) - (this.#position.get(b) as number);
  }
}

/** The stability values in the filter's order: the spec's, then any other, by name. */
export function stabilityOptions(present: Iterable<string>): string[] {
  const known: readonly string[] = STABILITY_ORDER;
  const others = [...present].filter((value) => !known.includes(value)).sort(compareText);
  return [...known, ...others];
}
