/**
 * The server's builder compresses a large registry.json's brotli variant on a worker thread
 * (registry/brotli-thread.ts): the same bytes as on its own thread, and its SHA-256. The worker's
 * script is the built one (`npm test` builds first); the sources have none, and say so.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, createBrotliCompress } from 'node:zlib';

import { afterEach, describe, expect, it } from 'vitest';

import { BrotliThread as SourceBrotliThread } from '../../src/registry/brotli-thread.js';
import { compressParts } from '../../src/registry/compress-parts.js';
import { compressionOptions } from '../../src/registry/build.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { tempDir } from '../helpers/fixtures.js';
import { version } from './memory-source.js';

const built = path.resolve('build/src/registry');
const { BrotliThread, sharedBuffer } = (await import(path.join(built, 'brotli-thread.js'))) as typeof import('../../src/registry/brotli-thread.js');
const { RegistryBuilder } = (await import(path.join(built, 'build.js'))) as typeof import('../../src/registry/build.js');

/** Text of `size` bytes that compresses as JSON does (repetitive, not constant). */
function jsonLike(size: number): Buffer {
  const bytes = sharedBuffer(size);
  let offset = 0;
  for (let i = 0; offset < size; i++) offset += bytes.write(`{"id":"t-${i % 997}","version":"1.${i % 13}.0","downloads":${(i * 7919) % 100_003}},`, offset);
  return bytes;
}

const threads: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(threads.splice(0).map((thread) => thread.close()));
});

describe('the brotli thread', () => {
  it('gives the bytes the builder makes on its own thread, and their SHA-256, for a document in shared memory', async () => {
    const bytes = jsonLike(6 * 1024 * 1024 + 123);
    const options = compressionOptions(bytes.length).brotli;
    const thread = new BrotliThread();
    threads.push(thread);
    expect(thread.ready()).toBe(true);
    const made = await thread.compress(bytes, options);
    const here = await compressParts([bytes], createBrotliCompress(options));
    expect(made?.compressed.equals(here)).toBe(true);
    expect(made?.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(brotliDecompressSync(made?.compressed as Buffer).equals(bytes)).toBe(true);
  });

  it('refuses a job whose worker went away (the caller then compresses itself), and answers nothing after', async () => {
    const thread = new BrotliThread();
    threads.push(thread);
    const bytes = jsonLike(8 * 1024 * 1024);
    const job = thread.compress(bytes, compressionOptions(bytes.length).brotli);
    expect(job).toBeDefined();
    await thread.close();
    await expect(job).rejects.toThrow(/brotli worker exited/);
    expect(thread.compress(bytes, {})).toBeUndefined();
  });

  it('answers nothing once closed, and nothing where its script is not beside it (the sources): the caller compresses itself', async () => {
    const thread = new BrotliThread();
    await thread.close();
    expect(thread.compress(Buffer.from('{}'), {})).toBeUndefined();
    const fromSources = new SourceBrotliThread();
    threads.push(fromSources);
    expect(fromSources.ready()).toBe(false);
  });
});

describe("the server's builder with its brotli thread", () => {
  it('writes the registry.json.br a streamed build (build-registry) writes, and its ETag, when registry.json is over 4 MB', async () => {
    const long = 'A template with a long description to make the document large. '.repeat(14);
    const versions: SourceVersion[] = Array.from({ length: 400 }, (_, t) => Array.from({ length: 10 }, (_, v) => version(`t-${String(t).padStart(3, '0')}`, `1.${v}.0`, { description: `${long}${t}/${v}` }))).flat();
    const source: RegistrySource = { versions: () => Promise.resolve(versions.map((v) => structuredClone(v))) };
    const now = (): Date => new Date('2026-03-01T12:00:00.000Z');
    const keptDir = await tempDir('tr-kept-');
    const kept = new RegistryBuilder(source, { outDir: keptDir, now, catalog: false });
    threads.push(kept);
    const result = await kept.build();
    const streamedDir = await tempDir('tr-stream-');
    // As build-registry reads it: a few templates at a time, streamed into staged files.
    const byTemplate: RegistrySource['byTemplate'] = () =>
      Promise.resolve({
        names: [...new Set(versions.map((v) => v.manifest.name))],
        versionsOf: (names) => Promise.resolve(versions.filter((v) => names.includes(v.manifest.name)).map((v) => structuredClone(v))),
      });
    const streamed = new RegistryBuilder({ ...source, identity: 'streamed', byTemplate }, { outDir: streamedDir, now, catalog: false, state: true });
    const reference = await streamed.build();
    const registry = await readFile(path.join(keptDir, 'registry.json'));
    expect(registry.length).toBeGreaterThan(4 * 1024 * 1024);
    for (const name of ['registry.json', 'registry.json.gz', 'registry.json.br']) {
      expect({ name, same: (await readFile(path.join(keptDir, name))).equals(await readFile(path.join(streamedDir, name))) }).toEqual({ name, same: true });
    }
    expect(result.etag).toBe(reference.etag);
    expect(result.etag).toBe(`"${createHash('sha256').update(registry).digest('base64url')}"`);
  });
});
