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
