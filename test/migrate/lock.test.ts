import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';

import { runMigrations, type MigrationContext } from '../../src/migrate/index.js';
import { LOCK_FILE, sha256Hex, type TemplateLock } from '../../src/template/lock.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, read, snapshot, step } from './helpers.js';

const entry = (content: string) => ({ sha256: sha256Hex(content), size: Buffer.byteLength(content) });

async function lockedProject(extra: Partial<TemplateLock> = {}): Promise<string> {
  const dir = await tempDir('tr-migrate-');
  const files = { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' };
  const lock: TemplateLock = {
    lockfileVersion: 1,
    template: { name: 'demo', version: '1.0.0' },
    generatedAt: '2026-01-01T00:00:00.000Z',
    answers: { projectName: 'my-app' },
    computed: { packageName: 'my-app' },
    files: { 'a.txt': entry('a\n'), 'b.txt': entry('b\n'), 'c.txt': entry('c\n') },
    ...extra,
  };
  await writeTree(dir, { ...files, [LOCK_FILE]: `${JSON.stringify(lock, null, 2)}\n` });
  return dir;
}

const readLockJson = async (dir: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8')) as TemplateLock;

describe('the lock file', () => {
  const steps = () => [
    step('update-a', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'A!\n' }] }),
    step('delete-b', '1.0.0', '1.2.0', { changes: [{ type: 'delete', path: 'b.txt' }] }),
    step('move-c', '1.0.0', '2.0.0', { changes: [{ type: 'rename', path: 'c.txt', newPath: 'lib/c.txt' }, { type: 'create', path: 'd.txt', content: 'd\n' }] }),
  ];

  it('records the applied step ids in order, the target version and the new file hashes', async () => {
    const dir = await lockedProject();
    const result = await runMigrations(steps(), context(dir, { targetVersion: '2.0.0' }));
    expect(result.success).toBe(true);
    const lock = await readLockJson(dir);
    expect(lock.appliedMigrations).toEqual(['update-a', 'delete-b', 'move-c']);
    expect(lock.template).toEqual({ name: 'demo', version: '2.0.0' });
    expect(lock.files).toEqual({ 'a.txt': entry('A!\n'), 'lib/c.txt': entry('c\n'), 'd.txt': entry('d\n') });
    expect(lock.answers).toEqual({ projectName: 'my-app' });
  });

  it('skips, on a re-run, the steps already applied and changes nothing', async () => {
    const dir = await lockedProject();
    await runMigrations(steps(), context(dir));
    const after = await snapshot(dir);
    const again = steps().map((s) => ({ ...s, execute: vi.fn((ctx: MigrationContext) => s.execute(ctx)) }));
    const result = await runMigrations(again, context(dir));
    expect(result).toEqual({ success: true, changes: [], warnings: [], errors: [], applied: [], skipped: ['update-a', 'delete-b', 'move-c'], plan: [], reachedVersion: '2.0.0' });
    for (const s of again) expect(s.execute).not.toHaveBeenCalled();
    expect(await snapshot(dir)).toEqual(after);
  });

  it('appends to the ids already recorded and runs only the new steps', async () => {
    const dir = await lockedProject({ appliedMigrations: ['update-a'] });
    const result = await runMigrations(steps(), context(dir));
    expect(result.skipped).toEqual(['update-a']);
    expect(result.applied).toEqual(['delete-b', 'move-c']);
    expect(await read(dir, 'a.txt')).toBe('a\n');
    expect((await readLockJson(dir)).appliedMigrations).toEqual(['update-a', 'delete-b', 'move-c']);
  });

  it('counts only the steps still to run in the breaking warning', async () => {
    const dir = await lockedProject({ appliedMigrations: ['one'] });
    const result = await runMigrations(
      [step('one', '1.0.0', '1.1.0', { breaking: true }), step('two', '1.0.0', '1.2.0', { breaking: true })],
      context(dir),
    );
    expect(result.warnings).toEqual(['1 breaking migration step: review the migration guide before applying']);
  });

  it('is left alone by a dry run and by a failed run', async () => {
    const dir = await lockedProject();
    const before = await snapshot(dir);
    await runMigrations(steps(), context(dir, { dryRun: true }));
    await runMigrations([...steps(), step('bad', '1.0.0', '3.0.0', { success: false, errors: ['no'] })], context(dir));
    expect(await snapshot(dir)).toEqual(before);
  });

  it('is not created for a project without one', async () => {
    const dir = await tempDir('tr-migrate-');
    await writeTree(dir, { 'a.txt': 'a\n' });
    const result = await runMigrations(steps().slice(0, 1), context(dir));
    expect(result.success).toBe(true);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'A!\n' });
  });

  it('fails the run, writing nothing, when it is not valid JSON', async () => {
    const dir = await tempDir('tr-migrate-');
    await writeTree(dir, { 'a.txt': 'a\n', [LOCK_FILE]: '{ nope' });
    const result = await runMigrations(steps().slice(0, 1), context(dir));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toContain('is not valid JSON');
    expect(await read(dir, 'a.txt')).toBe('a\n');
  });
});

describe('the lock file seen by a step', () => {
  it('can be read through context.files, as it was before the run', async () => {
    const dir = await lockedProject();
    let seen: unknown;
    const peek = step('peek', '1.0.0', '1.1.0', {
      execute: async (ctx: MigrationContext) => {
        seen = JSON.parse((await ctx.files.read(LOCK_FILE)) ?? 'null');
        return { success: true, changes: [], warnings: [], errors: [] };
      },
    });
    await runMigrations([peek], context(dir));
    expect(seen).toMatchObject({ answers: { projectName: 'my-app' }, template: { version: '1.0.0' } });
  });
});
