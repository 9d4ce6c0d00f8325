/**
 * A folder output writes small files on a worker thread of its own (registry/file-writer-thread.ts)
 * once a build writes many, and build-registry lists each batch of templates while the next is made.
 * The worker's script is the built one (`npm test` builds first); the sources have none, and write
 * every file on the builder's thread: both must give the same output, failures included.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { FileWriterThread as SourceFileWriterThread } from '../../src/registry/file-writer-thread.js';
import { RegistryBuilder as SourceRegistryBuilder } from '../../src/registry/build.js';
import { FolderOutput } from '../../src/registry/folder-output.js';
import type { OutputFile } from '../../src/registry/output.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { tempDir } from '../helpers/fixtures.js';
import { version } from './memory-source.js';

const built = path.resolve('build/src/registry');
const { FileWriterThread } = (await import(path.join(built, 'file-writer-thread.js'))) as typeof import('../../src/registry/file-writer-thread.js');
const { RegistryBuilder } = (await import(path.join(built, 'build.js'))) as typeof import('../../src/registry/build.js');

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((thing) => thing.close()));
});

function writer(): InstanceType<typeof FileWriterThread> {
  const thread = new FileWriterThread();
  closing.push(thread);
  return thread;
}

describe('the file writer thread', () => {
  it('writes every file asked for in one turn, renames the ones that replace a file, and answers their modification times', async () => {
    const dir = await tempDir('tr-writer-');
    const thread = writer();
    // Views of one larger buffer, as a build's template files are: the caller's bytes stay whole.
    const arena = Buffer.from(Array.from({ length: 40 }, (_, i) => `{"file":${i}}`).join(''));
    const views = Array.from({ length: 40 }, (_, i) => {
      const start = arena.indexOf(`{"file":${i}}`);
      return arena.subarray(start, start + `{"file":${i}}`.length);
    });
    await writeFile(path.join(dir, 'kept.json'), 'old bytes');
    const written = await Promise.all([
      ...views.map((bytes, i) => thread.write(path.join(dir, `f-${i}.json`), bytes)),
      thread.write(path.join(dir, '.kept.json.tmp'), Buffer.from('new bytes'), path.join(dir, 'kept.json')),
    ]);
    expect(views.map((bytes) => bytes.toString())).toEqual(Array.from({ length: 40 }, (_, i) => `{"file":${i}}`));
    for (let i = 0; i < 40; i++) {
      const file = path.join(dir, `f-${i}.json`);
      expect(await readFile(file, 'utf8')).toBe(`{"file":${i}}`);
      expect(written[i]).toBe((await stat(file)).mtimeMs);
    }
    expect(await readFile(path.join(dir, 'kept.json'), 'utf8')).toBe('new bytes');
    expect((await readdir(dir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('sends a full set of files at once, so they are written while the caller has not yet given its thread back', async () => {
    const dir = await tempDir('tr-writer-');
    const thread = writer();
    const files = Array.from({ length: 32 }, (_, i) => path.join(dir, `f-${i}.json`));
    const written = files.map((file, i) => thread.write(file, Buffer.from(`{"file":${i}}`)));
    expect(written.every((promise) => promise !== undefined)).toBe(true);
    // A builder making batch after batch without an await that reaches the event loop: the worker
    // must have the files already (bounded, so that a regression fails instead of hanging).
    const deadline = Date.now() + 20_000;
    while (!files.every((file) => existsSync(file)) && Date.now() < deadline);
    expect(files.filter((file) => !existsSync(file))).toEqual([]);
    await Promise.all(written as Promise<number>[]);
  });

  it('refuses a file that exists with EEXIST and leaves it as it was; a failed rename leaves no temp file', async () => {
    const dir = await tempDir('tr-writer-');
    const thread = writer();
    await writeFile(path.join(dir, 'there.json'), 'theirs');
    const [exists, renamed, fine] = await Promise.allSettled([
      thread.write(path.join(dir, 'there.json'), Buffer.from('mine')),
      thread.write(path.join(dir, '.t.tmp'), Buffer.from('x'), path.join(dir, 'missing-folder', 't.json')),
      thread.write(path.join(dir, 'fine.json'), Buffer.from('fine')),
    ]);
    expect(exists).toMatchObject({ status: 'rejected', reason: { code: 'EEXIST', message: expect.stringContaining('there.json') } });
    expect(await readFile(path.join(dir, 'there.json'), 'utf8')).toBe('theirs');
    expect(renamed).toMatchObject({ status: 'rejected', reason: { code: 'ENOENT' } });
    expect(fine.status).toBe('fulfilled');
    expect((await readdir(dir)).sort()).toEqual(['fine.json', 'there.json']);
  });

  it('answers nothing once closed, and nothing where its script is not beside it (the sources): the caller writes itself', async () => {
    const dir = await tempDir('tr-writer-');
    const thread = new FileWriterThread();
    await thread.close();
    expect(thread.write(path.join(dir, 'a.json'), Buffer.from('a'))).toBeUndefined();
    const fromSources = new SourceFileWriterThread();
    closing.push(fromSources);
    expect(fromSources.write(path.join(dir, 'b.json'), Buffer.from('b'))).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });
});

/** Every file below `dir` (relative name -> bytes). */
async function filesBelow(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files.set(path.relative(dir, file), await readFile(file));
  }
  return files;
}

/** The folder output's record of what it holds. */
const INVENTORY_FILE = '.template-registry-build.json';

/** The inventory's files as name -> [size, digest], after checking that each recorded modification time is its file's. */
async function inventoryOf(dir: string): Promise<Record<string, [number, string]>> {
  const { files } = JSON.parse(await readFile(path.join(dir, INVENTORY_FILE), 'utf8')) as { files: Record<string, [number, number, string]> };
  const recorded: Record<string, [number, string]> = {};
  for (const [name, [size, mtimeMs, digest]] of Object.entries(files)) {
    expect({ name, mtimeMs }).toEqual({ name, mtimeMs: (await stat(path.join(dir, name))).mtimeMs });
    recorded[name] = [size, digest];
  }
  expect(Object.keys(recorded).length).toBeGreaterThan(130);
  return recorded;
}

describe('a streamed full build with the writer thread', () => {
  it('writes byte for byte what the sources write on the builder\'s thread, over several batches and with a template whose file cannot be written', async () => {
    const versions: SourceVersion[] = Array.from({ length: 130 }, (_, t) => Array.from({ length: 3 }, (_, v) => version(`t-${String(t).padStart(3, '0')}`, `1.${v}.0`, { description: `Template ${t}, version ${v}` }))).flat();
    const source = (): RegistrySource => ({
      identity: 'writer-thread',
      versions: () => Promise.resolve(versions.map((v) => structuredClone(v))),
      byTemplate: () =>
        Promise.resolve({
          names: [...new Set(versions.map((v) => v.manifest.name))],
          versionsOf: (names) => Promise.resolve(versions.filter((v) => names.includes(v.manifest.name)).map((v) => structuredClone(v))),
        }),
    });
    const now = (): Date => new Date('2026-03-01T12:00:00.000Z');
    const outputs: { dir: string; failed: string[] }[] = [];
    for (const Builder of [RegistryBuilder, SourceRegistryBuilder]) {
      const dir = await tempDir('tr-writer-build-');
      // A folder where one template's file goes, in the second batch: that template cannot be written.
      await mkdir(path.join(dir, 'templates', 't-077.json'), { recursive: true });
      const builder = new Builder(source(), { outDir: dir, now, state: true });
      closing.push(builder);
      const result = await builder.build();
      outputs.push({ dir, failed: result.failed.map((failure) => failure.id) });
    }
    const [withThread, withoutThread] = outputs as [{ dir: string; failed: string[] }, { dir: string; failed: string[] }];
    expect(withThread.failed).toEqual(['t-077']);
    expect(withoutThread.failed).toEqual(['t-077']);
    const ours = await filesBelow(withThread.dir);
    const theirs = await filesBelow(withoutThread.dir);
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [name, bytes] of ours) {
      if (name === INVENTORY_FILE) continue;
      expect({ name, same: bytes.equals(theirs.get(name) as Buffer) }).toEqual({ name, same: true });
    }
    // The inventory records the same files, sizes and digests, each with the modification time its file has.
    expect(await inventoryOf(withThread.dir)).toEqual(await inventoryOf(withoutThread.dir));
    const registry = JSON.parse((ours.get('registry.json') as Buffer).toString('utf8')) as { templates: { id: string }[] };
    expect(new Set(registry.templates.map((entry) => entry.id)).size).toBe(129);
    expect(registry.templates.some((entry) => entry.id === 't-077')).toBe(false);
    expect(ours.has(path.join('templates', 't-129.json'))).toBe(true);
  });

  it('makes later batches while an earlier batch\'s template file is still being written, and lists every template in order', async () => {
    const versions: SourceVersion[] = Array.from({ length: 120 }, (_, t) => version(`t-${String(t).padStart(3, '0')}`, '1.0.0'));
    const source: RegistrySource = {
      versions: () => Promise.resolve(versions),
      byTemplate: () =>
        Promise.resolve({
          names: versions.map((v) => v.manifest.name),
          versionsOf: (names) => Promise.resolve(versions.filter((v) => names.includes(v.manifest.name))),
        }),
    };
    // A builder that keeps nothing (state) reads and lists 25 templates at a time. The first batch's
    // first template file is written only once a template of the fifth batch (100 and up) is asked
    // for: a builder that lets fewer than 4 made batches wait for their files never gets there.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    class SlowFirstFile extends FolderOutput {
      override async put(file: OutputFile, options?: { durable?: boolean }): Promise<void> {
        if (file.name === 'templates/t-000.json') await held;
        if (file.name === 'templates/t-100.json') release();
        return super.put(file, options);
      }
    }
    const dir = await tempDir('tr-writer-lag-');
    const builder = new SourceRegistryBuilder(source, { output: new SlowFirstFile(dir), state: true, now: () => new Date('2026-03-01T12:00:00.000Z') });
    closing.push(builder);
    let bound: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => (bound = setTimeout(() => reject(new Error('the build waited for the first batch\'s file before making the fifth batch')), 20_000)));
    try {
      const result = await Promise.race([builder.build(), stuck]);
      expect(result.failed).toEqual([]);
    } finally {
      clearTimeout(bound);
    }
    const registry = JSON.parse(await readFile(path.join(dir, 'registry.json'), 'utf8')) as { templates: { id: string }[] };
    expect(registry.templates.map((entry) => entry.id)).toEqual(versions.map((v) => v.manifest.name));
    expect(JSON.parse(await readFile(path.join(dir, 'templates', 't-000.json'), 'utf8'))).toMatchObject({ id: 't-000' });
  });
});
