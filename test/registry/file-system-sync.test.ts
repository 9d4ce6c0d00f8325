/**
 * A folder output flushes what a build wrote with one sync of the file system (`sync -f`, run by a
 * helper process), and starts syncs while the build is still writing so that the last one has
 * little left to do. A `sync` of the test's own, first on PATH, records each call.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { FileSystemSync } from '../../src/registry/file-system-sync.js';
import { FolderOutput } from '../../src/registry/folder-output.js';
import { tempDir } from '../helpers/fixtures.js';

const originalPath = process.env.PATH;
const closing: { close(): unknown }[] = [];
afterEach(async () => {
  process.env.PATH = originalPath;
  for (const thing of closing.splice(0)) await thing.close();
});

/** Puts a `sync` first on PATH that appends its arguments to a log (and then syncs for real); answers how to read the log. */
async function recordedSync(): Promise<() => Promise<string[]>> {
  const bin = await tempDir('tr-fake-sync-');
  const log = path.join(bin, 'calls.log');
  await writeFile(log, '');
  const script = path.join(bin, 'sync');
  await writeFile(script, `#!/bin/sh\necho "$*" >> '${log}'\nexec /bin/sync "$@"\n`);
  await chmod(script, 0o755);
  process.env.PATH = `${bin}:${originalPath ?? ''}`;
  return async () => (await readFile(log, 'utf8')).split('\n').filter((line) => line !== '');
}

/** Puts an `sh` first on PATH that records each start (the sync helper runs under sh) and then runs the real one; answers how many started. */
async function recordedShell(): Promise<() => Promise<number>> {
  const bin = await tempDir('tr-fake-sh-');
  const log = path.join(bin, 'starts.log');
  await writeFile(log, '');
  const script = path.join(bin, 'sh');
  await writeFile(script, `#!/bin/sh\necho started >> '${log}'\nexec /bin/sh "$@"\n`);
  await chmod(script, 0o755);
  process.env.PATH = `${bin}:${process.env.PATH ?? ''}`;
  return async () => (await readFile(log, 'utf8')).split('\n').filter((line) => line !== '').length;
}

describe.runIf(process.platform === 'linux')('syncing a folder output', () => {
  it('runs an early sync and then the sync a flush waits for, in that order, each of the folder\'s file system', async () => {
    const calls = await recordedSync();
    const dir = await tempDir('tr-sync-');
    const sync = new FileSystemSync(dir);
    closing.push(sync);
    sync.early();
    const files = await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        const file = path.join(dir, `f-${index}.json`);
        await writeFile(file, `{"index":${index}}`);
        return file;
      }),
    );
    await sync.flush(files);
    expect(await calls()).toEqual([`-f ${dir}`, `-f ${dir}`]);
  });

  it('starts its helper process at once by default, and only once many files are written when told to wait', async () => {
    const starts = await recordedShell();
    const data = Buffer.from('{}');
    const putMany = async (output: FolderOutput, from: number, to: number): Promise<void> => {
      for (let index = from; index < to; index++) await output.put({ name: `templates/t-${String(index).padStart(3, '0')}.json`, data, contentType: 'application/json', cacheControl: 'no-cache' });
    };
    // Each count is read after a barrier that waited for a helper's answer: every helper started by then has recorded its start.
    const eager = new FolderOutput(await tempDir('tr-sync-eager-'));
    closing.push(eager);
    await putMany(eager, 0, 40);
    await eager.barrier();
    expect(await starts()).toBe(1);

    // A rebuild's few files are flushed one by one: no helper.
    const waiting = new FolderOutput(await tempDir('tr-sync-lazy-'), { syncHelper: 'when-many' });
    closing.push(waiting);
    await putMany(waiting, 0, 10);
    await waiting.barrier();
    const another = new FolderOutput(await tempDir('tr-sync-eager-'));
    closing.push(another);
    await putMany(another, 0, 40);
    await another.barrier();
    expect(await starts()).toBe(2);
    // Many files: the helper starts, and the barrier syncs the file system through it.
    await putMany(waiting, 10, 60);
    await waiting.barrier();
    expect(await starts()).toBe(3);
  });

  it('starts syncs while a build writes many small files, before the barrier that waits for the last one', async () => {
    const calls = await recordedSync();
    const dir = await tempDir('tr-sync-output-');
    const output = new FolderOutput(dir);
    closing.push(output);
    // 300 files of 60 KB, 18 MB in all: one early sync at 16 MB.
    const data = Buffer.alloc(60 * 1024, 0x61);
    for (let index = 0; index < 300; index++) {
      await output.put({ name: `templates/t-${String(index).padStart(3, '0')}.json`, data, contentType: 'application/json', cacheControl: 'no-cache' });
    }
    await output.barrier();
    // The early sync (it may still be running when the barrier asks) and the barrier's own.
    expect(await calls()).toEqual([`-f ${dir}`, `-f ${dir}`]);
  });
});
