/**
 * The store on a small tmpfs that fills up during uploads (root only: mounting needs it). No 201
 * is lost after a restart, no 409 claims a version that is not stored, and once space is freed a
 * retry of the same bytes is answered 201. A disk full after the commit answers 201 saying the
 * version is not listed yet, and the build is retried until it lists it (the embedded store and
 * PostgreSQL + S3); a disk full before it leaves nothing (no archive, manifest or pending row, even
 * while the disk stays full) and a retry of the same bytes is refused the same way, then taken.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate, type PackResult } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { openSqliteStorage, openStorage, type RegistryStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { startRegistryServer, startServerOn, type StorageTestServer } from '../helpers/registry-server.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { checkStore } from '../helpers/store-check.js';

const TMPFS_BYTES = 8 * 1024 * 1024;

function tryMount(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'the tests do not run as root';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_BYTES}`, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `mounting a tmpfs failed: ${String(error).split('\n')[0]}`;
  }
}

let mountPoint = '';
let skipReason: string | undefined;
beforeAll(async () => {
  mountPoint = await mkdtemp(path.join(tmpdir(), 'tr-diskfull-'));
  skipReason = tryMount(mountPoint);
  // A notice, so that a skipped run is seen as one.
  if (skipReason) console.warn(`disk-full test skipped: ${skipReason}`);
});
afterAll(async () => {
  if (!skipReason) execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
  await rm(mountPoint, { recursive: true, force: true });
});

/** Templates whose archives are about 700 KB of incompressible bytes each. */
async function bulkyPacks(count: number): Promise<PackResult[]> {
  const out = await tempDir('tr-diskfull-packs-');
  const packs: PackResult[] = [];
  for (let i = 0; i < count; i++) {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: `bulky-${i}` } });
    await writeFile(path.join(dir, 'template', 'blob.bin'), randomBytes(700 * 1024));
    packs.push(await packTemplate(dir, { outDir: out }));
  }
  return packs;
}

type Outcome = { status: 201 } | { status: number; code?: string; message?: string };

async function upload(url: string, token: string, pack: PackResult): Promise<Outcome> {
  try {
    await publishTemplate({ registryUrl: url, token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    return { status: 201 };
  } catch (error) {
    if (error instanceof PublishError) return { status: error.status ?? 0, ...(error.code ? { code: error.code } : {}), message: error.message };
    return { status: 0, message: String(error) };
  }
}

describe('a full disk', () => {
  it('loses no 201, answers no lying 409, and takes the same bytes once space is freed', async (context) => {
    if (skipReason) return context.skip();
    const store = path.join(mountPoint, 'store');
    await mkdir(store);
    // Room for the database and a few archives; freed later.
    const filler = path.join(mountPoint, 'filler');
    await writeFile(filler, Buffer.alloc(2 * 1024 * 1024));
    const packs = await bulkyPacks(12);

    let server = await startRegistryServer({ storeDir: store, limits: { uploadPerMinute: 10_000 } });
    const token = server.token;
    const accepted = new Set<string>();
    const refused: PackResult[] = [];
    for (const pack of packs) {
      const outcome = await upload(server.url, token, pack);
      if (outcome.status === 201) accepted.add(pack.manifest.name);
      else {
        expect(outcome.status, `${pack.manifest.name}: a failed store is a server error, not ${JSON.stringify(outcome)}`).toBeGreaterThanOrEqual(500);
        refused.push(pack);
      }
    }
    expect(refused.length, 'the disk never filled up').toBeGreaterThan(0);
    // A retry on a full disk fails again, and never with a 409 for a version that is not there.
    for (const pack of refused) {
      const retry = await upload(server.url, token, pack);
      expect(retry.status, JSON.stringify(retry)).toBeGreaterThanOrEqual(500);
    }
    expect((await checkStore(store)).problems).toEqual([]);

    await rm(filler);
    const retried = await upload(server.url, token, refused[0]!);
    expect(retried.status).toBe(201);
    accepted.add(refused[0]!.manifest.name);

    await server.app.close();
    server = await startRegistryServer({ storeDir: store });
    const registry = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
    const listed = new Map(registry.templates.map((entry) => [entry.id, entry.integrity]));
    for (const pack of packs) if (accepted.has(pack.manifest.name)) expect(listed.get(pack.manifest.name), pack.manifest.name).toBe(pack.integrity);
    expect((await checkStore(store)).problems).toEqual([]);
  }, 120_000);
});

/** Mounts of the tests below, unmounted after each. */
const mounts: string[] = [];
afterEach(() => {
  for (const dir of mounts.splice(0).reverse()) execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
});

function mountSmall(dir: string, bytes: number): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'pipe' });
  mounts.push(dir);
}

/** Fills the file system of `file` up to its last byte (a filler file); returns it. */
async function fillUp(file: string): Promise<string> {
  for (const chunk of [1024 * 1024, 64 * 1024, 4096, 512]) {
    try {
      for (;;) await appendFile(file, Buffer.alloc(chunk));
    } catch {
      // full at this chunk size: go on with smaller ones
    }
  }
  return file;
}

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field
  body: any;
}

async function post(server: StorageTestServer, pack: PackResult): Promise<Answer> {
  const form = new FormData();
  form.append('manifest', new Blob([JSON.stringify(pack.manifest)], { type: 'application/json' }), 'template.json');
  form.append('template', new Blob([await readFile(pack.file)], { type: 'application/gzip' }), 'template.tgz');
  const response = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: form });
  return { status: response.status, body: await response.json() };
}

async function listed(server: StorageTestServer): Promise<Map<string, string | undefined>> {
  const registry = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
  return new Map(registry.templates.map((entry) => [`${entry.id}@${entry.version}`, entry.integrity]));
}

async function smallPack(name: string): Promise<PackResult> {
  return packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name } }), { outDir: await tempDir('tr-diskfull-packs-') });
}

/**
 * A disk that fills up after the commit (the store folder's public/, where the registry is built,
 * on its own small tmpfs): the upload is answered 201 with `meta.listed: false` and why, the entry
 * it will have; once there is room again the build, tried again on its own, lists it.
 */
async function fullAfterCommit(open: (store: string) => Promise<RegistryStorage>): Promise<void> {
  const store = await tempDir('tr-diskfull-store-');
  const publicDir = path.join(store, 'public');
  await mkdir(publicDir);
  mountSmall(publicDir, 2 * 1024 * 1024);
  const server = await startServerOn(await open(store), { rebuildRetry: { minDelayMs: 50, maxDelayMs: 200 } });
  expect(server.store.publicDir).toBe(publicDir);
  const first = await smallPack('listed-first');
  expect((await post(server, first)).status).toBe(201);
  const filler = await fillUp(path.join(publicDir, 'filler'));

  const pack = await smallPack('stored-unlisted');
  const answer = await post(server, pack);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  expect(answer.body.meta.listed).toBe(false);
  expect(answer.body.meta.warning).toBe("stored-unlisted@1.0.0 is stored, but registry.json does not list it yet: the registry's storage is full; the server rebuilds it until it does");
  expect(answer.body.data).toMatchObject({ id: 'stored-unlisted', version: '1.0.0', integrity: pack.integrity });
  expect((await listed(server)).has('stored-unlisted@1.0.0')).toBe(false);
  // Stored: the same bytes again are the version that is there (409), not one in progress (503).
  expect((await post(server, pack)).status).toBe(409);

  await rm(filler);
  await vi.waitFor(async () => expect((await listed(server)).get('stored-unlisted@1.0.0')).toBe(pack.integrity), { timeout: 15_000, interval: 50 });
  expect((await listed(server)).get('listed-first@1.0.0')).toBe(first.integrity);
}

describe('a disk full after the commit', () => {
  it('embedded store: answers 201 (listed: false, why), and lists the version once the retried build can write', async (context) => {
    if (skipReason) return context.skip();
    await fullAfterCommit((store) => openSqliteStorage(store));
  }, 60_000);

  describe.skipIf(postgresSkipReason !== undefined)('PostgreSQL + S3', () => {
    const postgres = usePostgres();
    let s3: FakeS3 | undefined;
    beforeAll(async () => {
      s3 = await startFakeS3(['diskfull']);
    });
    afterAll(async () => {
      await s3?.close();
    });

    it('answers 201 (listed: false, why), and lists the version once the retried build can write', async (context) => {
      if (skipReason) return context.skip();
      await fullAfterCommit(async (store) =>
        openStorage({
          store,
          database: await postgres.createDatabase(),
          storage: 's3://diskfull/run',
          s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
        }),
      );
    }, 60_000);
  });
});

describe('a disk full before the commit', () => {
  it('leaves nothing (no archive, manifest or pending row) though the disk stays full, refuses a retry the same way, and takes it once there is room', async (context) => {
    if (skipReason) return context.skip();
    const store = path.join(mountPoint, 'before-commit');
    await mkdir(store);
    const storage = await openSqliteStorage(store);
    // The disk fills up (another upload, another program) between the archive check and the commit.
    const commit = storage.versions.commitVersion.bind(storage.versions);
    let fill = true;
    let filler: string | undefined;
    storage.versions.commitVersion = async (...args) => {
      if (fill) filler = await fillUp(path.join(mountPoint, 'before-commit-filler'));
      return commit(...args);
    };
    const server = await startServerOn(storage);
    const pack = await smallPack('refused-whole');

    const refused = await post(server, pack);
    expect(refused.status, JSON.stringify(refused.body)).toBe(507);
    expect(refused.body.error.code).toBe('INSUFFICIENT_STORAGE');
    expect(filler).toBeDefined();
    expect((await checkStore(store)).problems).toEqual([]);
    expect(await storage.versions.getVersion('refused-whole', '1.0.0')).toBeUndefined();

    // Still full: refused the same way (never 503 for a version "in progress"), still nothing left.
    const again = await post(server, pack);
    expect(again.status, JSON.stringify(again.body)).toBe(507);
    expect((await checkStore(store)).problems).toEqual([]);

    fill = false;
    await rm(filler as string);
    const taken = await post(server, pack);
    expect(taken.status, JSON.stringify(taken.body)).toBe(201);
    expect(taken.body.meta.listed).toBe(true);
    expect((await listed(server)).get('refused-whole@1.0.0')).toBe(pack.integrity);
    expect((await checkStore(store)).problems).toEqual([]);
  }, 60_000);
});
