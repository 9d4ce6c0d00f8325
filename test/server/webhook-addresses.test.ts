/**
 * Where webhooks may go: public addresses only, unless the operator allows others. The host is
 * resolved and every address it resolves to is checked, when the webhook is registered and at each
 * delivery; the delivery connects to the address it checked, so a name that changes its answer
 * (DNS rebinding) reaches nothing refused. Host names here resolve through a table the test holds.
 */
import type { LookupAddress } from 'node:dns';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import type { ServerOptions } from '../../src/server/index.js';
import type { DeliveryView } from '../../src/server/webhooks.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const example = path.resolve('examples/templates/node-service');
const SECRET = 'a-long-enough-signing-secret';
/** A public address (example.com's): registrations may name it; nothing here ever connects to it. */
const PUBLIC = '93.184.215.14';

/** A resolver answering from `answers`: each host's answers in turn, the last one repeated; every question recorded. */
function resolverOf(answers: Record<string, string[][]>): { resolve: (host: string) => Promise<LookupAddress[]>; asked: string[] } {
  const asked: string[] = [];
  const resolve = (host: string): Promise<LookupAddress[]> => {
    asked.push(host);
    const turns = answers[host];
    if (!turns) return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
    const turn = turns[Math.min(asked.filter((h) => h === host).length, turns.length) - 1] ?? [];
    return Promise.resolve(turn.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
  return { resolve, asked };
}

interface Registry {
  server: TestServer;
  admin: string;
}

async function startRegistry(webhooks: ServerOptions['webhooks']): Promise<Registry> {
  const server = await startRegistryServer({ webhooks: { retryDelaysMs: [20], ...webhooks } });
  const { token } = await server.store.tokens.createToken({ role: 'admin' });
  return { server, admin: token };
}

function register(registry: Registry, url: string): Promise<Response> {
  return fetch(`${registry.server.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${registry.admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, events: ['template.published'], secret: SECRET, active: true }),
  });
}

async function registered(registry: Registry, url: string): Promise<string> {
  const response = await register(registry, url);
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { data: { id: string } }).data.id;
}

async function publishAndSettle(registry: Registry): Promise<void> {
  const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
  const result = await publishTemplate({ registryUrl: registry.server.url, token: registry.server.token, archive: pack.file, manifest: pack.manifest });
  expect(result.status).toBe(201);
  await deliveriesSettled(registry.server.store.webhooks);
}

async function deliveries(registry: Registry, id: string): Promise<DeliveryView[]> {
  const response = await fetch(`${registry.server.url}/webhooks/${id}/deliveries`, { headers: { authorization: `Bearer ${registry.admin}` } });
  return ((await response.json()) as { data: DeliveryView[] }).data;
}

describe('webhook addresses: registration', () => {
  it('refuses (422 ADDRESS_NOT_ALLOWED) a URL that is or resolves to a loopback, private, link-local or special address', async () => {
    const { resolve } = resolverOf({
      'internal.test': [['10.1.2.3']],
      'metadata.test': [['169.254.169.254']],
      // One refused address among public ones refuses the host: a connection could pick any of them.
      'mixed.test': [[PUBLIC, '127.0.0.1']],
      'mapped.test': [['::ffff:127.0.0.1']],
    });
    const registry = await startRegistry({ allowPrivate: [], resolve });
    const refused: [string, RegExp][] = [
      ['http://127.0.0.1:9/hook', /127\.0\.0\.1 is a loopback address/],
      ['http://[::1]:9/hook', /::1 is a loopback address/],
      ['http://10.0.0.8/hook', /10\.0\.0\.8 is a private-network address/],
      ['http://169.254.169.254/latest/meta-data', /a link-local address/],
      ['http://[fd00::1]/hook', /a private-network address/],
      ['http://0.0.0.0:9/hook', /a reserved or special-purpose address/],
      ['http://[::ffff:192.168.1.1]/hook', /a private-network address/],
      ['https://internal.test/hook', /internal\.test resolves to 10\.1\.2\.3, a private-network address/],
      ['https://metadata.test/hook', /metadata\.test resolves to 169\.254\.169\.254, a link-local address/],
      ['https://mixed.test/hook', /mixed\.test resolves to 127\.0\.0\.1, a loopback address/],
      ['https://mapped.test/hook', /a loopback address/],
    ];
    for (const [url, message] of refused) {
      const response = await register(registry, url);
      expect(response.status, url).toBe(422);
      const body = (await response.json()) as { error: { code: string; details: { field: string; code: string; message: string }[] } };
      expect(body.error.code).toBe('VALIDATION_ERROR');
      expect(body.error.details, url).toContainEqual({ field: 'url', code: 'ADDRESS_NOT_ALLOWED', message: expect.stringMatching(message) });
      expect(body.error.details.find((d) => d.code === 'ADDRESS_NOT_ALLOWED')?.message).toMatch(/--webhook-allow-private/);
    }
    expect(await registry.server.store.webhooks.listWebhooks()).toEqual([]);
  });

  it('accepts public addresses, and what the operator allows', async () => {
    const { resolve, asked } = resolverOf({ 'hooks.test': [[PUBLIC]], 'ci.internal.test': [['10.20.0.5']] });
    const registry = await startRegistry({ allowPrivate: ['10.20.0.0/16', '127.0.0.1'], resolve });
    await registered(registry, 'https://hooks.test/registry');
    expect(asked).toEqual(['hooks.test']);
    await registered(registry, `http://${PUBLIC}/hook`);
    await registered(registry, 'https://ci.internal.test/hook');
    await registered(registry, 'http://127.0.0.1:9/hook');
    // Outside the allowed range: still refused.
    expect((await register(registry, 'http://10.21.0.1/hook')).status).toBe(422);
    expect((await register(registry, 'http://127.0.0.2:9/hook')).status).toBe(422);
  });

  it('serve --webhook-allow-private refuses an entry that is not an address or CIDR range', async () => {
    const store = await tempDir('tr-store-');
    const result = await cli('serve', '--store', store, '--port', '1', '--webhook-allow-private', '10.0.0.0/8,10.0.0.0/33');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--webhook-allow-private: "10\.0\.0\.0\/33" is not an IP address or CIDR range/);
  });
});

describe('webhook addresses: delivery', () => {
  it('checks the address again at each delivery: a name that resolved to a public address at registration and to loopback now gets nothing', async () => {
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    // Registration sees a public address; the delivery's resolution answers with the receiver's loopback address.
    const { resolve } = resolverOf({ 'rebinding.test': [[PUBLIC], ['127.0.0.1']] });
    const registry = await startRegistry({ allowPrivate: [], resolve });
    const id = await registered(registry, `http://rebinding.test:${port}/hook`);
    await publishAndSettle(registry);

    expect(receiver.requests).toEqual([]);
    expect(await deliveries(registry, id)).toMatchObject([{ status: null, error: expect.stringMatching(/^refused: rebinding\.test resolves to 127\.0\.0\.1, a loopback address/) }]);
    // Refused is final: not retried.
    expect(await registry.server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ state: 'failed', attempts: 1 }]);
  });

  it('connects to the very address it checked: one resolution per attempt, none left to the connection', async () => {
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    // Any second resolution would answer with an address that is refused (and unreachable).
    const { resolve, asked } = resolverOf({ 'hooks.test': [['127.0.0.1'], ['127.0.0.1'], ['10.99.0.1']] });
    const registry = await startRegistry({ allowPrivate: ['127.0.0.1'], resolve });
    const id = await registered(registry, `http://hooks.test:${port}/hook`);
    await publishAndSettle(registry);

    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers.host).toBe(`hooks.test:${port}`);
    expect(await deliveries(registry, id)).toMatchObject([{ status: 200, error: null }]);
    // The registration's resolution and the delivery's: the socket used the delivery's answer.
    expect(asked).toEqual(['hooks.test', 'hooks.test']);
  });

  it('refuses at delivery a webhook stored without the registration check (a store written by an older server)', async () => {
    const receiver = await startReceiver();
    const registry = await startRegistry({ allowPrivate: [] });
    const webhook = await registry.server.store.webhooks.createWebhook({ url: receiver.url, events: ['template.published'], secret: SECRET, active: true });
    await publishAndSettle(registry);
    expect(receiver.requests).toEqual([]);
    expect(await deliveries(registry, webhook.id)).toMatchObject([{ status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) }]);
  });
});
