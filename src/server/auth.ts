/**
 * Authentication as a route hook: a route that needs a token declares
 * `preValidation: app.requireToken()` (any valid token) or `app.requireToken('admin')`; the hook
 * answers 401 (with WWW-Authenticate) without a valid bearer token and 403 with another role's,
 * and leaves the token's record on `request.token`.
 *
 * It runs after the rate limit (an onRequest hook: refused requests count too) and before the
 * body is validated (a stranger learns nothing about the schema).
 */
import type { FastifyInstance, FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import { secretsEqual } from '../store/secrets.js';
import type { TokenRecord, TokenRole } from '../store/types.js';
import type { ServerContext } from './context.js';
import { ApiError } from './envelope.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** A hook that refuses the request without a valid token (401), or of another role than `role` (403, `forbidden` as the message). */
    requireToken(role?: TokenRole, forbidden?: string): preValidationAsyncHookHandler;
  }
  interface FastifyRequest {
    /** The record of the request's bearer token, set by `requireToken`. */
    token?: TokenRecord;
  }
}

const ADMIN_FROM_ENVIRONMENT: TokenRecord = { id: 'env-admin', role: 'admin', owner: 'admin', createdAt: new Date(0).toISOString() };

function unauthorized(message: string): ApiError {
  return new ApiError(401, 'UNAUTHORIZED', message, [], { 'WWW-Authenticate': 'Bearer realm="template-registry"' });
}

/** The token record behind the request's bearer token; 401 when missing or unknown. */
async function authenticate(request: FastifyRequest, context: Pick<ServerContext, 'storage' | 'adminToken'>): Promise<TokenRecord> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match?.[1]) throw unauthorized('a bearer token is required: Authorization: Bearer <token>');
  const token = match[1];
  if (context.adminToken && secretsEqual(token, context.adminToken)) return ADMIN_FROM_ENVIRONMENT;
  const record = await context.storage.tokens.authenticate(token);
  if (!record) throw unauthorized('the bearer token is not valid');
  return record;
}

export const authPlugin = fastifyPlugin<{ context: Pick<ServerContext, 'storage' | 'adminToken'> }>(
  (app: FastifyInstance, { context }, done) => {
    app.decorateRequest('token', undefined);
    app.decorate('requireToken', (role?: TokenRole, forbidden = `this route requires a token with the ${String(role)} role`): preValidationAsyncHookHandler =>
      async (request) => {
        const token = await authenticate(request, context);
        if (role !== undefined && token.role !== role && token.role !== 'admin') throw new ApiError(403, 'FORBIDDEN', forbidden);
        request.token = token;
      });
    done();
  },
  { name: 'template-registry-auth' },
);
