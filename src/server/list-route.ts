/**
 * What a list route does with its query string: `parseList` (server/query.ts, where every rule of
 * the list conventions lives), and its problems answered as a 400 VALIDATION_ERROR naming each
 * refused parameter.
 */
import { ApiError } from './envelope.js';
import { parseList, type ListQuery, type ListResource, type RawQuery } from './query.js';

/** The parsed query of a list route of `resource` (nested lists: under `scope`, their parent's id); throws the 400 when it is refused. */
export function checkedListQuery<T>(resource: ListResource<T>, raw: unknown, scope?: string): ListQuery {
  const parsed = parseList(resource, (raw ?? {}) as RawQuery, scope);
  if (!parsed.ok) throw new ApiError(400, 'VALIDATION_ERROR', 'invalid query parameters', parsed.details);
  return parsed.query;
}
