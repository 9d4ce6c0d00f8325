/**
 * Webhooks: registration by admins (POST/GET/DELETE /webhooks, deliveries), and signed deliveries
 * of template.published to receivers on 127.0.0.1, with retries, in the background of the upload.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { describe, expect, it, vi } from 'vitest';

import { isValidRange } from '../../src/core/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import type { ServerOptions } from '../../src/server/index.js';
import * as root from '../../src/server-package.js';
import {
  DEFAULT_TIMEOUT_MS,
  noAnswerError,
  signWebhookBody,
  signWebhookPayload,
  verifyWebhookSignature,
  WEBHOOK_EVENTS,
  WebhookDispatcher,
  type DeliveryView,
} from '../../src/server/webhooks.js';
import { tempDir } from '../helpers/fixtures.js';
import { freePort, startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const example = path.resolve('examples/templates/node-service');
const SECRET = 'shh-this-is-the-signing-secret';
/** A UUID version 7 (RFC 9562): the shape of an attempt's id. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// ---- the OpenAPI document, to check the answers of the webhook routes against it

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;
const DOCUMENT_ID = 'urn:template-registry:openapi';
const openapi = JSON.parse(readFileSync(path.resolve('openapi/openapi.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats(ajv);
ajv.addFormat('semver-range', { type: 'string', validate: isValidRange });
ajv.addSchema({ ...openapi, $id: DOCUMENT_ID });

function expectDocumented(pathTemplate: string, method: string, status: number, body: unknown): void {
  const pointer = `#/paths/${pathTemplate.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/responses/${status}`;
  const response = openapi.paths[pathTemplate]?.[method]?.responses?.[String(status)];
  expect(response, `${method} ${pathTemplate} ${status} is documented`).toBeDefined();
  const target = typeof response.$ref === 'string' ? `${response.$ref}/content/application~1json/schema` : `${pointer}/content/application~1json/schema`;
  const validate = ajv.compile({ $ref: `${DOCUMENT_ID}${target}` });
  expect(validate(body) ? [] : validate.errors, `${method} ${pathTemplate} ${status}`).toEqual([]);
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

/** A clock that runs with the system's and that a test moves on by `advance(ms)`. */
function testClock(): { now: () => Date; advance: (ms: number) => void } {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

// ---- the registry

interface Registry {
  server: TestServer;
  admin: string;
  dispatcher: WebhookDispatcher;
}

/** A registry server whose dispatcher retries quickly (20 ms, 40 ms) unless told otherwise. */
async function startRegistry(options: ServerOptions['webhooks'] = {}): Promise<Registry> {
  const server = await startRegistryServer({ webhooks: { retryDelaysMs: [20, 40], ...options } });
  const dispatcher = server.context.webhooks;
  const { token } = await server.store.tokens.createToken({ role: 'admin' });
  return { server, admin: token, dispatcher };
}

function api(registry: Registry, method: string, route: string, body?: unknown, token: string | null = registry.admin): Promise<Response> {
  return fetch(`${registry.server.url}${route}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

async function register(registry: Registry, body: Record<string, unknown>): Promise<string> {
  const response = await api(registry, 'POST', '/webhooks', { events: ['template.published'], secret: SECRET, active: true, ...body });
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: { id: string } }).data.id;
}

async function publish(registry: Registry): Promise<unknown> {
  const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
  const result = await publishTemplate({ registryUrl: registry.server.url, token: registry.server.token, archive: pack.file, manifest: pack.manifest });
  expect(result.status).toBe(201);
  return result.entry;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field
type Json = any;
const json = async (response: Response): Promise<Json> => (await response.json()) as Json;

async function deliveries(registry: Registry, id: string): Promise<DeliveryView[]> {
  const response = await api(registry, 'GET', `/webhooks/${id}/deliveries`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: DeliveryView[] };
  expectDocumented('/webhooks/{id}/deliveries', 'get', 200, body);
  return body.data;
}

// ---------------------------------------------------------------------------------------------

describe('webhook registration', () => {
  it('needs an admin token: 401 without a valid one, 403 with a publisher token', async () => {
    const registry = await startRegistry();
    const body = { url: 'http://127.0.0.1:9/hook', events: ['template.published'], secret: SECRET, active: true };
    for (const token of [null, 'trg_not-a-token']) {
      const response = await api(registry, 'POST', '/webhooks', body, token);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    }
    const forbidden = await api(registry, 'POST', '/webhooks', body, registry.server.token);
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    for (const [method, route] of [['GET', '/webhooks'], ['DELETE', '/webhooks/wh_x'], ['GET', '/webhooks/wh_x/deliveries']] as const) {
      expect((await api(registry, method, route, undefined, null)).status).toBe(401);
      expect((await api(registry, method, route, undefined, registry.server.token)).status).toBe(403);
    }
    expect((await registry.server.store.webhooks.listWebhooks())).toEqual([]);
  });

  it('registers a webhook: 201, Location, the record without its secret', async () => {
    const registry = await startRegistry();
    const response = await api(registry, 'POST', '/webhooks', { url: 'https://hooks.example.com/registry', events: ['template.published'], secret: SECRET, active: true });
    expect(response.status).toBe(201);
    const body = await json(response);
    expectDocumented('/webhooks', 'post', 201, body);
    expect(body.data).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: 'https://hooks.example.com/registry',
      events: ['template.published'],
      active: true,
      createdAt: expect.any(String),
    });
    expect(JSON.stringify(body)).not.toContain(SECRET);
    expect(response.headers.get('location')).toBe(`/webhooks/${body.data.id}`);
    expect(response.headers.get('cache-control')).toBe('no-store');
    // The secret is kept so deliveries can be signed.
    expect((await registry.server.store.webhooks.getWebhook(body.data.id))?.secret).toBe(SECRET);

    const one = await api(registry, 'GET', `/webhooks/${body.data.id}`);
    expect(one.status).toBe(200);
    const oneBody = await json(one);
    expectDocumented('/webhooks/{id}', 'get', 200, oneBody);
    expect(oneBody.data).toEqual(body.data);
  });

  it('refuses an invalid registration with 422 VALIDATION_ERROR and the fields, a missing field with 400', async () => {
    const registry = await startRegistry();
    const missing = await api(registry, 'POST', '/webhooks', { url: 'https://example.com/h', events: ['template.published'], active: true });
    expect(missing.status).toBe(400);
    const missingBody = await json(missing);
    expectDocumented('/webhooks', 'post', 400, missingBody);
    expect(missingBody.error.details).toContainEqual({ field: 'secret', code: 'REQUIRED', message: expect.any(String) });
    const cases: Array<[unknown, { field: string; code: string }]> = [
      [{ url: 'not a url', events: ['template.published'], secret: 's', active: true }, { field: 'url', code: 'FORMAT' }],
      [{ url: 'ftp://example.com/h', events: ['template.published'], secret: 's', active: true }, { field: 'url', code: 'UNSUPPORTED_SCHEME' }],
      [{ url: 'https://example.com/h', events: ['published'], secret: 's', active: true }, { field: 'events.0', code: 'PATTERN' }],
      [{ url: 'https://example.com/h', events: ['template.deleted'], secret: 's', active: true }, { field: 'events.0', code: 'UNKNOWN_EVENT' }],
      [{ url: 'https://example.com/h', events: ['template.published'], secret: 's', active: 'yes' }, { field: 'active', code: 'TYPE' }],
      [{ url: `${registry.server.url}/events`, events: ['template.published'], secret: 's', active: true }, { field: 'url', code: 'SELF_URL' }],
    ];
    for (const [body, detail] of cases) {
      const response = await api(registry, 'POST', '/webhooks', body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      const error = await json(response);
      expectDocumented('/webhooks', 'post', 422, error);
      expect(error.error.code).toBe('VALIDATION_ERROR');
      expect(error.error.details, JSON.stringify(body)).toContainEqual({ ...detail, message: expect.any(String) });
    }
    expect((await api(registry, 'POST', '/webhooks', ['not', 'an', 'object'])).status).toBe(400);
    expect((await registry.server.store.webhooks.listWebhooks())).toEqual([]);
  });

  it('lists webhooks without their secrets, and deletes them', async () => {
    const registry = await startRegistry();
    const first = await register(registry, { url: 'https://one.example.com/h' });
    const second = await register(registry, { url: 'https://two.example.com/h', active: false });
    const listed = await api(registry, 'GET', '/webhooks');
    expect(listed.status).toBe(200);
    const body = await json(listed);
    expectDocumented('/webhooks', 'get', 200, body);
    expect(body.data.map((w: { id: string; active: boolean }) => [w.id, w.active])).toEqual([
      [first, true],
      [second, false],
    ]);
    expect(JSON.stringify(body)).not.toContain(SECRET);
    for (const webhook of body.data) expect(webhook).not.toHaveProperty('secret');

    const removed = await api(registry, 'DELETE', `/webhooks/${first}`);
    expect(removed.status).toBe(204);
    expect(await removed.text()).toBe('');
    expect((await api(registry, 'DELETE', `/webhooks/${first}`)).status).toBe(404);
    expect((await api(registry, 'GET', `/webhooks/${first}`)).status).toBe(404);
    expect((await api(registry, 'GET', `/webhooks/${first}/deliveries`)).status).toBe(404);
    expect((await registry.server.store.webhooks.listWebhooks()).map((w) => w.id)).toEqual([second]);
    expect((await api(registry, 'GET', `/webhooks/${second}/deliveries?limit=0`)).status).toBe(400);
  });
});

describe('webhook delivery', () => {
  it('POSTs a signed template.published event with the new entry', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    const id = await register(registry, { url: receiver.url });
    const entry = await publish(registry);
    const received = await receiver.request(1);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(received.url).toBe('/hook');
    expect(received.headers['content-type']).toBe('application/json');
    expect(received.headers['user-agent']).toBe('template-registry');
    expect(received.headers['x-webhook-event']).toBe('template.published');
    const signature = String(received.headers['x-webhook-signature']);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(received.body, signature, SECRET)).toBe(true);
    expect(verifyWebhookSignature(received.body.toString('utf8'), signature, SECRET)).toBe(true);
    expect(verifyWebhookSignature(received.body, signature, 'another-secret')).toBe(false);
    expect(verifyWebhookSignature(Buffer.concat([received.body, Buffer.from(' ')]), signature, SECRET)).toBe(false);

    const payload = JSON.parse(received.body.toString('utf8'));
    expect(payload).toEqual({ event: 'template.published', timestamp: expect.any(String), data: entry });
    expect(payload.data).toMatchObject({ id: 'node-service', version: '1.1.0' });
    expect(Number.isNaN(Date.parse(payload.timestamp))).toBe(false);

    const log = await deliveries(registry, id);
    expect(log).toEqual([
      { id: received.headers['x-webhook-delivery'], deliveryId: received.headers['x-webhook-id'], event: 'template.published', status: 200, attemptedAt: expect.any(String), error: null },
    ]);
    // The attempt's id is external, not the log's row number.
    expect(received.headers['x-webhook-delivery']).toMatch(UUID_V7);
  });

  it('retries after a 500 and records both attempts', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver((n) => (n === 1 ? 500 : 200));
    const id = await register(registry, { url: receiver.url });
    await publish(registry);
    await receiver.request(2);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(receiver.requests).toHaveLength(2);
    const [first, second] = receiver.requests;
    expect(second!.body.equals(first!.body)).toBe(true);
    expect(verifyWebhookSignature(second!.body, String(second!.headers['x-webhook-signature']), SECRET)).toBe(true);
    expect(second!.headers['x-webhook-delivery']).not.toBe(first!.headers['x-webhook-delivery']);
    // One delivery, two attempts: the same external id.
    expect(second!.headers['x-webhook-id']).toBe(first!.headers['x-webhook-id']);

    const log = await deliveries(registry, id);
    expect(log.map((d) => [d.status, d.error])).toEqual([
      [200, null],
      [500, 'HTTP 500'],
    ]);
    expect(log.map((d) => d.id)).toEqual([second!.headers['x-webhook-delivery'], first!.headers['x-webhook-delivery']]);
  });

  it('gives up after 3 attempts, and records a receiver that is down or too slow', async () => {
    // The receiver that answers 503 gets the default time limit: a busy machine may take more than 100 ms to answer.
    const answering = await startRegistry();
    const failing = await startReceiver(() => 503);
    const failingId = await register(answering, { url: failing.url });
    await publish(answering);
    await deliveriesSettled(answering.server.store.webhooks);
    expect(failing.requests).toHaveLength(3);
    expect((await deliveries(answering, failingId)).map((d) => d.status)).toEqual([503, 503, 503]);

    const registry = await startRegistry({ timeoutMs: 100 });
    const hanging = await startReceiver(() => new Promise<number>(() => undefined));
    const hangingId = await register(registry, { url: hanging.url });
    const downId = await register(registry, { url: `http://127.0.0.1:${await freePort()}/nobody-listens` });
    await publish(registry);
    await deliveriesSettled(registry.server.store.webhooks);

    // Given up: the delivery is marked failed in the outbox, the webhook stays on.
    for (const [server, id] of [[answering, failingId], [registry, hangingId], [registry, downId]] as const) {
      expect(await server.server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ state: 'failed', attempts: 3 }]);
      expect((await server.server.store.webhooks.getWebhook(id))?.active).toBe(true);
    }
    // A receiver that never answers and a port nobody listens on look the same in the log: it must
    // not tell whoever registers webhooks which ports of a network are open.
    const slow = await deliveries(registry, hangingId);
    expect(slow).toHaveLength(3);
    for (const attempt of slow) expect(attempt).toMatchObject({ status: null, error: noAnswerError(100) });
    const down = await deliveries(registry, downId);
    expect(down).toHaveLength(3);
    for (const attempt of down) expect(attempt).toMatchObject({ status: null, error: noAnswerError(100) });
    expect(noAnswerError(100)).not.toMatch(/ECONNREFUSED|timed out|refused/i);
  });

  it('sends nothing to an inactive webhook or one not subscribed to the event', async () => {
    const registry = await startRegistry();
    const subscribed = await startReceiver();
    const inactive = await startReceiver();
    const other = await startReceiver();
    const inactiveId = await register(registry, { url: inactive.url, active: false });
    const otherId = (await registry.server.store.webhooks.createWebhook({ url: other.url, events: ['template.deprecated'], secret: SECRET, active: true })).id;
    await register(registry, { url: subscribed.url });
    await publish(registry);
    await subscribed.request(1);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(inactive.requests).toEqual([]);
    expect(other.requests).toEqual([]);
    expect(await deliveries(registry, inactiveId)).toEqual([]);
    expect(await deliveries(registry, otherId)).toEqual([]);
  });

  it('answers the upload with 201 without waiting for a slow receiver', async () => {
    const registry = await startRegistry();
    const answer = gate();
    const receiver = await startReceiver(async () => {
      await answer.wait;
      return 200;
    });
    const id = await register(registry, { url: receiver.url });
    await publish(registry);
    // The upload is done; the receiver has not answered (it waits for the gate).
    await receiver.request(1);
    expect(registry.dispatcher.pending).toBe(1);
    expect(await deliveries(registry, id)).toMatchObject([{ status: null, error: null }]);
    answer.open();
    await deliveriesSettled(registry.server.store.webhooks);
    expect(await deliveries(registry, id)).toMatchObject([{ status: 200, error: null }]);
  });

  it('closing the server cancels a delivery in flight after a short grace period', async () => {
    const registry = await startRegistry({ closeGraceMs: 50 });
    const receiver = await startReceiver(() => new Promise<number>(() => undefined));
    const id = await register(registry, { url: receiver.url });
    await publish(registry);
    await receiver.request(1);
    const store = registry.server.store.webhooks;
    const log: unknown[] = [];
    // Read the delivery log as the server closes, before the store closes.
    const record = store.recordAttemptOutcome.bind(store);
    store.recordAttemptOutcome = async (outcome, now) => {
      const changed = await record(outcome, now);
      log.push(...(await store.listDeliveries(id)));
      return changed;
    };
    // The receiver never answers: close() returns only because it cancels the attempt after the grace period.
    await registry.server.app.close();
    expect(registry.dispatcher.pending).toBe(0);
    expect(log).toMatchObject([{ status: null, error: 'cancelled: the registry server is closing' }]);
    expect(receiver.requests).toHaveLength(1);
  });

  it("closing the server stops the built-in dispatcher's pending retries at once", async () => {
    const server = await startRegistryServer();
    const dispatcher = server.context.webhooks;
    expect(dispatcher).toBeInstanceOf(WebhookDispatcher);
    const registry: Registry = { server, admin: (await server.store.tokens.createToken({ role: 'admin' })).token, dispatcher };
    const receiver = await startReceiver(() => 500);
    await register(registry, { url: receiver.url });
    await publish(registry);
    await receiver.request(1);
    // The first attempt failed; the next one waits 1 s.
    await vi.waitFor(async () => {
      const [webhook] = await server.store.webhooks.listWebhooks();
      expect((await server.store.webhooks.listDeliveries(webhook!.id))[0]?.status).toBe(500);
    });
    await server.app.close();
    // Closing did not wait for the retry: it was never sent.
    expect(dispatcher.pending).toBe(0);
    expect(receiver.requests).toHaveLength(1);
  });

  it('never calls the registry server itself', async () => {
    const registry = await startRegistry();
    // Registered behind the API's back (the API refuses such URLs).
    const self = await registry.server.store.webhooks.createWebhook({ url: `${registry.server.url}/events`, events: ['template.published'], secret: SECRET, active: true });
    const viaLoopbackName = await registry.server.store.webhooks.createWebhook({
      url: registry.server.url.replace('127.0.0.1', 'localhost'),
      events: ['template.published'],
      secret: SECRET,
      active: true,
    });
    await publish(registry);
    await deliveriesSettled(registry.server.store.webhooks);
    for (const webhook of [self, viaLoopbackName]) {
      expect(await deliveries(registry, webhook.id)).toMatchObject([{ status: null, error: 'refused: the URL points at this registry server' }]);
    }
  });
});

describe('verifyWebhookSignature', () => {
  it('accepts exactly the signature of the body with the secret', () => {
    const body = JSON.stringify({ event: 'template.published', timestamp: new Date().toISOString(), data: { id: 'x' } });
    const header = signWebhookBody(body, SECRET);
    expect(verifyWebhookSignature(body, header, SECRET)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(body), header.toUpperCase().replace('SHA256=', 'sha256='), SECRET)).toBe(true);
    for (const bad of ['', 'sha256=', header.slice(0, -2), `${header}00`, header.replace('sha256=', 'sha1='), header.replace('sha256=', '')]) {
      expect(verifyWebhookSignature(body, bad, SECRET), bad).toBe(false);
    }
    expect(verifyWebhookSignature(`${body} `, header, SECRET)).toBe(false);
  });
});

describe('signWebhookPayload', () => {
  it("passes GitHub's published X-Hub-Signature-256 test vector, and is exported from the server package root", () => {
    const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(signWebhookPayload("It's a Secret to Everybody", 'Hello, World!')).toBe(expected);
    expect(signWebhookPayload("It's a Secret to Everybody", Buffer.from('Hello, World!', 'utf8'))).toBe(expected);
    expect(root.signWebhookPayload("It's a Secret to Everybody", 'Hello, World!')).toBe(expected);
    expect(verifyWebhookSignature('Hello, World!', expected, "It's a Secret to Everybody")).toBe(true);
    expect(root.verifyWebhookSignature).toBe(verifyWebhookSignature);
    expect(signWebhookBody('Hello, World!', "It's a Secret to Everybody")).toBe(expected);
  });

  it('verifyWebhookSignature refuses a timestamp outside the tolerance (default 300 s), a missing or unreadable one', () => {
    const body = '{"event":"registry.updated"}';
    const header = signWebhookPayload(SECRET, body);
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const seconds = now / 1000;
    const verify = (options: Parameters<typeof verifyWebhookSignature>[3]): boolean => verifyWebhookSignature(body, header, SECRET, options);
    expect(verify({ timestamp: String(seconds), now })).toBe(true);
    expect(verify({ timestamp: seconds - 300, now: new Date(now) })).toBe(true);
    expect(verify({ timestamp: String(seconds - 301), now })).toBe(false);
    expect(verify({ timestamp: String(seconds + 301), now })).toBe(false);
    expect(verify({ timestamp: String(seconds - 1000), toleranceSeconds: 3600, now })).toBe(true);
    expect(verify({ timestamp: String(seconds - 10), toleranceSeconds: 5, now })).toBe(false);
    for (const bad of [undefined, '', 'soon', '1.5e9', '-1']) expect(verify({ timestamp: bad, now }), String(bad)).toBe(false);
    // A fresh timestamp does not make a wrong signature right.
    expect(verifyWebhookSignature(`${body} `, header, SECRET, { timestamp: String(seconds), now })).toBe(false);
    // Without options, as before: no timestamp check.
    expect(verifyWebhookSignature(body, header, SECRET)).toBe(true);
  });
});

describe('webhook delivery headers and outbox', () => {
  it('sends X-Webhook-Id (the delivery, as listed) and X-Webhook-Timestamp beside the signature', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    const id = await register(registry, { url: receiver.url });
    const before = Math.floor(Date.now() / 1000);
    await publish(registry);
    const received = await receiver.request(1);
    await deliveriesSettled(registry.server.store.webhooks);
    const after = Math.ceil(Date.now() / 1000);

    const deliveryId = String(received.headers['x-webhook-id']);
    expect(deliveryId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const timestamp = String(received.headers['x-webhook-timestamp']);
    expect(timestamp).toMatch(/^\d+$/);
    expect(Number(timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(timestamp)).toBeLessThanOrEqual(after);
    const signature = String(received.headers['x-webhook-signature']);
    expect(verifyWebhookSignature(received.body, signature, SECRET, { timestamp, toleranceSeconds: 60 })).toBe(true);
    expect(verifyWebhookSignature(received.body, signature, SECRET, { timestamp, toleranceSeconds: 60, now: (Number(timestamp) + 600) * 1000 })).toBe(false);

    const [attempt] = await deliveries(registry, id);
    expect(attempt).toMatchObject({ id: received.headers['x-webhook-delivery'], deliveryId, status: 200 });
    expect(await registry.server.store.webhooks.getOutboxDelivery(deliveryId)).toMatchObject({ webhookId: id, event: 'template.published', state: 'delivered', attempts: 1 });
  });

  it('delivers to a subscriber that was down during the upload once it is back', async () => {
    // Retries a minute apart on the dispatcher's own clock: the test moves it on, no attempt runs out meanwhile.
    const clock = testClock();
    const registry = await startRegistry({ retryDelaysMs: Array.from({ length: 10 }, () => 60_000), now: clock.now });
    const port = await freePort();
    const id = await register(registry, { url: `http://127.0.0.1:${port}/hook` });
    const entry = await publish(registry);
    // Down: the first attempts fail.
    for (const attempts of [1, 2]) {
      await vi.waitFor(async () => expect(await registry.server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ state: 'pending', attempts }]));
      clock.advance(60_000);
      registry.dispatcher.kick();
    }
    await vi.waitFor(async () => expect(await registry.server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ state: 'pending', attempts: 3 }]));
    const receiver = await startReceiver(() => 200, port);
    clock.advance(60_000);
    registry.dispatcher.kick();
    const received = await receiver.request(1);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(verifyWebhookSignature(received.body, String(received.headers['x-webhook-signature']), SECRET)).toBe(true);
    expect(JSON.parse(received.body.toString('utf8'))).toEqual({ event: 'template.published', timestamp: expect.any(String), data: entry });
    const log = await deliveries(registry, id);
    expect(log.map((d) => d.status)).toEqual([200, null, null, null]);
    expect(log[0]).toMatchObject({ status: 200, error: null, deliveryId: received.headers['x-webhook-id'] });
    expect(log.slice(1).every((d) => d.status === null && d.error === noAnswerError(DEFAULT_TIMEOUT_MS))).toBe(true);
    expect(new Set(log.map((d) => d.deliveryId))).toEqual(new Set([received.headers['x-webhook-id']]));
    expect(receiver.requests).toHaveLength(1);
  });

  it('keeps a delivery across a server restart: the subscriber down during the upload gets it from the next server', async () => {
    // The retry is an hour away for the first server; the next server's clock is past it.
    const first = await startRegistry({ retryDelaysMs: [3_600_000] });
    const port = await freePort();
    const id = await register(first, { url: `http://127.0.0.1:${port}/hook` });
    const entry = await publish(first);
    await vi.waitFor(async () => expect(await first.server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ state: 'pending', attempts: 1 }]));
    const [failed] = await deliveries(first, id);
    expect(failed).toMatchObject({ status: null, error: noAnswerError(DEFAULT_TIMEOUT_MS) });
    await first.server.app.close();

    const receiver = await startReceiver(() => 200, port);
    const later = testClock();
    later.advance(2 * 3_600_000);
    const server = await startRegistryServer({ storeDir: first.server.storeDir, webhooks: { retryDelaysMs: [20, 40], now: later.now } });
    const second: Registry = { server, admin: first.admin, dispatcher: server.context.webhooks };
    const received = await receiver.request(1);
    await deliveriesSettled(second.server.store.webhooks);

    expect(received.headers['x-webhook-id']).toBe(failed!.deliveryId);
    expect(verifyWebhookSignature(received.body, String(received.headers['x-webhook-signature']), SECRET)).toBe(true);
    expect(JSON.parse(received.body.toString('utf8'))).toMatchObject({ event: 'template.published', data: entry });
    expect((await deliveries(second, id)).map((d) => [d.deliveryId, d.status])).toEqual([
      [failed!.deliveryId, 200],
      [failed!.deliveryId, null],
    ]);
    expect(await server.store.webhooks.listOutboxDeliveries(id)).toMatchObject([{ id: failed!.deliveryId, state: 'delivered', attempts: 2 }]);
    expect(receiver.requests).toHaveLength(1);
  });

  it('switches a webhook off when its receiver answers 410 Gone, and sends it nothing more', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver(() => 410);
    const id = await register(registry, { url: receiver.url, events: [...WEBHOOK_EVENTS] });
    // Switched off while a second delivery waits behind the first (both written behind the dispatcher's back).
    const [gone] = await registry.server.store.webhooks.enqueueEvent({ event: 'template.deprecated', data: { id: 'node-service', version: '1.0.0' } });
    const waiting = await registry.server.store.webhooks.enqueueEvent({ event: 'template.yanked', data: {} });
    registry.dispatcher.kick();
    await receiver.request(1);
    await vi.waitFor(async () => expect((await registry.server.store.webhooks.getOutboxDelivery(waiting[0]!.id))?.state).toBe('cancelled'));
    await deliveriesSettled(registry.server.store.webhooks);

    const webhook = await json(await api(registry, 'GET', `/webhooks/${id}`));
    expect(webhook.data.active).toBe(false);
    expect(await deliveries(registry, id)).toMatchObject([{ deliveryId: gone!.id, status: 410, error: expect.stringMatching(/^HTTP 410/) }]);
    expect(await registry.server.store.webhooks.getOutboxDelivery(gone!.id)).toMatchObject({ state: 'failed', attempts: 1, lastStatus: 410 });
    // Nothing more: a later event writes no delivery for it.
    await publish(registry);
    expect(await registry.server.store.webhooks.listOutboxDeliveries(id)).toHaveLength(2);
    await deliveriesSettled(registry.server.store.webhooks);
    expect(receiver.requests).toHaveLength(1);
  });

  it('sends each webhook the events it chose; enqueue raises an event (the lifecycle routes use it)', async () => {
    const registry = await startRegistry();
    const published = await startReceiver();
    const updated = await startReceiver();
    const lifecycle = await startReceiver();
    const everything = await startReceiver();
    await register(registry, { url: published.url, events: ['template.published'] });
    await register(registry, { url: updated.url, events: ['registry.updated'] });
    await register(registry, { url: lifecycle.url, events: ['template.deprecated', 'template.yanked'] });
    await register(registry, { url: everything.url, events: [...WEBHOOK_EVENTS] });
    await publish(registry);
    await deliveriesSettled(registry.server.store.webhooks);

    const events = (receiver: Receiver): string[] => receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')).event as string).sort();
    expect(events(published)).toEqual(['template.published']);
    expect(events(updated)).toEqual(['registry.updated']);
    expect(events(lifecycle)).toEqual([]);
    expect(events(everything)).toEqual(['registry.updated', 'template.published']);

    const written = await registry.dispatcher.enqueue('template.deprecated', { id: 'node-service', version: '1.1.0' });
    expect(written).toHaveLength(2);
    await deliveriesSettled(registry.server.store.webhooks);
    expect(events(lifecycle)).toEqual(['template.deprecated']);
    expect(events(everything)).toEqual(['registry.updated', 'template.deprecated', 'template.published']);
    expect(events(published)).toEqual(['template.published']);
    const deprecated = lifecycle.requests[0]!;
    expect(deprecated.headers['x-webhook-event']).toBe('template.deprecated');
    expect(JSON.parse(deprecated.body.toString('utf8'))).toEqual({ event: 'template.deprecated', timestamp: expect.any(String), data: { id: 'node-service', version: '1.1.0' } });
  });

  it('sends registry.updated after a rebuild that changed registry.json, with its URL and ETag', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    await register(registry, { url: receiver.url, events: ['registry.updated'] });
    // A rebuild that changes nothing sends nothing.
    await registry.server.context.rebuild();
    await deliveriesSettled(registry.server.store.webhooks);
    expect(receiver.requests).toEqual([]);

    await publish(registry);
    const received = await receiver.request(1);
    await deliveriesSettled(registry.server.store.webhooks);
    const body = JSON.parse(received.body.toString('utf8'));
    const served = await fetch(`${registry.server.url}/registry.json`, { headers: { 'accept-encoding': 'identity' } });
    const document = (await served.json()) as { lastUpdated: string; templates: unknown[] };
    expect(body).toEqual({
      event: 'registry.updated',
      timestamp: expect.any(String),
      data: { url: `${registry.server.url}/registry.json`, etag: served.headers.get('etag'), lastUpdated: document.lastUpdated, templates: document.templates.length },
    });
    const validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/RegistryUpdatedEvent` });
    expect(validate(body) ? [] : validate.errors).toEqual([]);
    expect(receiver.requests).toHaveLength(1);
  });
});

describe('the order of deliveries and the ids of attempts', () => {
  /** A receiver answering the n-th request with `status(n)` once `held(n)` resolves, counting the requests open at once. */
  async function holdingReceiver(status: (n: number) => number, held: (n: number) => Promise<void>): Promise<Receiver & { mostOpen: () => number }> {
    let open = 0;
    let most = 0;
    const receiver = await startReceiver(async (n) => {
      open++;
      most = Math.max(most, open);
      await held(n);
      open--;
      return status(n);
    });
    return { ...receiver, mostOpen: () => most };
  }

  /** While the first attempt is held open: the dispatcher, asked again, starts no other attempt, and the outbox hands out nothing more. */
  async function expectNothingElseStarts(registry: Registry, receiver: Receiver): Promise<void> {
    registry.dispatcher.kick();
    expect(await registry.server.store.webhooks.claimDueDeliveries(new Date(), 10, 60_000)).toEqual([]);
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(receiver.requests).toHaveLength(1);
  }

  const numberOf = (request: { body: Buffer }): number => (JSON.parse(request.body.toString('utf8')) as { data: { n: number } }).data.n;

  it('sends a webhook its deliveries one at a time, in the order their events were written, a retry included', async () => {
    const registry = await startRegistry();
    // The first attempt is held open and fails: the later events wait for its retry.
    const first = gate();
    const receiver = await holdingReceiver((n) => (n === 1 ? 500 : 200), (n) => (n === 1 ? first.wait : Promise.resolve()));
    await register(registry, { url: receiver.url, events: [...WEBHOOK_EVENTS] });
    const store = registry.server.store.webhooks;
    for (const n of [1, 2, 3]) await store.enqueueEvent({ event: 'template.deprecated', data: { n } });
    registry.dispatcher.kick();
    await receiver.request(1);
    await expectNothingElseStarts(registry, receiver);
    first.open();
    await receiver.request(4);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(receiver.requests.map(numberOf)).toEqual([1, 1, 2, 3]);
    expect(receiver.mostOpen()).toBe(1);
  });

  it('a publish reaches a subscriber of every event as template.published, then registry.updated', async () => {
    const registry = await startRegistry();
    const first = gate();
    const receiver = await holdingReceiver(() => 200, (n) => (n === 1 ? first.wait : Promise.resolve()));
    const hook = await register(registry, { url: receiver.url, events: [...WEBHOOK_EVENTS] });
    await publish(registry);
    await receiver.request(1);
    // registry.updated is written while template.published is still being delivered: it waits.
    await vi.waitFor(async () => expect(await registry.server.store.webhooks.listOutboxDeliveries(hook)).toHaveLength(2));
    await expectNothingElseStarts(registry, receiver);
    first.open();
    await receiver.request(2);
    await deliveriesSettled(registry.server.store.webhooks);

    expect(receiver.requests.map((r) => r.headers['x-webhook-event'])).toEqual(['template.published', 'registry.updated']);
    expect(receiver.mostOpen()).toBe(1);
  });

  it('lists attempts by ids that are UUIDs sorting as the attempts were made (sort=id, -id and a cursor), never row numbers', async () => {
    const registry = await startRegistry();
    const store = registry.server.store.webhooks;
    const hook = await register(registry, { url: 'https://hooks.example.com/a' });
    const other = await register(registry, { url: 'https://hooks.example.com/b' });
    // 12 attempts (more than 9: row numbers sorted as text put 10 before 9), another webhook's between them.
    const made: string[] = [];
    for (let i = 0; i < 12; i++) {
      made.push(await store.startDelivery(hook, 'template.published', new Date(Date.UTC(2026, 0, 1, 0, 0, i))));
      await store.startDelivery(other, 'template.published', new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
    }
    const list = async (query: string): Promise<Json> => {
      const response = await api(registry, 'GET', `/webhooks/${hook}/deliveries?${query}`);
      expect(response.status, query).toBe(200);
      return json(response);
    };
    const ids = (body: Json): string[] => (body.data as Array<{ id: string }>).map((d) => d.id);

    for (const id of made) expect(id).toMatch(UUID_V7);
    expect(ids(await list('limit=100'))).toEqual([...made].reverse());
    expect(ids(await list('limit=100&sort=id'))).toEqual(made);
    expect(ids(await list('limit=100&sort=-id'))).toEqual([...made].reverse());
    const walked: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await list(`sort=id&limit=5&cursor=${encodeURIComponent(cursor)}`);
      walked.push(...ids(page));
      if (!page.pagination.hasNext) break;
      cursor = page.pagination.nextCursor;
    }
    expect(walked).toEqual(made);
  });
});
