/**
 * What the server takes as JSON and text from a client, on every route:
 *
 * - JSON (a request body, a multipart part: the manifest, the metadata of a staged file) nests
 *   arrays and objects at most `MAX_JSON_DEPTH` deep; deeper is a 400 (`MAX_DEPTH`) before it is
 *   parsed. Code that walks a value (canonical JSON, a batch re-sending an operation's body) would
 *   otherwise exhaust the stack: a 500.
 * - No text (a string or key of a JSON body, a query parameter, a path parameter) holds U+0000: a
 *   NUL is a 4xx naming the field (`NUL_CHARACTER`; 422 in a body, 400 in the query, 404 in the
 *   path), on every backend, because PostgreSQL cannot store it in text and would fail the request
 *   half-way (a 500).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { ApiError } from './envelope.js';

/** How deep arrays and objects may nest in JSON a client sends. */
export const MAX_JSON_DEPTH = 64;

const NUL = '\u0000';

/** Whether JSON text nests arrays and objects deeper than `max`: a scan of its brackets outside strings (the text need not be valid JSON). */
export function nestsDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether a parsed value nests arrays and objects deeper than `max` (walked without recursion). */
export function valueNestsDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The path of the first string (a value or a key) of `value` that holds U+0000; undefined when none does. Walked without recursion. */
export function nulPath(value: unknown): string[] | undefined {
  const stack: [unknown, string[]][] = [[value, []]];
  while (stack.length > 0) {
    const [node, at] = stack.pop() as [unknown, string[]];
    if (typeof node === 'string') {
      if (node.includes(NUL)) return at;
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      if (key.includes(NUL)) return [...at, key];
      stack.push([child, [...at, key]]);
    }
  }
  return undefined;
}

/** The 400 of JSON nested too deep; `what` names it (`the body`, `the manifest part`), `field` the detail's field. */
export function tooDeep(what: string, field: string): ApiError {
  const message = `${what} nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`;
  return new ApiError(400, 'BAD_REQUEST', message, [{ field, code: 'MAX_DEPTH', message: `must nest at most ${MAX_JSON_DEPTH} levels deep` }]);
}

/** The detail of a field holding U+0000. */
export function nulDetail(field: string): { field: string; code: string; message: string } {
  return { field, code: 'NUL_CHARACTER', message: 'must not contain the NUL character (U+0000)' };
}

/** A field name from a path in a value, `root` for the value itself. */
const fieldOf = (path: readonly string[], root: string): string => (path.length === 0 ? root : path.join('.'));

/**
 * JSON text a client sent in a multipart part, parsed: a 400 naming `field` when it nests too deep;
 * a SyntaxError (the caller's to answer) when it is not JSON.
 */
export function parseClientJson(text: string, what: string, field: string): unknown {
  if (nestsDeeperThan(text)) throw tooDeep(what, field);
  return JSON.parse(text) as unknown;
}

/** The text of a multipart field that @fastify/multipart may have parsed already (sent as application/json), its depth checked first. */
export function partText(value: unknown, what: string, field: string): string {
  if (typeof value === 'string') return value;
  if (valueNestsDeeperThan(value)) throw tooDeep(what, field);
  return JSON.stringify(value);
}

/**
 * The 4xx of a request holding U+0000 in a path parameter (404: nothing is named so), its query
 * (400) or its JSON body (422); undefined when none does.
 */
export function nulInRequest(request: FastifyRequest): ApiError | undefined {
  const inPath = nulPath(request.params);
  if (inPath !== undefined) {
    return new ApiError(404, 'NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0] ?? ''}: nothing is named with a NUL character (U+0000)`, [
      nulDetail(fieldOf(inPath, 'path parameter')),
    ]);
  }
  const inQuery = nulPath(request.query);
  if (inQuery !== undefined) return new ApiError(400, 'VALIDATION_ERROR', 'invalid query parameter', [nulDetail(fieldOf(inQuery, 'query parameter'))]);
  const at = nulPath(request.body);
  if (at === undefined) return undefined;
  const body = request.routeOptions.config.body;
  return new ApiError(422, 'VALIDATION_ERROR', body?.invalid ?? 'the body is invalid', [nulDetail(fieldOf(at, body?.root ?? 'body'))]);
}

/**
 * Installs the JSON body parser (fastify's own, behind the depth check) and the NUL check of every
 * route (a preHandler hook: after authentication and the schema). Call before any route is registered.
 */
export function installJsonInput(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (nestsDeeperThan(text)) {
      done(tooDeep('the body', request.routeOptions.config.body?.root ?? 'body'), undefined);
      return;
    }
    // fastify's own parser (callback style): its errors (empty or invalid JSON, __proto__) stay the same 400s.
    void parseJson(request, text, done);
  });
  // Callback style: an async hook would cost every request a promise and a microtask turn.
  app.addHook('preHandler', (request, _reply, done) => {
    const refused = nulInRequest(request);
    done(refused);
  });
}
