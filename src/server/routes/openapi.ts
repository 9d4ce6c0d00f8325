/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of the server (openapi/openapi.json in the
 * repository), with `servers` pointing at the server's public URL (and its `/v1` prefix).
 */
import { createHash } from 'node:crypto';

import type { FastifyPluginAsync } from 'fastify';

import openapiDocument from '../../../openapi/openapi.json' with { type: 'json' };
import type { ServerContext } from '../context.js';
import { READS } from '../rate-limit.js';
import { ifNoneMatchMatches } from '../static-files.js';

export const OPENAPI_CACHE_CONTROL = 'public, max-age=300';

/** The document as served: the repository's, with `servers` set to `publicUrl` and `publicUrl/v1`. */
export function servedOpenapi(publicUrl: string): Record<string, unknown> {
  return {
    ...openapiDocument,
    servers: [
      { url: publicUrl || '/', description: 'This registry server.' },
      { url: `${publicUrl}/v1`, description: 'The same routes under the version prefix /v1 (interface version 1.0).' },
    ],
  };
}

export const openapiRoute: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const body = `${JSON.stringify(servedOpenapi(context.publicUrl), null, 2)}\n`;
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;

  app.get('/openapi.json', { config: { rateLimit: READS, cache: 'openapi' } }, async (request, reply) => {
    void reply.header('ETag', etag).header('Cache-Control', OPENAPI_CACHE_CONTROL);
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatchMatches(ifNoneMatch, [etag])) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(body);
  });
  return Promise.resolve();
};
