/**
 * Authentication as a route hook: a route that needs a token declares
 * `preValidation: app.requireToken()` (any valid token) or `app.requireToken('admin')`; the hook
 * answers 401 (with WWW-Authenticate) without a valid token (a bearer token, or the same token as
 * an API key: `Authorization: ApiKey <key>` or `X-API-Key: <key>`; unknown, expired or revoked:
 * the storage is asked on every request, so a revocation by another process applies at once) and
 * 403 with another role's, and leaves the token's record on `request.token`.
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

const CHALLENGE = 'Bearer realm="template-registry"';

/**
 * A 401. A presented token that is refused also gets RFC 6750's `error="invalid_token"` and one
 * detail saying why (`TOKEN_INVALID`, `TOKEN_EXPIRED`, `TOKEN_REVOKED`); never the token, its hash
 * or anything about other tokens.
 */
function unauthorized(message: string, refused?: { code: string; why: string }): ApiError {
  if (!refused) return new ApiError(401, 'UNAUTHORIZED', message, [], { 'WWW-Authenticate': CHALLENGE });
  return new ApiError(401, 'UNAUTHORIZED', message, [{ field: 'Authorization', code: refused.code, message: refused.why }], {
    'WWW-Authenticate': `${CHALLENGE}, error="invalid_token", error_description="${refused.why}"`,
  });
}

/**
 * The token a request presents, in any of the seed's forms: `Authorization: Bearer <token>`,
 * `Authorization: ApiKey <key>` or `X-API-Key: <key>` (an API key is a token). Two different
 * tokens in one request are refused rather than one picked.
 */
export function presentedToken(headers: FastifyRequest['headers']): { token?: string; conflict?: boolean } {
  const authorization = /^(?:Bearer|ApiKey)\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  const header = headers['x-api-key'];
  const apiKey = (Array.isArray(header) ? header[0] : header)?.trim() || undefined;
  if (authorization !== undefined && apiKey !== undefined && !secretsEqual(authorization, apiKey)) return { conflict: true };
  const token = authorization ?? apiKey;
  return token === undefined ? {} : { token };
}

/** The token record behind the request's token; 401 when missing, unknown, expired or revoked. */
async function authenticate(request: FastifyRequest, context: Pick<ServerContext, 'storage' | 'adminToken'>): Promise<TokenRecord> {
  const presented = presentedToken(request.headers);
  if (presented.conflict) throw unauthorized('two different tokens were presented (Authorization and X-API-Key): send one', { code: 'TOKEN_INVALID', why: 'two different tokens' });
  if (presented.token === undefined) throw unauthorized('a token is required: Authorization: Bearer <token> (or Authorization: ApiKey <key>, or X-API-Key: <key>)');
  const token = presented.token;
  if (context.adminToken && secretsEqual(token, context.adminToken)) return ADMIN_FROM_ENVIRONMENT;
  const check = await context.storage.tokens.checkToken(token);
  if (check.valid) return check.record;
  switch (check.reason) {
    case 'expired':
      throw unauthorized(`the bearer token expired at ${check.record.expiresAt ?? ''}: ask an admin for a new one`, { code: 'TOKEN_EXPIRED', why: 'the token expired' });
    case 'revoked':
      throw unauthorized(`the bearer token was revoked at ${check.record.revokedAt ?? ''}: ask an admin for a new one`, { code: 'TOKEN_REVOKED', why: 'the token was revoked' });
    default:
      throw unauthorized('the bearer token is not valid', { code: 'TOKEN_INVALID', why: 'the token is not valid' });
  }
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
