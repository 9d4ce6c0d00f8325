/**
 * The spec's list filters and search rule on template entries, and the token index that answers
 * the rule fast. The registry client, the server's `GET /templates` and the catalog page (whose
 * script is bundled from these very functions) all match through this module.
 */
import type { TemplateEntry } from './schema-types.js';

/** The fields the spec's search text is made of, in order. */
export const SEARCH_FIELDS = ['name', 'description', 'tags', 'features', 'category'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/** What the search rule reads of an entry. */
export type SearchableEntry = Pick<TemplateEntry, SearchField>;

/**
 * The spec's search text of an entry: name, description, tags, features and category (or the
 * given subset of them), lower-cased and joined by spaces. A term never holds a space, so it
 * cannot match across two fields.
 */
export function searchText(entry: SearchableEntry, fields: readonly SearchField[] = SEARCH_FIELDS): string {
  const parts: string[] = [];
  for (const field of fields) {
    const value = entry[field];
    if (Array.isArray(value)) parts.push(...value.map(String));
    else if (typeof value === 'string') parts.push(value);
  }
  return parts.join(' ').toLowerCase();
}

/** The spec's query terms: lower-cased, split on spaces; empty and repeated terms dropped. */
export function searchTerms(query: string): string[] {
  const terms: string[] = [];
  for (const term of query.toLowerCase().split(/ /)) {
    if (term.length > 0 && terms.indexOf(term) === -1) terms.push(term);
  }
  return terms;
}

/** The spec's match: every term occurs in the (lower-cased) search text. No terms match everything. */
export function matchesTerms(text: string, terms: readonly string[]): boolean {
  for (const term of terms) {
    if (text.indexOf(term) === -1) return false;
  }
  return true;
}

/** The spec's search rule on one entry (optionally over a subset of the fields). */
export function matchesSearch(entry: SearchableEntry, terms: readonly string[], fields: readonly SearchField[] = SEARCH_FIELDS): boolean {
  return matchesTerms(searchText(entry, fields), terms);
}

/**
 * The spec's list filters: `category` and `stability` exact (a list: any of them), `tags` and
 * `features` all present, `author` the exact author name.
 */
export interface TemplateFilters {
  category?: string | readonly string[];
  stability?: string | readonly string[];
  tags?: readonly string[];
  features?: readonly string[];
  author?: string;
}

function oneOf(value: string | undefined, wanted: string | readonly string[]): boolean {
  return typeof wanted === 'string' ? value === wanted : value !== undefined && wanted.includes(value);
}

/** What the list filters read of an entry. */
export interface FilterableEntry {
  category?: string;
  stability?: string;
  tags?: readonly string[];
  features?: readonly string[];
  author?: { name?: string };
}

/** True when the entry passes every filter given. */
export function matchesFilters(entry: FilterableEntry, filters: TemplateFilters): boolean {
  if (filters.category !== undefined && !oneOf(entry.category, filters.category)) return false;
  if (filters.stability !== undefined && !oneOf(entry.stability, filters.stability)) return false;
  if (filters.tags && !filters.tags.every((tag) => entry.tags?.includes(tag))) return false;
  if (filters.features && !filters.features.every((feature) => entry.features?.includes(feature))) return false;
  if (filters.author !== undefined && entry.author?.name !== filters.author) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// The token index
// ---------------------------------------------------------------------------------------------

/*
 * A token index answers the spec's search rule without reading every entry's search text.
 *
 * Why it gives exactly the rule's answer: the search text is the entry's values (name,
 * description, tags, features, category) joined by spaces and lower-cased, and a query term never
 * holds a space (the query is split on spaces). So a term occurs in the search text exactly when
 * it occurs inside one of its space-free pieces, the tokens. Lower-casing each value on its own
 * gives the same tokens as lower-casing the joined text: the only context-dependent mapping of
 * `toLowerCase` (final sigma) looks at neighbouring letters, and a space ends that context.
 *
 * The index keeps every distinct token once, in one string (the vocabulary, small next to the
 * texts: words repeat), and for each token the positions of the entries holding it. A term is
 * looked for with `indexOf` in the vocabulary; the entries of the tokens it hits are the entries
 * whose text contains it. Several terms: the entries every term reaches.
 */
/** Ends each token in the vocabulary. A term holding it is not answered here (`searchIndexed` returns undefined). */
const TOKEN_SEPARATOR = '\u0000';

export interface SearchIndex {
  /** Number of entries indexed (positions run from 0 to size - 1). */
  readonly size: number;
  /** Every distinct token, each followed by TOKEN_SEPARATOR. */
  readonly vocabulary: string;
  /** `tokenStarts[t]`: where token t begins in `vocabulary`; one more element, the vocabulary's length. */
  readonly tokenStarts: Int32Array;
  /** `postings[postingStarts[t] .. postingStarts[t + 1]]`: positions of the entries holding token t, each once. */
  readonly postingStarts: Int32Array;
  readonly postings: Int32Array;
  /** Scratch of `searchIndexed`: two sets of positions, one bit per position. */
  readonly reached: Int32Array;
  readonly reachedByTerm: Int32Array;
}

/**
 * Pass 1 of the build: gives every distinct token an id, and lists the distinct tokens of each
 * entry one entry after the other. Tokens are found in place (a hash of their characters, then a
 * comparison with the token of the same hash), so that the million words of 100,000 descriptions
 * are not each copied into a string of their own; typed arrays, as a plain array of numbers
 * costs far more memory and garbage collection.
 */
class TokenCollector {
  readonly tokens: string[] = [];
  /** Open addressing: token id + 1 at the slot of its hash (or a later one), 0 for an empty slot. */
  #slots = new Int32Array(4096);
  #hashes = new Int32Array(1024);
  /** How many entries hold each token. */
  counts = new Int32Array(1024);
  /** The last entry each token was added for: a token twice in one entry counts once. */
  #lastEntry = new Int32Array(1024).fill(-1);
  /** The token ids of every entry, one entry after the other. */
  entryTokens: Int32Array;
  length = 0;

  constructor(entries: number) {
    this.entryTokens = new Int32Array(Math.max(1024, entries * 8));
  }

  /** Adds the tokens of one lower-cased value of entry `position` (entries are added in order). */
  addText(text: string, position: number): void {
    const length = text.length;
    let start = 0;
    while (start < length) {
      // FNV-1a over the UTF-16 code units of the token.
      let hash = -2128831035;
      let end = start;
      for (; end < length; end++) {
        const code = text.charCodeAt(end);
        if (code === SPACE) break;
        hash = Math.imul(hash ^ code, 16777619);
      }
      if (end > start) this.#add(this.#idOf(text, start, end, hash), position);
      start = end + 1;
    }
  }

  #idOf(text: string, start: number, end: number, hash: number): number {
    const mask = this.#slots.length - 1;
    let slot = hash & mask;
    for (let held = this.#slots[slot] as number; held !== 0; held = this.#slots[slot] as number) {
      const id = held - 1;
      const token = this.tokens[id] as string;
      if (this.#hashes[id] === hash && token.length === end - start && text.startsWith(token, start)) return id;
      slot = (slot + 1) & mask;
    }
    const id = this.tokens.length;
    if (id === this.#hashes.length) this.#grow();
    this.tokens.push(end - start === text.length ? text : text.slice(start, end));
    this.#hashes[id] = hash;
    this.#slots[slot] = id + 1;
    if (this.tokens.length * 2 > this.#slots.length) this.#rehash();
    return id;
  }

  #add(id: number, position: number): void {
    if (this.#lastEntry[id] === position) return;
    this.#lastEntry[id] = position;
    this.counts[id] = (this.counts[id] as number) + 1;
    if (this.length === this.entryTokens.length) this.entryTokens = grown(this.entryTokens, this.length * 2, 0);
    this.entryTokens[this.length++] = id;
  }

  #grow(): void {
    const size = this.#hashes.length * 2;
    this.#hashes = grown(this.#hashes, size, 0);
    this.counts = grown(this.counts, size, 0);
    this.#lastEntry = grown(this.#lastEntry, size, -1);
  }

  #rehash(): void {
    const slots = new Int32Array(this.#slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 0; id < this.tokens.length; id++) {
      let slot = (this.#hashes[id] as number) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id + 1;
    }
    this.#slots = slots;
  }
}

const SPACE = 0x20;

/** A copy of `values` of `size` elements, the new ones set to `fill`. */
function grown(values: Int32Array, size: number, fill: number): Int32Array<ArrayBuffer> {
  const copy = new Int32Array(size);
  if (fill !== 0) copy.fill(fill, values.length);
  copy.set(values);
  return copy;
}

/**
 * Builds the index of `entries`. `positionOf[i]` is the position entry i is filed under (for
 * example its place in the listing order, so that answers come out in that order); by default i.
 * Entries are read in their own order, the order they lie in memory after JSON.parse.
 */
export function buildSearchIndex(entries: readonly SearchableEntry[], positionOf?: Int32Array): SearchIndex {
  const collector = new TokenCollector(entries.length);
  const entryStarts = new Int32Array(entries.length + 1);
  for (let position = 0; position < entries.length; position++) {
    entryStarts[position] = collector.length;
    const entry = entries[position] as SearchableEntry;
    // The values `searchText` (core/search.ts) joins, taken the same way, each lower-cased on its own.
    for (const field of SEARCH_FIELDS) {
      const value = entry[field];
      if (Array.isArray(value)) for (const item of value) collector.addText(String(item).toLowerCase(), position);
      else if (typeof value === 'string') collector.addText(value.toLowerCase(), position);
    }
  }
  entryStarts[entries.length] = collector.length;
  const { tokens, counts } = collector;

  // Pass 2: the postings, token by token.
  const postingStarts = new Int32Array(tokens.length + 1);
  for (let id = 0; id < tokens.length; id++) postingStarts[id + 1] = (postingStarts[id] as number) + (counts[id] as number);
  const fill = postingStarts.slice(0, tokens.length);
  const postings = new Int32Array(collector.length);
  const flat = collector.entryTokens;
  for (let position = 0; position < entries.length; position++) {
    const end = entryStarts[position + 1] as number;
    for (let k = entryStarts[position] as number; k < end; k++) {
      const id = flat[k] as number;
      postings[fill[id] as number] = positionOf === undefined ? position : (positionOf[position] as number);
      fill[id] = (fill[id] as number) + 1;
    }
  }

  const tokenStarts = new Int32Array(tokens.length + 1);
  let offset = 0;
  for (let id = 0; id < tokens.length; id++) {
    tokenStarts[id] = offset;
    offset += (tokens[id] as string).length + 1;
  }
  tokenStarts[tokens.length] = offset;
  const vocabulary = tokens.length === 0 ? '' : `${tokens.join(TOKEN_SEPARATOR)}${TOKEN_SEPARATOR}`;
  const size = entries.length;
  const words = (size + 31) >>> 5;
  return { size, vocabulary, tokenStarts, postingStarts, postings, reached: new Int32Array(words), reachedByTerm: new Int32Array(words) };
}

/** The token whose text holds vocabulary offset `at` (binary search over `tokenStarts`). */
function tokenAt(tokenStarts: Int32Array, at: number): number {
  let low = 0;
  let high = tokenStarts.length - 2;
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if ((tokenStarts[mid] as number) <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** The tokens containing `term`, ascending. */
function tokensContaining(index: SearchIndex, term: string): number[] {
  const { vocabulary, tokenStarts } = index;
  const found: number[] = [];
  let at = vocabulary.indexOf(term);
  while (at !== -1) {
    const token = tokenAt(tokenStarts, at);
    found.push(token);
    at = vocabulary.indexOf(term, tokenStarts[token + 1]);
  }
  return found;
}

/** How many postings the entries of `tokens` take to walk. */
function postingCount(index: SearchIndex, tokens: readonly number[]): number {
  let count = 0;
  for (const token of tokens) count += (index.postingStarts[token + 1] as number) - (index.postingStarts[token] as number);
  return count;
}

/** Sets the bit of every position the postings of `tokens` hold. */
function markPostings(index: SearchIndex, tokens: readonly number[], bits: Int32Array): void {
  const { postingStarts, postings } = index;
  bits.fill(0);
  for (const token of tokens) {
    const end = postingStarts[token + 1] as number;
    for (let at = postingStarts[token] as number; at < end; at++) {
      const position = postings[at] as number;
      bits[position >>> 5] = (bits[position >>> 5] as number) | (1 << (position & 31));
    }
  }
}

/** Number of bits set in a 32-bit word. */
function bitCount(word: number): number {
  let value = word - ((word >>> 1) & 0x55555555);
  value = (value & 0x33333333) + ((value >>> 2) & 0x33333333);
  return Math.imul((value + (value >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/**
 * The entries whose search text contains every term (terms as `searchTerms` gives them:
 * lower-cased, non-empty, no space), in ascending position: `byPosition[p]` is the entry filed
 * under position p. Undefined when a term holds TOKEN_SEPARATOR: the caller then applies the rule
 * itself. No terms: every entry.
 *
 * Each term's entries are a set of one bit per position (100,000 entries: 12.5 kB, which stays in
 * the processor's cache); the sets are intersected a word at a time.
 */
export function searchIndexed<T>(index: SearchIndex, terms: readonly string[], byPosition: readonly T[]): T[] | undefined {
  if (terms.some((term) => term.includes(TOKEN_SEPARATOR))) return undefined;
  if (terms.length === 0) return [...byPosition];
  const perTerm: number[][] = [];
  for (const term of terms) {
    const tokens = tokensContaining(index, term);
    if (tokens.length === 0) return [];
    perTerm.push(tokens);
  }
  // The term with the fewest postings first: once the intersection is empty, the rest is skipped.
  perTerm.sort((a, b) => postingCount(index, a) - postingCount(index, b));
  const { reached, reachedByTerm } = index;
  markPostings(index, perTerm[0] as number[], reached);
  for (let k = 1; k < perTerm.length; k++) {
    markPostings(index, perTerm[k] as number[], reachedByTerm);
    let any = 0;
    for (let w = 0; w < reached.length; w++) {
      const both = (reached[w] as number) & (reachedByTerm[w] as number);
      reached[w] = both;
      any |= both;
    }
    if (any === 0) return [];
  }
  let count = 0;
  for (let w = 0; w < reached.length; w++) count += bitCount(reached[w] as number);

  const result = new Array<T>(count);
  let next = 0;
  for (let w = 0; w < reached.length; w++) {
    let word = reached[w] as number;
    while (word !== 0) {
      const low = word & -word;
      result[next++] = byPosition[(w << 5) + 31 - Math.clz32(low)] as T;
      word ^= low;
    }
  }
  return result;
}

/**
 * The entries of `listed` whose search text contains every term, in `listed`'s order, where
 * `listed[p]` is the entry `index` filed under position p: from the index, or by the rule itself
 * for a term the index cannot answer.
 */
export function findEntries<T extends SearchableEntry>(index: SearchIndex, terms: readonly string[], listed: readonly T[]): T[] {
  return searchIndexed(index, terms, listed) ?? listed.filter((entry) => matchesSearch(entry, terms));
}
