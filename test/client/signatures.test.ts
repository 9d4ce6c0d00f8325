/**
 * The client and a signed registry: keys pinned on first use (or given), every document checked
 * before it is accepted; an altered document, a stripped signature, an unknown key refused as a
 * possible man in the middle (never answered from the cache instead); a rotation accepted on the
 * word of a pinned key; a document caught between two writes of a build looked at once more.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { cacheFileFor, RegistryClient, RegistryTrustError, pinFileFor, type SignatureOptions } from '../../src/client/registry-client.js';
import { readPublicKeys } from '../../src/core/registry-signatures.js';
import { buildRegistry } from '../../src/registry/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { privateJwk, publicJwk, signingKeys } from '../helpers/signing-keys.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { memorySource, version } from '../registry/memory-source.js';

const servers: FolderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const versions = () =>
  memorySource([
    version('alpha', '1.0.0', {}, { downloadUrl: 'archives/alpha/1.0.0.tgz' }),
    version('beta', '2.0.0', { keywords: ['go'] }, { downloadUrl: 'archives/beta/2.0.0.tgz' }),
  ]);

/** A registry signed with `jwks` (or unsigned), built into a served folder. */
async function signedRegistry(...jwks: Awaited<ReturnType<typeof privateJwk>>[]) {
  const dir = await tempDir('tr-signed-');
  const source = versions();
  const build = async (keys = jwks) => buildRegistry(source, { outDir: dir, ...(keys.length > 0 ? { signing: await signingKeys(...keys) } : {}) });
  await build();
  const server = await serveFolder(dir);
  servers.push(server);
  return { dir, source, build, server, url: `${server.url}registry.json` };
}

function client(url: string, cacheDir: string, signatures: SignatureOptions = { pinOnFirstUse: true }, extra: Partial<ConstructorParameters<typeof RegistryClient>[0]> = {}): RegistryClient {
  return new RegistryClient({ registryUrl: url, cacheDir, signatures, ...extra });
}

const urlOf = (input: string | URL | Request): string => (typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);

async function refused(promise: Promise<unknown>): Promise<RegistryTrustError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RegistryTrustError);
  expect((error as Error).message).toMatch(/possible man in the middle/);
  return error as RegistryTrustError;
}

describe('a signed registry, keys pinned on first use', () => {
  it('is read after its keys are pinned in the cache folder', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    const reader = client(registry.url, cacheDir);
    expect((await reader.listTemplates()).map((e) => e.id)).toEqual(['alpha', 'beta']);
    const pins = JSON.parse(await readFile(pinFileFor(cacheDir, registry.server.url.replace(/\/$/, '')), 'utf8')) as { keys: { kid: string; d?: string }[] };
    expect(pins.keys.map((k) => k.kid)).toEqual(['k1']);
    // Sparse reads are checked too.
    const sparse = client(registry.url, cacheDir, undefined, { mode: 'sparse' });
    expect((await sparse.getTemplate('beta'))?.version).toBe('2.0.0');
  });

  it('refuses an altered registry.json, index.json or template file, naming the registry', async () => {
    for (const [file, read] of [
      ['registry.json', (c: RegistryClient) => c.listTemplates()],
      ['index.json', (c: RegistryClient) => c.index()],
      ['templates/alpha.json', (c: RegistryClient) => c.getTemplate('alpha')],
    ] as const) {
      const registry = await signedRegistry(await privateJwk('k1'));
      const cacheDir = await tempDir();
      await client(registry.url, cacheDir).listTemplates(); // pins k1

      const text = await readFile(path.join(registry.dir, file), 'utf8');
      await writeFile(path.join(registry.dir, file), text.replace('archives/alpha/1.0.0.tgz', 'https://evil.example/alpha.tgz').replace('"alpha"', '"alpha" '));
      const reader = client(registry.url, cacheDir, undefined, { mode: file === 'registry.json' ? 'full' : 'sparse', refresh: true });
      const error = await refused(read(reader));
      expect(error.message).toContain(`the registry ${registry.server.url.replace(/\/$/, '')} served ${file}`);
      expect(error.message).toMatch(/SHA-256 differs/);
    }
  });

  it('refuses a document whose signature was stripped, once the keys are pinned', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();
    await rm(path.join(registry.dir, 'registry.json.jws'));
    const error = await refused(client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates());
    expect(error.message).toMatch(/served registry\.json without a signature \(registry\.json\.jws is missing\) though its keys are pinned/);

    // Stripping every signature and keys.json does not help either.
    await rm(path.join(registry.dir, 'keys.json'));
    await rm(path.join(registry.dir, 'keys.json.jws'));
    await refused(client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates());
  });

  it('refuses a registry re-signed by a key it did not pin (keys.json replaced too)', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();

    // The attacker serves the same registry signed with their own key, their keys.json included.
    const attacker = await tempDir();
    await cp(registry.dir, attacker, { recursive: true });
    await buildRegistry(registry.source, { outDir: attacker, signing: await signingKeys(await privateJwk('attacker')) });
    await cp(attacker, registry.dir, { recursive: true });

    const error = await refused(client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates());
    expect(error.message).toMatch(/signed by key "attacker", which is not among the trusted keys \(k1\), nor listed in a keys\.json a pinned key signed/);
  });

  it('keeps refusing instead of answering from the copy in the cache', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    let now = Date.now();
    const reader = client(registry.url, cacheDir, undefined, { now: () => now });
    await reader.listTemplates();
    await writeFile(path.join(registry.dir, 'registry.json'), (await readFile(path.join(registry.dir, 'registry.json'), 'utf8')).replace('"beta"', '"beta" '));
    now += 2 * 3_600_000; // the cached copy expired: the next call fetches
    await refused(reader.listTemplates());
    // Within the failure backoff, no request: still refused, not the stale copy.
    await refused(reader.listTemplates());
    expect(reader.status().lastError).toMatch(/possible man in the middle/);
  });

  it('accepts a rotation: a new key listed in a keys.json signed by the pinned key', async () => {
    const k1 = await privateJwk('k1', { notBefore: '2026-01-01T00:00:00Z' });
    const registry = await signedRegistry(k1);
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();

    // The operator adds k2 (newer) beside k1: documents are signed by k2, keys.json by both.
    const k2 = await privateJwk('k2', { notBefore: '2026-02-01T00:00:00Z' });
    registry.source.list.push(version('gamma', '1.0.0', {}, { downloadUrl: 'archives/gamma/1.0.0.tgz' }));
    expect((await registry.build([k1, k2])).signing?.kid).toBe('k2');
    expect((await client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates()).map((e) => e.id)).toEqual(['alpha', 'beta', 'gamma']);
    const pinFile = pinFileFor(cacheDir, registry.server.url.replace(/\/$/, ''));
    expect((JSON.parse(await readFile(pinFile, 'utf8')) as { keys: { kid: string }[] }).keys.map((k) => k.kid)).toEqual(['k1', 'k2']);

    // Then k1 is retired: k2, now pinned, carries on alone.
    registry.source.list.push(version('delta', '1.0.0', {}, { downloadUrl: 'archives/delta/1.0.0.tgz' }));
    await registry.build([k2]);
    expect((await client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates()).map((e) => e.id)).toContain('delta');
  });

  it('refuses a "rotation" whose keys.json no pinned key signed', async () => {
    const k1 = await privateJwk('k1');
    const registry = await signedRegistry(k1);
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();
    // k2 alone: keys.json lists k2 and only k2 signs it.
    await rm(path.join(registry.dir, 'keys.json'));
    await rm(path.join(registry.dir, 'keys.json.jws'));
    await registry.build([await privateJwk('k2')]);
    await refused(client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates());
  });

  it('refuses a key used outside its window', async () => {
    const k1 = await privateJwk('k1', { notAfter: '2030-01-01T00:00:00Z' });
    const registry = await signedRegistry(k1);
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();
    const error = await refused(client(registry.url, cacheDir, undefined, { refresh: true, now: () => Date.parse('2030-06-01T00:00:00Z') }).listTemplates());
    expect(error.message).toMatch(/key k1 expired at 2030-01-01T00:00:00.000Z/);
  });

  it('refuses, on first use, a keys.json no key of its own signed', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    await rm(path.join(registry.dir, 'keys.json.jws'));
    const error = await refused(client(registry.url, await tempDir()).listTemplates());
    expect(error.message).toMatch(/served keys\.json that cannot be trusted on first use/);
  });

  it('reads an unsigned registry as before, and pins its keys once it starts signing', async () => {
    const registry = await signedRegistry();
    const cacheDir = await tempDir();
    expect(await client(registry.url, cacheDir).listTemplates()).toHaveLength(2);
    await registry.build([await privateJwk('k1')]);
    await client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates();
    await rm(path.join(registry.dir, 'registry.json.jws'));
    await refused(client(registry.url, cacheDir, undefined, { refresh: true }).listTemplates());
  });

  it('reads a registry as unsigned when its host answers keys.json with a page (a host that serves index.html for every path)', async () => {
    const registry = await signedRegistry();
    await writeFile(path.join(registry.dir, 'keys.json'), '<!doctype html><title>catalog</title>');
    expect(await client(registry.url, await tempDir()).listTemplates()).toHaveLength(2);
  });

  it('refuses to read the /templates routes in place of a missing registry.json once keys are pinned', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();
    await rm(path.join(registry.dir, 'registry.json'));
    await rm(path.join(registry.dir, 'index.json'));
    // No copy in the cache either (the pins stay).
    await rm(cacheFileFor(cacheDir, registry.url));
    // The host now answers the routes of a registry server, with no signature anywhere.
    const routes: typeof fetch = (input, init) =>
      urlOf(input).includes('/templates?') ? Promise.resolve(Response.json({ data: [{ id: 'evil' }] })) : fetch(input, init);
    const error = await refused(client(registry.url, cacheDir, undefined, { refresh: true, fetch: routes }).listTemplates());
    expect(error.message).toMatch(/served registry\.json as HTTP 404 though its keys are pinned/);
  });
});

describe('keys given from the start', () => {
  it('accepts the registry signed by the given key and refuses one that is unsigned or signed by another', async () => {
    const k1 = await privateJwk('k1');
    const keys = readPublicKeys(publicJwk(k1), 'test');
    const signed = await signedRegistry(k1);
    expect(await client(signed.url, await tempDir(), { keys }).listTemplates()).toHaveLength(2);

    const unsigned = await signedRegistry();
    const error = await refused(client(unsigned.url, await tempDir(), { keys }).listTemplates());
    expect(error.message).toMatch(/without a signature .*\(its keys were given with --registry-key/);

    const other = await signedRegistry(await privateJwk('k9'));
    await refused(client(other.url, await tempDir(), { keys }).listTemplates());
  });
});

describe('a document caught between two writes of a build', () => {
  it('is fetched once more with its signature, past caches, before it is refused', async () => {
    const registry = await signedRegistry(await privateJwk('k1'));
    const cacheDir = await tempDir();
    await client(registry.url, cacheDir).listTemplates();
    const oldSignature = await readFile(path.join(registry.dir, 'registry.json.jws'));
    registry.source.list.push(version('gamma', '1.0.0', {}, { downloadUrl: 'archives/gamma/1.0.0.tgz' }));
    await registry.build();

    // A cache in front still has the old signature for the first request.
    let served = 0;
    const stale: typeof fetch = (input, init) => {
      if (urlOf(input).endsWith('/registry.json.jws') && served++ === 0) return Promise.resolve(new Response(oldSignature));
      return fetch(input, init);
    };
    const requests: Headers[] = [];
    const recording: typeof fetch = (input, init) => {
      if (urlOf(input).endsWith('/registry.json')) requests.push(new Headers(init?.headers));
      return stale(input, init);
    };
    expect((await client(registry.url, cacheDir, undefined, { refresh: true, fetch: recording }).listTemplates()).map((e) => e.id)).toContain('gamma');
    expect(requests).toHaveLength(2);
    expect(requests[1]?.get('cache-control')).toBe('no-cache');
  });
});
