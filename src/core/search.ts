/**
 * The spec's list filters and search rule on template entries. The registry client, the server's
 * `GET /templates` and the catalog page (which embeds `searchTerms` and `matchesTerms` in its
 * script, see registry/catalog.ts) all match through these functions.
 */
import type { TemplateEntry } from './schema-types.js';

/** The fields the spec's search text is made of, in order. */
export const SEARCH_FIELDS = ['name', 'description', 'tags', 'features', 'category'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/**
 * The spec's search text of an entry: name, description, tags, features and category (or the
 * given subset of them), lower-cased and joined by spaces. A term never holds a space, so it
 * cannot match across two fields.
 */
export function searchText(entry: Pick<TemplateEntry, SearchField>, fields: readonly SearchField[] = SEARCH_FIELDS): string {
  const parts: string[] = [];
  for (const field of fields) {
    const value = entry[field];
    if (Array.isArray(value)) parts.push(...value.map(String));
    else if (typeof value === 'string') parts.push(value);
  }
  return parts.join(' ').toLowerCase();
}

// The two functions below run in the catalog page too (their source is embedded in its script):
// plain JavaScript once types are stripped, no string literals, no helpers from outside.

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
export function matchesSearch(entry: Pick<TemplateEntry, SearchField>, terms: readonly string[], fields: readonly SearchField[] = SEARCH_FIELDS): boolean {
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

/** True when the entry passes every filter given. */
export function matchesFilters(entry: Pick<TemplateEntry, 'category' | 'stability' | 'tags' | 'features' | 'author'>, filters: TemplateFilters): boolean {
  if (filters.category !== undefined && !oneOf(entry.category, filters.category)) return false;
  if (filters.stability !== undefined && !oneOf(entry.stability, filters.stability)) return false;
  if (filters.tags && !filters.tags.every((tag) => entry.tags?.includes(tag))) return false;
  if (filters.features && !filters.features.every((feature) => entry.features?.includes(feature))) return false;
  if (filters.author !== undefined && entry.author?.name !== filters.author) return false;
  return true;
}
