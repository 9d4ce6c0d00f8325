/**
 * The seed's API-key forms of authentication: a token is also accepted as `X-API-Key: <key>` and
 * `Authorization: ApiKey <key>`, with the same checks (unknown, revoked, role) as a bearer token.
 */
import { describe, expect, it } from 'vitest';

import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

interface Refusal {
  message: string;
  details: { field: string; code: string; message: string }[];
}

/** GET /webhooks (an admin route) with the given headers. */
async function webhooks(server: TestServer, headers: Record<string, string>): Promise<{ status: number; body: { error?: Refusal } }> {
  const response = await fetch(`${server.url}/webhooks`, { headers });
  return { status: response.status, body: (await response.json()) as { error?: Refusal } };
}

describe('API keys', () => {
  it('accepts an admin token as X-API-Key and as Authorization: ApiKey, like a bearer token', async () => {
    const server = await startRegistryServer();
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    expect((await webhooks(server, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await webhooks(server, { 'x-api-key': token })).status).toBe(200);
    expect((await webhooks(server, { authorization: `ApiKey ${token}` })).status).toBe(200);
    expect((await webhooks(server, { authorization: `apikey ${token}` })).status).toBe(200);
  });

  it('refuses an unknown key, a publisher key on an admin route, and a revoked key', async () => {
    const server = await startRegistryServer();
    expect((await webhooks(server, { 'x-api-key': 'not-a-token' })).status).toBe(401);
    expect((await webhooks(server, { 'x-api-key': server.token })).status).toBe(403);
    const admin = await server.store.tokens.createToken({ role: 'admin' });
    await server.store.tokens.revokeToken(admin.record.id);
    const revoked = await webhooks(server, { 'x-api-key': admin.token });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error?.message).toMatch(/revoked/);
  });

  it('names the header a refused key came in, in the message and in the detail field', async () => {
    const server = await startRegistryServer();
    const xApiKey = await webhooks(server, { 'x-api-key': 'trg_not-a-key' });
    expect(xApiKey.status).toBe(401);
    expect(xApiKey.body.error?.message).toBe('the API key in X-API-Key is not valid');
    expect(xApiKey.body.error?.details).toEqual([expect.objectContaining({ field: 'X-API-Key', code: 'TOKEN_INVALID' })]);
    const scheme = await webhooks(server, { authorization: 'ApiKey trg_not-a-key' });
    expect(scheme.body.error?.message).toBe('the API key in Authorization: ApiKey is not valid');
    expect(scheme.body.error?.details).toEqual([expect.objectContaining({ field: 'Authorization', code: 'TOKEN_INVALID' })]);
    const bearer = await webhooks(server, { authorization: 'Bearer trg_not-a-key' });
    expect(bearer.body.error?.message).toBe('the bearer token is not valid');
    expect(bearer.body.error?.details).toEqual([expect.objectContaining({ field: 'Authorization', code: 'TOKEN_INVALID' })]);
    // A revoked key and a broken access token sent as X-API-Key are named the same way.
    const admin = await server.store.tokens.createToken({ role: 'admin' });
    await server.store.tokens.revokeToken(admin.record.id);
    const revoked = await webhooks(server, { 'x-api-key': admin.token });
    expect(revoked.body.error?.message).toMatch(/^the API key in X-API-Key was revoked at /);
    expect(revoked.body.error?.details).toEqual([expect.objectContaining({ field: 'X-API-Key', code: 'TOKEN_REVOKED' })]);
    const jwt = await webhooks(server, { 'x-api-key': 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl' });
    expect(jwt.body.error?.message).toBe('the access token in X-API-Key is not valid');
    expect(jwt.body.error?.details).toEqual([expect.objectContaining({ field: 'X-API-Key', code: 'TOKEN_INVALID' })]);
  });

  it('refuses two different tokens in one request, and names every accepted form when none is given', async () => {
    const server = await startRegistryServer();
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    const both = await webhooks(server, { authorization: `Bearer ${token}`, 'x-api-key': server.token });
    expect(both.status).toBe(401);
    expect(both.body.error?.message).toMatch(/two different tokens/);
    expect((await webhooks(server, { authorization: `Bearer ${token}`, 'x-api-key': token })).status).toBe(200);
    const none = await webhooks(server, {});
    expect(none.status).toBe(401);
    expect(none.body.error?.message).toContain('X-API-Key');
  });
});
