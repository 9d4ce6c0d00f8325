import { chmod, lstat, mkdir, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { ApplyError, applyOperations, nodeFileSystem, runMigrations, type FileChange } from '../../src/migrate/index.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, read, snapshot, step } from './helpers.js';

async function project(tree: Record<string, string> = { 'a.txt': 'a\n', 'b.txt': 'b\n' }): Promise<string> {
  const dir = await tempDir('tr-migrate-');
  await writeTree(dir, tree);
  return dir;
}

const exists = (file: string): Promise<boolean> => lstat(file).then(() => true, () => false);

describe('change semantics', () => {
  it('creates, updates, deletes and renames files, making folders as needed', async () => {
    const dir = await project({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const changes: FileChange[] = [
      { type: 'create', path: 'src/deep/new.ts', content: 'new\n' },
      { type: 'update', path: 'a.txt', content: 'A\n' },
      { type: 'delete', path: 'b.txt' },
      { type: 'rename', path: 'c.txt', newPath: 'docs/c.md' },
    ];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir));
    expect(result.errors).toEqual([]);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'A\n', 'src/deep/new.ts': 'new\n', 'docs/c.md': 'c\n' });
  });

  it.each<[string, FileChange, RegExp]>([
    ['create over an existing, different file', { type: 'create', path: 'a.txt', content: 'other\n' }, /cannot create "a\.txt": the file already exists/],
    ['update of a missing file', { type: 'update', path: 'missing.txt', content: 'x' }, /cannot update "missing\.txt": the file does not exist/],
    ['delete of a missing file', { type: 'delete', path: 'missing.txt' }, /cannot delete "missing\.txt": the file does not exist/],
    ['rename of a missing file', { type: 'rename', path: 'missing.txt', newPath: 'z.txt' }, /cannot rename "missing\.txt" to "z\.txt": "missing\.txt" does not exist/],
    ['rename onto an existing file', { type: 'rename', path: 'a.txt', newPath: 'b.txt' }, /cannot rename "a\.txt" to "b\.txt": "b\.txt" already exists/],
  ])('refuses a %s, naming the step and the path', async (_what, change, message) => {
    const dir = await project();
    const result = await runMigrations([step('s1', '1.0.0', '1.1.0', { changes: [change] })], context(dir));
    expect(result.success).toBe(false);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatch(/^step s1: /);
    expect(result.errors[0]).toMatch(message);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
  });

  it('accepts a create of a file that already has exactly that content', async () => {
    const dir = await project();
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [{ type: 'create', path: 'a.txt', content: 'a\n' }] })], context(dir));
    expect(result.success).toBe(true);
    expect(result.plan).toEqual([]);
  });

  it('keeps the permissions of an updated file', async () => {
    const dir = await project({ 'run.sh': '#!/bin/sh\n' });
    await chmod(path.join(dir, 'run.sh'), 0o755);
    await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'run.sh', content: '#!/bin/sh\necho hi\n' }] })], context(dir));
    expect((await stat(path.join(dir, 'run.sh'))).mode & 0o777).toBe(0o755);
  });
});

describe('atomic apply', () => {
  it('writes nothing when the second change of a run is invalid', async () => {
    const dir = await project();
    const changes: FileChange[] = [
      { type: 'update', path: 'a.txt', content: 'changed\n' },
      { type: 'update', path: 'missing.txt', content: 'x\n' },
    ];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toContain('"missing.txt"');
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
  });

  it('writes nothing when a later step has an invalid change', async () => {
    const dir = await project();
    const steps = [
      step('good', '1.0.0', '1.1.0', { changes: [{ type: 'create', path: 'new.txt', content: 'n\n' }] }),
      step('bad', '1.0.0', '1.2.0', { changes: [{ type: 'delete', path: 'nope.txt' }] }),
    ];
    const result = await runMigrations(steps, context(dir));
    expect(result.success).toBe(false);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
  });

  it('rolls back the renames already done when one fails half-way, and leaves no temp or backup files', async () => {
    const dir = await project();
    let renames = 0;
    const failingRename = async (from: string, to: string): Promise<void> => {
      renames++;
      if (renames === 2) throw new Error('disk full');
      await nodeFileSystem.rename(from, to);
    };
    const changes: FileChange[] = [
      { type: 'update', path: 'a.txt', content: 'A\n' },
      { type: 'create', path: 'sub/new.txt', content: 'new\n' },
      { type: 'delete', path: 'b.txt' },
    ];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir), { fs: { rename: failingRename } });
    expect(result.success).toBe(false);
    expect(result.errors).toEqual(['could not apply the changes, rolled back: disk full']);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    expect(await readdir(dir)).toEqual(expect.arrayContaining(['a.txt', 'b.txt']));
    expect((await readdir(dir)).sort()).toEqual(['a.txt', 'b.txt']);
  });

  it('reports where the old files are when the rollback itself fails', async () => {
    const root = await project();
    const backupDir = path.join(root, '.template-backups', 'x');
    let renames = 0;
    const error = await applyOperations(
      root,
      [
        { kind: 'write', path: 'a.txt', data: 'A\n' },
        { kind: 'write', path: 'b.txt', data: 'B\n' },
      ],
      {
        backupDir,
        fs: {
          rename: async (from, to) => {
            if (++renames === 2) throw new Error('disk full');
            await nodeFileSystem.rename(from, to);
          },
          copyFile: async (from, to) => {
            if (from.startsWith(backupDir)) throw new Error('read-only');
            await nodeFileSystem.copyFile(from, to);
          },
        },
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplyError);
    expect((error as ApplyError).rolledBack).toBe(false);
    expect((error as ApplyError).message).toContain(backupDir);
    expect(await read(backupDir, 'a.txt')).toBe('a\n');
  });

  it('changes nothing when writing a new file fails before any rename', async () => {
    const root = await project();
    const error = await applyOperations(
      root,
      [
        { kind: 'write', path: 'a.txt', data: 'A\n' },
        { kind: 'write', path: 'c/d.txt', data: 'D\n' },
      ],
      {
        backupDir: path.join(root, '.template-backups', 'x'),
        fs: {
          writeFile: async (file, data) => {
            if (file.includes(`${path.sep}c${path.sep}`)) throw new Error('no space');
            await nodeFileSystem.writeFile(file, data);
          },
        },
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplyError);
    expect((error as ApplyError).rolledBack).toBe(true);
    expect((await readdir(root)).sort()).toEqual(['a.txt', 'b.txt']);
    expect(await read(root, 'a.txt')).toBe('a\n');
  });
});

describe('paths outside the project', () => {
  it.each<[string, FileChange]>([
    ['a parent path', { type: 'create', path: '../x', content: 'x' }],
    ['a parent path to a fresh name', { type: 'create', path: '../tr-escape-x', content: 'x' }],
    ['a parent path inside a folder', { type: 'create', path: 'src/../../tr-escape-x', content: 'x' }],
    ['an absolute path', { type: 'create', path: '/tmp/tr-escape-x', content: 'x' }],
    ['a rename target outside', { type: 'rename', path: 'a.txt', newPath: '../a.txt' }],
  ])('refuses %s, naming it, and applies nothing', async (_what, change) => {
    const dir = await project();
    const changes: FileChange[] = [{ type: 'update', path: 'b.txt', content: 'B\n' }, change];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir));
    expect(result.success).toBe(false);
    const named = change.type === 'rename' ? change.newPath : change.path;
    expect(result.errors[0]).toContain(`path ${JSON.stringify(named)} is outside the project`);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    expect(await exists(path.join(path.dirname(dir), 'tr-escape-x'))).toBe(false);
  });

  it('refuses a path through a symbolic link that leads out of the project', async () => {
    const outside = await tempDir('tr-outside-');
    const dir = await project();
    await symlink(outside, path.join(dir, 'link'), 'dir');
    await writeFile(path.join(outside, 'victim.txt'), 'safe\n');
    for (const change of [
      { type: 'create', path: 'link/x.txt', content: 'x' },
      { type: 'update', path: 'link/victim.txt', content: 'pwned\n' },
    ] satisfies FileChange[]) {
      const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [change] })], context(dir));
      expect(result.success).toBe(false);
      expect(result.errors[0]).toContain(`path "${change.path}" is outside the project (through a symbolic link)`);
    }
    expect((await readdir(outside)).sort()).toEqual(['victim.txt']);
    expect(await read(outside, 'victim.txt')).toBe('safe\n');
  });

  it('refuses changes to the lock file and the backup folder', async () => {
    const dir = await project();
    for (const file of ['.template-lock.json', '.template-backups/x/a.txt']) {
      const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [{ type: 'create', path: file, content: '{}' }] })], context(dir));
      expect(result.errors[0]).toContain(`path "${file}" is managed by the migration runner`);
    }
  });
});

describe('backups', () => {
  const now = (): Date => new Date('2026-03-04T05:06:07.089Z');
  const stamp = '2026-03-04T05-06-07-089Z';

  it('keeps every replaced or removed file, with its old content, when the context asks for backups', async () => {
    const dir = await project({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'src/c.txt': 'c\n' });
    const changes: FileChange[] = [
      { type: 'update', path: 'a.txt', content: 'A\n' },
      { type: 'delete', path: 'b.txt' },
      { type: 'rename', path: 'src/c.txt', newPath: 'src/d.txt' },
      { type: 'create', path: 'new.txt', content: 'n\n' },
    ];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir, { backup: true }), { now });
    expect(result.success).toBe(true);
    expect(result.backupDir).toBe(path.join(dir, '.template-backups', stamp));
    expect(await snapshot(result.backupDir!)).toEqual({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'src/c.txt': 'c\n' });
    expect(await read(dir, 'a.txt')).toBe('A\n');
  });

  it('keeps only the files whose change asks for a backup', async () => {
    const dir = await project();
    const changes: FileChange[] = [
      { type: 'update', path: 'a.txt', content: 'A\n', backup: true },
      { type: 'update', path: 'b.txt', content: 'B\n' },
    ];
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes })], context(dir), { now });
    expect(await snapshot(result.backupDir!)).toEqual({ 'a.txt': 'a\n' });
  });

  it('leaves no backup folder when none is asked for', async () => {
    const dir = await project();
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'A\n' }] })], context(dir));
    expect(result.backupDir).toBeUndefined();
    expect((await readdir(dir)).sort()).toEqual(['a.txt', 'b.txt']);
  });

  it('uses a fresh folder when one with the same timestamp exists', async () => {
    const dir = await project();
    await mkdir(path.join(dir, '.template-backups', stamp), { recursive: true });
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'A\n', backup: true }] })], context(dir), { now });
    expect(result.backupDir).toBe(path.join(dir, '.template-backups', `${stamp}-2`));
  });
});
