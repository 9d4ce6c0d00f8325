/**
 * Authentication as a route hook: a route that needs a credential declares
 * `preValidation: app.requireToken()` (any valid token) or `app.requireToken('admin')`; the hook
 * answers 401 (with WWW-Authenticate) without a valid token (a bearer token, or the same token as
 * an API key: `Authorization: ApiKey <key>` or `X-API-Key: <key>`; unknown, expired or revoked:
 * the storage is asked on every request, so a revocation by another process applies at once; or an
 * access token from the login route, refused too once its login ends, or a browser session cookie:
 * see accounts.ts) and
 * 403 with another role's, or for a write carried by the session cookie from another origin
 * (`crossOriginWrite`), and leaves the token's record on `request.token`.
 *
 * It runs after the rate limit (an onRequest hook: refused requests count too) and before the
 * body is validated (a stranger learns nothing about the schema).
 */
import type { FastifyInstance, FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import fastifyPlugin from 'fastify-plugin';

import { secretsEqual } from '../store/secrets.js';
import type { AccountStore, TokenRecord, TokenRole, UserRecord } from '../store/types.js';
import { accountCredential, looksLikeAccessToken, SESSION_COOKIE, verifyAccessToken } from './accounts.js';
import type { ServerContext } from './context.js';
import { ApiError } from './envelope.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** A hook that refuses the request without a valid token (401), or of another role than `role` (403, `forbidden` as the message). */
    requireToken(role?: TokenRole, forbidden?: string): preValidationAsyncHookHandler;
  }
  interface FastifyRequest {
    /** What the request's credential acts as (a token's record, or an account's as one), set by `requireToken`. */
    token?: TokenRecord;
    /** The account, when the credential was an access token or a session cookie. */
    account?: UserRecord;
  }
}

const ADMIN_FROM_ENVIRONMENT: TokenRecord = { id: 'env-admin', role: 'admin', owner: 'admin', createdAt: new Date(0).toISOString() };

const CHALLENGE = 'Bearer realm="template-registry"';

/**
 * Where a credential came from, so that a refusal names what the client actually sent: the detail's
 * `field` is the header, the message says which form (`the API key in X-API-Key is not valid`).
 */
export interface CredentialSource {
  /** The header carrying it: `Authorization`, `X-API-Key` or `Cookie`. */
  field: 'Authorization' | 'X-API-Key' | 'Cookie';
  /** `the bearer token`, `the API key in Authorization: ApiKey`, `the API key in X-API-Key`. */
  token: string;
  /** The same words for an access token (a JWT) sent that way. */
  accessToken: string;
}

const BEARER: CredentialSource = { field: 'Authorization', token: 'the bearer token', accessToken: 'the access token' };
const APIKEY_SCHEME: CredentialSource = { field: 'Authorization', token: 'the API key in Authorization: ApiKey', accessToken: 'the access token in Authorization: ApiKey' };
const X_API_KEY: CredentialSource = { field: 'X-API-Key', token: 'the API key in X-API-Key', accessToken: 'the access token in X-API-Key' };
const SESSION_FIELD = 'Cookie';

/**
 * A 401. A presented credential that is refused also gets RFC 6750's `error="invalid_token"` and
 * one detail naming the header it came in and saying why (`TOKEN_INVALID`, `TOKEN_EXPIRED`,
 * `TOKEN_REVOKED`, `SESSION_...`); never the token, its hash or anything about other tokens.
 */
function unauthorized(message: string, refused?: { field: string; code: string; why: string }): ApiError {
  if (!refused) return new ApiError(401, 'UNAUTHORIZED', message, [], { 'WWW-Authenticate': CHALLENGE });
  return new ApiError(401, 'UNAUTHORIZED', message, [{ field: refused.field, code: refused.code, message: refused.why }], {
    'WWW-Authenticate': `${CHALLENGE}, error="invalid_token", error_description="${refused.why}"`,
  });
}

/**
 * The token a request presents, in any of the seed's forms: `Authorization: Bearer <token>`,
 * `Authorization: ApiKey <key>` or `X-API-Key: <key>` (an API key is a token), with where it came
 * from. Two different tokens in one request are refused rather than one picked.
 */
export function presentedToken(headers: FastifyRequest['headers']): { token?: string; source?: CredentialSource; conflict?: boolean } {
  const authorization = /^(Bearer|ApiKey)\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
  const header = headers['x-api-key'];
  const apiKey = (Array.isArray(header) ? header[0] : header)?.trim() || undefined;
  const fromAuthorization = authorization?.[2];
  if (fromAuthorization !== undefined && apiKey !== undefined && !secretsEqual(fromAuthorization, apiKey)) return { conflict: true };
  if (fromAuthorization !== undefined) return { token: fromAuthorization, source: authorization?.[1]?.toLowerCase() === 'bearer' ? BEARER : APIKEY_SCHEME };
  return apiKey === undefined ? {} : { token: apiKey, source: X_API_KEY };
}

/** The record behind an access token (a JWT from the login route); 401 when it is expired, forged, its login ended or its account is gone. */
async function authenticateAccessToken(accounts: AccountStore, token: string, source: CredentialSource): Promise<{ record: TokenRecord; account: UserRecord }> {
  const verified = await verifyAccessToken(accounts, token);
  if ('user' in verified) return { record: accountCredential(verified.user), account: verified.user };
  const field = source.field;
  switch (verified.refused) {
    case 'expired':
      throw unauthorized(`${source.accessToken} expired: get a new one from POST /api/auth/refresh`, { field, code: 'TOKEN_EXPIRED', why: 'the access token expired' });
    case 'ended':
      throw unauthorized(`${source.accessToken} was revoked: its login ended (a logout, or a refresh token used twice) or its account was removed; log in again`, {
        field,
        code: 'TOKEN_REVOKED',
        why: 'the login of the access token ended',
      });
    default:
      throw unauthorized(`${source.accessToken} is not valid`, { field, code: 'TOKEN_INVALID', why: 'the access token is not valid' });
  }
}

/** The record behind a browser session cookie; 401 when the session is unknown, expired or ended. */
async function authenticateSession(accounts: AccountStore, secret: string): Promise<{ record: TokenRecord; account: UserRecord }> {
  const check = await accounts.checkSession(secret, 'cookie');
  if (check.valid) return { record: accountCredential(check.user), account: check.user };
  if (check.reason === 'expired') {
    throw unauthorized(`the session cookie ${SESSION_COOKIE} expired: log in again`, { field: SESSION_FIELD, code: 'SESSION_EXPIRED', why: 'the session expired' });
  }
  throw unauthorized(`the session cookie ${SESSION_COOKIE} is not valid: log in again`, { field: SESSION_FIELD, code: 'SESSION_INVALID', why: 'the session is not valid' });
}

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The origin (`scheme://host[:port]`) of a URL, lower-cased; undefined when it has none. */
function originOf(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * Why a write carried by the session cookie is refused as coming from another origin, or undefined
 * when it may go on. A browser says where a request comes from: `Sec-Fetch-Site` (which a page
 * cannot set) must be `same-origin` (or `none`: the user's own action); without it, `Origin` must
 * be this server's (its public URL's, or the one the request was sent to). A page of another site,
 * or of another port of this host (same-site, so SameSite=Strict still sends the cookie), or a
 * sandboxed one (`Origin: null`) is refused, multipart forms included. A client sending neither
 * header is not a browser: no other page can make it send the cookie.
 */
export function crossOriginWrite(request: FastifyRequest, publicUrl: string): { field: string; why: string } | undefined {
  if (SAFE_METHODS.has(request.method)) return undefined;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' || site === 'none' ? undefined : { field: 'Sec-Fetch-Site', why: `the request came from another origin (Sec-Fetch-Site: ${site})` };
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  const own = [originOf(publicUrl), originOf(`${request.protocol}://${request.host}`)];
  const from = originOf(origin);
  return from !== undefined && own.includes(from) ? undefined : { field: 'Origin', why: `the request came from another origin (Origin: ${origin.slice(0, 200)})` };
}

/** The 403 of a cookie-authenticated write from another origin (crossOriginWrite). */
export function crossOriginRefusal(refused: { field: string; why: string }): ApiError {
  return new ApiError(403, 'FORBIDDEN', `${refused.why}: a write authenticated by the session cookie ${SESSION_COOKIE} must come from this registry's own pages; other clients send a token`, [
    { field: refused.field, code: 'CROSS_ORIGIN', message: refused.why },
  ]);
}

/** The session cookie a request carries (parsed by @fastify/cookie, only where a credential is looked for), if any. */
export function sessionCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined || header === '') return undefined;
  return request.server.parseCookie(header)[SESSION_COOKIE] || undefined;
}

/** The credential of a request (a token, an access token or a session cookie); 401 when missing, unknown, expired or revoked, 403 for a cookie's write from another origin. */
async function authenticate(request: FastifyRequest, context: Pick<ServerContext, 'storage' | 'adminToken' | 'publicUrl' | 'clock'>): Promise<{ record: TokenRecord; account?: UserRecord }> {
  const presented = presentedToken(request.headers);
  if (presented.conflict) {
    throw unauthorized('two different tokens were presented (Authorization and X-API-Key): send one', { field: 'Authorization', code: 'TOKEN_INVALID', why: 'two different tokens' });
  }
  if (presented.token === undefined || presented.source === undefined) {
    const session = sessionCookieOf(request);
    if (session !== undefined) {
      const refused = crossOriginWrite(request, context.publicUrl);
      if (refused) throw crossOriginRefusal(refused);
      return authenticateSession(context.storage.accounts, session);
    }
    throw unauthorized('a token is required: Authorization: Bearer <token> (or Authorization: ApiKey <key>, or X-API-Key: <key>, or a session cookie from POST /api/auth/session)');
  }
  const { token, source } = presented;
  if (context.adminToken && secretsEqual(token, context.adminToken)) return { record: ADMIN_FROM_ENVIRONMENT };
  if (looksLikeAccessToken(token)) return authenticateAccessToken(context.storage.accounts, token, source);
  const check = await context.storage.tokens.checkToken(token, context.clock?.());
  if (check.valid) return { record: check.record };
  const field = source.field;
  switch (check.reason) {
    case 'expired':
      throw unauthorized(`${source.token} expired at ${check.record.expiresAt ?? ''}: ask an admin for a new one`, { field, code: 'TOKEN_EXPIRED', why: 'the token expired' });
    case 'revoked':
      throw unauthorized(`${source.token} was revoked at ${check.record.revokedAt ?? ''}: ask an admin for a new one`, { field, code: 'TOKEN_REVOKED', why: 'the token was revoked' });
    default:
      throw unauthorized(`${source.token} is not valid`, { field, code: 'TOKEN_INVALID', why: 'the token is not valid' });
  }
}

export const authPlugin = fastifyPlugin<{ context: Pick<ServerContext, 'storage' | 'adminToken' | 'publicUrl' | 'clock'> }>(
  async (app: FastifyInstance, { context }) => {
    // Cookies are parsed where a credential is looked for (sessionCookieOf), not on every request.
    await app.register(fastifyCookie, { hook: false });
    app.decorateRequest('token', undefined);
    app.decorateRequest('account', undefined);
    app.decorate('requireToken', (role?: TokenRole, forbidden = `this route requires a token with the ${String(role)} role`): preValidationAsyncHookHandler =>
      async (request) => {
        const { record, account } = await authenticate(request, context);
        if (role !== undefined && record.role !== role && record.role !== 'admin') throw new ApiError(403, 'FORBIDDEN', forbidden);
        request.token = record;
        request.account = account;
      });
  },
  { name: 'template-registry-auth' },
);
