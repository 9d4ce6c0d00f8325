/**
 * The backups `update` and `migrate` keep never show up in the project's version control: after an
 * update of a git repository, `git status` lists the files the update changed and nothing else,
 * while the old files are still there to restore from.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { APP_V1, publishVersions, stepFile, TEMPLATE } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

const run = promisify(execFile);

async function git(dir: string, ...args: string[]): Promise<string> {
  const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com', GIT_CONFIG_NOSYSTEM: '1', HOME: dir };
  return (await run('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'init.defaultBranch=main', ...args], { cwd: dir, env })).stdout;
}

/** A project of demo-template 1.0.0 committed to a fresh git repository; the registry also has 1.1.0. */
async function committedProject(): Promise<{ dir: string; registry: string }> {
  const server = await startRegistryServer();
  await publishVersions(server, [
    { version: '1.0.0', files: { 'template/app.txt.liquid': APP_V1, 'template/old.txt': 'old\n' } },
    {
      version: '1.1.0',
      files: {
        'template/app.txt.liquid': APP_V1.replace('line 6', 'line 6 from 1.1.0'),
        'migrations/notes.json': stepFile('add-notes', '1.0.0', '1.1.0', [{ type: 'update', path: 'README.md', content: '# {{ projectName }}\n\nnotes\n', backup: true }]),
      },
    },
  ]);
  const registry = `${server.url}/registry.json`;
  const dir = path.join(await tempDir(), 'shop');
  const created = await cli('create', `${TEMPLATE}@1.0.0`, dir, '--registry', registry, '--defaults', '--set', 'projectName=shop');
  expect(created.code, created.stderr).toBe(0);
  await git(dir, 'init', '-q');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'generated');
  return { dir, registry };
}

/** `git status --porcelain` paths, untracked files listed one by one. */
async function changedPaths(dir: string): Promise<string[]> {
  const status = await git(dir, 'status', '--porcelain', '--untracked-files=all');
  return status.split('\n').filter((line) => line !== '').map((line) => line.slice(3)).sort();
}

describe('backups and version control', () => {
  it('after update, git status shows the updated files and no backup, and the old files are kept', async () => {
    const { dir, registry } = await committedProject();
    const updated = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(updated.code, updated.stderr).toBe(0);
    const { backupDir } = JSON.parse(updated.stdout) as { backupDir: string };
    expect(await readFile(path.join(backupDir, 'app.txt'), 'utf8')).toBe(APP_V1.replace('{{ projectName }}', 'shop'));

    expect(await changedPaths(dir)).toEqual(['.template-lock.json', 'README.md', 'app.txt', 'old.txt']);
    expect(await git(dir, 'check-ignore', path.relative(dir, path.join(backupDir, 'app.txt')))).not.toBe('');
  });

  it('after migrate, git status shows no backup either', async () => {
    const { dir, registry } = await committedProject();
    const migrated = await cli('migrate', '--project', dir, '--registry', registry);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect((await changedPaths(dir)).filter((file) => file.startsWith('.template-backups'))).toEqual([]);
    expect(await changedPaths(dir)).toContain('README.md');
  });
});
