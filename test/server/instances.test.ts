/**
 * Several registry servers on one PostgreSQL database and one bucket (s3rver) behave as one registry:
 * two `createServer` instances in this process (each its own pool, presence and listening connection,
 * as two processes would have), for uploads racing across instances, a publish through one seen
 * through the other, webhook deliveries with both dispatchers running, revocation, and the retry of an
 * upload whose instance died.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RegistryDocument, TemplateManifest } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { createServer, type RegistryServer, type ServerOptions } from '../../src/server/index.js';
import { openPostgresStorage, S3BlobStore, type PostgresStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { freePort, LOCAL_RECEIVERS } from '../helpers/registry-server.js';
import { startFakeS3, S3RVER_CREDENTIALS, type FakeS3 } from '../helpers/s3-server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { activeToken } from '../helpers/tokens.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const BUCKET = 'registry';

interface Instance extends RegistryServer {
  url: string;
  storage: PostgresStorage;
}

interface Packed {
  manifest: TemplateManifest;
  bytes: Buffer;
  sha256: string;
}

async function pack(name: string, version = '1.0.0'): Promise<Packed> {
  const packed = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name, version } }), { outDir: await tempDir() });
  const bytes = await readFile(packed.file);
  return { manifest: packed.manifest, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** POSTs a multipart upload; resolves with the answer's status and body. */
async function upload(url: string, token: string, packed: Packed): Promise<{ status: number; body: { error?: { code?: string } } }> {
  const form = new FormData();
  form.append('manifest', new Blob([JSON.stringify(packed.manifest)], { type: 'application/json' }), 'template.json');
  form.append('template', new Blob([packed.bytes], { type: 'application/gzip' }), 'template.tgz');
  const response = await fetch(`${url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: response.status, body: (await response.json()) as { error?: { code?: string } } };
}

async function registryOf(instance: Instance): Promise<RegistryDocument> {
  return (await (await fetch(`${instance.url}/registry.json`)).json()) as RegistryDocument;
}

describe.skipIf(postgresSkipReason !== undefined)('several server instances on one PostgreSQL database and one bucket', () => {
  const postgres = usePostgres();
  let s3: FakeS3;
  let prefixes = 0;
  const running: Instance[] = [];

  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  afterAll(async () => {
    await s3?.close();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((instance) => instance.app.close()));
  });

  /** `count` servers on one fresh database and one bucket prefix; an admin token made through the first. */
  async function cluster(count: number, options: Partial<ServerOptions> = {}): Promise<{ instances: Instance[]; token: string; databaseUrl: string; prefix: string }> {
    const databaseUrl = await postgres.createDatabase();
    const prefix = `instances-${++prefixes}`;
    const instances: Instance[] = [];
    for (let i = 0; i < count; i++) instances.push(await startInstance(databaseUrl, prefix, options));
    const { token } = await instances[0]!.storage.tokens.createToken({ role: 'admin' });
    return { instances, token, databaseUrl, prefix };
  }

  async function startInstance(databaseUrl: string, prefix: string, options: Partial<ServerOptions> = {}): Promise<Instance> {
    const local = await tempDir('tr-instance-');
    const storage = await openPostgresStorage({
      url: databaseUrl,
      blobs: new S3BlobStore({ bucket: BUCKET, prefix, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 10_000 }),
      publicDir: path.join(local, 'public'),
      tmpDir: path.join(local, 'tmp'),
    });
    const port = await freePort();
    const server = await createServer({
      store: storage,
      publicUrl: `http://127.0.0.1:${port}`,
      forceCloseConnections: true,
      statsRefreshMs: 0,
      limits: { uploadPerMinute: 1000, readPerMinute: 100_000 },
      ...options,
      webhooks: { allowPrivate: LOCAL_RECEIVERS, ...options.webhooks },
    });
    const url = await server.app.listen({ host: '127.0.0.1', port });
    const instance = { ...server, url, storage };
    running.push(instance);
    return instance;
  }

  it('lets exactly one of concurrent uploads of the same version across both instances win: 201 once, 409 (or 503 while it is stored) for the rest', async () => {
    const { instances, token } = await cluster(2);
    const [a, b] = instances as [Instance, Instance];
    const packed = await pack('raced');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => upload((i % 2 === 0 ? a : b).url, token, packed)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201), statuses.join(' ')).toHaveLength(1);
    for (const result of results.filter((r) => r.status !== 201)) {
      expect([409, 503]).toContain(result.status);
      expect(result.body.error?.code).toBe(result.status === 409 ? 'VERSION_EXISTS' : 'VERSION_IN_PROGRESS');
    }
    // Those told to retry (the winner was being stored) are now told it exists, on either instance.
    for (const [i, result] of results.entries()) {
      if (result.status === 503) expect((await upload((i % 2 === 0 ? b : a).url, token, packed)).status).toBe(409);
    }
    const versions = await a.storage.versions.listVersions();
    expect(versions.map((v) => `${v.name}@${v.version}:${v.state}`)).toEqual(['raced@1.0.0:complete']);
  }, 60_000);

  it('shows a version published through A in B within a short time: registry.json, /templates/{id} and the archive bytes', async () => {
    const { instances, token } = await cluster(2);
    const [a, b] = instances as [Instance, Instance];
    const packed = await pack('seen-everywhere');
    expect((await upload(a.url, token, packed)).status).toBe(201);
    // Told by the database (LISTEN/NOTIFY), not found by a poll minutes later.
    await vi.waitFor(async () => expect((await registryOf(b)).templates.map((e) => e.id)).toEqual(['seen-everywhere']), { timeout: 5000, interval: 20 });
    const entry = (await registryOf(b)).templates[0]!;
    expect(entry.downloadUrl.startsWith(b.url)).toBe(true);
    const template = await fetch(`${b.url}/templates/seen-everywhere`);
    expect(template.status).toBe(200);
    expect(JSON.stringify(await template.json())).toContain('"1.0.0"');
    const archive = Buffer.from(await (await fetch(entry.downloadUrl)).arrayBuffer());
    expect(archive.equals(packed.bytes)).toBe(true);
    expect(`sha512-${createHash('sha512').update(archive).digest('base64')}`).toBe(entry.integrity);
    // A lifecycle change through B reaches A's registry too.
    const deprecated = await fetch(`${b.url}/templates/seen-everywhere/versions/1.0.0`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ stability: 'deprecated', deprecationMessage: 'use 2.0.0' }),
    });
    expect(deprecated.status, await deprecated.clone().text()).toBe(200);
    await vi.waitFor(async () => expect((await registryOf(a)).templates[0]).toMatchObject({ stability: 'deprecated' }), { timeout: 5000, interval: 20 });
  }, 60_000);

  it('delivers each webhook delivery exactly once with both dispatchers claiming from the shared outbox', async () => {
    const receiver = await startReceiver(() => 204);
    const receiverUrl = receiver.url.replace(/\/hook$/, '');
    const received = (): { id: string; event: string; hook: string }[] =>
      receiver.requests.map((request) => ({ id: String(request.headers['x-webhook-id']), event: String(request.headers['x-webhook-event']), hook: request.url }));
    // Both dispatchers look at the outbox every 20 ms: they race for every delivery.
    const { instances, token } = await cluster(2, { webhooks: { pollIntervalMs: 20, retryDelaysMs: [50, 50] } });
    const [a, b] = instances as [Instance, Instance];
    for (const [i, hook] of ['first', 'second'].entries()) {
      const created = await fetch(`${(i === 0 ? a : b).url}/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${receiverUrl}/${hook}`, events: ['template.published', 'registry.updated'], secret: 'a-long-enough-signing-secret', active: true }),
      });
      expect(created.status, await created.clone().text()).toBe(201);
    }
    const published = 6;
    for (let i = 0; i < published; i++) expect((await upload((i % 2 === 0 ? a : b).url, token, await pack(`hooked-${i}`))).status).toBe(201);
    // Each publish: template.published, and registry.updated from the instance that took it (not from the other one's rebuild).
    const expected = published * 2 * 2;
    await vi.waitFor(() => expect(received().length).toBeGreaterThanOrEqual(expected), { timeout: 15_000, interval: 20 });
    // Both dispatchers idle (no attempt running, nothing pending): a second copy of any delivery would have been sent by now.
    await Promise.all([a, b].map((instance) => deliveriesSettled(instance.store.webhooks)));
    expect(received()).toHaveLength(expected);
    const perDelivery = new Map<string, number>();
    for (const r of received()) perDelivery.set(`${r.hook} ${r.id}`, (perDelivery.get(`${r.hook} ${r.id}`) ?? 0) + 1);
    expect([...perDelivery.values()].every((n) => n === 1)).toBe(true);
    expect(received().filter((r) => r.event === 'template.published')).toHaveLength(published * 2);
    expect(received().filter((r) => r.event === 'registry.updated')).toHaveLength(published * 2);
    expect(await a.storage.webhooks.countPendingDeliveries()).toBe(0);
  }, 60_000);

  it('refuses a token on B as soon as it is revoked through A', async () => {
    const { instances } = await cluster(2);
    const [a, b] = instances as [Instance, Instance];
    const { token, record } = await a.storage.tokens.createToken({ role: 'admin' });
    const list = (instance: Instance) => fetch(`${instance.url}/webhooks`, { headers: { authorization: `Bearer ${token}` } });
    expect((await list(b)).status).toBe(200);
    await a.storage.tokens.revokeToken(record.id);
    expect((await list(b)).status).toBe(401);
    expect((await list(a)).status).toBe(401);
  }, 60_000);

  it('takes an upload whose instance died while it held the reservation on retry through another instance, at once', async () => {
    const { instances, token, databaseUrl, prefix } = await cluster(1);
    const [b] = instances as [Instance];
    const packed = await pack('interrupted');
    // Instance A reserved the version (its upload passed every check) and died before committing.
    const a = await startInstance(databaseUrl, prefix);
    const record = (await activeToken(a.storage.tokens, token))!;
    const reservation = { name: 'interrupted', version: '1.0.0', integrity: `sha512-${createHash('sha512').update(packed.bytes).digest('base64')}`, sha256: packed.sha256, size: packed.bytes.length, owner: record.owner };
    expect(await a.storage.versions.reserveVersion(reservation, record)).toEqual({ reserved: true });
    // While A lives, the upload is in progress: a retry through B is told to wait.
    expect((await upload(b.url, token, packed)).status).toBe(503);
    running.splice(running.indexOf(a), 1);
    await a.app.close();
    // A is gone: the retry of the same bytes through B succeeds at once.
    const retried = await upload(b.url, token, packed);
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect((await registryOf(b)).templates.map((e) => e.id)).toEqual(['interrupted']);
  }, 60_000);
});
