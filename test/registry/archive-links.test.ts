/**
 * A build from a store publishes each archive once: hard-linked from the store's blob folder when the
 * output is on the same file system, never written again while the output holds it intact; an
 * archive changed behind the generator is found (against the version's integrity) and replaced.
 */
import { createHash } from 'node:crypto';
import { readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { BUILD_STATE_FILE, buildRegistry } from '../../src/registry/index.js';
import type { SourceVersion } from '../../src/registry/source.js';
import { archiveKey } from '../../src/store/blob-layout.js';
import { FolderBlobStore } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { version } from './memory-source.js';

const NOW = () => new Date('2026-05-01T10:00:00.000Z');

/** A store's blob folder and the versions whose archives it holds, as `storeSource` gives them (static layout). */
async function storeWith() {
  const blobs = new FolderBlobStore(await tempDir());
  const list: SourceVersion[] = [];
  const bytesOf = new Map<string, Buffer>();
  const add = async (id: string, v: string): Promise<void> => {
    const bytes = Buffer.from(`archive of ${id}@${v}\n`.repeat(20));
    await blobs.putBytes(archiveKey(id, v), bytes);
    bytesOf.set(`${id}@${v}`, bytes);
    list.push(
      version(id, v, {}, {
        downloadUrl: `archives/${id}/${v}.tgz`,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        openArchive: () => blobs.open(archiveKey(id, v)),
      }),
    );
  };
  return { blobs, list, add, bytesOf, source: { versions: () => Promise.resolve([...list]) } };
}

/** A store with a@1.0.0 and a@1.1.0, and an output built from it. */
async function builtWithTwoVersions() {
  const store = await storeWith();
  await store.add('a', '1.0.0');
  await store.add('a', '1.1.0');
  const outDir = await tempDir();
  await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
  return { store, outDir };
}

const archivesIn = (written: readonly string[]): string[] => written.filter((name) => name.startsWith('archives/')).sort();

describe('archives of a store build', () => {
  it('are hard links of the store blobs (read-only), and a rebuild after one new version writes only its archive', async () => {
    const store = await storeWith();
    for (const [id, v] of [['a', '1.0.0'], ['a', '1.1.0'], ['b', '1.0.0']] as const) await store.add(id, v);
    const outDir = await tempDir();
    const first = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(archivesIn(first.written)).toEqual(['archives/a/1.0.0.tgz', 'archives/a/1.1.0.tgz', 'archives/b/1.0.0.tgz']);
    for (const key of ['a/1.0.0', 'a/1.1.0', 'b/1.0.0']) {
      const published = await stat(path.join(outDir, 'archives', `${key}.tgz`));
      const blob = await stat(path.join(store.blobs.location, 'archives', `${key}.tgz`));
      expect(published.ino).toBe(blob.ino);
      expect(published.mode & 0o777).toBe(0o444);
    }
    const before = new Map<string, { ino: number; mtimeMs: number }>();
    for (const key of ['a/1.0.0', 'a/1.1.0', 'b/1.0.0']) {
      const { ino, mtimeMs } = await stat(path.join(outDir, 'archives', `${key}.tgz`));
      before.set(key, { ino, mtimeMs });
    }

    await store.add('b', '1.1.0');
    const second = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(archivesIn(second.written)).toEqual(['archives/b/1.1.0.tgz']);
    for (const [key, was] of before) {
      const { ino, mtimeMs } = await stat(path.join(outDir, 'archives', `${key}.tgz`));
      expect({ ino, mtimeMs }).toEqual(was);
    }
    expect(await readFile(path.join(outDir, 'archives/b/1.1.0.tgz'))).toEqual(store.bytesOf.get('b@1.1.0'));

    const third = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(third.written).toEqual([]);
  });

  it('replace an archive changed in the output (same size, other bytes), and only that one', async () => {
    const { store, outDir } = await builtWithTwoVersions();

    // Replaced by another file (a deploy step, a bad restore): the store's blob is untouched.
    const corrupted = path.join(outDir, 'archives/a/1.0.0.tgz');
    const good = store.bytesOf.get('a@1.0.0') as Buffer;
    await rm(corrupted);
    await writeFile(corrupted, Buffer.alloc(good.length, 0x78));

    const rebuilt = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(archivesIn(rebuilt.written)).toEqual(['archives/a/1.0.0.tgz']);
    expect(rebuilt.failed).toEqual([]);
    expect(await readFile(corrupted)).toEqual(good);
  });

  it('are published again when removed from the output behind the generator: one archive, or a whole folder', async () => {
    const store = await storeWith();
    for (const [id, v] of [['a', '1.0.0'], ['a', '1.1.0'], ['b', '1.0.0']] as const) await store.add(id, v);
    const outDir = await tempDir();
    await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    const state = JSON.parse(await readFile(path.join(outDir, BUILD_STATE_FILE), 'utf8')) as { folders?: Record<string, number> };
    // Each folder of archives is recorded with its modification time: a removal moves it.
    expect(Object.keys(state.folders ?? {}).sort()).toEqual(['archives/a', 'archives/b']);

    await rm(path.join(outDir, 'archives/a/1.1.0.tgz'));
    await rm(path.join(outDir, 'archives/b'), { recursive: true });
    const rebuilt = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(archivesIn(rebuilt.written)).toEqual(['archives/a/1.1.0.tgz', 'archives/b/1.0.0.tgz']);
    expect(await readFile(path.join(outDir, 'archives/a/1.1.0.tgz'))).toEqual(store.bytesOf.get('a@1.1.0'));
    expect(await readFile(path.join(outDir, 'archives/b/1.0.0.tgz'))).toEqual(store.bytesOf.get('b@1.0.0'));
    expect((await buildRegistry(store.source, { outDir, now: NOW, catalog: false })).written).toEqual([]);
  });

  it('are checked one by one from an older release\'s state (format 2: no folder records)', async () => {
    const { store, outDir } = await builtWithTwoVersions();
    // A time the test can put back exactly (a stat's nanoseconds do not survive utimes), recorded by a second build.
    const folder = path.join(outDir, 'archives/a');
    const round = new Date('2026-01-01T00:00:00Z');
    await utimes(folder, round, round);
    expect((await buildRegistry(store.source, { outDir, now: NOW, catalog: false })).written).toEqual([]);
    const stateFile = path.join(outDir, BUILD_STATE_FILE);
    // As an older release wrote it: format 2, every file listed on its own.
    const current = JSON.parse(await readFile(stateFile, 'utf8')) as { files: Record<string, unknown>; folders: Record<string, (string | number)[]> };
    const files = { ...current.files };
    for (const [name, [, ...record]] of Object.entries(current.folders)) {
      for (let i = 0; i < record.length; i += 4) files[`${name}/${String(record[i])}`] = record.slice(i + 1, i + 4);
    }
    expect(Object.keys(files)).toContain('archives/a/1.0.0.tgz');
    await writeFile(stateFile, `${JSON.stringify({ formatVersion: 2, files })}\n`);
    // Replaced by another file of the same size, the folder's time put back: only the file's own stat can tell.
    const changed = path.join(outDir, 'archives/a/1.0.0.tgz');
    const good = store.bytesOf.get('a@1.0.0') as Buffer;
    await rm(changed);
    await writeFile(changed, Buffer.alloc(good.length, 0x78));
    await utimes(folder, round, round);

    const rebuilt = await buildRegistry(store.source, { outDir, now: NOW, catalog: false });
    expect(archivesIn(rebuilt.written)).toEqual(['archives/a/1.0.0.tgz']);
    expect(await readFile(changed)).toEqual(good);
  });

  it('are copied when the store gives no local file (another file system, a bucket)', async () => {
    const store = await storeWith();
    await store.add('a', '1.0.0');
    const noFile = { versions: async () => (await store.source.versions()).map((v) => ({ ...v, openArchive: async () => {
      const reader = await v.openArchive?.();
      return reader && { stream: reader.stream, size: reader.size };
    } })) };
    const outDir = await tempDir();
    const built = await buildRegistry(noFile, { outDir, now: NOW, catalog: false });
    expect(archivesIn(built.written)).toEqual(['archives/a/1.0.0.tgz']);
    const published = await stat(path.join(outDir, 'archives/a/1.0.0.tgz'));
    expect(published.ino).not.toBe((await stat(path.join(store.blobs.location, 'archives/a/1.0.0.tgz'))).ino);
    expect(await readFile(path.join(outDir, 'archives/a/1.0.0.tgz'))).toEqual(store.bytesOf.get('a@1.0.0'));
  });
});
