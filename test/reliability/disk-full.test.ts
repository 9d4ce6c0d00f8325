/**
 * The store on a small tmpfs that fills up during uploads (root only: mounting needs it). No 201
 * is lost after a restart, no 409 claims a version that is not stored, and once space is freed a
 * retry of the same bytes is answered 201.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate, type PackResult } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
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
