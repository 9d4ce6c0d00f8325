/** `GET /templates`' list conventions applied directly, as the route applies them (`TEMPLATE_LIST`). */
import type { TemplateEntry } from '../../src/core/schema-types.js';
import { listParameters, orderItems, parseList, pickItemFields, TEMPLATE_LIST, type ListResource, type ParseResult, type RawQuery, type SortKey } from '../../src/server/query.js';

/** The fixed query parameters of `GET /templates`; every field of TEMPLATE_FIELDS is a filter too. */
export const LIST_PARAMETERS: readonly string[] = listParameters(TEMPLATE_LIST as ListResource<unknown>);

/** Checks and normalizes the query string of `GET /templates`. */
export function parseListQuery(raw: RawQuery): ParseResult {
  return parseList(TEMPLATE_LIST, raw);
}

/** Template entries by `sort`; ties keep the spec's listing order. */
export function orderEntries(entries: readonly TemplateEntry[], sort: readonly SortKey[], reverseDefault = false): TemplateEntry[] {
  return orderItems(TEMPLATE_LIST, entries, sort, reverseDefault);
}

/** Keeps `fields` (and `id`) of an entry. */
export function pickFields(entry: TemplateEntry, fields: readonly string[] | undefined): Partial<TemplateEntry> {
  return pickItemFields(entry, fields, 'id');
}
