/**
 * A migration whose apply fails half-way through its renames: what was already renamed is put
 * back, and the project is left byte for byte as it was.
 */
import { chmod, lstat, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { ApplyError, applyOperations, nodeFileSystem, runMigrations, type ApplyFileSystem, type FileChange } from '../../src/migrate/index.js';
import { LOCK_FILE, sha256Hex, type TemplateLock } from '../../src/template/lock.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, step } from './helpers.js';

/** Every folder and file under `root`: its kind, mode and, for a file, its bytes. */
async function bytesOf(root: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const name of (await readdir(root, { recursive: true })).sort()) {
    const file = path.join(root, name);
    const info = await lstat(file);
    const key = name.split(path.sep).join('/');
    if (info.isDirectory()) result[key] = `folder ${(info.mode & 0o777).toString(8)}`;
    else result[key] = `file ${(info.mode & 0o777).toString(8)} ${(await readFile(file)).toString('base64')}`;
  }
  return result;
}

const entry = (content: string | Buffer) => ({ sha256: sha256Hex(content), size: Buffer.byteLength(content) });

/** A generated project with a lock file, an executable script and a file that is not UTF-8. */
async function lockedProject(): Promise<string> {
  const dir = await tempDir('tr-rollback-');
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80, 0x0a]);
  const files = { 'README.md': '# demo\n', 'src/app.ts': 'export {};\n', 'old-name.txt': 'moved\n', 'obsolete.txt': 'gone\n', 'run.sh': '#!/bin/sh\n' };
  const lock: TemplateLock = {
    lockfileVersion: 1,
    template: { name: 'demo', version: '1.0.0' },
    generatedAt: '2026-01-01T00:00:00.000Z',
    answers: { projectName: 'demo' },
    computed: {},
    files: { ...Object.fromEntries(Object.entries(files).map(([name, text]) => [name, entry(text)])), 'logo.bin': entry(binary) },
  };
  await writeTree(dir, { ...files, [LOCK_FILE]: `${JSON.stringify(lock, null, 2)}\n` });
  await writeFile(path.join(dir, 'logo.bin'), binary);
  await chmod(path.join(dir, 'run.sh'), 0o755);
  return dir;
}

const changes: FileChange[] = [
  { type: 'update', path: 'README.md', content: '# demo, migrated\n', backup: true },
  { type: 'update', path: 'run.sh', content: '#!/bin/sh\necho migrated\n' },
  { type: 'rename', path: 'old-name.txt', newPath: 'docs/new-name.txt' },
  { type: 'create', path: 'config/settings.json', content: '{}\n' },
  { type: 'delete', path: 'obsolete.txt' },
  { type: 'update', path: 'src/app.ts', content: 'export const migrated = true;\n' },
];

/** The real file system, except that rename number `failAt` fails as a full disk would. */
function renameFailingAt(failAt: number): { fs: Partial<ApplyFileSystem>; renamed: string[] } {
  const renamed: string[] = [];
  const rename = async (from: string, to: string): Promise<void> => {
    if (renamed.length + 1 === failAt) {
      throw Object.assign(new Error(`ENOSPC: no space left on device, rename '${from}' -> '${to}'`), { code: 'ENOSPC' });
    }
    await nodeFileSystem.rename(from, to);
    renamed.push(to);
  };
  return { fs: { rename }, renamed };
}

describe('partial rollback of a migration', () => {
  it.each([true, false])('restores the files already renamed when a rename fails half-way (backups asked: %s)', async (backup) => {
    const dir = await lockedProject();
    const before = await bytesOf(dir);
    const failing = renameFailingAt(4);

    const result = await runMigrations([step('upgrade', '1.0.0', '1.1.0', { changes })], context(dir, { targetVersion: '1.1.0', backup }), {
      fs: failing.fs,
    });

    // Three files had really been replaced before the failure: the rollback had work to do.
    expect(failing.renamed).toHaveLength(3);
    expect(result.success).toBe(false);
    expect(result.applied).toEqual(['upgrade']);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatch(/^could not apply the changes, rolled back: ENOSPC: no space left on device, rename '.+' -> '.+'$/);
    expect(result.backupDir).toBeUndefined();
    // Byte for byte as before: contents, modes, the lock file; no temp file, backup or new folder left.
    expect(await bytesOf(dir)).toEqual(before);
  });

  it('throws an ApplyError that says the project was rolled back and what failed', async () => {
    const dir = await lockedProject();
    const before = await bytesOf(dir);
    const error = await applyOperations(
      dir,
      [
        { kind: 'write', path: 'README.md', data: 'new\n' },
        { kind: 'copy', path: 'moved/old-name.txt', from: 'old-name.txt' },
        { kind: 'delete', path: 'old-name.txt' },
        { kind: 'write', path: 'src/app.ts', data: 'new\n' },
      ],
      { backupDir: path.join(dir, '.template-backups', 'run'), fs: renameFailingAt(3).fs },
    ).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ApplyError);
    expect((error as ApplyError).rolledBack).toBe(true);
    expect((error as ApplyError).backupDir).toBeUndefined();
    expect((error as ApplyError).message).toContain('ENOSPC: no space left on device');
    expect((error as ApplyError).message).toContain(path.join(dir, 'src', 'app.ts'));
    expect(await bytesOf(dir)).toEqual(before);
  });
});
