/**
 * What pack leaves out, and that it says so: every file or folder left out is named with its
 * reason (in `leftOut`, and by `pack`/`publish` on stderr and in --json). Credentials are left out
 * unless the manifest's `include` lists them; version-control data of every system at any depth.
 */
import { describe, expect, it } from 'vitest';

import { LEFT_OUT_REASONS, packTemplate, selectPackFiles, type LeftOutFile } from '../../src/pack/index.js';
import { tempDir, validManifest, writeTemplate, type FileTree } from '../helpers/fixtures.js';

async function pack(files: FileTree): Promise<{ files: string[]; leftOut: LeftOutFile[] }> {
  const dir = await writeTemplate(files);
  const result = await packTemplate(dir, { outDir: await tempDir() });
  return { files: result.files, leftOut: result.leftOut };
}

const SECRETS = [
  '.npmrc',
  'template/.npmrc',
  'template/.pypirc',
  '.netrc',
  'template/.ssh/id_rsa',
  'template/.ssh/config',
  'template/keys/id_rsa.pub',
  'template/keys/id_ed25519',
  'template/keys/ID_ED25519_deploy',
  'certs/server.pem',
  'template/tls/site.KEY',
  '.aws/credentials',
  'template/.aws/config',
];

describe('pack leaves out files that may hold credentials', () => {
  it('leaves out .npmrc, .pypirc, .netrc, SSH keys, *.pem, *.key, .aws/ and .ssh/, at any depth, and names each', async () => {
    const tree: FileTree = { 'template/keyboard.txt': 'kept', 'template/monkey.keys': 'kept', 'template/docs/pem.md': 'kept' };
    for (const file of SECRETS) tree[file] = 'secret';
    const { files, leftOut } = await pack(tree);
    for (const file of SECRETS) expect(files, file).not.toContain(file);
    expect(files).toEqual(expect.arrayContaining(['template/keyboard.txt', 'template/monkey.keys', 'template/docs/pem.md']));
    expect(leftOut.filter((entry) => entry.reason === LEFT_OUT_REASONS.secret).map((entry) => entry.path).sort()).toEqual([...SECRETS].sort());
    expect(LEFT_OUT_REASONS.secret).toMatch(/credentials.*"include"/);
  });

  it('packs a credential file the manifest\'s include lists', async () => {
    const { files, leftOut } = await pack({
      'template.json': { ...validManifest, include: ['template/.npmrc', 'template/.aws/config'] },
      'template/.npmrc': 'registry=https://registry.npmjs.org/\n',
      'template/.aws/config': '[default]\nregion = eu-west-1\n',
      'template/.aws/credentials': 'secret',
    });
    expect(files).toEqual(expect.arrayContaining(['template/.npmrc', 'template/.aws/config']));
    expect(files).not.toContain('template/.aws/credentials');
    expect(leftOut).toEqual([{ path: 'template/.aws/credentials', reason: LEFT_OUT_REASONS.secret }]);
  });
});

describe('pack leaves out version-control data of every system', () => {
  it('leaves out .svn, .hg, .bzr, CVS, _darcs and .fossil at any depth, naming each folder once', async () => {
    const data: FileTree = {
      '.svn/entries': 'x',
      '.hg/store/data': 'x',
      'template/.bzr/branch-format': 'x',
      'CVS/Root': 'x',
      'template/src/CVS/Entries': 'x',
      'template/a/b/_darcs/prefs/boring': 'x',
      'template/a/.fossil': 'a fossil checkout database',
      'template/deep/er/.svn/wc.db': 'x',
      'template/deep/er/kept.txt': 'kept',
    };
    const { files, leftOut } = await pack(data);
    expect(files.filter((f) => /(^|\/)(\.svn|\.hg|\.bzr|CVS|_darcs|\.fossil)(\/|$)/.test(f))).toEqual([]);
    expect(files).toContain('template/deep/er/kept.txt');
    expect(leftOut.filter((entry) => entry.reason === LEFT_OUT_REASONS.versionControl)).toEqual([
      { path: '.hg/', reason: 'version-control data' },
      { path: '.svn/', reason: 'version-control data' },
      { path: 'CVS/', reason: 'version-control data' },
      { path: 'template/.bzr/', reason: 'version-control data' },
      { path: 'template/a/.fossil', reason: 'version-control data' },
      { path: 'template/a/b/_darcs/', reason: 'version-control data' },
      { path: 'template/deep/er/.svn/', reason: 'version-control data' },
      { path: 'template/src/CVS/', reason: 'version-control data' },
    ]);
  });
});

describe('pack names everything it leaves out, and why', () => {
  it('gives each rule its reason: .gitignore (which one), .env, dependencies, environments, workflows, junk, earlier archives, --exclude', async () => {
    const dir = await writeTemplate({
      '.gitignore': 'dist/\n',
      'template/sub/.gitignore': '*.log\n',
      'template/dist/app.js': 'x',
      'template/sub/debug.log': 'x',
      'template/.env': 'SECRET=1',
      'node_modules/left/index.js': 'x',
      '.venv/bin/python': 'x',
      'template/__pycache__/m.pyc': 'x',
      '.github/workflows/ci.yml': 'x',
      '.github/CODEOWNERS': 'kept',
      'template/.DS_Store': 'x',
      'demo-template-0.9.0.tgz': 'x',
      'notes/todo.md': 'x',
    });
    const result = await packTemplate(dir, { outDir: await tempDir(), exclude: ['notes'] });
    expect(result.leftOut).toEqual([
      { path: '.github/workflows/', reason: 'workflow files' },
      { path: '.venv/', reason: 'a local environment or cache' },
      { path: 'demo-template-0.9.0.tgz', reason: 'an archive pack wrote' },
      { path: 'node_modules/', reason: 'installed dependencies' },
      { path: 'notes/', reason: 'matches the exclude glob "notes"' },
      { path: 'template/.DS_Store', reason: 'desktop junk' },
      { path: 'template/.env', reason: LEFT_OUT_REASONS.envFile },
      { path: 'template/__pycache__/', reason: 'a local environment or cache' },
      { path: 'template/dist/', reason: 'ignored by .gitignore' },
      { path: 'template/sub/debug.log', reason: 'ignored by template/sub/.gitignore' },
    ]);
    expect(result.files).toContain('.github/CODEOWNERS');
    // The selection test generation uses is the same.
    expect(await selectPackFiles(dir, { exclude: ['notes'] })).toEqual({ root: dir, files: result.files, leftOut: result.leftOut });
  });

  it('leaves nothing out of a clean template, and says nothing', async () => {
    expect((await pack({})).leftOut).toEqual([]);
  });
});
