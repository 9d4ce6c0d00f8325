/**
 * The seed's API-key forms of authentication: a token is also accepted as `X-API-Key: <key>` and
 * `Authorization: ApiKey <key>`, with the same checks (unknown, revoked, role) as a bearer token.
 */
import { describe, expect, it } from 'vitest';

import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

/** GET /webhooks (an admin route) with the given headers. */
async function webhooks(server: TestServer, headers: Record<string, string>): Promise<{ status: number; body: { error?: { message: string } } }> {
  const response = await fetch(`${server.url}/webhooks`, { headers });
  return { status: response.status, body: (await response.json()) as { error?: { message: string } } };
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
