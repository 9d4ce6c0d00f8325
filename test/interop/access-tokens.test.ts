/**
 * The access tokens of POST /api/auth/login, read with `jose` as a JOSE library a user picks would
 * read them: a JWT signed with HS256 (as docs/registry-hosting.md says) by the key the store keeps,
 * `sub` the account, `exp` `expiresIn` (900 s) after `iat`, `iat` the time of the login. And
 * tokens jose makes, the other way: the registry takes a standard HS256 JWT with those claims, and
 * refuses one of another algorithm, key, or an expired one.
 */
import { decodeProtectedHeader, errors, jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';

import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const PASSWORD = 'correct horse battery staple';

async function call(server: TestServer, method: string, route: string, options: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: { data?: Record<string, unknown> } }> {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as { data?: Record<string, unknown> }) };
}

async function accountAndLogin(): Promise<{ server: TestServer; userId: string; accessToken: string; expiresIn: number; before: number; after: number }> {
  const server = await startRegistryServer();
  const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
  const created = await call(server, 'POST', '/users', { token: admin, body: { email: 'ada@example.com', password: PASSWORD, owner: 'ada' } });
  expect(created.status).toBe(201);
  const before = Math.floor(Date.now() / 1000);
  const login = await call(server, 'POST', '/api/auth/login', { body: { email: 'ada@example.com', password: PASSWORD } });
  const after = Math.ceil(Date.now() / 1000);
  expect(login.status).toBe(200);
  return { server, userId: String(created.body.data?.id), accessToken: String(login.body.data?.accessToken), expiresIn: Number(login.body.data?.expiresIn), before, after };
}

describe('access tokens under jose', () => {
  it('verifies a login access token as an HS256 JWT with the store key: sub the account, exp = iat + expiresIn, iat the login', async () => {
    const { server, userId, accessToken, expiresIn, before, after } = await accountAndLogin();
    expect(decodeProtectedHeader(accessToken)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const key = await server.store.accounts.signingKey();
    const { payload } = await jwtVerify(accessToken, key, { algorithms: ['HS256'], requiredClaims: ['sub', 'iat', 'exp', 'jti'] });
    expect(payload.sub).toBe(userId);
    expect(expiresIn).toBe(900);
    expect(payload.exp! - payload.iat!).toBe(expiresIn);
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.iat).toBeLessThanOrEqual(after);
    // Another key, or another algorithm than the documented one, does not verify it.
    await expect(jwtVerify(accessToken, new TextEncoder().encode('a key that is not the store key, 32+ bytes'), { algorithms: ['HS256'] })).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    await expect(jwtVerify(accessToken, key, { algorithms: ['HS512'] })).rejects.toBeInstanceOf(errors.JOSEAlgNotAllowed);
  });

  it('takes a standard HS256 JWT jose signs with those claims, and refuses one of another algorithm, another key, an expired one or an unsigned one', async () => {
    const { server, accessToken } = await accountAndLogin();
    const key = await server.store.accounts.signingKey();
    const { payload } = await jwtVerify(accessToken, key, { algorithms: ['HS256'] });
    const now = Math.floor(Date.now() / 1000);
    const claims = { ...payload, iat: now, exp: now + 60, jti: 'made-by-jose' };
    const made = (alg: string, signingKey: Uint8Array = key, exp = claims.exp): Promise<string> => new SignJWT({ ...claims, exp }).setProtectedHeader({ alg, typ: 'JWT' }).sign(signingKey);

    const me = await call(server, 'GET', '/users/me', { token: await made('HS256') });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ kind: 'account', email: 'ada@example.com' });
    for (const [what, token] of [
      ['HS512', await made('HS512')],
      ['another key', await made('HS256', new TextEncoder().encode('a key that is not the store key, 32+ bytes'))],
      ['expired', await made('HS256', key, now - 120)],
      ['alg none', new UnsecuredJWT(claims).encode()],
    ] as const) {
      expect((await call(server, 'GET', '/users/me', { token })).status, what).toBe(401);
    }
  });
});
