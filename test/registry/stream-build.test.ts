/**
 * Issue 26, item 1: `build-registry` (a builder that keeps a build state) streams a full build: it
 * reads the source a few templates at a time (`RegistrySource.byTemplate`), lets each batch's
 * manifests and entries go once their files are written, and writes registry.json from its parts.
 * Its output is byte for byte what the server's builder (which keeps everything) writes.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildRegistry, LISTING_BATCH, RegistryBuilder } from '../../src/registry/build.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { storeSource } from '../../src/store/source.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { version } from './memory-source.js';
import { filesOf } from '../helpers/registry-files.js';

const NOW = new Date('2026-03-01T12:00:00.000Z');

async function publish(server: TestServer, name: string, v: string, extra: Record<string, unknown> = {}): Promise<void> {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version: v, keywords: [name, `v${v}`], ...extra }, 'template/README.md': `# ${name} ${v}\n` });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  expect((await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).status).toBe(201);
}

/** A source of `versions` that can be read template by template, recording how it was read. */
function batchedSource(versions: SourceVersion[]): RegistrySource & { reads: string[][]; whole: number } {
  const source = {
    reads: [] as string[][],
    whole: 0,
    versions: () => {
      source.whole += 1;
      return Promise.resolve(versions.map((v) => structuredClone(v)));
    },
    identity: 'batched',
    // Nothing is ever the same as recorded: every build of it reads every version.
    templatesSince: () => Promise.resolve({ unchanged: new Set<string>(), versions: versions.map((v) => structuredClone(v)) }),
    byTemplate: () =>
      Promise.resolve({
        names: [...new Set(versions.map((v) => v.manifest.name))],
        versionsOf: (names: readonly string[]) => {
          source.reads.push([...names]);
          return Promise.resolve(versions.filter((v) => names.includes(v.manifest.name)).map((v) => structuredClone(v)));
        },
      }),
  };
  return source;
}

describe('a full build by build-registry (a builder with a build state)', () => {
  it('writes byte for byte what the server\'s builder writes for the same store, archives, variants and catalog included', async () => {
    const server = await startRegistryServer();
    await publish(server, 'alpha', '1.0.0');
    await publish(server, 'alpha', '1.1.0', { description: 'A newer alpha' });
    await publish(server, 'beta', '2.0.0', { category: 'backend' });
    await publish(server, 'gamma', '0.1.0', { stability: 'beta' });
    for (const layout of ['server', 'static'] as const) {
      const streamed = await tempDir('tr-stream-');
      const kept = await tempDir('tr-kept-');
      const read: string[][] = [];
      const versions = new Proxy(server.store.versions, {
        get(target, property, receiver) {
          if (property === 'listPublishedOf') {
            return (names: readonly string[]) => {
              read.push([...names].sort());
              return target.listPublishedOf?.(names);
            };
          }
          return Reflect.get(target, property, receiver) as unknown;
        },
      });
      const result = await buildRegistry(storeSource({ versions, events: server.store.events }, 'https://registry.example.com', { layout, identity: 'the-store' }), {
        outDir: streamed,
        now: () => NOW,
        state: true,
        publicUrl: 'https://registry.example.com',
      });
      // The server's builder, which keeps every entry for its API.
      const builder = new RegistryBuilder(storeSource(server.store, 'https://registry.example.com', { layout }), { outDir: kept, now: () => NOW, publicUrl: 'https://registry.example.com' });
      const reference = await builder.build();
      expect(read).toEqual([['alpha', 'beta', 'gamma']]);
      const ours = await filesOf(streamed);
      const theirs = await filesOf(kept);
      expect([...ours.keys()]).toEqual([...theirs.keys()]);
      for (const [name, bytes] of theirs) expect({ name, bytes: ours.get(name)?.toString('base64') }).toEqual({ name, bytes: bytes.toString('base64') });
      // The variants decompress to registry.json.
      const registry = ours.get('registry.json') as Buffer;
      expect(gunzipSync(ours.get('registry.json.gz') as Buffer).equals(registry)).toBe(true);
      expect(brotliDecompressSync(ours.get('registry.json.br') as Buffer).equals(registry)).toBe(true);
      expect(result.etag).toBe(reference.etag);
      expect(result.counts).toEqual({ entries: 4, templates: 3 });
      // The document is still there for a caller that asks (read from registry.json's bytes).
      expect(result.document.templates).toEqual(reference.document.templates);
    }
  });

  it('reads the source at most LISTING_BATCH (25) templates at a time, never all at once', async () => {
    const versions = Array.from({ length: 2_001 }, (_, index) => version(`t-${String(index).padStart(4, '0')}`, '1.0.0'));
    const source = batchedSource(versions);
    const outDir = await tempDir('tr-stream-');
    const result = await buildRegistry(source, { outDir, now: () => NOW, state: true, catalog: false });
    expect(source.whole).toBe(0);
    expect(LISTING_BATCH).toBe(25);
    expect(source.reads.map((names) => names.length)).toEqual([...Array.from({ length: 80 }, () => 25), 1]);
    expect(result.counts).toEqual({ entries: 2_001, templates: 2_001 });
    const bytes = await readFile(path.join(outDir, 'registry.json'));
    const registry = JSON.parse(bytes.toString('utf8')) as { templates: { id: string }[] };
    expect(registry.templates.map((entry) => entry.id)).toEqual(versions.map((v) => v.manifest.name));
    // Over a megabyte: compressed a piece at a time, the variants still decompress to registry.json.
    expect(bytes.length).toBeGreaterThan(1024 * 1024);
    expect(gunzipSync(await readFile(path.join(outDir, 'registry.json.gz'))).equals(bytes)).toBe(true);
    expect(brotliDecompressSync(await readFile(path.join(outDir, 'registry.json.br'))).equals(bytes)).toBe(true);
  });

  it('writes template files and registry.json whole when entries hold characters of two, three and four UTF-8 bytes', async () => {
    const descriptions = ['Café crème, naïve façade', '漢字のテンプレート', 'Rocket 🚀 and 😀 faces', 'plain ASCII'];
    const versions = descriptions.flatMap((description, index) => [
      version(`t-${index}`, '1.0.0', { description, author: { name: `Zoë ${index}` } }),
      version(`t-${index}`, '1.1.0', { description: `${description} ✓` }),
    ]);
    const outDir = await tempDir('tr-stream-');
    await buildRegistry(batchedSource(versions), { outDir, now: () => NOW, state: true, catalog: false });
    const registry = JSON.parse(await readFile(path.join(outDir, 'registry.json'), 'utf8')) as { templates: { id: string; version: string; description: string }[] };
    expect(registry.templates.map((entry) => `${entry.id}@${entry.version} ${entry.description}`)).toEqual(versions.map((v) => `${v.manifest.name}@${v.manifest.version} ${v.manifest.description}`));
    for (const [index, description] of descriptions.entries()) {
      const file = JSON.parse(await readFile(path.join(outDir, 'templates', `t-${index}.json`), 'utf8')) as { id: string; versions: { description: string; author: { name: string } }[] };
      expect(file.id).toBe(`t-${index}`);
      expect(file.versions.map((entry) => entry.description)).toEqual([description, `${description} ✓`]);
      expect(file.versions[0]?.author.name).toBe(`Zoë ${index}`);
    }
  });

  it('still leaves out and reports, by name and version, a stored version whose entry breaks the rules', async () => {
    const bad = version('b', '1.0');
    const source = batchedSource([version('a', '1.0.0'), bad, version('b', '1.1.0'), version('c', '1.0.0')]);
    const outDir = await tempDir('tr-stream-');
    const result = await buildRegistry(source, { outDir, now: () => NOW, state: true, catalog: false });
    expect(source.whole).toBe(0);
    expect(result.skipped).toEqual([{ id: 'b', version: '1.0', violations: [expect.objectContaining({ pointer: '/version', code: 'PATTERN' })] }]);
    const registry = JSON.parse(await readFile(path.join(outDir, 'registry.json'), 'utf8')) as { templates: { id: string; version: string }[] };
    expect(registry.templates.map((entry) => `${entry.id}@${entry.version}`)).toEqual(['a@1.0.0', 'b@1.1.0', 'c@1.0.0']);
  });

  it('writes registry.json over 4 MB and its variants byte for byte as the server\'s builder does', async () => {
    // 4,000 versions of about 1.6 KB of JSON each: above the size where the variants' compression
    // levels no longer depend on the size, and several pieces of what the compressors are fed.
    const long = 'A template with a long description to make the document large. '.repeat(14);
    const versions = Array.from({ length: 400 }, (_, t) => Array.from({ length: 10 }, (_, v) => version(`t-${String(t).padStart(3, '0')}`, `1.${v}.0`, { description: `${long}${t}/${v}` }))).flat();
    const streamed = await tempDir('tr-stream-');
    const kept = await tempDir('tr-kept-');
    const result = await buildRegistry(batchedSource(versions), { outDir: streamed, now: () => NOW, state: true, catalog: false });
    const reference = await buildRegistry(batchedSource(versions), { outDir: kept, now: () => NOW, catalog: false });
    const ours = await filesOf(streamed);
    const theirs = await filesOf(kept);
    expect((theirs.get('registry.json') as Buffer).length).toBeGreaterThan(4 * 1024 * 1024);
    for (const name of ['registry.json', 'registry.json.gz', 'registry.json.br', 'index.json', 'index.json.gz', 'index.json.br']) {
      expect({ name, same: ours.get(name)?.equals(theirs.get(name) as Buffer) }).toEqual({ name, same: true });
    }
    expect(brotliDecompressSync(ours.get('registry.json.br') as Buffer).equals(ours.get('registry.json') as Buffer)).toBe(true);
    expect(result.etag).toBe(reference.etag);
  });

  it('writes registry.json while it reads the source: the entries of the batches read so far are on disk, staged beside it', async () => {
    // About 3.6 KB of JSON per version: 3.6 MB of registry.json in all.
    const long = 'A template with a long description to make the document large. '.repeat(50);
    const versions = Array.from({ length: 1_001 }, (_, index) => version(`t-${String(index).padStart(4, '0')}`, '1.0.0', { description: long }));
    const outDir = await tempDir('tr-stream-');
    const source = batchedSource(versions);
    const listing = await (source.byTemplate as NonNullable<RegistrySource['byTemplate']>)();
    const staged: number[] = [];
    const watched: RegistrySource = {
      ...source,
      byTemplate: () =>
        Promise.resolve({
          names: listing.names,
          versionsOf: async (names) => {
            const temps = (await readdir(outDir)).filter((name) => name.startsWith('.registry.json.') && name.endsWith('.tmp') && !name.includes('.json.gz.') && !name.includes('.json.br.'));
            staged.push((await Promise.all(temps.map(async (name) => (await stat(path.join(outDir, name))).size))).reduce((sum, size) => sum + size, 0));
            return listing.versionsOf(names);
          },
        }),
    };
    await buildRegistry(watched, { outDir, now: () => NOW, state: true, catalog: false });
    const registry = await readFile(path.join(outDir, 'registry.json'));
    // Before the last batch (one template) is read, the 1,000 entries before it are on disk but for
    // the last megabyte, written with the next one, and the batches still waiting for their template
    // files (at most 4 of 25 templates: LISTING_LAG).
    expect(registry.length).toBeGreaterThan(3.5 * 1024 * 1024);
    expect(staged).toHaveLength(41);
    expect(staged[0]).toBe(0);
    expect(staged.at(-1)).toBeGreaterThan(registry.length - (4 * 25 + 1) * 3_700 - 1024 * 1024);
    // Nothing staged is left once the build is done.
    expect((await readdir(outDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('leaves the previous registry.json and no staged file when the source fails half-way through a streamed build', async () => {
    // Some 6.5 KB per version: when the 20th batch fails, 6 MB of registry.json were written and compressed.
    const long = 'A template with a long description to make the document large. '.repeat(100);
    const versions = Array.from({ length: 1_200 }, (_, index) => version(`t-${String(index).padStart(4, '0')}`, '1.0.0', { description: long }));
    const outDir = await tempDir('tr-stream-');
    await buildRegistry(batchedSource(versions.slice(0, 3)), { outDir, now: () => NOW, state: true, catalog: false });
    const before = await filesOf(outDir);
    const failing = batchedSource(versions);
    const listing = await (failing.byTemplate as NonNullable<RegistrySource['byTemplate']>)();
    let reads = 0;
    const source: RegistrySource = {
      ...failing,
      // Another store: the build state is not used, the build is a full one (read in batches).
      identity: 'another-store',
      byTemplate: () => Promise.resolve({ names: listing.names, versionsOf: (names) => (++reads === 20 ? Promise.reject(new Error('the store went away')) : listing.versionsOf(names)) }),
    };
    await expect(buildRegistry(source, { outDir, now: () => new Date('2026-04-01T00:00:00.000Z'), state: true, catalog: false })).rejects.toThrow('the store went away');
    const after = await filesOf(outDir);
    for (const name of ['registry.json', 'registry.json.gz', 'registry.json.br', 'index.json']) expect(after.get(name)?.equals(before.get(name) as Buffer)).toBe(true);
    expect((await readdir(outDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});
