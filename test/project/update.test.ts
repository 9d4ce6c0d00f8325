import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import type { TemplateLock } from '../../src/template/index.js';
import { sha256Hex } from '../../src/template/lock.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { snapshot } from '../migrate/helpers.js';
import { validManifest } from '../helpers/fixtures.js';
import { APP_V1, publishVersions, stepFile, TEMPLATE, type VersionSpec } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

const V1: VersionSpec = {
  version: '1.0.0',
  files: { 'template/app.txt.liquid': APP_V1, 'template/old.txt': 'old\n', 'template/kept-old.txt': 'kept\n', 'template/logo.bin': Buffer.from([0, 1, 2, 3]) },
};
/** 1.1.0 changes line 6 of app.txt, adds NEW.md, removes old.txt and kept-old.txt, changes the binary. */
const V1_1: VersionSpec = {
  version: '1.1.0',
  files: {
    'template/app.txt.liquid': APP_V1.replace('line 6', 'line 6 from the template'),
    'template/NEW.md': 'new in 1.1.0 for {{ projectName }}\n',
    'template/logo.bin': Buffer.from([0, 9, 9, 9]),
  },
};

async function registryWith(specs: VersionSpec[]): Promise<{ server: TestServer; registry: string }> {
  const server = await startRegistryServer();
  await publishVersions(server, specs);
  return { server, registry: `${server.url}/registry.json` };
}

async function createAt(registry: string, version: string): Promise<string> {
  const dir = path.join(await tempDir(), 'shop');
  const created = await cli('create', `${TEMPLATE}@${version}`, dir, '--registry', registry, '--defaults', '--set', 'projectName=shop');
  expect(created.code, created.stderr).toBe(0);
  return dir;
}

const read = (dir: string, file: string): Promise<string> => readFile(path.join(dir, file), 'utf8');
const lockOf = async (dir: string): Promise<TemplateLock> => JSON.parse(await read(dir, '.template-lock.json')) as TemplateLock;
const edit = async (dir: string, file: string, from: string, to: string): Promise<void> => writeFile(path.join(dir, file), (await read(dir, file)).replace(from, to));

describe('update: the template changed one part of a file, the user another', () => {
  it('keeps both changes, applies the rest of the new version and moves the lock', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 2', 'line 2 edited by me');

    const run = await cli('update', '--project', dir, '--registry', registry);
    expect(run.code, run.stderr).toBe(0);
    expect(await read(dir, 'app.txt')).toBe('# shop\nline 2 edited by me\nline 3\nline 4\nline 5\nline 6 from the template\nline 7\n');
    expect(await read(dir, 'NEW.md')).toBe('new in 1.1.0 for shop\n');
    expect(existsSync(path.join(dir, 'old.txt'))).toBe(false);
    expect(run.stdout).toMatch(/updated demo-template 1\.0\.0 -> 1\.1\.0/);
    expect(run.stdout).toMatch(/merged\s+app\.txt/);

    const lock = await lockOf(dir);
    expect(lock.template).toEqual({ name: TEMPLATE, version: '1.1.0', source: `${registry}#${TEMPLATE}@1.1.0` });
    // The base of the next update: the template's rendering, not the merged file.
    expect(lock.files['app.txt']?.sha256).toBe(sha256Hex('# shop\nline 2\nline 3\nline 4\nline 5\nline 6 from the template\nline 7\n'));
    expect(lock.files['NEW.md']?.sha256).toBe(sha256Hex('new in 1.1.0 for shop\n'));
    expect(lock.files['old.txt']).toBeUndefined();

    expect(await cli('update', '--project', dir, '--registry', registry)).toMatchObject({ code: 0, stdout: expect.stringMatching(/nothing to update/) as unknown });
  });

  it('reads the registry from the lock file when none is given', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    const run = await cli('update', '--project', dir);
    expect(run.code, run.stderr).toBe(0);
    expect((await lockOf(dir)).template.version).toBe('1.1.0');
  });
});

describe('update: overlapping changes', () => {
  it('writes conflict markers and exits 3, listing the file on stderr and in --json', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 6', 'line 6 mine');

    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code).toBe(3);
    const report = JSON.parse(run.stdout) as { status: string; conflicts: string[]; files: { path: string; status: string }[] };
    expect(report.status).toBe('updated');
    expect(report.conflicts).toEqual(['app.txt']);
    expect(run.stderr).toContain('app.txt');
    expect(await read(dir, 'app.txt')).toBe(
      '# shop\nline 2\nline 3\nline 4\nline 5\n<<<<<<< project\nline 6 mine\n=======\nline 6 from the template\n>>>>>>> demo-template@1.1.0\nline 7\n',
    );
    expect((await lockOf(dir)).template.version).toBe('1.1.0');
  });

  it('with --conflict rej leaves the file as it is and writes the template change beside it', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 6', 'line 6 mine');
    const before = await read(dir, 'app.txt');

    const run = await cli('update', '--project', dir, '--registry', registry, '--conflict', 'rej');
    expect(run.code).toBe(3);
    expect(await read(dir, 'app.txt')).toBe(before);
    const rej = await read(dir, 'app.txt.rej');
    expect(rej).toContain('-line 6\n+line 6 from the template\n');
    expect(rej.startsWith('--- a/app.txt\n+++ b/app.txt\n')).toBe(true);
  });

  it('refuses an unknown conflict style with exit 2 naming the allowed values', async () => {
    const run = await cli('update', '--conflict', 'theirs');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/inline, rej/);
  });
});

describe('update: file by file', () => {
  it('keeps a file the template removed when the user changed it, and reports what it kept', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await writeFile(path.join(dir, 'kept-old.txt'), 'kept, and mine now\n');
    await rm(path.join(dir, 'NEW.md'), { force: true });

    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    const report = JSON.parse(run.stdout) as { files: { path: string; status: string; reason?: string }[] };
    expect(run.code).toBe(0);
    expect(report.files.find((f) => f.path === 'kept-old.txt')).toMatchObject({ status: 'kept' });
    expect(report.files.find((f) => f.path === 'old.txt')).toMatchObject({ status: 'removed' });
    expect(report.files.find((f) => f.path === 'NEW.md')).toMatchObject({ status: 'created' });
    expect(await read(dir, 'kept-old.txt')).toBe('kept, and mine now\n');
  });

  it('leaves deleted what the user deleted, and replaces an unchanged binary', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await rm(path.join(dir, 'app.txt'));

    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { files: { path: string; status: string; reason?: string }[] };
    expect(report.files.find((f) => f.path === 'app.txt')).toMatchObject({ status: 'kept', reason: expect.stringMatching(/deleted/) as unknown });
    expect(existsSync(path.join(dir, 'app.txt'))).toBe(false);
    expect(await readFile(path.join(dir, 'logo.bin'))).toEqual(Buffer.from([0, 9, 9, 9]));
  });

  it('keeps a binary file the user changed and reports a conflict', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await writeFile(path.join(dir, 'logo.bin'), Buffer.from([0, 7, 7]));
    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code).toBe(3);
    expect(await readFile(path.join(dir, 'logo.bin'))).toEqual(Buffer.from([0, 7, 7]));
    expect((JSON.parse(run.stdout) as { conflicts: string[] }).conflicts).toEqual(['logo.bin']);
  });

  it('creates a conflict when the user already has a different file where the template adds one', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await writeFile(path.join(dir, 'NEW.md'), 'my own notes\n');
    const run = await cli('update', '--project', dir, '--registry', registry);
    expect(run.code).toBe(3);
    expect(await read(dir, 'NEW.md')).toBe('<<<<<<< project\nmy own notes\n=======\nnew in 1.1.0 for shop\n>>>>>>> demo-template@1.1.0\n');
  });

  it('recognises a file the user changed before the update as changed at the next one', async () => {
    const V1_2: VersionSpec = { version: '1.2.0', files: { ...V1_1.files, 'template/app.txt.liquid': APP_V1.replace('line 6', 'line 6 from the template').replace('line 7', 'line 7, 1.2.0') } };
    const { registry } = await registryWith([V1, V1_1, V1_2]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 2', 'line 2 mine');
    expect((await cli('update', '--project', dir, '--registry', registry, '--to', '1.1.0')).code).toBe(0);
    expect((await cli('update', '--project', dir, '--registry', registry)).code).toBe(0);
    expect(await read(dir, 'app.txt')).toBe('# shop\nline 2 mine\nline 3\nline 4\nline 5\nline 6 from the template\nline 7, 1.2.0\n');
  });

  it('--dry-run prints the plan with diffs and changes nothing', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 2', 'line 2 mine');
    const before = await snapshot(dir);
    const run = await cli('update', '--project', dir, '--registry', registry, '--dry-run');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/created\s+NEW\.md/);
    expect(run.stdout).toMatch(/removed\s+old\.txt/);
    expect(run.stdout).toContain('+line 6 from the template');
    expect(await snapshot(dir)).toEqual(before);
  });
});

describe('update: new questions', () => {
  const withQuestion: VersionSpec = {
    version: '1.1.0',
    files: {
      ...V1_1.files,
      'template.vars.json': {
        variables: {
          projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' },
          description: { type: 'string', default: 'An app' },
          features: { type: 'array', enum: ['api', 'testing'], default: ['api'] },
          port: { type: 'number', default: 3000 },
        },
        computed: { packageName: 'projectName | package_name' },
      },
      'template/PORT.txt.liquid': 'port {{ port }}\n',
    },
  };

  it('answers them from --set (or their defaults) and records the answers in the lock', async () => {
    const { registry } = await registryWith([V1, withQuestion]);
    const dir = await createAt(registry, '1.0.0');
    const run = await cli('update', '--project', dir, '--registry', registry, '--set', 'port=8080');
    expect(run.code, run.stderr).toBe(0);
    expect(await read(dir, 'PORT.txt')).toBe('port 8080\n');
    const lock = await lockOf(dir);
    expect(lock.answers).toMatchObject({ projectName: 'shop', port: 8080 });
  });
});

describe('update and migrate: steps chained across versions', () => {
  const chain: VersionSpec[] = [
    V1,
    { version: '2.0.0', files: { 'template/app.txt.liquid': APP_V1, 'template/TWO.md': 'two\n', 'migrations/1-to-2.json': stepFile('one-to-two', '1.0.0', '2.0.0', [{ type: 'create', path: 'TWO.md', content: 'two\n' }]) } },
    {
      version: '3.0.0',
      files: {
        'template/app.txt.liquid': APP_V1,
        'template/TWO.md': 'two\n',
        'template/lib/THREE.md': 'three\n',
        'migrations/1-to-2.json': stepFile('one-to-two', '1.0.0', '2.0.0', [{ type: 'create', path: 'TWO.md', content: 'two\n' }]),
        'migrations/2-to-3.json': stepFile('two-to-three', '2.0.0', '3.0.0', [{ type: 'rename', path: 'app.txt', newPath: 'lib/app.txt' }, { type: 'create', path: 'lib/THREE.md', content: 'three\n' }]),
      },
    },
  ];
  // In 3.0.0 the template itself moved app.txt to lib/app.txt and changed line 6.
  chain[2]!.files['template/lib/app.txt.liquid'] = APP_V1.replace('line 6', 'line 6 in 3.0.0');
  delete chain[2]!.files['template/app.txt.liquid'];

  it('update runs 1.0.0 -> 2.0.0 -> 3.0.0 in one go and merges a renamed file at its new path', async () => {
    const { registry } = await registryWith(chain);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 2', 'line 2 mine');
    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { steps: { applied: string[] } };
    expect(report.steps.applied).toEqual(['one-to-two', 'two-to-three']);
    expect(await read(dir, 'lib/app.txt')).toBe('# shop\nline 2 mine\nline 3\nline 4\nline 5\nline 6 in 3.0.0\nline 7\n');
    expect(existsSync(path.join(dir, 'app.txt'))).toBe(false);
    expect(await read(dir, 'lib/THREE.md')).toBe('three\n');
    const lock = await lockOf(dir);
    expect(lock.template.version).toBe('3.0.0');
    expect(lock.appliedMigrations).toEqual(['one-to-two', 'two-to-three']);
  });

  it('migrate chains the same hops and records the version reached', async () => {
    const { registry } = await registryWith(chain);
    const dir = await createAt(registry, '1.0.0');
    const run = await cli('migrate', '--project', dir, '--registry', registry, '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { applied: string[]; reachedVersion: string };
    expect(report.applied).toEqual(['one-to-two', 'two-to-three']);
    expect(report.reachedVersion).toBe('3.0.0');
    const lock = await lockOf(dir);
    expect(lock.template).toMatchObject({ version: '3.0.0', source: `${registry}#${TEMPLATE}@3.0.0` });
    // Not only the steps: the files of 3.0.0 too (its change of line 6), at the path the step moved the file to.
    expect(await read(dir, 'lib/app.txt')).toBe('# shop\nline 2\nline 3\nline 4\nline 5\nline 6 in 3.0.0\nline 7\n');
  });
});

describe('update --dry-run: the text plan shows what --json shows', () => {
  const stepped: VersionSpec[] = [
    V1,
    {
      version: '2.0.0',
      files: {
        'template.json': { ...validManifest, version: '2.0.0', migration: { guide: 'docs/MIGRATING.md' } },
        'docs/MIGRATING.md': '# Moving to 2.0.0\n\napp.txt moved to lib/.\n',
        'template/lib/app.txt.liquid': APP_V1,
        'template/TWO.md': 'two\n',
        'migrations/1-to-2.json': stepFile('move-app', '1.0.0', '2.0.0', [{ type: 'rename', path: 'app.txt', newPath: 'lib/app.txt' }, { type: 'create', path: 'TWO.md', content: 'two\n' }], true),
      },
    },
  ];

  it('lists each step (id, versions, breaking, description), its renames and file changes, and the guide', async () => {
    const { registry } = await registryWith(stepped);
    const dir = await createAt(registry, '1.0.0');
    const text = await cli('update', '--project', dir, '--registry', registry, '--dry-run', '--no-color');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      [
        'migration steps:',
        '  move-app (1.0.0 -> 2.0.0, breaking): step move-app',
        '    rename  app.txt -> lib/app.txt',
        '    create  TWO.md',
        'migration guide: docs/MIGRATING.md (in the template)',
        'files:',
      ].join('\n'),
    );

    const json = JSON.parse((await cli('update', '--project', dir, '--registry', registry, '--dry-run', '--json')).stdout) as Record<string, unknown>;
    expect(json.migrations).toEqual([
      {
        id: 'move-app',
        description: 'step move-app',
        breaking: true,
        fromVersion: '1.0.0',
        toVersion: '2.0.0',
        changes: [
          { type: 'rename', path: 'app.txt', newPath: 'lib/app.txt' },
          { type: 'create', path: 'TWO.md' },
        ],
      },
    ]);
    expect(json.guide).toBe('docs/MIGRATING.md');
  });
});

describe('migrate: the project has the files of the version its lock names', () => {
  /** 1.1.0: a step adds NOTES.md; the template itself also changes line 6 of app.txt and adds NEW.md (no step for those). */
  const withStep: VersionSpec = {
    version: '1.1.0',
    files: {
      ...V1_1.files,
      'template/NOTES.md': 'notes\n',
      'migrations/notes.json': stepFile('add-notes', '1.0.0', '1.1.0', [{ type: 'create', path: 'NOTES.md', content: 'notes\n' }]),
    },
  };

  it('brings the files the steps do not, so that update has nothing left to do and the lock hashes match', async () => {
    const { registry } = await registryWith([V1, withStep]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 2', 'line 2 mine');

    const run = await cli('migrate', '--project', dir, '--registry', registry);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/migrated demo-template 1\.0\.0 -> 1\.1\.0/);
    expect(await read(dir, 'NOTES.md')).toBe('notes\n');
    expect(await read(dir, 'NEW.md')).toBe('new in 1.1.0 for shop\n');
    expect(await read(dir, 'app.txt')).toBe('# shop\nline 2 mine\nline 3\nline 4\nline 5\nline 6 from the template\nline 7\n');
    expect(existsSync(path.join(dir, 'old.txt'))).toBe(false);

    const lock = await lockOf(dir);
    expect(lock.template.version).toBe('1.1.0');
    expect(lock.appliedMigrations).toEqual(['add-notes']);
    for (const file of ['NOTES.md', 'NEW.md', 'logo.bin']) expect(lock.files[file]?.sha256, file).toBe(sha256Hex(await readFile(path.join(dir, file))));
    expect(lock.files['old.txt']).toBeUndefined();

    const update = await cli('update', '--project', dir, '--registry', registry);
    expect(update.stdout).toMatch(/nothing to update/);
  });

  it('refuses, changing nothing, where the template\'s change conflicts with the project\'s, and writes markers with --force', async () => {
    const { registry } = await registryWith([V1, withStep]);
    const dir = await createAt(registry, '1.0.0');
    await edit(dir, 'app.txt', 'line 6', 'line 6 mine');
    const before = await snapshot(dir);

    const refused = await cli('migrate', '--project', dir, '--registry', registry, '--json');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 'changed-files', changedFiles: ['app.txt'] });
    expect(await snapshot(dir)).toEqual(before);

    const forced = await cli('migrate', '--project', dir, '--registry', registry, '--force');
    expect(forced.code).toBe(3);
    expect(forced.stderr).toMatch(/1 file\(s\) with conflicts to resolve.*app\.txt/);
    expect(await read(dir, 'app.txt')).toContain('<<<<<<< project\nline 6 mine\n=======\nline 6 from the template\n>>>>>>> demo-template@1.1.0\n');
    expect((await lockOf(dir)).template.version).toBe('1.1.0');
  });
});

describe('migrate: honest', () => {
  it('says there are no steps and points to update instead of claiming success', async () => {
    const { registry } = await registryWith([V1, V1_1]);
    const dir = await createAt(registry, '1.0.0');
    const before = await snapshot(dir);
    const run = await cli('migrate', '--project', dir, '--registry', registry);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no migration steps from 1\.0\.0 to 1\.1\.0/);
    expect(run.stderr).toContain('template-registry update');
    expect(run.stdout).not.toMatch(/migrated/);
    expect(await snapshot(dir)).toEqual(before);
    const json = await cli('migrate', '--project', dir, '--registry', registry, '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'no-steps', fromVersion: '1.0.0', toVersion: '1.1.0' });
  });

  it('does not overwrite a file the user changed unless --force', async () => {
    const V1_1_step: VersionSpec = {
      version: '1.1.0',
      files: { ...V1.files, 'migrations/readme.json': stepFile('rewrite-readme', '1.0.0', '1.1.0', [{ type: 'update', path: 'README.md', content: '# {{ projectName }} v1.1\n' }]) },
    };
    const { registry } = await registryWith([V1, V1_1_step]);
    const dir = await createAt(registry, '1.0.0');
    await writeFile(path.join(dir, 'README.md'), '# my notes\n');

    const refused = await cli('migrate', '--project', dir, '--registry', registry);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('README.md');
    expect(refused.stderr).toMatch(/update/);
    expect(await read(dir, 'README.md')).toBe('# my notes\n');

    const forced = await cli('migrate', '--project', dir, '--registry', registry, '--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(await read(dir, 'README.md')).toBe('# shop v1.1\n');
  });
});

describe('check-update', () => {
  it('prints the locked and latest versions, whether it is breaking and the change log in between', async () => {
    const V2: VersionSpec = { version: '2.0.0', files: V1_1.files };
    const { registry } = await registryWith([V1, V1_1, V2]);
    const dir = await createAt(registry, '1.0.0');

    const text = await cli('check-update', '--project', dir, '--registry', registry);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/1\.0\.0 -> 2\.0\.0 available \(breaking\)/);
    expect(text.stdout).toMatch(/## 2\.0\.0\n- Changes of 2\.0\.0\n\n## 1\.1\.0\n- Changes of 1\.1\.0/);

    const json = await cli('check-update', '--project', dir, '--registry', registry, '--json', '--exit-code');
    expect(json.code).toBe(1);
    const check = JSON.parse(json.stdout) as { currentVersion: string; latestVersion: string; breaking: boolean; updateAvailable: boolean; changelog: { version: string }[] };
    expect(check).toMatchObject({ currentVersion: '1.0.0', latestVersion: '2.0.0', breaking: true, updateAvailable: true });
    expect(check.changelog.map((entry) => entry.version)).toEqual(['2.0.0', '1.1.0']);

    await cli('update', '--project', dir, '--registry', registry);
    const current = await cli('check-update', '--project', dir, '--registry', registry, '--exit-code', '--json');
    expect(current.code).toBe(0);
    expect(JSON.parse(current.stdout)).toMatchObject({ updateAvailable: false, currentVersion: '2.0.0' });
  });
});

describe('the registry cache across commands', () => {
  it('update after `check-update --refresh` moves to the version it saw, not "nothing to update"', async () => {
    const { server, registry } = await registryWith([V1]);
    const dir = await createAt(registry, '1.0.0');
    // registry.json is now cached for an hour.
    expect((await cli('list', '--registry', registry)).stdout).toMatch(/demo-template\s+1\.0\.0/);
    await publishVersions(server, [V1_1]);

    const check = await cli('check-update', '--project', dir, '--registry', registry, '--refresh', '--json');
    expect(JSON.parse(check.stdout)).toMatchObject({ updateAvailable: true, latestVersion: '1.1.0' });
    const update = await cli('update', '--project', dir, '--registry', registry);
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toMatch(/updated demo-template 1\.0\.0 -> 1\.1\.0/);
    expect((await cli('list', '--registry', registry)).stdout).toMatch(/demo-template\s+1\.1\.0/);
  });

  it('create id@version and update --to a version published after the cache was filled find it', async () => {
    const { server, registry } = await registryWith([V1]);
    const dir = await createAt(registry, '1.0.0');
    await cli('list', '--registry', registry);
    await publishVersions(server, [V1_1]);

    const created = await cli('create', `${TEMPLATE}@1.1.0`, path.join(await tempDir(), 'other'), '--registry', registry, '--defaults');
    expect(created.code, created.stderr).toBe(0);
    const update = await cli('update', '--project', dir, '--registry', registry, '--to', '1.1.0');
    expect(update.code, update.stderr).toBe(0);
    expect((await lockOf(dir)).template.version).toBe('1.1.0');
    const missing = await cli('update', '--project', dir, '--registry', registry, '--to', '9.9.9');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/9\.9\.9/);
  });
});

describe('update: breaking steps', () => {
  const V2: VersionSpec = {
    version: '2.0.0',
    files: {
      ...V1.files,
      'template.json': { ...validManifest, version: '2.0.0', migration: { from: ['1.x'], guide: 'docs/migration.md' } },
      'docs/migration.md': '# Migrating to 2.0.0\n\nThe config moved to config/app.txt.\nRead this before you merge.\n',
      'migrations/move.json': stepFile('move-config', '1.0.0', '2.0.0', [{ type: 'rename', path: 'app.txt', newPath: 'config/app.txt' }], true),
      'template/config/app.txt.liquid': APP_V1,
    },
  };
  delete V2.files['template/app.txt.liquid'];

  it('announces them with the migration guide before asking, and declines without --yes when it cannot ask', async () => {
    const { registry } = await registryWith([V1, V2]);
    const dir = await createAt(registry, '1.0.0');
    const before = await snapshot(dir);
    const declined = await cli('update', '--project', dir, '--registry', registry);
    expect(declined.code).toBe(1);
    expect(declined.stderr).toMatch(/breaking changes.*1 breaking migration step/);
    expect(declined.stderr).toContain('move-config');
    expect(declined.stderr).toContain('migration guide: docs/migration.md');
    expect(declined.stderr).toContain('| # Migrating to 2.0.0');
    expect(declined.stderr).toMatch(/run again with --yes/);
    expect(await snapshot(dir)).toEqual(before);

    const applied = await cli('update', '--project', dir, '--registry', registry, '--yes');
    expect(applied.code, applied.stderr).toBe(0);
    expect(await read(dir, 'config/app.txt')).toBe('# shop\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n');
    expect((await lockOf(dir)).template.version).toBe('2.0.0');
  });
});

describe('update: the locked version is gone from the registry', () => {
  it('goes on with the lock alone: untouched files replaced or removed, changed ones shown whole as conflicts', async () => {
    const { registry: first } = await registryWith([V1]);
    const dir = await createAt(first, '1.0.0');
    await edit(dir, 'kept-old.txt', 'kept', 'kept and edited');
    const { registry: second } = await registryWith([V1_1]);

    const run = await cli('update', '--project', dir, '--registry', second, '--json');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/demo-template@1\.0\.0, the version the project is locked at, is not in the registry/);
    expect(await read(dir, 'app.txt')).toBe('# shop\nline 2\nline 3\nline 4\nline 5\nline 6 from the template\nline 7\n');
    expect(existsSync(path.join(dir, 'old.txt'))).toBe(false);
    expect(await read(dir, 'kept-old.txt')).toBe('kept and edited\n');

    await edit(dir, 'app.txt', 'line 2', 'line 2 mine');
    const V1_2: VersionSpec = { version: '1.2.0', files: { ...V1_1.files, 'template/app.txt.liquid': APP_V1.replace('line 7', 'line 7, 1.2.0') } };
    const { registry: third } = await registryWith([V1_2]);
    const conflicted = await cli('update', '--project', dir, '--registry', third);
    expect(conflicted.code).toBe(3);
    expect(await read(dir, 'app.txt')).toMatch(/^<<<<<<< project\n# shop\nline 2 mine\n[\s\S]*=======\n# shop\nline 2\n[\s\S]*line 7, 1\.2\.0\n>>>>>>> demo-template@1\.2\.0\n$/);
  });
});

describe('update and migrate: steps shipped only with the version they were written for', () => {
  const oneToTwo = stepFile('one-to-two', '1.0.0', '2.0.0', [{ type: 'create', path: 'TWO.md', content: 'two\n' }]);
  const twoToThree = stepFile('two-to-three', '2.0.0', '3.0.0', [{ type: 'create', path: 'THREE.md', content: 'three\n' }]);
  const versions: VersionSpec[] = [
    V1,
    { version: '2.0.0', files: { ...V1.files, 'migrations/1-to-2.json': oneToTwo } },
    { version: '3.0.0', files: { ...V1.files, 'migrations/2-to-3.json': twoToThree } },
  ];

  it('finds every step between the versions in their own archives and chains them', async () => {
    const { server, registry } = await registryWith(versions);
    const migrated = await createAt(registry, '1.0.0');
    const run = await cli('migrate', '--project', migrated, '--registry', registry, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { applied: string[] }).applied).toEqual(['one-to-two', 'two-to-three']);
    expect(await read(migrated, 'THREE.md')).toBe('three\n');

    const updated = await createAt(registry, '1.0.0');
    const downloadsBefore = await server.store.events.countEvents('download');
    const update = await cli('update', '--project', updated, '--registry', registry, '--json');
    expect(update.code, update.stderr).toBe(0);
    expect((JSON.parse(update.stdout) as { steps: { applied: string[] } }).steps.applied).toEqual(['one-to-two', 'two-to-three']);
    expect((await lockOf(updated)).template.version).toBe('3.0.0');
    // Only the target counts as a download: the base and the versions in between are read, not used.
    expect((await server.store.events.countEvents('download')) - downloadsBefore).toBe(1);
  });
});

describe('update: a file that is not UTF-8', () => {
  // "é" in Latin-1 is the single byte 0xE9; decoding it as UTF-8 would turn it into U+FFFD.
  const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');
  const V1_LATIN: VersionSpec = { version: '1.0.0', files: { 'template/legacy.txt': latin1('caf\xe9\nline 2\nline 3\n') } };
  const V1_1_LATIN: VersionSpec = { version: '1.1.0', files: { 'template/legacy.txt': latin1('caf\xe9\nline 2\nline 3 from the template \xe9\n') } };

  it('is replaced byte for byte when only the template changed it, and kept byte for byte when both did', async () => {
    const { registry } = await registryWith([V1_LATIN, V1_1_LATIN]);
    const untouched = await createAt(registry, '1.0.0');
    expect(await readFile(path.join(untouched, 'legacy.txt'))).toEqual(latin1('caf\xe9\nline 2\nline 3\n'));
    expect((await cli('update', '--project', untouched, '--registry', registry)).code).toBe(0);
    expect(await readFile(path.join(untouched, 'legacy.txt'))).toEqual(latin1('caf\xe9\nline 2\nline 3 from the template \xe9\n'));

    const edited = await createAt(registry, '1.0.0');
    const mine = latin1('caf\xe9 \xe0 moi\nline 2\nline 3\n');
    await writeFile(path.join(edited, 'legacy.txt'), mine);
    const run = await cli('update', '--project', edited, '--registry', registry, '--json');
    expect(run.code).toBe(3);
    expect(await readFile(path.join(edited, 'legacy.txt'))).toEqual(mine);
    expect((JSON.parse(run.stdout) as { conflicts: string[] }).conflicts).toEqual(['legacy.txt']);
  });
});
