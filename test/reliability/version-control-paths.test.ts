/**
 * A template can never write into `.git` (or any other version-control data), in any spelling a
 * platform treats as that name: refused at validate, lint, pack, upload, download, render,
 * create, update and migrate; and the sync action's own git never runs a hook or an fsmonitor.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { isJunkName, isVersionControlName, reservedPathProblem } from '../../src/core/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { lintTemplate, validateTemplate } from '../../src/template/index.js';
import { writeFolderAtomically } from '../../src/template/write-folder.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, validManifest, validVariables, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, stepFile, TEMPLATE, type VersionSpec } from '../project/versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

/** Every spelling of `.git` some platform resolves to the real folder, and the other systems' folders. */
const RESERVED_SPELLINGS = ['.git', '.GIT', '.Git', '.git.', '.git ', '.git. .', '.git::$INDEX_ALLOCATION', 'GIT~1', 'git~2', '.g\u200Cit', '\uFEFF.git', '.hg', '.HG', '.svn', '.bzr', '_darcs', 'CVS', '.fossil', '_FOSSIL_', '.jj'];
/** Names that look alike but are ordinary files a template may ship. */
const ORDINARY = ['.github', '.gitignore', '.gitattributes', '.gitkeep', '.gitlab-ci.yml', 'git', '.git-blame-ignore-revs', 'cvs.txt', 'svn', '.hgignore', '...', '.'];

describe('the reserved-path rule', () => {
  it('knows every spelling of version-control folders, and nothing else', () => {
    for (const name of RESERVED_SPELLINGS) expect(isVersionControlName(name), JSON.stringify(name)).toBe(true);
    for (const name of ORDINARY) expect(isVersionControlName(name), JSON.stringify(name)).toBe(false);
  });

  it('finds them at any depth and with either separator', () => {
    expect(reservedPathProblem('.git/hooks/post-commit')).toMatch(/version-control data \("\.git"\)/);
    expect(reservedPathProblem('sub/project/.GIT/config')).toBeDefined();
    expect(reservedPathProblem('sub\\.git\\config')).toBeDefined();
    expect(reservedPathProblem('.github/workflows/ci.yml')).toBeUndefined();
  });

  it('tells desktop junk apart', () => {
    for (const name of ['.DS_Store', '.ds_store', 'Thumbs.db', 'desktop.ini', '._README.md']) expect(isJunkName(name), name).toBe(true);
    expect(isJunkName('README.md')).toBe(false);
  });

  it('refuses a write into .git even when every earlier check was passed by', async () => {
    const dir = path.join(await tempDir(), 'out');
    await expect(writeFolderAtomically(dir, [{ path: '.git/config', content: '[core]\n\tfsmonitor = touch pwned\n' }])).rejects.toThrow(/version-control data/);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('a template folder holding version-control data', () => {
  it('is refused by validate and lint, naming the file, in every spelling', async () => {
    for (const name of ['.git', '.GIT', '.git.', 'GIT~1', '.hg', '.svn']) {
      const dir = await writeTemplate({ [`template/${name}/hooks/post-commit`]: '#!/bin/sh\ntouch /tmp/pwned\n' });
      const { valid, errors } = await validateTemplate(dir);
      expect(valid, name).toBe(false);
      expect(errors, name).toContainEqual(expect.objectContaining({ file: `template/${name}`, code: 'RESERVED_PATH' }));
      const lint = await lintTemplate(dir);
      expect(lint.findings.some((f) => f.severity === 'error' && f.file === `template/${name}`), name).toBe(true);
    }
  });

  it('is refused deeper in the content folder too', async () => {
    const dir = await writeTemplate({ 'template/vendor/lib/.git/config': '[core]\n' });
    const { errors } = await validateTemplate(dir);
    expect(errors).toContainEqual(expect.objectContaining({ file: 'template/vendor/lib/.git', code: 'RESERVED_PATH' }));
  });

  it('is left out by pack in every spelling, with the template repository\'s own .git', async () => {
    const dir = await writeTemplate({ 'template/.GIT/config': '[core]\n', 'template/.git./x': 'x', 'template/.DS_Store': 'junk', '.git/HEAD': 'ref: refs/heads/main\n', 'template/.github/workflows/ci.yml': 'on: push\n' });
    const pack = await packTemplate(dir, { outDir: await tempDir() });
    expect(pack.files.filter((f) => /\.git[./]|\.GIT|DS_Store/i.test(f))).toEqual(['template/.github/workflows/ci.yml']);
  });

  it('is refused by a migration step naming such a path', async () => {
    const dir = await writeTemplate({ 'migrations/hook.json': stepFile('hook', '0.9.0', '1.0.0', [{ type: 'create', path: '.git/hooks/post-commit', content: 'x' }]) });
    const { errors } = await validateTemplate(dir);
    expect(errors).toContainEqual(expect.objectContaining({ file: 'migrations/hook.json', code: 'PATH_OUTSIDE_PROJECT', message: expect.stringMatching(/version-control data/) }));
  });
});

describe('a name that renders into .git', () => {
  /** A template whose folder name is a variable defaulting to `.git`: nothing literal to refuse at upload. */
  const sneaky: VersionSpec = {
    version: '1.0.0',
    files: {
      'template.vars.json': { ...validVariables, variables: { ...validVariables.variables, hooksHome: { type: 'string', default: '.git' } } },
      'template/{{ hooksHome }}/hooks/post-commit': '#!/bin/sh\ntouch pwned\n',
    },
  };

  it('is refused by create, and nothing is written', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [sneaky]);
    const dir = path.join(await tempDir(), 'shop');
    const run = await cli('create', TEMPLATE, dir, '--registry', `${server.url}/registry.json`, '--defaults', '--set', 'projectName=shop');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/\{\{ hooksHome \}\}.*version-control data/s);
    expect(existsSync(dir)).toBe(false);
  });

  it('is refused by update, and the project keeps its files', async () => {
    const server = await startRegistryServer();
    const first: VersionSpec = { version: '1.0.0', files: { 'template/app.txt': 'app\n' } };
    await publishVersions(server, [first, { ...sneaky, version: '1.1.0', files: { ...sneaky.files, 'template/app.txt': 'app\n' } }]);
    const dir = path.join(await tempDir(), 'shop');
    const registry = `${server.url}/registry.json`;
    expect((await cli('create', `${TEMPLATE}@1.0.0`, dir, '--registry', registry, '--defaults', '--set', 'projectName=shop')).code).toBe(0);
    const before = (await readdir(dir, { recursive: true })).sort();
    const run = await cli('update', '--project', dir, '--registry', registry);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/version-control data/);
    expect((await readdir(dir, { recursive: true })).sort()).toEqual(before);
  });

  it('is refused by migrate when a step renders its path there', async () => {
    const server = await startRegistryServer();
    const step = stepFile('hook', '1.0.0', '1.1.0', [{ type: 'create', path: '{{ "." }}git/hooks/post-commit', content: '#!/bin/sh\ntouch pwned\n' }]);
    await publishVersions(server, [{ version: '1.0.0', files: {} }, { version: '1.1.0', files: { 'migrations/hook.json': step } }]);
    const dir = path.join(await tempDir(), 'shop');
    const registry = `${server.url}/registry.json`;
    expect((await cli('create', `${TEMPLATE}@1.0.0`, dir, '--registry', registry, '--defaults', '--set', 'projectName=shop')).code).toBe(0);
    await mkdir(path.join(dir, '.git', 'hooks'), { recursive: true });
    const run = await cli('migrate', '--project', dir, '--registry', registry, '--yes');
    expect(run.code).not.toBe(0);
    expect(`${run.stdout}${run.stderr}`).toMatch(/version-control data/);
    expect(existsSync(path.join(dir, '.git', 'hooks', 'post-commit'))).toBe(false);
  });
});

describe('the sync action\'s git', () => {
  it('never runs a hook or an fsmonitor of the checkout', async () => {
    const { gitIn, commitArgs } = await import('../../src/sync-action/git.js');
    const repo = await tempDir('tr-hooks-');
    execFileSync('git', ['init', '--quiet', repo]);
    const marker = path.join(repo, '..', `${path.basename(repo)}-hook-ran`);
    const hook = path.join(repo, '.git', 'hooks', 'post-commit');
    await writeFile(hook, `#!/bin/sh\ntouch '${marker}'\n`);
    await chmod(hook, 0o755);
    await writeFile(path.join(repo, '.git', 'hooks', 'pre-commit'), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    execFileSync('git', ['config', 'core.fsmonitor', `touch '${marker}-fsmonitor'; false`], { cwd: repo });
    await writeFile(path.join(repo, 'file.txt'), 'x\n');
    const git = gitIn(repo);
    await git(['add', '-A']);
    await git(commitArgs('a commit'));
    await git(['status', '--porcelain']);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(`${marker}-fsmonitor`)).toBe(false);
    expect(await git(['log', '--format=%s'])).toBe('a commit');
  });
});

describe('the manifest\'s own fields', () => {
  it('cannot name a .git path through include', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, include: ['template/.git/**'] }, 'template/.git/config': '[core]\n' });
    const pack = await packTemplate(dir, { outDir: await tempDir() });
    expect(pack.files.some((f) => f.includes('.git/'))).toBe(false);
  });
});
