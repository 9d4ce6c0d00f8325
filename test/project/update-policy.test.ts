/**
 * Per-file update policy: the manifest's `updatePolicy` (`once` files the project owns, `replace`
 * files that are always the template's bytes), the project's own `update --skip` globs remembered
 * in the lock, and `.json` files merged by key where their line merge conflicts.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import type { TemplateLock } from '../../src/template/index.js';
import { validateTemplate } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE, type VersionSpec } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

const read = (dir: string, file: string): Promise<string> => readFile(path.join(dir, file), 'utf8');
const lockOf = async (dir: string): Promise<TemplateLock> => JSON.parse(await read(dir, '.template-lock.json')) as TemplateLock;

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

const POLICY = [
  { path: 'NOTES.md', policy: 'once' },
  { path: 'generated/**', policy: 'replace' },
];

const V1: VersionSpec = {
  version: '1.0.0',
  files: {
    'template.json': { ...validManifest, version: '1.0.0', updatePolicy: POLICY },
    'template/NOTES.md': 'notes of {{ projectName }}\n',
    'template/generated/api.ts': 'export const api = 1;\n',
    'template/generated/old.ts': 'export const old = 1;\n',
    'template/src/app.ts': 'export const app = 1;\n',
  },
};
const V2: VersionSpec = {
  version: '2.0.0',
  files: {
    'template.json': { ...validManifest, version: '2.0.0', updatePolicy: POLICY },
    'template/NOTES.md': 'notes of {{ projectName }}, version 2\n',
    'template/generated/api.ts': 'export const api = 2;\n',
    'template/generated/new.ts': 'export const fresh = 2;\n',
    'template/src/app.ts': 'export const app = 2;\n',
  },
};

describe('updatePolicy of the manifest', () => {
  it('leaves a `once` file alone, and makes every `replace` file the template\'s bytes, edits of the project included', async () => {
    const { registry } = await registryWith([V1, V2]);
    const dir = await createAt(registry, '1.0.0');
    await writeFile(path.join(dir, 'NOTES.md'), 'my own notes\n');
    await writeFile(path.join(dir, 'generated/api.ts'), 'export const api = 1; // edited by hand\n');

    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { files: { path: string; status: string; reason?: string }[]; backupDir: string };
    expect(await read(dir, 'NOTES.md')).toBe('my own notes\n');
    expect(await read(dir, 'generated/api.ts')).toBe('export const api = 2;\n');
    expect(await read(dir, 'generated/new.ts')).toBe('export const fresh = 2;\n');
    expect(existsSync(path.join(dir, 'generated/old.ts'))).toBe(false);
    expect(await read(dir, 'src/app.ts')).toBe('export const app = 2;\n');
    expect(await read(report.backupDir, 'generated/api.ts')).toBe('export const api = 1; // edited by hand\n');

    const byPath = Object.fromEntries(report.files.map((file) => [file.path, file]));
    expect(byPath['NOTES.md']).toMatchObject({ status: 'kept', reason: expect.stringContaining('updatePolicy "once"') as unknown });
    expect(byPath['generated/api.ts']).toMatchObject({ status: 'updated', reason: expect.stringContaining('updatePolicy "replace"') as unknown });
    expect(byPath['generated/old.ts']).toMatchObject({ status: 'removed' });
    expect(byPath['generated/new.ts']).toMatchObject({ status: 'created' });
  });

  it('is checked by validation: an unknown policy names the field', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, updatePolicy: [{ path: 'README.md', policy: 'sometimes' }] } });
    const result = await validateTemplate(dir);
    expect(result.valid).toBe(false);
    expect(result.errors.map((error) => `${error.file} ${error.pointer}`)).toContain('template.json /updatePolicy/0/policy');
  });
});

describe('update --skip: the project\'s own rules', () => {
  const plain = (version: string, app: string): VersionSpec => ({ version, files: { 'template/src/app.ts': app, 'template/other.txt': `other ${version}\n` } });

  it('never touches the skipped files, and remembers the glob in the lock for the next updates', async () => {
    const { server, registry } = await registryWith([plain('1.0.0', 'export const app = 1;\n'), plain('1.1.0', 'export const app = 2;\n')]);
    const dir = await createAt(registry, '1.0.0');

    const first = await cli('update', '--project', dir, '--registry', registry, '--skip', 'src/**');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/kept\s+src\/app\.ts\s+\(skipped by the project \(update --skip src\/\*\*\)/);
    expect(await read(dir, 'src/app.ts')).toBe('export const app = 1;\n');
    expect(await read(dir, 'other.txt')).toBe('other 1.1.0\n');
    expect((await lockOf(dir)).skip).toEqual(['src/**']);

    await publishVersions(server, [plain('1.2.0', 'export const app = 3;\n')]);
    const second = await cli('update', '--project', dir, '--registry', registry, '--refresh');
    expect(second.code, second.stderr).toBe(0);
    expect(await read(dir, 'src/app.ts')).toBe('export const app = 1;\n');
    expect(await read(dir, 'other.txt')).toBe('other 1.2.0\n');
    expect((await lockOf(dir)).skip).toEqual(['src/**']);
  });

  it('is remembered when the project is already current, not in a dry run, and refuses an empty glob', async () => {
    const { registry } = await registryWith([plain('1.0.0', 'export const app = 1;\n')]);
    const dir = await createAt(registry, '1.0.0');
    await cli('update', '--project', dir, '--registry', registry, '--skip', 'README.md', '--dry-run');
    expect((await lockOf(dir)).skip).toBeUndefined();
    const current = await cli('update', '--project', dir, '--registry', registry, '--skip', 'README.md');
    expect(current.stdout).toMatch(/nothing to update/);
    expect((await lockOf(dir)).skip).toEqual(['README.md']);
    const empty = await cli('update', '--project', dir, '--registry', registry, '--skip', ' ');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--skip must be a non-empty glob/);
  });
});

describe('a .json file whose line merge conflicts', () => {
  const pkg = (scripts: Record<string, string>, dependencies: Record<string, string>): string => `${JSON.stringify({ name: '{{ projectName }}', scripts, dependencies }, null, 2)}\n`;

  it('is merged by key when no key changed on both sides, and gets markers when one did', async () => {
    const { registry } = await registryWith([
      { version: '1.0.0', files: { 'template/package.json.liquid': pkg({ build: 'tsc' }, { a: '1.0.0' }), 'template/settings.json': '{\n  "level": 1\n}\n' } },
      { version: '1.1.0', files: { 'template/package.json.liquid': pkg({ build: 'tsc -b', test: 'vitest' }, { a: '2.0.0' }), 'template/settings.json': '{\n  "level": 2\n}\n' } },
    ]);
    const dir = await createAt(registry, '1.0.0');
    const project = JSON.parse(await read(dir, 'package.json')) as { scripts: Record<string, string> };
    project.scripts.lint = 'eslint .';
    await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(project, null, 2)}\n`);
    await writeFile(path.join(dir, 'settings.json'), '{\n  "level": 5\n}\n');

    const run = await cli('update', '--project', dir, '--registry', registry, '--json');
    expect(run.code).toBe(3);
    const report = JSON.parse(run.stdout) as { files: { path: string; status: string; reason?: string }[]; conflicts: string[] };
    expect(JSON.parse(await read(dir, 'package.json'))).toEqual({ name: 'shop', scripts: { build: 'tsc -b', test: 'vitest', lint: 'eslint .' }, dependencies: { a: '2.0.0' } });
    expect(report.files.find((file) => file.path === 'package.json')).toMatchObject({ status: 'merged', reason: expect.stringContaining('merged by key') as unknown });
    expect(report.conflicts).toEqual(['settings.json']);
    expect(await read(dir, 'settings.json')).toContain('<<<<<<< project\n  "level": 5\n=======\n  "level": 2\n>>>>>>> demo-template@1.1.0\n');
  });
});
