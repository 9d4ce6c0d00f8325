/**
 * With `--storage s3://bucket/prefix` the server also keeps the static registry in
 * the bucket (below `public/`), self-contained for a CDN: every change reaches it, and the
 * `registry.updated` event, the one a CDN purge hangs on, is sent only once the bucket holds the
 * new registry.json.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { openStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startServerOn } from '../helpers/registry-server.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { RegistryClient } from '../../src/client/index.js';
import { readPublicKeys } from '../../src/core/registry-signatures.js';
import { createServer } from '../../src/server/app.js';
import { privateJwk, publicJwk, signingKeys } from '../helpers/signing-keys.js';

const BUCKET = 'static-copy';

describe('the static registry copy in the bucket of --storage', () => {
  let s3: FakeS3 | undefined;
  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  afterAll(async () => {
    await s3?.close();
  });

  const bucketDocument = async (prefix: string): Promise<RegistryDocument | undefined> => {
    const response = await fetch(`${s3?.endpoint ?? ''}/${BUCKET}/${prefix}/public/registry.json`);
    return response.status === 200 ? ((await response.json()) as RegistryDocument) : undefined;
  };

  it('follows publishes and yanks, and announces registry.updated only after the bucket has the new registry.json', async () => {
    const prefix = 'announce';
    const storage = await openStorage({
      store: await tempDir('tr-store-'),
      storage: `s3://${BUCKET}/${prefix}`,
      s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
    });
    const server = await startServerOn(storage, { webhooks: { retryDelaysMs: [20, 40] } });
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });

    // What the bucket's registry.json lists at the moment each registry.updated arrives.
    const listedWhenAnnounced: string[][] = [];
    const receiver = await startReceiver(async () => {
      const document = await bucketDocument(prefix);
      listedWhenAnnounced.push((document?.templates ?? []).map((entry) => `${entry.id}@${entry.version}${entry.yanked === true ? ' yanked' : ''}`));
      return 200;
    });
    const registered = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: ['registry.updated'], secret: 'static-copy-secret', active: true }),
    });
    expect(registered.status).toBe(201);

    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'copied', version: '1.0.0' } });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
    expect(await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ status: 201 });
    await vi.waitFor(() => expect(listedWhenAnnounced).toHaveLength(1), { timeout: 15_000, interval: 50 });
    expect(listedWhenAnnounced[0]).toEqual(['copied@1.0.0']);

    const yanked = await fetch(`${server.url}/templates/copied/versions/1.0.0`, { method: 'DELETE', headers: { authorization: `Bearer ${server.token}` } });
    expect(yanked.status).toBe(200);
    await vi.waitFor(() => expect(listedWhenAnnounced).toHaveLength(2), { timeout: 15_000, interval: 50 });
    expect(listedWhenAnnounced[1]).toEqual(['copied@1.0.0 yanked']);

    // The copy is self-contained: the archive beside it has the published bytes.
    const document = await bucketDocument(prefix);
    const archive = await fetch(`${s3?.endpoint ?? ''}/${BUCKET}/${prefix}/public/${document?.templates[0]?.downloadUrl ?? ''}`);
    expect(archive.status).toBe(200);
    expect(archive.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  }, 60_000);

  it('publishes a file staged through /files in the bucket from the local copy kept at its PUT (nothing downloaded, the object copied within the bucket), and stores the bytes it checked even when the staged object changed since', async () => {
    const prefix = 'staged';
    const storeDir = await tempDir('tr-store-');
    const s3Options = { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' };
    const storage = await openStorage({ store: storeDir, storage: `s3://${BUCKET}/${prefix}`, s3: s3Options });
    const opened = vi.spyOn(storage.files, 'openFile');
    const server = await startServerOn(storage);
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'staged-copy', version: '1.0.0' } });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
    // Every archive through /files (upload URL, PUT, confirm, POST /templates with its fileId).
    const published = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0, largeUploadThreshold: 0 });
    expect(published).toMatchObject({ status: 201, integrity: pack.integrity });
    expect(await archiveText(storage, 'staged-copy')).toEqual(await readFile(pack.file));
    // Read from the local copy, not from the bucket; the copy is gone once published.
    expect(opened).not.toHaveBeenCalled();
    expect(await localCopies(storeDir)).toEqual([]);

    // The staged object changed in the bucket after its confirmation: the bytes the server checked are stored, not those.
    const other = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'staged-changed', version: '1.0.0' } }), { outDir: await tempDir('tr-pack-') });
    const fileId = await stageAndChange(server, prefix, await readFile(other.file));
    expect(await localCopies(storeDir)).toHaveLength(1);
    expect((await publishStaged(server, fileId, other.manifest)).status).toBe(201);
    expect(await archiveText(storage, 'staged-changed')).toEqual(await readFile(other.file));
    expect(opened).not.toHaveBeenCalled();
  }, 60_000);

  it('after a restart (no local copy), publishes a file staged in the bucket from its bytes there, and refuses one whose object changed since', async () => {
    const prefix = 'restarted';
    const storeDir = await tempDir('tr-store-');
    const s3Options = { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' };
    const first = await startServerOn(await openStorage({ store: storeDir, storage: `s3://${BUCKET}/${prefix}`, s3: s3Options }));
    const kept = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'staged-kept', version: '1.0.0' } }), { outDir: await tempDir('tr-pack-') });
    const changed = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'staged-changed', version: '1.0.0' } }), { outDir: await tempDir('tr-pack-') });
    const keptId = await stageAndChange(first, prefix, await readFile(kept.file), false);
    const changedId = await stageAndChange(first, prefix, await readFile(changed.file));
    await first.app.close();
    expect(await localCopies(storeDir)).toEqual([]);

    const storage = await openStorage({ store: storeDir, storage: `s3://${BUCKET}/${prefix}`, s3: s3Options });
    const second = { ...(await startServerOn(storage)), token: first.token };
    expect((await publishStaged(second, keptId, kept.manifest)).status).toBe(201);
    expect(await archiveText(storage, 'staged-kept')).toEqual(await readFile(kept.file));
    expect((await publishStaged(second, changedId, changed.manifest)).status).toBeGreaterThanOrEqual(500);
    expect(await storage.versions.openArchive('staged-changed', '1.0.0')).toBeUndefined();
  }, 60_000);

  it('removes the local copy of a staged file once the file expires and is swept', async () => {
    const prefix = 'swept';
    const storeDir = await tempDir('tr-store-');
    const s3Options = { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' };
    let now = Date.parse('2026-06-01T00:00:00Z');
    const server = await startServerOn(await openStorage({ store: storeDir, storage: `s3://${BUCKET}/${prefix}`, s3: s3Options }), {
      clock: () => new Date(now),
      files: { pendingTtlMs: 60_000, confirmedTtlMs: 60_000, sweepEveryMs: 40 },
    });
    const pack = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'staged-swept', version: '1.0.0' } }), { outDir: await tempDir('tr-pack-') });
    const fileId = await stageAndChange(server, prefix, await readFile(pack.file), false);
    expect(await localCopies(storeDir)).toHaveLength(1);
    now += 61_000;
    await expect.poll(() => localCopies(storeDir), { timeout: 10_000, interval: 50 }).toEqual([]);
    expect(await server.store.files.getFile(fileId)).toBeUndefined();
  }, 60_000);

  /** Stages `bytes` through /files and confirms them; with `change`, then changes the staged object in the bucket. */
  const stageAndChange = async (server: { url: string; token: string }, prefix: string, original: Buffer, change = true): Promise<string> => {
    const auth = { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' };
    const created = (await (await fetch(`${server.url}/files/upload-url`, { method: 'POST', headers: auth, body: JSON.stringify({ filename: 't.tgz', contentType: 'application/gzip' }) })).json()) as { data: { uploadUrl: string; fileId: string } };
    expect((await fetch(created.data.uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: original })).status).toBe(200);
    expect((await fetch(`${server.url}/files/${created.data.fileId}/confirm`, { method: 'POST', headers: auth, body: '{}' })).status).toBe(200);
    if (change) {
      const bytes = Buffer.from(original);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
      expect((await fetch(`${s3?.endpoint ?? ''}/${BUCKET}/${prefix}/files/${created.data.fileId}`, { method: 'PUT', body: bytes })).status).toBe(200);
    }
    return created.data.fileId;
  };

  const publishStaged = (server: { url: string; token: string }, fileId: string, manifest: object): Promise<Response> => {
    const form = new FormData();
    form.set('fileId', fileId);
    form.set('manifest', new Blob([JSON.stringify(manifest)], { type: 'application/json' }), 'template.json');
    return fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: form });
  };

  const archiveText = async (storage: Awaited<ReturnType<typeof openStorage>>, name: string): Promise<Buffer> => {
    const stored = await storage.versions.openArchive(name, '1.0.0');
    const chunks: Buffer[] = [];
    for await (const chunk of stored?.stream ?? []) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  /** The local copies of staged bytes the server keeps in the store's tmp/. */
  const localCopies = async (storeDir: string): Promise<string[]> => (await readdir(path.join(storeDir, 'tmp')).catch(() => [])).filter((name) => name.endsWith('.staged'));

  it('is signed with the signing keys (serve --sign-key), readable by a client that pinned the key', async () => {
    const prefix = 'signed';
    const storage = await openStorage({
      store: await tempDir('tr-store-'),
      storage: `s3://${BUCKET}/${prefix}`,
      s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
    });
    const jwk = await privateJwk('server-key');
    const server = await startServerOn(storage, { signing: await signingKeys(jwk) });
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'signed-copy', version: '1.0.0' } });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
    expect(await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ status: 201 });
    await vi.waitFor(async () => expect((await bucketDocument(prefix))?.templates.map((entry) => entry.id)).toEqual(['signed-copy']), { timeout: 15_000, interval: 100 });

    const site = `${s3?.endpoint ?? ''}/${BUCKET}/${prefix}/public/`;
    const client = new RegistryClient({ registryUrl: `${site}registry.json`, signatures: { keys: readPublicKeys(publicJwk(jwk), 'test') } });
    await vi.waitFor(async () => expect((await client.refresh(), await client.listTemplates()).map((entry) => entry.id)).toEqual(['signed-copy']), { timeout: 15_000, interval: 100 });
    expect((await client.getTemplate('signed-copy'))?.integrity).toBe(pack.integrity);
    expect((await fetch(`${site}keys.json`)).status).toBe(200);
  }, 60_000);

  it('refuses signing keys without a bucket to sign', async () => {
    const error = await createServer({ store: await tempDir('tr-store-'), publicUrl: 'http://127.0.0.1:1', signing: await signingKeys(await privateJwk('k')) }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/signing keys sign the static copy of the registry in a bucket: the storage has none/);
  });

  it('is written again at the next start when the bucket lost it', async () => {
    const prefix = 'heal';
    const open = async (store: string) =>
      openStorage({ store, storage: `s3://${BUCKET}/${prefix}`, s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' } });
    const store = await tempDir('tr-store-');
    const first = await startServerOn(await open(store));
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'healed', version: '1.0.0' } });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
    expect(await publishTemplate({ registryUrl: first.url, token: first.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ status: 201 });
    await vi.waitFor(async () => expect((await bucketDocument(prefix))?.templates.map((entry) => entry.id)).toEqual(['healed']), { timeout: 15_000, interval: 100 });
    await first.app.close();

    const deleted = await fetch(`${s3?.endpoint ?? ''}/${BUCKET}/${prefix}/public/registry.json`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect(await bucketDocument(prefix)).toBeUndefined();

    await startServerOn(await open(store));
    await vi.waitFor(async () => expect((await bucketDocument(prefix))?.templates.map((entry) => entry.id)).toEqual(['healed']), { timeout: 15_000, interval: 100 });
  }, 60_000);
});
