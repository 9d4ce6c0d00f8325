/**
 * The query conventions of every list route, as the spec's "Query conventions for list routes"
 * gives them (docs/spec/registry-spec.md; what each route accepts: openapi/openapi.json), as pure
 * functions with no HTTP: `parseList` turns raw query values into a checked `ListQuery` or
 * field-level errors naming each refused parameter, `runList` applies it to a list. Each route
 * describes its resource once (a `ListResource`: fields, filters, sorts, default order). The API
 * version selectors (`api-version`, `version=<major.minor>`) are taken out before a route runs
 * (api-version.ts).
 */
import { createHash } from 'node:crypto';

import templateEntrySchema from '../../schemas/template-entry.schema.json' with { type: 'json' };
import { canonicalJson } from '../core/canonical-json.js';
import { compareText, isYanked, latestEntries, sortEntries, STABILITY_ORDER, stabilityRank, versionsOf } from '../core/listing.js';
import type { Category, CursorPagination, OffsetPagination, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { buildSearchIndex, findEntries, matchesSearch, SEARCH_FIELDS, searchTerms, type SearchField, type SearchIndex } from '../core/search.js';
import type { ErrorDetail } from '../core/validation.js';
import { compareVersions } from '../core/versions.js';
import type { UserRecord } from '../store/types.js';
import type { DeliveryView, WebhookView } from './webhooks.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/**
 * The API version selector (see the server's versioning): accepted on every route, never a filter.
 * (The spec's `version=<major.minor>` is told apart from the `version` field filter by its shape: api-version.ts.)
 */
export const API_VERSION_PARAMETER = 'api-version';

/** Parameters every list route understands. */
export const PAGING_PARAMETERS = ['page', 'limit', 'cursor', 'sort', 'order', 'fields'] as const;

/** Range operators, as `<field>[<operator>]`; both inclusive. */
export const RANGE_OPERATORS = ['gte', 'lte'] as const;
export type RangeOperator = (typeof RANGE_OPERATORS)[number];

// ---------------------------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------------------------

/**
 * How a field is compared: `text` and `enum` exactly; `number`, `version` (numerically, segment
 * by segment) and `date` (as instants) are ordered and take `[gte]` / `[lte]`; `list` (an array
 * of strings) holds all of the given values.
 */
export type FieldKind = 'text' | 'enum' | 'number' | 'version' | 'date' | 'boolean' | 'list';

const ORDERED_KINDS: readonly FieldKind[] = ['number', 'version', 'date'];

export interface ListField<T> {
  kind: FieldKind;
  get: (item: T) => unknown;
  /** The values an `enum` field takes. */
  values?: readonly string[];
  /** An order other than the kind's (e.g. stability order); ascending. */
  compare?: (a: T, b: T) => number;
}

export interface ListResource<T> {
  /** What one item is, for messages: `template`, `webhook`. */
  name: string;
  /** Top-level fields `fields` may name. */
  fields: readonly string[];
  /** The field a sparse fieldset always keeps. */
  key: string;
  /** Fields `sort` (and, with `filters`, the field filters) may name, by name (dotted when nested). */
  by: Readonly<Record<string, ListField<T>>>;
  /** Other names of fields of `by`. */
  aliases?: Readonly<Record<string, string>>;
  /** `<field>=`, `<field>[gte|lte]=`, `filter` and, with `created`, `createdAfter` / `createdBefore`. */
  filters?: boolean;
  /** The date field `createdAfter` / `createdBefore` apply to. */
  created?: string;
  /** `search` / `q` and `searchFields`. */
  search?: { fields: readonly string[]; matches: (item: T, terms: readonly string[], fields?: readonly string[]) => boolean };
  /** Names `include` may give. */
  include?: readonly string[];
  /** The default order (ties of `sort` keep it). */
  order: (items: readonly T[]) => T[];
  /** The default order runs from high to low (versions, newest first): `order=asc` alone reverses it, `order=desc` keeps it. */
  descendingByDefault?: boolean;
}

function own<V>(record: Readonly<Record<string, V>> | undefined, name: string): V | undefined {
  return record && Object.hasOwn(record, name) ? record[name] : undefined;
}

/** The field of a name (or an alias of it), and its canonical name. */
function fieldOf<T>(resource: ListResource<T>, name: string): { name: string; field: ListField<T> } | undefined {
  const canonical = own(resource.aliases, name) ?? name;
  const field = own(resource.by, canonical);
  return field ? { name: canonical, field } : undefined;
}

const sortable = <T>(resource: ListResource<T>): string[] => Object.keys(resource.by).filter((name) => resource.by[name]!.kind !== 'list');

/** Top-level fields of a template entry `fields` may name. */
export const ENTRY_FIELDS: readonly string[] = Object.keys(templateEntrySchema.properties);

type SchemaProperty = { type?: string; format?: string; enum?: readonly string[] };

/** Every string, number or boolean top-level field of the entry schema, by its schema type. */
function scalarEntryFields(): Record<string, ListField<TemplateEntry>> {
  const fields: Record<string, ListField<TemplateEntry>> = {};
  for (const [name, property] of Object.entries(templateEntrySchema.properties as Record<string, SchemaProperty>)) {
    const get = (entry: TemplateEntry): unknown => (entry as unknown as Record<string, unknown>)[name];
    if (property.type === 'string') {
      if (name === 'version') fields[name] = { kind: 'version', get };
      else if (property.format === 'date-time') fields[name] = { kind: 'date', get };
      else if (property.enum) fields[name] = { kind: 'enum', get, values: property.enum };
      else fields[name] = { kind: 'text', get };
    } else if (property.type === 'number' || property.type === 'integer') {
      fields[name] = { kind: 'number', get };
    } else if (property.type === 'boolean') {
      fields[name] = { kind: 'boolean', get };
    }
  }
  return fields;
}

/** Fields of a template entry to filter and sort by. */
export const TEMPLATE_FIELDS: Readonly<Record<string, ListField<TemplateEntry>>> = {
  ...scalarEntryFields(),
  stability: { kind: 'enum', get: (e) => e.stability, values: STABILITY_ORDER, compare: (a, b) => stabilityRank(a.stability) - stabilityRank(b.stability) },
  author: { kind: 'text', get: (e) => e.author?.name },
  'author.name': { kind: 'text', get: (e) => e.author?.name },
  'author.email': { kind: 'text', get: (e) => e.author?.email },
  'author.url': { kind: 'text', get: (e) => e.author?.url },
  'author.organization': { kind: 'text', get: (e) => e.author?.organization },
  'compatibility.breaking': { kind: 'boolean', get: (e) => e.compatibility?.breaking },
  'stats.lastDownload': { kind: 'date', get: (e) => e.stats?.lastDownload },
  'stats.downloads': { kind: 'number', get: (e) => e.stats?.downloads ?? 0 },
  'stats.stars': { kind: 'number', get: (e) => e.stats?.stars },
  'stats.forks': { kind: 'number', get: (e) => e.stats?.forks },
  'stats.issues': { kind: 'number', get: (e) => e.stats?.issues },
  tags: { kind: 'list', get: (e) => e.tags },
  features: { kind: 'list', get: (e) => e.features },
};

const TEMPLATE_ALIASES = { downloads: 'stats.downloads' } as const;

/** `GET /templates`: the latest entry of every template, in the spec's listing order. */
export const TEMPLATE_LIST: ListResource<TemplateEntry> = {
  name: 'template',
  fields: ENTRY_FIELDS,
  key: 'id',
  by: TEMPLATE_FIELDS,
  aliases: TEMPLATE_ALIASES,
  filters: true,
  created: 'createdAt',
  search: { fields: SEARCH_FIELDS, matches: (entry, terms, fields) => matchesSearch(entry, terms, fields as SearchField[] | undefined) },
  include: ['versions', 'yanked'],
  order: sortEntries,
};

/** `GET /templates/{id}/versions`: every version of one template, highest first. */
export const VERSION_LIST: ListResource<TemplateEntry> = {
  name: 'version',
  fields: ENTRY_FIELDS,
  key: 'version',
  by: TEMPLATE_FIELDS,
  aliases: TEMPLATE_ALIASES,
  include: ['yanked'],
  order: (entries) => [...entries].sort((a, b) => compareVersions(b.version, a.version)),
  descendingByDefault: true,
};

/** `GET /categories`: the registry document's categories, in its order. */
export const CATEGORY_LIST: ListResource<Category> = {
  name: 'category',
  fields: ['id', 'name', 'description', 'icon', 'templates'],
  key: 'id',
  by: {
    id: { kind: 'text', get: (c) => c.id },
    name: { kind: 'text', get: (c) => c.name },
    description: { kind: 'text', get: (c) => c.description },
    icon: { kind: 'text', get: (c) => c.icon },
  },
  order: (categories) => [...categories],
};

/** `GET /webhooks`: oldest first. */
export const WEBHOOK_LIST: ListResource<WebhookView> = {
  name: 'webhook',
  fields: ['id', 'url', 'events', 'active', 'createdAt'],
  key: 'id',
  by: {
    id: { kind: 'text', get: (w) => w.id },
    url: { kind: 'text', get: (w) => w.url },
    active: { kind: 'boolean', get: (w) => w.active },
    createdAt: { kind: 'date', get: (w) => w.createdAt },
  },
  order: (webhooks) => [...webhooks],
};

/** `GET /webhooks/{id}/deliveries`: newest first. */
export const DELIVERY_LIST: ListResource<DeliveryView> = {
  name: 'delivery',
  fields: ['id', 'deliveryId', 'event', 'status', 'attemptedAt', 'error'],
  key: 'id',
  by: {
    id: { kind: 'text', get: (d) => d.id },
    deliveryId: { kind: 'text', get: (d) => d.deliveryId },
    event: { kind: 'text', get: (d) => d.event },
    status: { kind: 'number', get: (d) => d.status },
    attemptedAt: { kind: 'date', get: (d) => d.attemptedAt },
    error: { kind: 'text', get: (d) => d.error },
  },
  order: (deliveries) => [...deliveries],
  descendingByDefault: true,
};

/** `GET /users`: the accounts, oldest first. */
export const USER_LIST: ListResource<UserRecord> = {
  name: 'user',
  fields: ['id', 'email', 'role', 'owner', 'name', 'createdAt'],
  key: 'id',
  by: {
    id: { kind: 'text', get: (u) => u.id },
    email: { kind: 'text', get: (u) => u.email },
    role: { kind: 'enum', get: (u) => u.role, values: ['publisher', 'admin'] },
    owner: { kind: 'text', get: (u) => u.owner },
    name: { kind: 'text', get: (u) => u.name },
    createdAt: { kind: 'date', get: (u) => u.createdAt },
  },
  order: (users) => [...users],
};

/** The fixed parameters of a resource's list route (field filters come on top). */
export function listParameters(resource: ListResource<unknown>): string[] {
  return [
    ...PAGING_PARAMETERS,
    ...(resource.search ? ['search', 'q', 'searchFields'] : []),
    ...(resource.include ? ['include'] : []),
    ...(resource.filters ? ['filter'] : []),
    ...(resource.filters && resource.created ? ['createdAfter', 'createdBefore'] : []),
  ];
}

// ---------------------------------------------------------------------------------------------
// The parsed query
// ---------------------------------------------------------------------------------------------

export interface SortKey {
  /** Canonical field name (`stats.downloads` for `downloads`). */
  field: string;
  descending: boolean;
}

/**
 * One condition on a field: `in` any of `values` (all of them for a `list` field), or a bound.
 * Values are normalized (dates as ISO instants, numbers as their decimal text).
 */
export interface Condition {
  field: string;
  op: 'in' | 'gte' | 'lte' | 'lt';
  values: string[];
}

export type Paging = { mode: 'offset'; page: number; limit: number } | { mode: 'cursor'; offset: number; limit: number };

export interface ListQuery {
  /** Every one must hold. */
  conditions: Condition[];
  /** Lower-cased search terms; every one must occur. */
  terms?: string[];
  /** Fields the terms are looked for in (default all the resource's search fields). */
  searchFields?: string[];
  /** Empty: the resource's default order. */
  sort: SortKey[];
  /** `order=desc` without `sort`: the default order reversed. */
  reverseDefault: boolean;
  paging: Paging;
  /** Top-level fields to keep (with the key field); undefined keeps whole items. */
  fields?: string[];
  /** Related resources to embed. */
  include?: string[];
  /** Hash of what decides the result's order and membership; cursors carry it. */
  fingerprint: string;
}

export type { CursorPagination, OffsetPagination };

export interface ListResult<T = Partial<TemplateEntry>> {
  data: T[];
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

const quoted = (values: readonly string[]): string => values.map((v) => JSON.stringify(v)).join(', ');

/** One value: a repeated parameter is an error. Empty strings count as given. */
function single(raw: RawQuery, name: string, problems: Problems): string | undefined {
  const value = raw[name];
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return problems.add(name, 'must be given once', 'DUPLICATE');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') return problems.add(name, 'must be a string', 'TYPE');
  return value;
}

/** Splits comma lists; empty items are dropped, repeated ones kept once. */
function splitList(parts: readonly string[]): string[] {
  const items = parts
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter((p) => p !== '');
  return [...new Set(items)];
}

/** A comma list; a repeated parameter adds its values. */
function list(raw: RawQuery, name: string, problems: Problems): string[] | undefined {
  const value = raw[name];
  if (value === undefined || value === null) return undefined;
  const parts = (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined));
  if (parts.some((p) => p === undefined)) return problems.add(name, 'must be a string', 'TYPE');
  const items = splitList(parts as string[]);
  if (items.length === 0) return problems.add(name, 'must name at least one value', 'MIN_LENGTH');
  return items;
}

function integer(raw: RawQuery, name: string, min: number, max: number | undefined, problems: Problems): number | undefined {
  const text = single(raw, name, problems);
  if (text === undefined) return undefined;
  if (!/^\s*-?\d+\s*$/.test(text)) return problems.add(name, 'must be an integer', 'TYPE');
  const value = Number(text);
  if (value < min) return problems.add(name, `must be >= ${min}`, 'MINIMUM');
  if (!Number.isSafeInteger(value)) return problems.add(name, `must be <= ${max ?? Number.MAX_SAFE_INTEGER}`, 'MAXIMUM');
  if (max !== undefined && value > max) return problems.add(name, `must be <= ${max}`, 'MAXIMUM');
  return value;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/i;

/** Whether the fields of an ISO date-time name a real instant (no February 30th, no hour 24), which Date.parse would roll over. */
function realCalendarDate(fields: readonly (string | undefined)[]): boolean {
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, zoneHours = 0, zoneMinutes = 0] = fields.map((field) => (field === undefined ? undefined : Number(field)));
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59 && zoneHours <= 23 && zoneMinutes <= 59;
}

/** An ISO 8601 date or date-time as an ISO instant (a date alone, or no offset: UTC); undefined when it is not one. */
export function normalizeDate(text: string): string | undefined {
  const trimmed = text.trim();
  const match = ISO_DATE.exec(trimmed);
  if (!match || !realCalendarDate(match.slice(1))) return undefined;
  const withZone = /^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? `${trimmed}T00:00:00Z` : /(?:Z|[+-]\d{2}:?\d{2})$/i.test(trimmed) ? trimmed : `${trimmed}Z`;
  const time = Date.parse(withZone.replace(' ', 'T'));
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

const DATE_MESSAGE = 'must be an ISO 8601 date or date-time (e.g. 2024-05-01 or 2024-05-01T12:00:00Z)';
/** Every number field of the lists is a count or a size. */
const NUMBER = /^\s*\d+(\.\d+)?\s*$/;
const VERSION_VALUE = /^\d+(\.\d+)*$/;
/** An exact version filter names a template version, which is always MAJOR.MINOR.PATCH: a shorter value could match nothing. */
const EXACT_VERSION_VALUE = /^\d+\.\d+\.\d+$/;

/** A value of a field's kind, normalized; or the message saying what it must be. */
function fieldValue<T>(field: ListField<T>, value: string, bound: boolean): { value: string } | { error: string; code: string } {
  switch (field.kind) {
    case 'number':
      return NUMBER.test(value) ? { value: String(Number(value)) } : { error: 'must be a non-negative number', code: 'TYPE' };
    case 'date': {
      const date = normalizeDate(value);
      return date ? { value: date } : { error: DATE_MESSAGE, code: 'FORMAT' };
    }
    case 'version':
      if (bound) return VERSION_VALUE.test(value) ? { value } : { error: 'must be a version of numeric segments (e.g. 1.10.0)', code: 'FORMAT' };
      return EXACT_VERSION_VALUE.test(value)
        ? { value }
        : { error: 'must be a template version, MAJOR.MINOR.PATCH (e.g. 1.10.0; bounds: version[gte]=1.0; ?version=<major.minor> alone selects the API version)', code: 'FORMAT' };
    case 'boolean':
      return value === 'true' || value === 'false' ? { value } : { error: 'must be true or false', code: 'TYPE' };
    case 'enum':
      return field.values?.includes(value) ? { value } : { error: `unknown value ${JSON.stringify(value)}; one of ${(field.values ?? []).join(', ')}`, code: 'ENUM' };
    default:
      return { value };
  }
}

/**
 * A field filter, `<name>` or `<name>[<op>]` with its values, as a condition. `parameter` is what
 * problems name (the query parameter, or `filter` for a term of the filter expression).
 */
function condition<T>(resource: ListResource<T>, key: string, values: readonly string[], parameter: string, problems: Problems): Condition | undefined {
  const match = /^([^[\]]+)(?:\[([^[\]]*)\])?$/.exec(key);
  const found = match ? fieldOf(resource, match[1]!) : undefined;
  const where = parameter === key ? '' : ` in ${JSON.stringify(key)}`;
  if (!match || !found) {
    const known = Object.keys(resource.by).join(', ');
    return parameter === key
      ? problems.add(parameter, `unknown parameter ${JSON.stringify(key)}; known parameters are ${listParameters(resource as ListResource<unknown>).join(', ')} and the field filters ${known}`, 'UNKNOWN_PARAMETER')
      : problems.add(parameter, `unknown field ${JSON.stringify(match?.[1] ?? key)}${where}; fields are ${known}`, 'UNKNOWN_FIELD');
  }
  const { name, field } = found;
  const operator = match[2];
  if (operator !== undefined) {
    if (!(RANGE_OPERATORS as readonly string[]).includes(operator)) {
      return problems.add(parameter, `unknown operator ${JSON.stringify(operator)}${where}; operators are ${RANGE_OPERATORS.join(', ')}`, 'UNKNOWN_OPERATOR');
    }
    if (!ORDERED_KINDS.includes(field.kind)) {
      return problems.add(parameter, `operator ${operator}${where} applies to numbers, dates and versions; ${name} is not one`, 'UNSUPPORTED_OPERATOR');
    }
    if (values.length !== 1) return problems.add(parameter, `${key} takes one value`, 'DUPLICATE');
  }
  if (values.length === 0) return problems.add(parameter, `${key} must name at least one value`, 'MIN_LENGTH');
  const normalized: string[] = [];
  for (const value of values) {
    const checked = fieldValue(field, value, operator !== undefined);
    if ('error' in checked) return problems.add(parameter, `${where ? `${key} ` : ''}${checked.error} (got ${JSON.stringify(value)})`, checked.code);
    normalized.push(checked.value);
  }
  return { field: name, op: (operator as RangeOperator | undefined) ?? 'in', values: normalized };
}

/** Query parameter `<field>` or `<field>[op]`. */
function fieldParameter<T>(resource: ListResource<T>, raw: RawQuery, key: string, problems: Problems): Condition | undefined {
  const value = raw[key];
  const parts = (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined));
  if (parts.some((p) => p === undefined)) return problems.add(key, 'must be a string', 'TYPE');
  if (/\[[^\]]*\]$/.test(key) && parts.length > 1) return problems.add(key, 'must be given once', 'DUPLICATE');
  return condition(resource, key, splitList(parts as string[]), key, problems);
}

/** `field:value AND field[op]:value AND ...` */
function filterExpression<T>(resource: ListResource<T>, raw: RawQuery, problems: Problems): Condition[] {
  const expression = single(raw, 'filter', problems);
  if (expression === undefined) return [];
  if (expression.trim() === '') {
    problems.add('filter', 'must hold at least one field:value term', 'MIN_LENGTH');
    return [];
  }
  const trimmed = expression.trim();
  if (/^AND(?:\s|$)|\sAND$/.test(trimmed)) {
    problems.add('filter', `${JSON.stringify(trimmed)} begins or ends with AND: AND joins two field:value terms`, 'FORMAT');
    return [];
  }
  const conditions: Condition[] = [];
  for (const term of trimmed.split(/\s+AND\s+/)) {
    const colon = term.indexOf(':');
    if (colon <= 0) {
      problems.add('filter', `term ${JSON.stringify(term)} is not field:value (terms are joined with " AND ")`, 'FORMAT');
      continue;
    }
    const value = term.slice(colon + 1);
    const problem = filterValueProblem(value);
    if (problem) {
      problems.add('filter', `term ${JSON.stringify(term)}: ${problem.message}`, problem.code);
      continue;
    }
    const found = condition(resource, term.slice(0, colon).trim(), splitList([value]), 'filter', problems);
    if (found) conditions.push(found);
  }
  return conditions;
}

/**
 * What the expression's grammar cannot mean in a term's value: another term after a connective
 * other than AND (`backend OR stability:stable`, a lower-case `and`), or an operator written as
 * `field:gte:value`. Plain values may hold spaces and colons (dates, "Smith and Sons").
 */
function filterValueProblem(value: string): { message: string; code: string } | undefined {
  const connective = /\s(and|or|not)\s+[^\s:]+(?:\[[^\]]*\])?:/i.exec(value);
  if (connective) return { message: `"${connective[1]}" does not join terms: join field:value terms with " AND " (upper case); OR and NOT are not supported`, code: 'FORMAT' };
  const operator = /^(gte|lte|gt|lt|eq|ne|in):/i.exec(value.trim());
  if (operator) return { message: `write a bound as field[gte]:value or field[lte]:value, not field:${operator[1]}:value`, code: 'UNKNOWN_OPERATOR' };
  return undefined;
}

function parseSort<T>(resource: ListResource<T>, raw: RawQuery, problems: Problems): { sort: SortKey[]; reverseDefault: boolean } {
  const order = single(raw, 'order', problems);
  let orderDescending = false;
  if (order !== undefined) {
    const normalized = order.trim().toLowerCase();
    if (normalized !== 'asc' && normalized !== 'desc') problems.add('order', 'must be asc or desc', 'ENUM');
    orderDescending = normalized === 'desc';
  }
  const keys = list(raw, 'sort', problems);
  if (!keys) return { sort: [], reverseDefault: raw.sort === undefined && order !== undefined && orderDescending !== (resource.descendingByDefault ?? false) };
  const sort: SortKey[] = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const prefixed = key.startsWith('-') || key.startsWith('+');
    const name = prefixed ? key.slice(1) : key;
    const found = fieldOf(resource, name);
    if (!found || found.field.kind === 'list') {
      problems.add('sort', `unknown sort field ${JSON.stringify(name)}; one of ${sortable(resource).join(', ')}`, 'ENUM');
      continue;
    }
    if (seen.has(found.name)) {
      problems.add('sort', `sort field ${found.name} is given twice`, 'DUPLICATE');
      continue;
    }
    seen.add(found.name);
    sort.push({ field: found.name, descending: key.startsWith('-') || (!prefixed && orderDescending) });
  }
  return { sort, reverseDefault: false };
}

/** A comma list whose every item must be one of `known`. */
function knownList(raw: RawQuery, name: string, known: readonly string[], what: string, problems: Problems): string[] | undefined {
  const items = list(raw, name, problems);
  if (!items) return undefined;
  const unknown = items.filter((item) => !known.includes(item));
  if (unknown.length > 0) return problems.add(name, `unknown ${what} ${quoted(unknown)}; one of ${known.join(', ')}`, name === 'fields' ? 'UNKNOWN_FIELD' : 'ENUM');
  return items;
}

/** What a cursor is bound to: the list (its resource and scope, e.g. the template of a versions list) and the query. */
function fingerprintOf(list: { resource: string; scope: string }, conditions: Condition[], query: Pick<ListQuery, 'terms' | 'searchFields' | 'sort' | 'reverseDefault'>): string {
  const ordered = [...conditions].sort((a, b) => compareText(canonicalJson(a), canonicalJson(b)));
  return createHash('sha256').update(canonicalJson({ ...list, conditions: ordered, ...query })).digest('base64url').slice(0, 16);
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
  if (record.q !== fingerprint) return { error: 'belongs to another list or query (route, filters, search or sort changed); start again without a cursor' };
  return { offset: record.o as number };
}

/**
 * Checks and normalizes the query string of a list route of `resource`; `scope` names the parent of
 * a nested list (the template of its versions), so that a cursor works only where it was issued.
 */
export function parseList<T>(resource: ListResource<T>, raw: RawQuery, scope = ''): ParseResult {
  const problems = new Problems();
  const fixed = new Set([...listParameters(resource as ListResource<unknown>), API_VERSION_PARAMETER]);

  // Every other parameter is a field filter, or refused.
  const conditions: Condition[] = [];
  for (const key of Object.keys(raw)) {
    if (fixed.has(key) || raw[key] === undefined) continue;
    if (!resource.filters) {
      problems.add(key, `unknown parameter ${JSON.stringify(key)}; this list takes ${[...fixed].filter((p) => p !== API_VERSION_PARAMETER).join(', ')}`, 'UNKNOWN_PARAMETER');
      continue;
    }
    const found = fieldParameter(resource, raw, key, problems);
    if (found) conditions.push(found);
  }
  if (resource.filters) {
    conditions.push(...filterExpression(resource, raw, problems));
    if (resource.created) {
      for (const [name, op] of [['createdAfter', 'gte'], ['createdBefore', 'lt']] as const) {
        const text = single(raw, name, problems);
        if (text === undefined) continue;
        const date = normalizeDate(text);
        if (date === undefined) problems.add(name, DATE_MESSAGE, 'FORMAT');
        else conditions.push({ field: resource.created, op, values: [date] });
      }
    }
  }

  let terms: string[] | undefined;
  let searchFields: string[] | undefined;
  if (resource.search) {
    const q = single(raw, 'q', problems);
    const search = single(raw, 'search', problems);
    const found = searchTerms([q, search].filter((t): t is string => t !== undefined).join(' '));
    if (found.length > 0) terms = found;
    const fields = knownList(raw, 'searchFields', resource.search.fields, 'search field', problems);
    if (fields && terms) searchFields = [...fields].sort();
  }

  const { sort, reverseDefault } = parseSort(resource, raw, problems);

  let fields: string[] | undefined;
  const include = resource.include ? knownList(raw, 'include', resource.include, 'related resource', problems) : undefined;
  // An included resource may be named in `fields` too (JSON:API style): it is embedded either way.
  const fieldNames = [...resource.fields, ...(include ?? []).filter((name) => !resource.fields.includes(name))];
  const requested = knownList(raw, 'fields', fieldNames, `field (top-level ${resource.name} fields are ${resource.fields.join(', ')})`, problems);
  if (requested) fields = requested.includes(resource.key) ? requested : [resource.key, ...requested];

  const limit = integer(raw, 'limit', 1, MAX_LIMIT, problems) ?? DEFAULT_LIMIT;
  const page = integer(raw, 'page', 1, undefined, problems);
  const fingerprint = fingerprintOf({ resource: resource.name, scope }, conditions, { ...(terms ? { terms } : {}), ...(searchFields ? { searchFields } : {}), sort, reverseDefault });

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
  return {
    ok: true,
    query: {
      conditions,
      ...(terms ? { terms } : {}),
      ...(searchFields ? { searchFields } : {}),
      sort,
      reverseDefault,
      paging,
      ...(fields ? { fields } : {}),
      ...(include ? { include } : {}),
      fingerprint,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Applying
// ---------------------------------------------------------------------------------------------

/** A comparable form of a field value; undefined when it has none (missing, or not a date). */
function comparable(kind: FieldKind, value: unknown): string | number | undefined {
  if (value === undefined || value === null) return undefined;
  switch (kind) {
    case 'number':
      return typeof value === 'number' ? value : Number.isFinite(Number(value)) ? Number(value) : undefined;
    case 'date': {
      const time = typeof value === 'string' ? Date.parse(value) : Number.NaN;
      return Number.isNaN(time) ? undefined : time;
    }
    case 'boolean':
      return value === true || value === 'true' ? 1 : 0;
    default:
      return typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
  }
}

function compareComparable(kind: FieldKind, x: string | number, y: string | number): number {
  if (kind === 'version') return compareVersions(String(x), String(y));
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return compareText(String(x), String(y));
}

function holds<T>(field: ListField<T>, condition: Condition, item: T): boolean {
  const value = field.get(item);
  if (field.kind === 'list') return Array.isArray(value) && condition.values.every((wanted) => value.includes(wanted));
  const actual = comparable(field.kind, value);
  if (actual === undefined) return false;
  if (condition.op === 'in') {
    return condition.values.some((wanted) => {
      const expected = comparable(field.kind, wanted);
      // A version is matched exactly (its text), the others by their kind's value.
      return field.kind === 'version' ? value === wanted : expected !== undefined && actual === expected;
    });
  }
  const bound = comparable(field.kind, condition.values[0]);
  if (bound === undefined) return false;
  const order = compareComparable(field.kind, actual, bound);
  return condition.op === 'gte' ? order >= 0 : condition.op === 'lte' ? order <= 0 : order < 0;
}

/** True when `item` meets every condition and the search of a parsed query. */
export function matchesQuery<T>(resource: ListResource<T>, item: T, query: Pick<ListQuery, 'conditions' | 'terms' | 'searchFields'>): boolean {
  for (const condition of query.conditions) {
    const field = own(resource.by, condition.field);
    if (!field || !holds(field, condition, item)) return false;
  }
  if (query.terms && resource.search && !resource.search.matches(item, query.terms, query.searchFields)) return false;
  return true;
}

/** Missing values sort after present ones, whatever the direction. */
function compareBy<T>(field: ListField<T>, key: SortKey, a: T, b: T): number {
  const sign = key.descending ? -1 : 1;
  if (field.compare) return sign * field.compare(a, b);
  const x = comparable(field.kind, field.get(a));
  const y = comparable(field.kind, field.get(b));
  if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
  return sign * compareComparable(field.kind, x, y);
}

/** Orders items by `sort`; ties (and an empty `sort`) keep the resource's default order. */
export function orderItems<T>(resource: ListResource<T>, items: readonly T[], sort: readonly SortKey[], reverseDefault = false): T[] {
  const listed = resource.order(items);
  if (reverseDefault) listed.reverse();
  if (sort.length === 0) return listed;
  const keys = sort.flatMap((key) => {
    const field = own(resource.by, key.field);
    return field ? [{ key, field }] : [];
  });
  return listed.sort((a, b) => {
    for (const { key, field } of keys) {
      const result = compareBy(field, key, a, b);
      if (result !== 0) return result;
    }
    return 0;
  });
}

/** Keeps `fields` (and the key field) of an item. */
export function pickItemFields<T extends object>(item: T, fields: readonly string[] | undefined, key: string): Partial<T> {
  if (!fields) return item;
  const source = item as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (Object.hasOwn(source, field)) picked[field] = source[field];
  if (Object.hasOwn(source, key)) picked[key] = source[key];
  return picked as Partial<T>;
}

/** How to embed each related resource `include` may name. */
export type Related<T> = Readonly<Record<string, (item: T) => unknown>>;

/**
 * Applies a parsed query to the items of a list: conditions and search, order, the page, sparse
 * fieldsets and the included related resources.
 */
export function runList<T extends object>(resource: ListResource<T>, items: readonly T[], query: ListQuery, related: Related<T> = {}): ListResult<Partial<T> & Record<string, unknown>> {
  const matching = items.filter((item) => matchesQuery(resource, item, query));
  const ordered = orderItems(resource, matching, query.sort, query.reverseDefault);
  const total = ordered.length;
  const present = (item: T): Partial<T> & Record<string, unknown> => {
    const picked = pickItemFields(item, query.fields, resource.key) as Partial<T> & Record<string, unknown>;
    if (!query.include || query.include.length === 0) return picked;
    const embedded: Record<string, unknown> = { ...picked };
    for (const name of query.include) {
      const embed = own(related, name);
      if (embed) embedded[name] = embed(item);
    }
    return embedded as Partial<T> & Record<string, unknown>;
  };
  const { paging } = query;

  if (paging.mode === 'offset') {
    const { page, limit } = paging;
    const start = (page - 1) * limit;
    const totalPages = Math.ceil(total / limit);
    return {
      data: ordered.slice(start, start + limit).map(present),
      pagination: { page, limit, total, totalPages, hasNext: page < totalPages, hasPrevious: page > 1 },
    };
  }

  const { offset, limit } = paging;
  const hasNext = offset + limit < total;
  return {
    data: ordered.slice(offset, offset + limit).map(present),
    pagination: {
      limit,
      hasNext,
      nextCursor: hasNext ? encodeCursor(offset + limit, query.fingerprint) : null,
      prevCursor: offset > 0 ? encodeCursor(Math.max(0, offset - limit), query.fingerprint) : null,
    },
  };
}

/** Whether a list shows yanked versions (`include=yanked`). */
export function showsYanked(query: Pick<ListQuery, 'include'>): boolean {
  return query.include?.includes('yanked') ?? false;
}

/** The latest entry of every template of a document, in listing order, and their token index (made on the first search). */
interface Listed {
  entries: TemplateEntry[];
  index?: SearchIndex;
}

/**
 * What `GET /templates` lists of each document, kept per document (a build makes a new one; a
 * document is never changed): the selection and the listing order once, the token index once.
 */
const listedOf = new WeakMap<readonly TemplateEntry[], { shown?: Listed; withYanked?: Listed }>();

function listedEntries(templates: readonly TemplateEntry[], includeYanked: boolean): Listed {
  let kept = listedOf.get(templates);
  if (!kept) listedOf.set(templates, (kept = {}));
  const key = includeYanked ? 'withYanked' : 'shown';
  return (kept[key] ??= { entries: sortEntries(latestEntries(templates, { includeYanked })) });
}

/** `TEMPLATE_LIST` over entries already in listing order. */
const LISTED_TEMPLATES: ListResource<TemplateEntry> = { ...TEMPLATE_LIST, order: (entries) => [...entries] };

/** Applies a parsed query to a registry document: the latest entry of every template; `include=versions` embeds all of a template's versions. */
export function runListQuery(document: Pick<RegistryDocument, 'templates'>, query: ListQuery): ListResult {
  const includeYanked = showsYanked(query);
  const listed = listedEntries(document.templates, includeYanked);
  let entries = listed.entries;
  let rest = query;
  // A search over every field is answered by the token index (core/search.ts), in listing order.
  if (query.terms && query.searchFields === undefined) {
    entries = findEntries((listed.index ??= buildSearchIndex(listed.entries)), query.terms, listed.entries);
    const { terms: _terms, ...others } = query;
    rest = others;
  }
  return runList(LISTED_TEMPLATES, entries, rest, {
    versions: (entry) => versionsOf(document.templates, entry.id).filter((version) => includeYanked || !isYanked(version)),
  });
}
