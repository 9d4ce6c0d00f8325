/**
 * The behaviour every BlobStore must have. A backend's test file calls `blobContract(name, open,
 * failedPut)` with a function that opens a fresh, empty store and one that makes a put of `key`
 * fail (half-way where the backend can be made to).
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';

import { describe, expect, it } from 'vitest';

import type { BlobStore } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';

const HOSTILE_KEYS = ['../x', 'a/../../x', '/abs', 'a//b', 'a/', 'a\\b', 'a/./b', '.', '', 'a\u0000b'];

async function localFile(bytes: Uint8Array | string): Promise<string> {
  const file = path.join(await tempDir('tr-blob-'), 'local.bin');
  await writeFile(file, bytes);
  return file;
}

async function listAll(store: BlobStore, prefix: string): Promise<Map<string, number>> {
  const listed = new Map<string, number>();
  for await (const { key, size } of store.list(prefix)) listed.set(key, size);
  return listed;
}

/** Puts `count` tiny objects `<prefix>NNNN`, some at once. */
async function putMany(store: BlobStore, prefix: string, count: number): Promise<void> {
  const keys = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
  for (let start = 0; start < keys.length; start += 50) {
    await Promise.all(keys.slice(start, start + 50).map((key) => store.putBytes(key, key)));
  }
}

export function blobContract(backend: string, open: () => Promise<BlobStore>, failedPut: (store: BlobStore, key: string) => Promise<unknown>): void {
  describe(`${backend} blob store`, () => {
    it('gives back the bytes put, from bytes and from a file', async () => {
      const store = await open();
      const bytes = randomBytes(70_000);
      await store.putBytes('archives/a/1.0.0.tgz', bytes);
      expect(await store.readBytes('archives/a/1.0.0.tgz')).toEqual(bytes);
      await store.putFile('archives/b/2.0.0.tgz', await localFile(bytes.subarray(0, 1234)), { contentType: 'application/gzip' });
      expect(await store.readBytes('archives/b/2.0.0.tgz')).toEqual(bytes.subarray(0, 1234));
      await store.putBytes('text.json', '{"é":1}', { contentType: 'application/json' });
      expect((await store.readBytes('text.json'))?.toString('utf8')).toBe('{"é":1}');
      expect(typeof store.location).toBe('string');
    });

    it('opens a stream with its size', async () => {
      const store = await open();
      const bytes = randomBytes(100_000);
      await store.putBytes('x/y.bin', bytes);
      const reader = await store.open('x/y.bin');
      expect(reader?.size).toBe(bytes.length);
      expect(await buffer(reader!.stream)).toEqual(bytes);
    });

    it('replaces an object, and stores an empty one', async () => {
      const store = await open();
      await store.putBytes('k', 'first version, longer');
      await store.putFile('k', await localFile('second'));
      expect((await store.readBytes('k'))?.toString()).toBe('second');
      expect(await store.stat('k')).toEqual({ size: 6 });
      await store.putBytes('empty', new Uint8Array(0));
      expect(await store.stat('empty')).toEqual({ size: 0 });
      expect(await store.readBytes('empty')).toEqual(Buffer.alloc(0));
    });

    it('answers undefined for a missing key, and deletes quietly', async () => {
      const store = await open();
      expect(await store.open('missing/key')).toBeUndefined();
      expect(await store.readBytes('missing')).toBeUndefined();
      expect(await store.stat('missing')).toBeUndefined();
      await store.delete('missing/key');
      await store.putBytes('a/b', 'x');
      // "a" is a folder-like prefix, not an object
      expect(await store.stat('a')).toBeUndefined();
      expect(await store.open('a/b/c')).toBeUndefined();
      await store.delete('a/b');
      expect(await store.stat('a/b')).toBeUndefined();
      expect(await listAll(store, '')).toEqual(new Map());
    });

    it('lists nested keys below a prefix', async () => {
      const store = await open();
      await store.putBytes('archives/a/1.tgz', '1');
      await store.putBytes('archives/a/deep/2.tgz', '22');
      await store.putBytes('archives/b/3.tgz', '333');
      await store.putBytes('archivesX/4', '4444');
      await store.putBytes('manifests/a.json', '{}');
      expect(await listAll(store, 'archives/')).toEqual(new Map([['archives/a/1.tgz', 1], ['archives/a/deep/2.tgz', 2], ['archives/b/3.tgz', 3]]));
      expect(await listAll(store, 'archives/a/deep/')).toEqual(new Map([['archives/a/deep/2.tgz', 2]]));
      expect(await listAll(store, 'nothing/')).toEqual(new Map());
      expect([...(await listAll(store, '')).keys()].sort()).toEqual(['archives/a/1.tgz', 'archives/a/deep/2.tgz', 'archives/b/3.tgz', 'archivesX/4', 'manifests/a.json']);
    });

    it('lists more than a page of keys', async () => {
      const store = await open();
      await putMany(store, 'many/', 1050);
      await store.putBytes('other', 'x');
      const listed = await listAll(store, 'many/');
      expect(listed.size).toBe(1050);
      expect(listed.get('many/1049')).toBe('many/1049'.length);
    }, 60_000);

    it('refuses hostile keys, naming them', async () => {
      const store = await open();
      const file = await localFile('x');
      for (const key of HOSTILE_KEYS) {
        const named = new RegExp(JSON.stringify(key).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'));
        await expect(store.putBytes(key, 'x'), key).rejects.toThrow(named);
        await expect(store.putFile(key, file), key).rejects.toThrow(named);
        await expect(store.readBytes(key), key).rejects.toThrow(named);
        await expect(store.open(key), key).rejects.toThrow(named);
        await expect(store.stat(key), key).rejects.toThrow(named);
        await expect(store.delete(key), key).rejects.toThrow(named);
      }
      await expect(listAll(store, '../')).rejects.toThrow(/not a blob key/);
      await expect(listAll(store, 'a')).rejects.toThrow(/ends with "\/"/);
      expect(await listAll(store, '')).toEqual(new Map());
    });

    it('keeps the previous object when a put fails', async () => {
      const store = await open();
      await store.putBytes('kept', 'the previous bytes');
      await expect(failedPut(store, 'kept')).rejects.toThrow();
      expect((await store.readBytes('kept'))?.toString()).toBe('the previous bytes');
      await expect(store.putFile('kept', path.join(await tempDir('tr-blob-'), 'no-such-file'))).rejects.toThrow();
      expect((await store.readBytes('kept'))?.toString()).toBe('the previous bytes');
      expect([...(await listAll(store, '')).keys()]).toEqual(['kept']);
    });
  });
}
