/**
 * Issue 26, item 1: `build-registry` (a builder that keeps a build state) streams a full build: it
 * reads the source a few templates at a time (`RegistrySource.byTemplate`), lets each batch's
 * manifests and entries go once their files are written, and writes registry.json from its parts.
 * Its output is byte for byte what the server's builder (which keeps everything) writes.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildRegistry, RegistryBuilder } from '../../src/registry/build.js';
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
    versionsSince: () => Promise.resolve(versions.map((v) => structuredClone(v))),
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

  it('reads the source at most 500 templates at a time, never all at once', async () => {
    const versions = Array.from({ length: 2_001 }, (_, index) => version(`t-${String(index).padStart(4, '0')}`, '1.0.0'));
    const source = batchedSource(versions);
    const outDir = await tempDir('tr-stream-');
    const result = await buildRegistry(source, { outDir, now: () => NOW, state: true, catalog: false });
    expect(source.whole).toBe(0);
    expect(source.reads.map((names) => names.length)).toEqual([500, 500, 500, 500, 1]);
    expect(result.counts).toEqual({ entries: 2_001, templates: 2_001 });
    const bytes = await readFile(path.join(outDir, 'registry.json'));
    const registry = JSON.parse(bytes.toString('utf8')) as { templates: { id: string }[] };
    expect(registry.templates.map((entry) => entry.id)).toEqual(versions.map((v) => v.manifest.name));
    // Over a megabyte: compressed a piece at a time, the variants still decompress to registry.json.
    expect(bytes.length).toBeGreaterThan(1024 * 1024);
    expect(gunzipSync(await readFile(path.join(outDir, 'registry.json.gz'))).equals(bytes)).toBe(true);
    expect(brotliDecompressSync(await readFile(path.join(outDir, 'registry.json.br'))).equals(bytes)).toBe(true);
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
});
