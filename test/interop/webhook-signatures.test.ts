/**
 * The X-Webhook-Signature of real deliveries, verified with code we did not write: GitHub's
 * `@octokit/webhooks-methods` (`verify(secret, payload, signature)`, the check GitHub's webhook
 * receivers run on X-Hub-Signature-256), whose format (`sha256=<hex HMAC-SHA256 of the body>`) the
 * registry documents for its deliveries. Every event a registry sends, a body beyond ASCII, and a
 * secret beyond ASCII.
 */
import { sign, verify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { WEBHOOK_EVENTS } from '../../src/server/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { startReceiver, type Received } from '../helpers/webhook-receiver.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const EXAMPLE = 'examples/templates/node-service';

async function call(server: TestServer, method: string, route: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

describe('webhook deliveries under @octokit/webhooks-methods', () => {
  it('verifies the signature of every event the registry sends, with the secret each webhook registered', async () => {
    const server = await startRegistryServer({ webhooks: { retryDelaysMs: [20, 40] } });
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const secrets = ['an-ascii-signing-secret', 'ein Geheimnis – größer als ASCII ✓'];
    const receivers = await Promise.all(secrets.map(() => startReceiver()));
    for (const [i, secret] of secrets.entries()) {
      const registered = await call(server, 'POST', '/webhooks', admin, { url: receivers[i]!.url, events: [...WEBHOOK_EVENTS], secret, active: true });
      expect(registered.status).toBe(201);
    }

    // A publish (template.published, registry.updated), a deprecation whose message is not ASCII
    // (template.deprecated), a yank (template.yanked).
    const pack = await packTemplate(EXAMPLE, { outDir: await tempDir('tr-pack-') });
    const published = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    expect(published.status).toBe(201);
    const route = `/templates/${pack.manifest.name}/versions/${pack.manifest.version}`;
    expect((await call(server, 'PATCH', route, server.token, { deprecationMessage: 'Bitte 2.0 nehmen — merci, ありがとう ✓' })).status).toBe(200);
    expect((await call(server, 'DELETE', route, server.token)).status).toBe(200);
    await deliveriesSettled(server.store.webhooks);

    for (const [i, secret] of secrets.entries()) {
      const received: Received[] = receivers[i]!.requests;
      const events = received.map((r) => String(r.headers['x-webhook-event']));
      expect(new Set(events), `webhook ${i}`).toEqual(new Set(WEBHOOK_EVENTS));
      for (const delivery of received) {
        const payload = delivery.body.toString('utf8');
        // The body is UTF-8 (octokit signs the string's UTF-8 bytes): the same bytes as received.
        expect(Buffer.from(payload, 'utf8').equals(delivery.body)).toBe(true);
        const signature = String(delivery.headers['x-webhook-signature']);
        const event = String(delivery.headers['x-webhook-event']);
        expect(await verify(secret, payload, signature), `${event} with webhook ${i}'s secret`).toBe(true);
        expect(signature, event).toBe(await sign(secret, payload));
        expect(await verify(secrets[1 - i]!, payload, signature), `${event} with the other secret`).toBe(false);
        expect(await verify(secret, payload.replace('"event":', '"event" :'), signature), `${event} with a changed body`).toBe(false);
      }
    }
    const deprecated = receivers[1]!.requests.find((r) => r.headers['x-webhook-event'] === 'template.deprecated')!;
    expect(deprecated.body.toString('utf8')).toContain('ありがとう');
  }, 60_000);
});
