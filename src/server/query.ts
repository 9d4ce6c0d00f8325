/**
 * The list query of `GET /templates`, as pure functions: `parseListQuery` turns the raw query
 * string values into a checked `ListQuery` (or field-level errors), `runListQuery` applies it to
 * the entries of a registry document. No HTTP in here, so all of it is unit-tested directly.
 *
 * Conventions (the spec's "Query conventions for list routes" and reader rules):
 * - one entry per template id, chosen by the spec's selection rule (`selectLatest`);
 * - filters `category`, `stability` (comma list = any of), `tags`, `features` (comma list = all of),
 *   `author` (exact name), `q` / `search` (every lower-cased term in name, description, tags,
 *   features and category; `searchFields` narrows the fields), `stats.downloads[gte|lte]` (also
 *   `downloads[gte|lte]`), `createdAfter` (inclusive) / `createdBefore` (exclusive);
 * - `sort`: comma list of `name`, `version`, `downloads`, `createdAt`, `updatedAt`, `stability`,
 *   `-` prefix for descending, or `sort=<field>&order=asc|desc`; ties (and no `sort`) fall back to
 *   the spec's listing order;
 * - `page` / `limit` offset pagination, or `cursor` (opaque, tied to the query it came from);
 * - `fields`: sparse fieldsets over top-level entry fields, `id` always kept.
 */
import { createHash } from 'node:crypto';

import templateEntrySchema from '../../schemas/template-entry.schema.json' with { type: 'json' };
import { canonicalJson } from '../core/canonical-json.js';
import { compareText, latestEntries, sortEntries, STABILITY_ORDER, stabilityRank, type Stability } from '../core/listing.js';
import type { CursorPagination, OffsetPagination, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { matchesFilters, matchesSearch, SEARCH_FIELDS, searchTerms, type SearchField } from '../core/search.js';
import type { ErrorDetail } from '../core/validation.js';
import { compareVersions } from '../core/versions.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;


export const SORT_FIELDS = ['name', 'version', 'downloads', 'createdAt', 'updatedAt', 'stability'] as const;
export type SortField = (typeof SORT_FIELDS)[number];


/** Top-level fields of a template entry `fields` may name. */
export const ENTRY_FIELDS: readonly string[] = Object.keys(templateEntrySchema.properties);

/** Query parameters `GET /templates` understands (others are ignored). */
export const LIST_PARAMETERS = [
  'page',
  'limit',
  'cursor',
  'sort',
  'order',
  'fields',
  'q',
  'search',
  'searchFields',
  'category',
  'stability',
  'tags',
  'features',
  'author',
  'stats.downloads[gte]',
  'stats.downloads[lte]',
  'downloads[gte]',
  'downloads[lte]',
  'createdAfter',
  'createdBefore',
] as const;

export interface SortKey {
  field: SortField;
  descending: boolean;
}

export interface ListFilters {
  /** Any of. */
  category?: string[];
  /** Any of. */
  stability?: Stability[];
  /** All of. */
  tags?: string[];
  /** All of. */
  features?: string[];
  /** Exact author name. */
  author?: string;
  /** Lower-cased search terms; every one must occur. */
  terms?: string[];
  /** Fields the terms are looked for in (default all of SEARCH_FIELDS). */
  searchFields?: SearchField[];
  downloadsGte?: number;
  downloadsLte?: number;
  /** ISO timestamps (normalized); createdAt >= createdAfter. */
  createdAfter?: string;
  /** createdAt < createdBefore. */
  createdBefore?: string;
}

export type Paging = { mode: 'offset'; page: number; limit: number } | { mode: 'cursor'; offset: number; limit: number };

export interface ListQuery {
  filters: ListFilters;
  /** Empty: the spec's listing order. */
  sort: SortKey[];
  /** `order=desc` without `sort`: the listing order reversed. */
  reverseDefault: boolean;
  paging: Paging;
  /** Top-level fields to keep (with `id`); undefined keeps whole entries. */
  fields?: string[];
  /** Hash of what decides the result's order and membership; cursors carry it. */
  fingerprint: string;
}

export type { CursorPagination, OffsetPagination };

export interface ListResult {
  data: Partial<TemplateEntry>[];
  pagination: OffsetPagination | CursorPagination;
}

export type ParseResult = { ok: true; query: ListQuery } | { ok: false; details: ErrorDetail[] };

/** Raw query values as a querystring parser gives them (numbers when a schema coerced them). */
export type RawQuery = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

class Problems {
  readonly details: ErrorDetail[] = [];

  add(field: string, message: string, code: string): undefined {
    this.details.push({ field, message, code });
    return undefined;
  }
}

/** One value: a repeated parameter is an error. Empty strings count as given. */
function single(raw: RawQuery, name: string, problems: Problems): string | undefined {
  const value = raw[name];
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return problems.add(name, 'must be given once', 'DUPLICATE');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') return problems.add(name, 'must be a string', 'TYPE');
  return value;
}

/** A comma list; a repeated parameter adds its values. Empty items are dropped. */
function list(raw: RawQuery, name: string, problems: Problems): string[] | undefined {
  const value = raw[name];
  if (value === undefined || value === null) return undefined;
  const parts = (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined));
  if (parts.some((p) => p === undefined)) return problems.add(name, 'must be a string', 'TYPE');
  const items = (parts as string[])
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (items.length === 0) return problems.add(name, 'must name at least one value', 'MIN_LENGTH');
  return [...new Set(items)];
}

function integer(raw: RawQuery, name: string, min: number, max: number | undefined, problems: Problems): number | undefined {
  const text = single(raw, name, problems);
  if (text === undefined) return undefined;
  if (!/^\s*-?\d+\s*$/.test(text)) return problems.add(name, 'must be an integer', 'TYPE');
  const value = Number(text);
  if (value < min) return problems.add(name, `must be >= ${min}`, 'MINIMUM');
  if (max !== undefined && value > max) return problems.add(name, `must be <= ${max}`, 'MAXIMUM');
  return value;
}

function nonNegative(raw: RawQuery, name: string, problems: Problems): number | undefined {
  const text = single(raw, name, problems);
  if (text === undefined) return undefined;
  if (!/^\s*\d+(\.\d+)?\s*$/.test(text)) return problems.add(name, 'must be a non-negative number', 'TYPE');
  return Number(text);
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

function isoDate(raw: RawQuery, name: string, problems: Problems): string | undefined {
  const text = single(raw, name, problems);
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  // A date alone is midnight UTC; a date-time without an offset is read as UTC too.
  const withZone = /^\d{4}-\d{2}-\d{2}$/.test(trimmed)
    ? `${trimmed}T00:00:00Z`
    : /(?:Z|[+-]\d{2}:?\d{2})$/i.test(trimmed)
      ? trimmed
      : `${trimmed}Z`;
  const time = ISO_DATE.test(trimmed) ? Date.parse(withZone.replace(' ', 'T')) : Number.NaN;
  if (Number.isNaN(time)) return problems.add(name, 'must be an ISO 8601 date or date-time (e.g. 2024-05-01 or 2024-05-01T12:00:00Z)', 'FORMAT');
  return new Date(time).toISOString();
}

function parseSort(raw: RawQuery, problems: Problems): { sort: SortKey[]; reverseDefault: boolean } {
  const order = single(raw, 'order', problems);
  let orderDescending = false;
  if (order !== undefined) {
    const normalized = order.trim().toLowerCase();
    if (normalized !== 'asc' && normalized !== 'desc') problems.add('order', 'must be asc or desc', 'ENUM');
    orderDescending = normalized === 'desc';
  }
  const keys = list(raw, 'sort', problems);
  if (!keys) return { sort: [], reverseDefault: raw.sort === undefined && orderDescending };
  const sort: SortKey[] = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const prefixed = key.startsWith('-') || key.startsWith('+');
    const name = prefixed ? key.slice(1) : key;
    const field = name === 'stats.downloads' ? 'downloads' : name;
    if (!(SORT_FIELDS as readonly string[]).includes(field)) {
      problems.add('sort', `unknown sort field ${JSON.stringify(name)}; one of ${SORT_FIELDS.join(', ')}`, 'ENUM');
      continue;
    }
    if (seen.has(field)) {
      problems.add('sort', `sort field ${field} is given twice`, 'DUPLICATE');
      continue;
    }
    seen.add(field);
    sort.push({ field: field as SortField, descending: key.startsWith('-') || (!prefixed && orderDescending) });
  }
  return { sort, reverseDefault: false };
}

function fingerprintOf(filters: ListFilters, sort: SortKey[], reverseDefault: boolean): string {
  return createHash('sha256').update(canonicalJson({ filters, sort, reverseDefault })).digest('base64url').slice(0, 16);
}

/** An opaque cursor: base64url of the offset and the fingerprint of the query. */
export function encodeCursor(offset: number, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ v: 1, o: offset, q: fingerprint }), 'utf8').toString('base64url');
}

/** The offset of a cursor, or why it is refused. */
export function decodeCursor(cursor: string, fingerprint: string): { offset: number } | { error: string } {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return { error: 'is not a cursor this server issued' };
  }
  const record = parsed as { v?: unknown; o?: unknown; q?: unknown } | null;
  if (!record || typeof record !== 'object' || record.v !== 1 || !Number.isSafeInteger(record.o) || (record.o as number) < 0 || typeof record.q !== 'string') {
    return { error: 'is not a cursor this server issued' };
  }
  if (record.q !== fingerprint) return { error: 'belongs to a different query (filters, search or sort changed); start again without a cursor' };
  return { offset: record.o as number };
}

/** Checks and normalizes the query string of `GET /templates`. */
export function parseListQuery(raw: RawQuery): ParseResult {
  const problems = new Problems();
  const filters: ListFilters = {};

  const category = list(raw, 'category', problems);
  if (category) filters.category = category;

  const stability = list(raw, 'stability', problems);
  if (stability) {
    const unknown = stability.filter((s) => !(STABILITY_ORDER as readonly string[]).includes(s));
    if (unknown.length > 0) problems.add('stability', `unknown stability ${unknown.map((s) => JSON.stringify(s)).join(', ')}; one of ${STABILITY_ORDER.join(', ')}`, 'ENUM');
    else filters.stability = stability as Stability[];
  }

  const tags = list(raw, 'tags', problems);
  if (tags) filters.tags = tags;
  const features = list(raw, 'features', problems);
  if (features) filters.features = features;

  const author = single(raw, 'author', problems);
  if (author !== undefined) {
    if (author.trim() === '') problems.add('author', 'must not be empty', 'MIN_LENGTH');
    else filters.author = author;
  }

  const q = single(raw, 'q', problems);
  const search = single(raw, 'search', problems);
  const terms = searchTerms([q, search].filter((t): t is string => t !== undefined).join(' '));
  if (terms.length > 0) filters.terms = terms;
  const searchFields = list(raw, 'searchFields', problems);
  if (searchFields) {
    const unknown = searchFields.filter((f) => !(SEARCH_FIELDS as readonly string[]).includes(f));
    if (unknown.length > 0) problems.add('searchFields', `unknown search field ${unknown.map((f) => JSON.stringify(f)).join(', ')}; one of ${SEARCH_FIELDS.join(', ')}`, 'ENUM');
    else if (filters.terms) filters.searchFields = [...(searchFields as SearchField[])].sort();
  }

  const bounds: Array<[string, 'downloadsGte' | 'downloadsLte']> = [
    ['stats.downloads[gte]', 'downloadsGte'],
    ['downloads[gte]', 'downloadsGte'],
    ['stats.downloads[lte]', 'downloadsLte'],
    ['downloads[lte]', 'downloadsLte'],
  ];
  for (const [name, key] of bounds) {
    const value = nonNegative(raw, name, problems);
    if (value === undefined) continue;
    const previous = filters[key];
    // Both spellings given: the narrower bound holds.
    filters[key] = previous === undefined ? value : key === 'downloadsGte' ? Math.max(previous, value) : Math.min(previous, value);
  }

  const createdAfter = isoDate(raw, 'createdAfter', problems);
  if (createdAfter) filters.createdAfter = createdAfter;
  const createdBefore = isoDate(raw, 'createdBefore', problems);
  if (createdBefore) filters.createdBefore = createdBefore;

  const { sort, reverseDefault } = parseSort(raw, problems);

  let fields: string[] | undefined;
  const requested = list(raw, 'fields', problems);
  if (requested) {
    const unknown = requested.filter((f) => !ENTRY_FIELDS.includes(f));
    if (unknown.length > 0) problems.add('fields', `unknown field ${unknown.map((f) => JSON.stringify(f)).join(', ')}; top-level entry fields are ${ENTRY_FIELDS.join(', ')}`, 'ENUM');
    else fields = requested.includes('id') ? requested : ['id', ...requested];
  }

  const limit = integer(raw, 'limit', 1, MAX_LIMIT, problems) ?? DEFAULT_LIMIT;
  const page = integer(raw, 'page', 1, undefined, problems);
  const fingerprint = fingerprintOf(filters, sort, reverseDefault);

  let paging: Paging = { mode: 'offset', page: page ?? 1, limit };
  const cursor = single(raw, 'cursor', problems);
  if (cursor !== undefined) {
    if (raw.page !== undefined) problems.add('page', 'cannot be combined with cursor', 'CONFLICT');
    const trimmed = cursor.trim();
    if (trimmed === '') {
      paging = { mode: 'cursor', offset: 0, limit };
    } else {
      const decoded = decodeCursor(trimmed, fingerprint);
      if ('error' in decoded) problems.add('cursor', decoded.error, 'INVALID_CURSOR');
      else paging = { mode: 'cursor', offset: decoded.offset, limit };
    }
  }

  if (problems.details.length > 0) return { ok: false, details: problems.details };
  return { ok: true, query: { filters, sort, reverseDefault, paging, ...(fields ? { fields } : {}), fingerprint } };
}

// ---------------------------------------------------------------------------------------------
// Applying
// ---------------------------------------------------------------------------------------------

/** The spec's list filters, the search, and the download and date ranges of the API. */
export function matchesListFilters(entry: TemplateEntry, filters: ListFilters): boolean {
  if (!matchesFilters(entry, filters)) return false;
  if (filters.terms && !matchesSearch(entry, filters.terms, filters.searchFields)) return false;
  const downloads = entry.stats?.downloads ?? 0;
  if (filters.downloadsGte !== undefined && downloads < filters.downloadsGte) return false;
  if (filters.downloadsLte !== undefined && downloads > filters.downloadsLte) return false;
  if (filters.createdAfter !== undefined || filters.createdBefore !== undefined) {
    const created = entry.createdAt === undefined ? Number.NaN : Date.parse(entry.createdAt);
    if (Number.isNaN(created)) return false;
    if (filters.createdAfter !== undefined && created < Date.parse(filters.createdAfter)) return false;
    if (filters.createdBefore !== undefined && created >= Date.parse(filters.createdBefore)) return false;
  }
  return true;
}

/** Missing timestamps sort after present ones, whatever the direction. */
function compareOptionalTime(a: string | undefined, b: string | undefined, descending: boolean): number {
  const x = a === undefined ? Number.NaN : Date.parse(a);
  const y = b === undefined ? Number.NaN : Date.parse(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) === Number.isNaN(y) ? 0 : Number.isNaN(x) ? 1 : -1;
  return descending ? y - x : x - y;
}

function compareBy(key: SortKey, a: TemplateEntry, b: TemplateEntry): number {
  const sign = key.descending ? -1 : 1;
  switch (key.field) {
    case 'name':
      return sign * compareText(a.name, b.name);
    case 'version':
      return sign * compareVersions(a.version, b.version);
    case 'downloads':
      return sign * ((a.stats?.downloads ?? 0) - (b.stats?.downloads ?? 0));
    case 'stability':
      return sign * (stabilityRank(a.stability) - stabilityRank(b.stability));
    case 'createdAt':
      return compareOptionalTime(a.createdAt, b.createdAt, key.descending);
    case 'updatedAt':
      return compareOptionalTime(a.updatedAt, b.updatedAt, key.descending);
  }
}

/** Orders entries by `sort`; ties (and an empty `sort`) keep the spec's listing order. */
export function orderEntries(entries: readonly TemplateEntry[], sort: readonly SortKey[], reverseDefault = false): TemplateEntry[] {
  const listed = sortEntries(entries);
  if (reverseDefault) listed.reverse();
  if (sort.length === 0) return listed;
  return listed.sort((a, b) => {
    for (const key of sort) {
      const result = compareBy(key, a, b);
      if (result !== 0) return result;
    }
    return 0;
  });
}

/** Keeps `fields` (and `id`) of an entry. */
export function pickFields(entry: TemplateEntry, fields: readonly string[] | undefined): Partial<TemplateEntry> {
  if (!fields) return entry;
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (field in entry) picked[field] = entry[field];
  picked.id = entry.id;
  return picked;
}

/** Applies a parsed query to a registry document's entries (all versions). */
export function runListQuery(document: Pick<RegistryDocument, 'templates'>, query: ListQuery): ListResult {
  const matching = latestEntries(document.templates).filter((entry) => matchesListFilters(entry, query.filters));
  const ordered = orderEntries(matching, query.sort, query.reverseDefault);
  const total = ordered.length;
  const { paging } = query;

  if (paging.mode === 'offset') {
    const { page, limit } = paging;
    const start = (page - 1) * limit;
    const totalPages = Math.ceil(total / limit);
    return {
      data: ordered.slice(start, start + limit).map((entry) => pickFields(entry, query.fields)),
      pagination: { page, limit, total, totalPages, hasNext: page < totalPages, hasPrevious: page > 1 },
    };
  }

  const { offset, limit } = paging;
  const hasNext = offset + limit < total;
  return {
    data: ordered.slice(offset, offset + limit).map((entry) => pickFields(entry, query.fields)),
    pagination: {
      limit,
      hasNext,
      nextCursor: hasNext ? encodeCursor(offset + limit, query.fingerprint) : null,
      prevCursor: offset > 0 ? encodeCursor(Math.max(0, offset - limit), query.fingerprint) : null,
    },
  };
}
