/**
 * Accounts and logins (the spec's authentication patterns):
 *
 * - `POST /users` (admin): makes a publisher or admin account `{ email, password, role?, owner?, name? }`;
 *   409 EMAIL_EXISTS for a taken e-mail. `GET /users` (admin) lists them with the list conventions
 *   (query.ts `USER_LIST`: `data` + `pagination`, page/limit, cursor, sort, fields); `GET /users/me` says who
 *   the credential is (any credential).
 * - `POST /api/auth/login` `{ email, password }`: `data` is `{ accessToken, refreshToken, expiresIn, tokenType }`.
 * - `POST /api/auth/refresh` `{ refreshToken }`: a new pair; the old refresh token stops working
 *   (presented again, it ends every token of its login).
 * - `POST /api/auth/session` `{ email, password }`: a browser login; 204 with the session cookie
 *   (HttpOnly, SameSite=Strict, 24 h, Secure over https). `DELETE /api/auth/session` ends it.
 *
 * Failed logins (both login routes) are limited per account and address, per address and per account
 * (login-throttle.ts); password hashes wait their turn in the hash queue (hash-queue.ts: 503 when full).
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import type { TokenRole, UserRecord } from '../../store/types.js';
import {
  AccountInputError,
  accountProblems,
  checkCredentials,
  createAccount,
  issueTokenPair,
  MAX_PASSWORD_LENGTH,
  refreshTokenPair,
  SESSION_COOKIE,
  SESSION_SECONDS,
  sessionCookieOptions,
} from '../accounts.js';
import { crossOriginRefusal, crossOriginWrite, sessionCookieOf } from '../auth.js';
import { CREDENTIAL_CACHE_CONTROL } from '../caching.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, invalidInput, validationError } from '../envelope.js';
import { checkedListQuery } from '../list-route.js';
import { LoginThrottle } from '../login-throttle.js';
import { runList, USER_LIST } from '../query.js';
import { READS } from '../rate-limit.js';

const ADMIN_ONLY = 'managing accounts requires an admin credential';

/** A password as a body gives it, at account creation and at login alike (its rules: server/accounts.ts). */
const PASSWORD_FIELD = { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH } as const;

const USER_BODY = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 3, maxLength: 254 },
    password: PASSWORD_FIELD,
    role: { type: 'string', enum: ['publisher', 'admin'] },
    owner: { type: 'string', minLength: 1, maxLength: 214 },
    name: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const;

const LOGIN_BODY = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 1, maxLength: 254 },
    password: PASSWORD_FIELD,
  },
} as const;

const REFRESH_BODY = {
  type: 'object',
  required: ['refreshToken'],
  additionalProperties: false,
  properties: { refreshToken: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;

interface UserBody {
  email: string;
  password: string;
  role?: TokenRole;
  owner?: string;
  name?: string;
}

interface LoginBody {
  email: string;
  password: string;
}

const CHALLENGE = 'Bearer realm="template-registry"';

function badCredentials(): ApiError {
  return new ApiError(401, 'UNAUTHORIZED', 'the e-mail or the password is wrong', [], { 'WWW-Authenticate': CHALLENGE });
}

/**
 * The refusal of a new account's body, or undefined when it is right: the schema's problems (missing
 * fields, types, unknown fields) and the account rules' (accountProblems: password length, e-mail
 * form) together, so one answer names every field to fix: 400 when a field is missing, else 422
 * (validationStatus). One detail per field, the schema's first: a 2 000-character password breaks
 * both, and one message says it. A body that is not a JSON object stays a 400 BAD_REQUEST.
 */
function invalidAccount(request: FastifyRequest): ApiError | undefined {
  const schemaError = request.validationError ? validationError(request.validationError as FastifyError, request) : undefined;
  if (schemaError && schemaError.code !== 'VALIDATION_ERROR') return schemaError;
  const details = [...(schemaError?.details ?? [])];
  const named = new Set(details.map((detail) => detail.field));
  for (const problem of accountProblems(request.body as Record<string, unknown>)) {
    if (!named.has(problem.field)) details.push(problem);
  }
  return details.length > 0 ? invalidInput('the account is invalid', details) : undefined;
}

/** The `proto` of the last element of an RFC 7239 `Forwarded` header (the nearest proxy's), lower-cased; undefined without one. */
function forwardedProto(header: string | undefined): string | undefined {
  // Elements are split on `,` and pairs on `;` outside quoted strings (a quoted `for` may hold either).
  const elements = (header ?? '').match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? [];
  for (const pair of elements.at(-1)?.match(/(?:[^;"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
    const equals = pair.indexOf('=');
    if (equals < 0 || pair.slice(0, equals).trim().toLowerCase() !== 'proto') continue;
    const value = pair.slice(equals + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    return /^[a-z][a-z\d+.-]*$/.test(value) ? value : undefined;
  }
  return undefined;
}

/**
 * Whether a trusted proxy said, in RFC 7239 `Forwarded: proto=https`, that the client came over
 * https. fastify applies the server's `trustProxy` only to X-Forwarded-Proto, and that setting is not
 * in the context: so the nearest proxy's `proto` is shown to fastify's own `request.protocol` as
 * X-Forwarded-Proto for one synchronous read (then removed), and both headers pass the same trust
 * decision; a client's own Forwarded, without a trusted proxy, changes nothing. When both headers
 * are sent, X-Forwarded-Proto (already read by `request.protocol`) decides.
 */
function forwardedHttps(request: FastifyRequest): boolean {
  const headers = request.raw.headers;
  if (headers['x-forwarded-proto'] !== undefined) return false;
  const proto = forwardedProto(headers.forwarded);
  if (proto === undefined) return false;
  headers['x-forwarded-proto'] = proto;
  try {
    return request.protocol === 'https';
  } finally {
    delete headers['x-forwarded-proto'];
  }
}

/** Whether the request reached the server over https (directly, or through a trusted proxy's X-Forwarded-Proto or Forwarded). */
function overHttps(request: FastifyRequest, context: ServerContext): boolean {
  return request.protocol === 'https' || context.publicUrl.startsWith('https:') || forwardedHttps(request);
}

export const accountRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const admin = app.requireToken('admin', ADMIN_ONLY);
  const anyCredential = app.requireToken();
  const accounts = context.storage.accounts;
  const throttle = new LoginThrottle(accounts, context.limits);

  /**
   * The account of a login's credentials, with the failed-login limits applied (counted before the
   * password is checked: login-throttle.ts) and its hash in the hash queue's turn; 401, 429 or 503 otherwise.
   */
  async function logIn(request: FastifyRequest<{ Body: LoginBody }>): Promise<UserRecord> {
    const { email, password } = request.body;
    const attempt = await throttle.admit(email, request.ip);
    let user: UserRecord | undefined;
    try {
      user = await checkCredentials(accounts, email, password, context.passwords);
    } catch (error) {
      // Not evaluated (the hash queue was full, the storage failed): it does not count as a failure.
      await throttle.settle(attempt, 'unchecked');
      throw error;
    }
    await throttle.settle(attempt, user ? 'succeeded' : 'failed');
    if (!user) throw badCredentials();
    return user;
  }

  const send = (request: FastifyRequest, reply: FastifyReply, data: unknown, status = 200): FastifyReply =>
    reply.code(status).header('Cache-Control', CREDENTIAL_CACHE_CONTROL).send(envelope(request, data));

  app.post<{ Body: UserBody }>(
    '/users',
    {
      preValidation: admin,
      schema: { body: USER_BODY },
      // The handler answers schema problems itself, together with the account rules' (invalidAccount).
      attachValidation: true,
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { email, password, role?, owner?, name? }', invalid: 'the account is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const invalid = invalidAccount(request);
      if (invalid) throw invalid;
      let creation;
      try {
        creation = await createAccount(accounts, request.body, context.passwords);
      } catch (error) {
        if (error instanceof AccountInputError) throw invalidInput('the account is invalid', error.details);
        throw error;
      }
      if (!creation.created) {
        throw new ApiError(409, 'EMAIL_EXISTS', `an account with the e-mail ${request.body.email.trim().toLowerCase()} exists already`, [
          { field: 'email', code: 'EMAIL_EXISTS', message: 'is already registered' },
        ]);
      }
      void reply.header('Location', `/users/${creation.user.id}`);
      return send(request, reply, creation.user, 201);
    },
  );

  // A list route: the list conventions of query.ts (page/limit, cursor, sort, fields; anything else a 400).
  app.get('/users', { preValidation: admin, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const query = checkedListQuery(USER_LIST, request.query);
    const result = runList(USER_LIST, await accounts.listUsers(), query);
    return reply.header('Cache-Control', CREDENTIAL_CACHE_CONTROL).send(envelope(request, result.data, { pagination: result.pagination }));
  });

  app.get('/users/me', { preValidation: anyCredential, config: { rateLimit: READS, cache: 'dynamic' } }, (request, reply) => {
    const token = request.token;
    if (!token) throw new ApiError(401, 'UNAUTHORIZED', 'a credential is required');
    const account = request.account;
    return send(request, reply, {
      ...(account ? { id: account.id, email: account.email, ...(account.name !== undefined ? { name: account.name } : {}), kind: 'account' } : { id: token.id, kind: 'token' }),
      role: token.role,
      owner: token.owner,
    });
  });

  app.post<{ Body: LoginBody }>(
    '/api/auth/login',
    { schema: { body: LOGIN_BODY }, config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { email, password }', invalid: 'the login is invalid', root: 'body' } } },
    async (request, reply) => send(request, reply, await issueTokenPair(accounts, await logIn(request))),
  );

  app.post<{ Body: { refreshToken: string } }>(
    '/api/auth/refresh',
    { schema: { body: REFRESH_BODY }, config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { refreshToken }', invalid: 'the refresh is invalid', root: 'body' } } },
    async (request, reply) => {
      const pair = await refreshTokenPair(accounts, request.body.refreshToken);
      if (!pair) throw new ApiError(401, 'UNAUTHORIZED', 'the refresh token is not valid (unknown, expired, used already or revoked): log in again', [], { 'WWW-Authenticate': CHALLENGE });
      return send(request, reply, pair);
    },
  );

  app.post<{ Body: LoginBody }>(
    '/api/auth/session',
    { schema: { body: LOGIN_BODY }, config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { email, password }', invalid: 'the login is invalid', root: 'body' } } },
    async (request, reply) => {
      const user = await logIn(request);
      const session = await accounts.createSession({ userId: user.id, kind: 'cookie', expiresAt: new Date(Date.now() + SESSION_SECONDS * 1000) });
      return reply.code(204).header('Cache-Control', CREDENTIAL_CACHE_CONTROL).setCookie(SESSION_COOKIE, session.secret, sessionCookieOptions(overHttps(request, context))).send();
    },
  );

  app.delete('/api/auth/session', { config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const secret = sessionCookieOf(request);
    // A page of another origin cannot end the session either.
    const refused = secret === undefined ? undefined : crossOriginWrite(request, context.publicUrl);
    if (refused) throw crossOriginRefusal(refused);
    if (secret !== undefined) await accounts.revokeSession(secret);
    return reply.code(204).header('Cache-Control', CREDENTIAL_CACHE_CONTROL).clearCookie(SESSION_COOKIE, sessionCookieOptions(overHttps(request, context))).send();
  });

  return Promise.resolve();
};
