/**
 * Accounts and the seed's authentication patterns against a running server:
 * admin-made accounts (409 EMAIL_EXISTS, scrypt hashes), the login route's access token (a signed,
 * short-lived JWT) and refresh token (rotated, the old one refused), the browser session cookie,
 * co-owners managed by owners only, and failed logins limited per account and per address.
 */
import { createHmac } from 'node:crypto';

import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { ACCESS_TOKEN_SECONDS } from '../../src/server/accounts.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE, templateVersion } from '../project/versions.js';

interface Answer {
  status: number;
  headers: Headers;
  body: { data?: unknown; error?: { code: string; message: string; details?: { field: string; code: string; message: string }[]; retryAfter?: number } } & Record<string, unknown>;
}

async function call(server: TestServer, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url}${path}`, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) };
}

interface Pair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType: string;
}

const PASSWORD = 'correct horse battery staple';

async function withAccount(options: Parameters<typeof startRegistryServer>[0] = {}): Promise<{ server: TestServer; admin: string }> {
  const server = await startRegistryServer(options);
  const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
  const created = await call(server, 'POST', '/users', { token: admin, body: { email: 'Ada@Example.com', password: PASSWORD, owner: 'ada' } });
  expect(created.status).toBe(201);
  return { server, admin };
}

async function login(server: TestServer, email = 'ada@example.com', password = PASSWORD): Promise<Answer> {
  return call(server, 'POST', '/api/auth/login', { body: { email, password } });
}

const pairOf = (answer: Answer): Pair => answer.body.data as Pair;

/** `field CODE` of each detail of an error, sorted: what a user reads to fix the request. */
const fieldCodes = (answer: Answer): string[] => (answer.body.error?.details ?? []).map((detail) => `${detail.field} ${detail.code}`).sort();

function decodePart(part: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('accounts', () => {
  it('lets an admin create accounts, refuses a taken e-mail with 409 EMAIL_EXISTS, and never shows a password or its hash', async () => {
    const { server, admin } = await withAccount();
    const again = await call(server, 'POST', '/users', { token: admin, body: { email: 'ada@example.COM', password: 'another long password' } });
    expect(again.status).toBe(409);
    expect(again.body.error?.code).toBe('EMAIL_EXISTS');
    const listed = await call(server, 'GET', '/users', { token: admin });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([{ id: expect.stringMatching(/^usr_/) as string, email: 'ada@example.com', role: 'publisher', owner: 'ada', createdAt: expect.any(String) as string }]);
    expect(JSON.stringify(listed.body)).not.toContain(PASSWORD);
    const stored = await server.store.accounts.findCredentials('ada@example.com');
    expect(stored?.passwordHash).toMatch(/^scrypt\$/);
    expect(stored?.passwordHash).not.toContain(PASSWORD);
  });

  it('refuses account creation without an admin credential, and names each field that breaks a rule', async () => {
    const { server, admin } = await withAccount();
    expect((await call(server, 'POST', '/users', { body: { email: 'bob@example.com', password: PASSWORD } })).status).toBe(401);
    expect((await call(server, 'POST', '/users', { token: server.token, body: { email: 'bob@example.com', password: PASSWORD } })).status).toBe(403);
    const short = await call(server, 'POST', '/users', { token: admin, body: { email: 'not-an-email', password: 'short' } });
    expect(short.status).toBe(422);
    expect(short.body.error?.code).toBe('VALIDATION_ERROR');
    expect(short.body.error?.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'email', code: 'FORMAT' }), expect.objectContaining({ field: 'password', code: 'MIN_LENGTH' })]),
    );
    // A missing field is a 400 (the spec: "400 invalid JSON or missing fields"), a broken one a 422.
    const missing = await call(server, 'POST', '/users', { token: admin, body: { email: 'bob@example.com' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error?.code).toBe('VALIDATION_ERROR');
    expect(missing.body.error?.details).toEqual([expect.objectContaining({ field: 'password', code: 'REQUIRED' })]);
  });

  it('names every broken field in one answer, a missing field with a too-short password included', async () => {
    const { server, admin } = await withAccount();
    // A missing field makes it a 400, every problem still listed.
    const onlyShort = await call(server, 'POST', '/users', { token: admin, body: { password: 'short' } });
    expect(onlyShort.status).toBe(400);
    expect(onlyShort.body.error?.code).toBe('VALIDATION_ERROR');
    expect(fieldCodes(onlyShort)).toEqual(['email REQUIRED', 'password MIN_LENGTH']);
    const mixed = await call(server, 'POST', '/users', { token: admin, body: { email: 42, password: 'short', role: 'owner', colour: 'red' } });
    expect(mixed.status).toBe(422);
    expect(fieldCodes(mixed)).toEqual(['colour UNKNOWN_FIELD', 'email TYPE', 'password MIN_LENGTH', 'role ENUM']);
    for (const detail of mixed.body.error?.details ?? []) expect(detail.message).not.toBe('');
    // A valid e-mail with another field wrong: the e-mail is not named.
    const password = await call(server, 'POST', '/users', { token: admin, body: { email: 'bob@example.com', password: 'short', name: '' } });
    expect(fieldCodes(password)).toEqual(['name MIN_LENGTH', 'password MIN_LENGTH']);
    // Not a JSON object at all: still a 400, and nothing was made.
    expect((await call(server, 'POST', '/users', { token: admin, body: ['bob@example.com'] })).status).toBe(400);
    expect((await call(server, 'GET', '/users', { token: admin })).body.data).toHaveLength(1);
  });

  it('names every broken field of a login or a refresh body in one answer', async () => {
    const { server } = await withAccount();
    const empty = await call(server, 'POST', '/api/auth/login', { body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.error?.code).toBe('VALIDATION_ERROR');
    expect(fieldCodes(empty)).toEqual(['email REQUIRED', 'password REQUIRED']);
    const typed = await call(server, 'POST', '/api/auth/session', { body: { email: 7, password: '' } });
    expect(typed.status).toBe(422);
    expect(fieldCodes(typed)).toEqual(['email TYPE', 'password MIN_LENGTH']);
    const refresh = await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: '', accessToken: 'x' } });
    expect(refresh.status).toBe(422);
    expect(fieldCodes(refresh)).toEqual(['accessToken UNKNOWN_FIELD', 'refreshToken MIN_LENGTH']);
  });
});

describe('login and refresh', () => {
  it('answers a login with a signed, short-lived JWT access token and a refresh token, and the access token authenticates', async () => {
    const { server } = await withAccount();
    const answer = await login(server, ' ADA@example.com');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toMatch(/no-store/);
    const pair = pairOf(answer);
    expect(pair).toEqual({ accessToken: expect.any(String) as string, refreshToken: expect.any(String) as string, expiresIn: ACCESS_TOKEN_SECONDS, tokenType: 'Bearer' });
    expect(pair.expiresIn).toBeLessThanOrEqual(3600);
    const [header, payload] = pair.accessToken.split('.');
    expect(decodePart(header)).toMatchObject({ alg: 'HS256', typ: 'JWT' });
    const claims = decodePart(payload);
    expect(Number(claims.exp) - Number(claims.iat)).toBe(pair.expiresIn);
    expect(claims.sub).toMatch(/^usr_/);
    const me = await call(server, 'GET', '/users/me', { token: pair.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ kind: 'account', email: 'ada@example.com', role: 'publisher', owner: 'ada' });
  });

  it('refuses a wrong password or an unknown e-mail with the same 401, and a forged or tampered access token', async () => {
    const { server } = await withAccount();
    const wrong = await login(server, 'ada@example.com', 'wrong password!!');
    const unknown = await login(server, 'nobody@example.com');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.error?.message).toBe(unknown.body.error?.message);
    const { accessToken } = pairOf(await login(server));
    const [header, payload] = accessToken.split('.');
    const escalated = Buffer.from(JSON.stringify({ ...decodePart(payload), sub: 'usr_000000000000' })).toString('base64url');
    const forgedSignature = createHmac('sha256', 'guessed key').update(`${header}.${escalated}`).digest('base64url');
    expect((await call(server, 'GET', '/users/me', { token: `${header}.${escalated}.${forgedSignature}` })).status).toBe(401);
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
    expect((await call(server, 'GET', '/users/me', { headers: { authorization: `Bearer ${none}` } })).status).toBe(401);
    expect((await call(server, 'GET', '/users/me', { token: `${accessToken.slice(0, -2)}xx` })).status).toBe(401);
  });

  it('exchanges a refresh token for a new pair once: the old refresh token is refused afterwards', async () => {
    const { server } = await withAccount();
    const first = pairOf(await login(server));
    const refreshed = await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: first.refreshToken } });
    expect(refreshed.status).toBe(200);
    const second = pairOf(refreshed);
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(second.tokenType).toBe('Bearer');
    expect((await call(server, 'GET', '/users/me', { token: second.accessToken })).status).toBe(200);
    const replay = await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: first.refreshToken } });
    expect(replay.status).toBe(401);
    expect(replay.body.error?.code).toBe('UNAUTHORIZED');
    // The replay ended that login: the pair it had given is refused too.
    expect((await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: second.refreshToken } })).status).toBe(401);
    expect((await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: 'trr_made-up' } })).status).toBe(401);
  });

  it('ends the access tokens of a login at once when a rotated refresh token is replayed, and only that login', async () => {
    const { server } = await withAccount();
    const first = pairOf(await login(server));
    const elsewhere = pairOf(await login(server));
    const second = pairOf(await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: first.refreshToken } }));
    expect((await call(server, 'GET', '/users/me', { token: first.accessToken })).status).toBe(200);
    expect((await call(server, 'GET', '/users/me', { token: second.accessToken })).status).toBe(200);
    expect((await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: first.refreshToken } })).status).toBe(401);
    for (const accessToken of [first.accessToken, second.accessToken]) {
      const refused = await call(server, 'GET', '/users/me', { token: accessToken });
      expect(refused.status).toBe(401);
      expect(refused.body.error?.details).toEqual([expect.objectContaining({ field: 'Authorization', code: 'TOKEN_REVOKED' })]);
      expect(refused.body.error?.message).toMatch(/log in again/);
    }
    // The same account's other login is another family: it goes on.
    expect((await call(server, 'GET', '/users/me', { token: elsewhere.accessToken })).status).toBe(200);
    expect((await call(server, 'POST', '/api/auth/refresh', { body: { refreshToken: elsewhere.refreshToken } })).status).toBe(200);
  });

  it('refuses a correctly signed access token that names no login (so no replay could end it)', async () => {
    const { server } = await withAccount();
    const user = (await server.store.accounts.findCredentials('ada@example.com'))?.user;
    const key = await server.store.accounts.signingKey();
    /** An access token as the server signs them, with `claims` and the account as subject. */
    const signed = (claims: Record<string, string>): Promise<string> => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(user?.id ?? '')
        .setIssuer('template-registry')
        .setAudience('template-registry')
        .setIssuedAt(now)
        .setExpirationTime(now + 60)
        .sign(key);
    };
    const refused = await call(server, 'GET', '/users/me', { token: await signed({}) });
    expect(refused.status).toBe(401);
    expect(refused.body.error?.details).toEqual([expect.objectContaining({ code: 'TOKEN_INVALID' })]);
    // The same token with a live login's id is accepted: the refusal is about the missing login.
    const { accessToken } = pairOf(await login(server));
    const sid = decodePart(accessToken.split('.')[1]).sid as string;
    const withLogin = await signed({ sid });
    expect((await call(server, 'GET', '/users/me', { token: withLogin })).status).toBe(200);
  });

  it('publishes with an access token like with an API token, under the account owner', async () => {
    const { server } = await withAccount();
    const { accessToken } = pairOf(await login(server));
    const pack = await packTemplate(await templateVersion({ version: '1.0.0', files: { 'template/README.md': '# one\n' } }));
    await publishTemplate({ registryUrl: server.url, token: accessToken, archive: pack.file, manifest: pack.manifest });
    expect(await server.store.tokens.ownersOf(TEMPLATE)).toEqual(['ada']);
  });
});

describe('session cookie', () => {
  it('sets an HTTP-only, SameSite=Strict, 24-hour cookie that authenticates, and ends it on DELETE', async () => {
    const { server } = await withAccount();
    const session = await call(server, 'POST', '/api/auth/session', { body: { email: 'ada@example.com', password: PASSWORD } });
    expect(session.status).toBe(204);
    const cookie = session.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^tr_session=trs_[\w-]+;/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Max-Age=86400/);
    expect(cookie).toMatch(/; Path=\//);
    // Served over plain http here: not Secure (a Secure cookie would never come back).
    expect(cookie).not.toMatch(/Secure/);
    const sent = cookie.split(';')[0] ?? '';
    const me = await call(server, 'GET', '/users/me', { headers: { cookie: `theme=dark; ${sent}` } });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ email: 'ada@example.com' });
    const ended = await call(server, 'DELETE', '/api/auth/session', { headers: { cookie: sent } });
    expect(ended.status).toBe(204);
    const cleared = ended.headers.get('set-cookie') ?? '';
    expect(cleared).toMatch(/^tr_session=;/);
    expect(cleared).toMatch(/; Max-Age=0(;|$)/);
    expect(cleared).toMatch(/; Path=\/(;|$)/);
    const after = await call(server, 'GET', '/users/me', { headers: { cookie: sent } });
    expect(after.status).toBe(401);
    // The refusal names the cookie, not a header the browser never sent.
    expect(after.body.error?.details).toEqual([expect.objectContaining({ field: 'Cookie', code: 'SESSION_INVALID' })]);
    expect(after.body.error?.message).toMatch(/session cookie tr_session/);
  });

  it('marks the cookie Secure when the registry is served over https', async () => {
    const { server } = await withAccount({ publicUrl: 'https://registry.example.com' });
    const session = await call(server, 'POST', '/api/auth/session', { body: { email: 'ada@example.com', password: PASSWORD } });
    expect(session.headers.get('set-cookie')).toMatch(/; Secure(;|$)/);
  });

  it("marks the cookie Secure when a trusted proxy says https in RFC 7239 Forwarded, and ignores an untrusted client's", async () => {
    const body = { email: 'ada@example.com', password: PASSWORD };
    const cookieWith = async (server: TestServer, forwarded: string): Promise<string> =>
      (await call(server, 'POST', '/api/auth/session', { body, headers: { forwarded } })).headers.get('set-cookie') ?? '';
    const behind = (await withAccount({ trustProxy: '127.0.0.1' })).server;
    expect(await cookieWith(behind, 'for=192.0.2.60;proto=https;by=203.0.113.43')).toMatch(/; Secure(;|$)/);
    expect(await cookieWith(behind, 'for="[2001:db8::1]:4711";Proto="HTTPS"')).toMatch(/; Secure(;|$)/);
    // The nearest proxy's element (the last) decides: here it says http.
    expect(await cookieWith(behind, 'for=192.0.2.60;proto=https, for=198.51.100.17;proto=http')).not.toMatch(/Secure/);
    const untrusted = (await withAccount({ trustProxy: '10.0.0.1' })).server;
    expect(await cookieWith(untrusted, 'for=192.0.2.60;proto=https')).not.toMatch(/Secure/);
    const direct = (await withAccount()).server;
    expect(await cookieWith(direct, 'proto=https')).not.toMatch(/Secure/);
  });
});

describe('failed logins', () => {
  it('limits failed logins per account: past the limit even the right password gets 429 with Retry-After', async () => {
    const { server } = await withAccount({ limits: { loginFailuresPerAccount: 3, loginFailuresPerAddress: 100 } });
    for (let attempt = 0; attempt < 3; attempt++) expect((await login(server, 'ada@example.com', 'wrong password!!')).status).toBe(401);
    const blocked = await login(server);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error?.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.body.error?.retryAfter).toBe(Number(blocked.headers.get('retry-after')));
    // Another account from the same address is not affected.
    const { admin } = { admin: (await server.store.tokens.createToken({ role: 'admin' })).token };
    await call(server, 'POST', '/users', { token: admin, body: { email: 'bob@example.com', password: PASSWORD } });
    expect((await login(server, 'bob@example.com')).status).toBe(200);
  });

  it('limits failed logins per address, whatever account they try', async () => {
    const { server } = await withAccount({ limits: { loginFailuresPerAccount: 100, loginFailuresPerAddress: 3 } });
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) expect((await login(server, email, 'wrong password!!')).status).toBe(401);
    expect((await login(server)).status).toBe(429);
    expect((await call(server, 'POST', '/api/auth/session', { body: { email: 'ada@example.com', password: PASSWORD } })).status).toBe(429);
  });
});

describe('co-owners', () => {
  it('lets an owner add and remove co-owners, who may then publish; others get 403, and the last owner stays', async () => {
    const server = await startRegistryServer();
    const { token: acme } = await server.store.tokens.createToken({ role: 'publisher', owner: 'acme' });
    const { token: beta } = await server.store.tokens.createToken({ role: 'publisher', owner: 'beta' });
    await publishVersions({ ...server, token: acme }, [{ version: '1.0.0', files: { 'template/README.md': '# one\n' } }]);
    const path = `/templates/${TEMPLATE}/owners`;
    expect((await call(server, 'GET', path)).body.data).toEqual({ id: TEMPLATE, owners: [{ owner: 'acme', claimer: true }] });
    expect((await call(server, 'POST', path, { token: beta, body: { owner: 'beta' } })).status).toBe(403);
    expect((await call(server, 'POST', path, { body: { owner: 'beta' } })).status).toBe(401);
    const added = await call(server, 'POST', path, { token: acme, body: { owner: 'beta' } });
    expect(added.status).toBe(201);
    expect(added.body.data).toEqual({ id: TEMPLATE, owners: [{ owner: 'acme', claimer: true }, { owner: 'beta', claimer: false }] });
    expect((await call(server, 'POST', path, { token: acme, body: { owner: 'beta' } })).status).toBe(200);
    await publishVersions({ ...server, token: beta }, [{ version: '1.1.0', files: { 'template/README.md': '# two\n' } }]);
    expect((await call(server, 'DELETE', `${path}/acme`, { token: beta })).status).toBe(204);
    const last = await call(server, 'DELETE', `${path}/beta`, { token: beta });
    expect(last.status).toBe(409);
    expect(last.body.error?.code).toBe('LAST_OWNER');
    expect((await call(server, 'DELETE', `${path}/acme`, { token: acme })).status).toBe(403);
    expect((await call(server, 'GET', '/templates/no-such-template/owners')).status).toBe(404);
  });

  it('refuses a token limited to other templates, even when its owner owns this one', async () => {
    const server = await startRegistryServer();
    const { token: acme } = await server.store.tokens.createToken({ role: 'publisher', owner: 'acme' });
    const { token: scoped } = await server.store.tokens.createToken({ role: 'publisher', owner: 'acme', templates: ['other-template'] });
    await publishVersions({ ...server, token: acme }, [{ version: '1.0.0', files: { 'template/README.md': '# one\n' } }]);
    const path = `/templates/${TEMPLATE}/owners`;
    const refused = await call(server, 'POST', path, { token: scoped, body: { owner: 'mallory' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error?.message).toMatch(/may publish only other-template/);
    expect((await call(server, 'DELETE', `${path}/acme`, { token: scoped })).status).toBe(403);
    expect((await call(server, 'GET', path)).body.data).toEqual({ id: TEMPLATE, owners: [{ owner: 'acme', claimer: true }] });
  });
});
