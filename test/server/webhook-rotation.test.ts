/**
 * `PUT /webhooks/{id}` replaces a subscription (URL, events, active, secret) and
 * `PATCH` changes some of it, keeping its id, creation time and delivery log; a new secret is a
 * rotation: for the overlap (`secretOverlapSeconds`, default one day) deliveries are signed with
 * both, the replaced one in X-Webhook-Signature-Previous.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { describe, expect, it } from 'vitest';

import { isValidRange } from '../../src/core/index.js';
import { DEFAULT_SECRET_OVERLAP_SECONDS } from '../../src/server/routes/webhooks.js';
import { verifyWebhookSignature, type DeliveryView } from '../../src/server/webhooks.js';
import { previousSecretAt, updatedWebhook } from '../../src/store/records.js';
import type { StoredWebhook } from '../../src/store/types.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { startReceiver, type Received } from '../helpers/webhook-receiver.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const OLD_SECRET = 'the-secret-receivers-hold-today';
const NEW_SECRET = 'the-secret-they-will-hold-tomorrow';
const START = new Date('2026-03-01T12:00:00.000Z');

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;
const DOCUMENT_ID = 'urn:template-registry:openapi';
const openapi = JSON.parse(readFileSync(path.resolve('openapi/openapi.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats(ajv);
ajv.addFormat('semver-range', { type: 'string', validate: isValidRange });
ajv.addSchema({ ...openapi, $id: DOCUMENT_ID });

function expectDocumented(method: string, status: number, body: unknown): void {
  const response = openapi.paths['/webhooks/{id}']?.[method]?.responses?.[String(status)];
  expect(response, `${method} /webhooks/{id} ${status} is documented`).toBeDefined();
  const target = typeof response.$ref === 'string' ? `${response.$ref}/content/application~1json/schema` : `#/paths/~1webhooks~1{id}/${method}/responses/${status}/content/application~1json/schema`;
  const validate = ajv.compile({ $ref: `${DOCUMENT_ID}${target}` });
  expect(validate(body) ? [] : validate.errors, `${method} /webhooks/{id} ${status}`).toEqual([]);
}

interface Registry {
  server: TestServer;
  admin: string;
  clock: { now: Date };
}

async function startRegistry(): Promise<Registry> {
  const clock = { now: START };
  const server = await startRegistryServer({ webhooks: { retryDelaysMs: [20, 40], now: () => clock.now } });
  const { token } = await server.store.tokens.createToken({ role: 'admin' });
  return { server, admin: token, clock };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field
type Json = any;

async function api(registry: Registry, method: string, route: string, body?: unknown, token: string = registry.admin): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${registry.server.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : JSON.parse(text) };
}

async function register(registry: Registry, url: string): Promise<string> {
  const created = await api(registry, 'POST', '/webhooks', { url, events: ['template.deprecated'], secret: OLD_SECRET, active: true });
  expect(created.status).toBe(201);
  return created.body.data.id as string;
}

/** Raises an event and waits until its deliveries are settled. */
async function raise(registry: Registry, event: 'template.deprecated' | 'template.yanked', version: string): Promise<void> {
  await registry.server.context.webhooks.enqueue(event, { id: 'rotating', version });
  await deliveriesSettled(registry.server.store.webhooks);
}

async function deliveries(registry: Registry, id: string): Promise<DeliveryView[]> {
  const listed = await api(registry, 'GET', `/webhooks/${id}/deliveries`);
  expect(listed.status).toBe(200);
  return listed.body.data as DeliveryView[];
}

const signatures = (received: Received): [string | undefined, string | undefined] => [
  received.headers['x-webhook-signature'] as string | undefined,
  received.headers['x-webhook-signature-previous'] as string | undefined,
];

describe('PUT /webhooks/{id}', () => {
  it('replaces URL, events, active and secret, keeping the id, creation time and delivery log', async () => {
    const registry = await startRegistry();
    const before = await startReceiver();
    const after = await startReceiver();
    const id = await register(registry, before.url);
    await raise(registry, 'template.deprecated', '1.0.0');
    expect(before.requests).toHaveLength(1);
    const created = (await api(registry, 'GET', `/webhooks/${id}`)).body.data;

    const replaced = await api(registry, 'PUT', `/webhooks/${id}`, { url: after.url, events: ['template.yanked'], secret: NEW_SECRET, active: true });
    expect(replaced.status).toBe(200);
    expectDocumented('put', 200, replaced.body);
    expect(replaced.body.data).toEqual({ id, url: after.url, events: ['template.yanked'], active: true, createdAt: created.createdAt });
    expect(JSON.stringify(replaced.body)).not.toContain(NEW_SECRET);
    expect((await api(registry, 'GET', `/webhooks/${id}`)).body.data).toEqual(replaced.body.data);

    // The events it chose now: a deprecation goes nowhere, a yank to the new URL.
    await raise(registry, 'template.deprecated', '1.1.0');
    await raise(registry, 'template.yanked', '1.1.0');
    expect(before.requests).toHaveLength(1);
    expect(after.requests).toHaveLength(1);
    // The log kept the attempt made before the change.
    expect((await deliveries(registry, id)).map((d) => [d.event, d.status])).toEqual([
      ['template.yanked', 200],
      ['template.deprecated', 200],
    ]);
  });

  it('signs with both secrets for the overlap (default one day), then with the new one only', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    const id = await register(registry, receiver.url);
    const put = await api(registry, 'PUT', `/webhooks/${id}`, { url: receiver.url, events: ['template.deprecated'], secret: NEW_SECRET, active: true });
    expect(put.status).toBe(200);

    await raise(registry, 'template.deprecated', '1.0.0');
    const during = receiver.requests[0] as Received;
    const [signature, previous] = signatures(during);
    // The new secret signs X-Webhook-Signature; the replaced one still signs, in its own header.
    expect(verifyWebhookSignature(during.body, String(signature), NEW_SECRET)).toBe(true);
    expect(verifyWebhookSignature(during.body, String(previous), OLD_SECRET)).toBe(true);
    expect(verifyWebhookSignature(during.body, String(signature), OLD_SECRET)).toBe(false);
    // A receiver holding either secret passes both headers and is satisfied.
    expect(verifyWebhookSignature(during.body, [signature, previous], OLD_SECRET)).toBe(true);
    expect(verifyWebhookSignature(during.body, [signature, previous], NEW_SECRET)).toBe(true);
    expect(verifyWebhookSignature(during.body, [signature, previous], 'a-third-secret')).toBe(false);

    // One second before the overlap ends: both still sign; at its end: only the new secret.
    registry.clock.now = new Date(START.getTime() + (DEFAULT_SECRET_OVERLAP_SECONDS - 1) * 1000);
    await raise(registry, 'template.deprecated', '1.1.0');
    expect(verifyWebhookSignature((receiver.requests[1] as Received).body, String(signatures(receiver.requests[1] as Received)[1]), OLD_SECRET)).toBe(true);
    registry.clock.now = new Date(START.getTime() + DEFAULT_SECRET_OVERLAP_SECONDS * 1000);
    await raise(registry, 'template.deprecated', '1.2.0');
    const later = receiver.requests[2] as Received;
    expect(signatures(later)[1]).toBeUndefined();
    expect(verifyWebhookSignature(later.body, signatures(later), NEW_SECRET)).toBe(true);
    expect(verifyWebhookSignature(later.body, signatures(later), OLD_SECRET)).toBe(false);
  });

  it('secretOverlapSeconds chooses the overlap: 0 drops the old secret at once; the same secret again is no rotation', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    const id = await register(registry, receiver.url);
    const same = await api(registry, 'PUT', `/webhooks/${id}`, { url: receiver.url, events: ['template.deprecated'], secret: OLD_SECRET, active: true });
    expect(same.status).toBe(200);
    await raise(registry, 'template.deprecated', '1.0.0');
    expect(signatures(receiver.requests[0] as Received)[1]).toBeUndefined();

    const now = await api(registry, 'PUT', `/webhooks/${id}`, { url: receiver.url, events: ['template.deprecated'], secret: NEW_SECRET, active: true, secretOverlapSeconds: 0 });
    expect(now.status).toBe(200);
    await raise(registry, 'template.deprecated', '1.1.0');
    const received = receiver.requests[1] as Received;
    expect(signatures(received)[1]).toBeUndefined();
    expect(verifyWebhookSignature(received.body, String(signatures(received)[0]), NEW_SECRET)).toBe(true);

    const hour = await api(registry, 'PATCH', `/webhooks/${id}`, { secret: 'a-third-secret', secretOverlapSeconds: 3600 });
    expect(hour.status).toBe(200);
    registry.clock.now = new Date(START.getTime() + 3599_000);
    await raise(registry, 'template.deprecated', '1.2.0');
    expect(verifyWebhookSignature((receiver.requests[2] as Received).body, signatures(receiver.requests[2] as Received), NEW_SECRET)).toBe(true);
    registry.clock.now = new Date(START.getTime() + 3600_000);
    await raise(registry, 'template.deprecated', '1.3.0');
    expect(verifyWebhookSignature((receiver.requests[3] as Received).body, signatures(receiver.requests[3] as Received), NEW_SECRET)).toBe(false);
  });

  it('refuses a missing field (400), a bad URL or event (422), an overlap past seven days (422), another token (403) and an unknown webhook (404)', async () => {
    const registry = await startRegistry();
    const id = await register(registry, 'https://hooks.example.com/a');
    const whole = { url: 'https://hooks.example.com/b', events: ['template.deprecated'], secret: NEW_SECRET, active: true };

    const missing = await api(registry, 'PUT', `/webhooks/${id}`, { url: whole.url, events: whole.events, active: true });
    expect(missing.status).toBe(400);
    expectDocumented('put', 400, missing.body);
    expect(missing.body.error.details).toContainEqual(expect.objectContaining({ field: 'secret', code: 'REQUIRED' }));

    const badUrl = await api(registry, 'PUT', `/webhooks/${id}`, { ...whole, url: 'ftp://hooks.example.com/b', events: ['template.nothing'] });
    expect(badUrl.status).toBe(422);
    expectDocumented('put', 422, badUrl.body);
    expect(badUrl.body.error.details.map((d: { field: string; code: string }) => [d.field, d.code])).toEqual([
      ['url', 'UNSUPPORTED_SCHEME'],
      ['events.0', 'UNKNOWN_EVENT'],
    ]);
    const tooLong = await api(registry, 'PUT', `/webhooks/${id}`, { ...whole, secretOverlapSeconds: 604_801 });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.details).toContainEqual(expect.objectContaining({ field: 'secretOverlapSeconds' }));

    const { token: publisher } = await registry.server.store.tokens.createToken({ role: 'publisher', owner: 'someone' });
    expect((await api(registry, 'PUT', `/webhooks/${id}`, whole, publisher)).status).toBe(403);
    const unknown = await api(registry, 'PUT', '/webhooks/wh_nothing', whole);
    expect(unknown.status).toBe(404);
    expectDocumented('put', 404, unknown.body);
    // Nothing of the refused changes was kept.
    expect(await registry.server.store.webhooks.getWebhook(id)).toMatchObject({ url: 'https://hooks.example.com/a', secret: OLD_SECRET });
  });
});

describe('PATCH /webhooks/{id}', () => {
  it('changes only the fields given, keeping the secret and the log; an empty change or an unknown field is refused', async () => {
    const registry = await startRegistry();
    const receiver = await startReceiver();
    const id = await register(registry, receiver.url);
    await raise(registry, 'template.deprecated', '1.0.0');

    const off = await api(registry, 'PATCH', `/webhooks/${id}`, { active: false });
    expect(off.status).toBe(200);
    expectDocumented('patch', 200, off.body);
    expect(off.body.data).toMatchObject({ id, url: receiver.url, events: ['template.deprecated'], active: false });
    await raise(registry, 'template.deprecated', '1.1.0');
    expect(receiver.requests).toHaveLength(1);

    const on = await api(registry, 'PATCH', `/webhooks/${id}`, { active: true, events: ['template.deprecated', 'template.yanked'] });
    expect(on.body.data).toMatchObject({ active: true, events: ['template.deprecated', 'template.yanked'] });
    await raise(registry, 'template.yanked', '1.1.0');
    const received = receiver.requests[1] as Received;
    expect(verifyWebhookSignature(received.body, signatures(received), OLD_SECRET)).toBe(true);
    expect(signatures(received)[1]).toBeUndefined();
    expect((await deliveries(registry, id)).map((d) => d.event)).toEqual(['template.yanked', 'template.deprecated']);

    const empty = await api(registry, 'PATCH', `/webhooks/${id}`, {});
    expect(empty.status).toBe(422);
    expectDocumented('patch', 422, empty.body);
    const unknownField = await api(registry, 'PATCH', `/webhooks/${id}`, { colour: 'blue' });
    expect(unknownField.status).toBe(422);
    expect((await api(registry, 'PATCH', '/webhooks/wh_nothing', { active: true })).status).toBe(404);
  });
});

describe('updatedWebhook (the rule both stores apply)', () => {
  const webhook: StoredWebhook = { id: 'wh_1', url: 'https://a.example/', events: ['*'], secret: 'one', active: true, createdAt: START.toISOString() };
  const at = (seconds: number): Date => new Date(START.getTime() + seconds * 1000);

  it('a rotation during an overlap drops the oldest secret: at most two sign', () => {
    const first = updatedWebhook(webhook, { secret: 'two', secretOverlapMs: 60_000 }, at(0));
    expect([first.secret, previousSecretAt(first, at(59))]).toEqual(['two', 'one']);
    const second = updatedWebhook(first, { secret: 'three', secretOverlapMs: 60_000 }, at(30));
    expect([second.secret, previousSecretAt(second, at(89)), previousSecretAt(second, at(90))]).toEqual(['three', 'two', undefined]);
  });

  it('a change without a new secret keeps an overlap running and forgets one that ended', () => {
    const rotated = updatedWebhook(webhook, { secret: 'two', secretOverlapMs: 60_000 }, at(0));
    const moved = updatedWebhook(rotated, { url: 'https://b.example/', secretOverlapMs: 0 }, at(10));
    expect(moved).toMatchObject({ url: 'https://b.example/', secret: 'two', previousSecret: 'one', previousSecretExpiresAt: at(60).toISOString() });
    const late = updatedWebhook(rotated, { active: false, secretOverlapMs: 0 }, at(60));
    expect(late.previousSecret).toBeUndefined();
    expect(late).toMatchObject({ id: 'wh_1', createdAt: START.toISOString(), secret: 'two', active: false });
  });
});
