/**
 * The version lifecycle routes (published bytes never change):
 * - `PATCH /templates/{id}/versions/{version}` `{ stability?, deprecationMessage? }` (the template's
 *   owner or an admin) deprecates a version (or sets another stability); answers the entry;
 * - `DELETE /templates/{id}/versions/{version}` yanks it: kept and downloadable by its exact
 *   version, out of latest selection and default listings, never reusable; answers the entry;
 * - `DELETE /templates/{id}/versions/{version}/purge` (admin tokens only) removes it for good, for
 *   what must go (a legal demand, a leaked secret): its archive, manifest and entry; its name and
 *   version are never used again; answers 204 (again for a version already purged);
 * - `PATCH /templates/bulk` `{ filter, update }` changes every version the filter matches; answers
 *   `{ changed, versions }`;
 * - `POST /templates/batch` `{ operations: [{ method, path, body? }] }` (at most 50) runs each
 *   operation in order through the server's own routes with the caller's credentials; answers
 *   `{ results: [{ method, path, status, body }] }`. Each operation is a request of the caller's
 *   address: it counts against the caller's rate limit (and is refused with its 429 past it).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import { STABILITY_ORDER } from '../../core/listing.js';
import { VERSION_PATTERN, VERSION_RULE } from '../../core/versions.js';
import type { TokenRecord } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, type ErrorDetail } from '../envelope.js';
import { changeLifecycle, changeLifecycleBulk, MAX_DEPRECATION_MESSAGE, purgeVersion, type LifecycleFilter, type LifecycleUpdate } from '../lifecycle.js';
import { VERSION_PARAMS } from '../params.js';
import { READS } from '../rate-limit.js';

const NO_STORE = 'no-store';
export const MAX_BATCH_OPERATIONS = 50;


const STABILITY = { type: 'string', enum: STABILITY_ORDER } as const;
const MESSAGE = { type: ['string', 'null'], minLength: 1, maxLength: MAX_DEPRECATION_MESSAGE } as const;

const PATCH_BODY = {
  type: 'object',
  additionalProperties: false,
  properties: { stability: STABILITY, deprecationMessage: MESSAGE },
} as const;

const BOUND = { type: 'string', pattern: VERSION_PATTERN.source, 'x-messages': { pattern: VERSION_RULE } } as const;

const BULK_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['filter', 'update'],
  properties: {
    filter: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: {
        id: { type: 'string', minLength: 1 },
        version: {
          oneOf: [
            { type: 'string', minLength: 1 },
            { type: 'object', additionalProperties: false, minProperties: 1, properties: { lt: BOUND, lte: BOUND, gt: BOUND, gte: BOUND } },
          ],
        },
        stability: { oneOf: [STABILITY, { type: 'array', minItems: 1, items: STABILITY }] },
      },
    },
    update: {
      type: 'object',
      additionalProperties: false,
      properties: { stability: STABILITY, deprecationMessage: MESSAGE, yanked: { const: true } },
    },
  },
} as const;

const BATCH_METHODS = ['GET', 'PATCH', 'DELETE'] as const;

const BATCH_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['operations'],
  properties: {
    operations: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BATCH_OPERATIONS,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['method', 'path'],
        properties: { method: { type: 'string', enum: BATCH_METHODS }, path: { type: 'string', pattern: '^/', maxLength: 2048 }, body: {} },
      },
    },
  },
} as const;

interface BatchOperation {
  method: (typeof BATCH_METHODS)[number];
  path: string;
  body?: unknown;
}

/** The writes a batch may run: this item's routes (reads: any GET but the archives). */
const VERSION_PATH = /^(?:\/v1)?\/templates\/[^/]+\/versions\/[^/]+$/;
const BULK_PATH = /^(?:\/v1)?\/templates\/bulk$/;
/**
 * An operation's path as the router will see it, or a reason to refuse it. Only plain segments of
 * unreserved characters, none starting with `.`: no `.`/`..` segment, percent-escape, backslash or fragment, which the
 * router would resolve or decode after the checks below ran on the raw text. The query may hold
 * percent-escapes (search text); it never selects a route.
 */
function batchPath(raw: string): { path: string } | { problem: string } {
  const [path = '', ...query] = raw.split('?');
  if (!/^(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/.test(path)) {
    return { problem: `path ${JSON.stringify(raw.slice(0, 200))} must be a route of this server: /segments of letters, digits, '.', '_', '~' and '-' (no '..', '%', '\\' or '#')` };
  }
  if (/[#\\\s]/.test(query.join('?'))) return { problem: `the query of ${JSON.stringify(raw.slice(0, 200))} may not hold '#', '\\' or white space` };
  return { path };
}

function batchProblem(operation: BatchOperation): string | undefined {
  const checked = batchPath(operation.path);
  if ('problem' in checked) return checked.problem;
  const { path } = checked;
  if (/\/templates\/batch$/.test(path)) return 'a batch cannot contain a batch';
  if (operation.method === 'GET') return /\/archive$/.test(path) ? 'archives are not read through a batch' : undefined;
  if (operation.method === 'DELETE' && VERSION_PATH.test(path)) return undefined;
  if (operation.method === 'PATCH' && (VERSION_PATH.test(path) || BULK_PATH.test(path))) return undefined;
  return `${operation.method} ${path} cannot run in a batch (PATCH or DELETE /templates/{id}/versions/{version}, PATCH /templates/bulk, or a GET)`;
}

/** The request headers an operation of a batch is sent with: the caller's credentials and API version. */
const FORWARDED_HEADERS = ['authorization', 'x-api-key', 'api-version', 'cookie', 'accept'] as const;

function tokenOf(request: FastifyRequest): TokenRecord {
  if (!request.token) throw new ApiError(401, 'UNAUTHORIZED', 'a token is required');
  return request.token;
}

function send(request: FastifyRequest, reply: FastifyReply, data: unknown): FastifyReply {
  return reply.header('Cache-Control', NO_STORE).send(envelope(request, data));
}

export const lifecycleRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const publisher = app.requireToken();

  app.patch<{ Params: { id: string; version: string }; Body: LifecycleUpdate }>(
    '/templates/:id/versions/:version',
    {
      preValidation: publisher,
      schema: { params: VERSION_PARAMS, body: PATCH_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { stability?, deprecationMessage? }', invalid: 'the lifecycle change is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const { entry } = await changeLifecycle(context, tokenOf(request), request.params.id, request.params.version, request.body);
      return send(request, reply, entry);
    },
  );

  app.delete<{ Params: { id: string; version: string } }>(
    '/templates/:id/versions/:version',
    { preValidation: publisher, schema: { params: VERSION_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } },
    async (request, reply) => {
      const { entry } = await changeLifecycle(context, tokenOf(request), request.params.id, request.params.version, { yanked: true });
      return send(request, reply, entry);
    },
  );

  app.delete<{ Params: { id: string; version: string } }>(
    '/templates/:id/versions/:version/purge',
    { preValidation: app.requireToken('admin', 'purging a version requires an admin token'), schema: { params: VERSION_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } },
    async (request, reply) => {
      await purgeVersion(context, request.params.id, request.params.version);
      return reply.code(204).header('Cache-Control', NO_STORE).send();
    },
  );

  app.patch<{ Body: { filter: LifecycleFilter; update: LifecycleUpdate } }>(
    '/templates/bulk',
    {
      preValidation: publisher,
      schema: { body: BULK_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { filter, update }', invalid: 'the bulk change is invalid', root: 'body' } },
    },
    async (request, reply) => {
      return send(request, reply, await changeLifecycleBulk(context, tokenOf(request), request.body.filter, request.body.update));
    },
  );

  app.post<{ Body: { operations: BatchOperation[] } }>(
    '/templates/batch',
    {
      preValidation: publisher,
      schema: { body: BATCH_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { operations: [{ method, path, body? }] }', invalid: 'the batch is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const { operations } = request.body;
      // Every operation is checked before any runs: a refused batch changes nothing.
      const details: ErrorDetail[] = [];
      operations.forEach((operation, index) => {
        const problem = batchProblem(operation);
        if (problem) details.push({ field: `operations.${index}`, code: 'UNSUPPORTED_OPERATION', message: problem });
      });
      if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the batch is invalid', details);
      const headers: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const results: { method: string; path: string; status: number; body: unknown }[] = [];
      for (const operation of operations) {
        const response = await app.inject({
          method: operation.method,
          url: operation.path,
          // From the caller's address: each operation counts against the caller's own rate limit (not 127.0.0.1's, shared by every batch).
          remoteAddress: request.ip,
          headers: operation.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          ...(operation.body === undefined ? {} : { payload: JSON.stringify(operation.body) }),
        });
        let body: unknown = null;
        if (response.body !== '' && /json/.test(String(response.headers['content-type'] ?? ''))) {
          try {
            body = JSON.parse(response.body) as unknown;
          } catch {
            body = null;
          }
        }
        results.push({ method: operation.method, path: operation.path, status: response.statusCode, body });
      }
      return send(request, reply, { results });
    },
  );

  return Promise.resolve();
};
