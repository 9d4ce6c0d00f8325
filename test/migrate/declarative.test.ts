import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { loadDeclarativeSteps, migrationScope, MigrationStepFileError, runMigrations } from '../../src/migrate/index.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, snapshot } from './helpers.js';

const answers = { projectName: 'my-app', features: ['api'], packageName: 'my-app', className: 'MyApp' };

const addHealth = {
  id: 'add-health-route',
  description: 'Adds the health route',
  fromVersion: '1.0.0',
  toVersion: '1.1.0',
  breaking: false,
  automatic: true,
  changes: [
    { type: 'create', path: 'src/{{ packageName }}/health.ts', content: "export const name = '{{ projectName }}';\n" },
    { type: 'update', path: 'README.md', content: '# {{ className }}\n{% if features contains "api" %}With an API.\n{% endif %}', backup: true },
  ],
};

const renameConfig = {
  id: 'rename-config',
  description: 'Renames the config',
  fromVersion: '1.0.0',
  toVersion: '2.0.0',
  breaking: true,
  automatic: false,
  changes: [{ type: 'rename', path: 'config.js', newPath: '{{ projectName }}.config.js' }],
};

async function migrationsFolder(files: Record<string, unknown>): Promise<string> {
  const template = await tempDir('tr-template-');
  await writeTree(template, Object.fromEntries(Object.entries(files).map(([name, value]) => [`migrations/${name}`, value as string | object])));
  return path.join(template, 'migrations');
}

describe('declarative steps', () => {
  it('loads every JSON file of the folder, in name order, as steps', async () => {
    const dir = await migrationsFolder({ '1.1.0-to-2.0.0.json': renameConfig, '1.0.0-to-1.1.0.json': addHealth, 'notes.txt': 'ignored' });
    const steps = await loadDeclarativeSteps(dir, { answers, templateId: 'demo' });
    expect(steps.map((s) => [s.id, s.fromVersion, s.toVersion, s.breaking, s.automatic, s.templateId])).toEqual([
      ['add-health-route', '1.0.0', '1.1.0', false, true, 'demo'],
      ['rename-config', '1.0.0', '2.0.0', true, false, 'demo'],
    ]);
  });

  it('renders contents and paths with the answers, and runs like code steps', async () => {
    const dir = await migrationsFolder({ '1.0.0-to-1.1.0.json': addHealth, '1.1.0-to-2.0.0.json': renameConfig });
    const project = await tempDir('tr-project-');
    await writeTree(project, { 'README.md': '# old\n', 'config.js': 'module.exports = {};\n' });
    const steps = await loadDeclarativeSteps(dir, { answers: migrationScope({ answers: { projectName: 'my-app', features: ['api'] }, computed: { packageName: 'my-app', className: 'MyApp' } }) });
    const result = await runMigrations(steps, context(project));
    expect(result.errors).toEqual([]);
    expect(result.changes).toEqual([
      { type: 'create', path: 'src/my-app/health.ts', content: "export const name = 'my-app';\n" },
      { type: 'update', path: 'README.md', content: '# MyApp\nWith an API.\n', backup: true },
      { type: 'rename', path: 'config.js', newPath: 'my-app.config.js' },
    ]);
    expect(await snapshot(project)).toMatchObject({
      'README.md': '# MyApp\nWith an API.\n',
      'my-app.config.js': 'module.exports = {};\n',
      'src/my-app/health.ts': "export const name = 'my-app';\n",
    });
    expect(result.backupDir).toBeDefined();
  });

  it('gives no steps for a template without a migrations folder', async () => {
    const template = await tempDir('tr-template-');
    expect(await loadDeclarativeSteps(path.join(template, 'migrations'), { answers })).toEqual([]);
  });

  it('rejects a bad step file with an error naming the file and the field', async () => {
    const dir = await migrationsFolder({
      '1.0.0-to-1.1.0.json': addHealth,
      'broken.json': { ...renameConfig, fromVersion: '1.2', automatic: undefined },
    });
    const error = await loadDeclarativeSteps(dir, { answers }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationStepFileError);
    const problems = (error as MigrationStepFileError).problems;
    expect(problems.map((p) => [path.basename(p.file), p.pointer, p.code])).toEqual([
      ['broken.json', '/automatic', 'REQUIRED'],
      ['broken.json', '/fromVersion', 'PATTERN'],
    ]);
    const message = (error as Error).message;
    expect(message).toContain(`${path.join(dir, 'broken.json')}:`);
    expect(message).toMatch(/broken\.json:\d+:\d+ \/fromVersion: must be MAJOR\.MINOR\.PATCH without leading zeros, each number at most 15 digits \(got "1\.2"\)/);
    expect(message).toMatch(/broken\.json:\d+:\d+ \/automatic: is required/);
  });

  it.each([
    ['invalid JSON', '{ "id": ', '', 'INVALID_JSON'],
    ['an unknown change type', { ...renameConfig, changes: [{ type: 'move', path: 'a' }] }, '/changes/0/type', 'ENUM'],
    ['a rename without newPath', { ...renameConfig, changes: [{ type: 'rename', path: 'a' }] }, '/changes/0/newPath', 'REQUIRED'],
    ['toVersion not after fromVersion', { ...renameConfig, toVersion: '1.0.0' }, '/toVersion', 'VERSION_ORDER'],
    ['broken Liquid', { ...renameConfig, changes: [{ type: 'create', path: 'a', content: '{% if %}' }] }, '/changes/0/content', 'LIQUID'],
    ['an unknown filter', { ...renameConfig, changes: [{ type: 'create', path: '{{ projectName | nope }}' }] }, '/changes/0/path', 'LIQUID'],
    ['a path climbing out of the project', { ...renameConfig, changes: [{ type: 'rename', path: 'config.js', newPath: '../{{ projectName }}.js' }] }, '/changes/0/newPath', 'PATH_OUTSIDE_PROJECT'],
    ['an absolute path', { ...renameConfig, changes: [{ type: 'delete', path: '/etc/passwd' }] }, '/changes/0/path', 'PATH_OUTSIDE_PROJECT'],
  ])('reports %s with the file and field', async (_what, content, pointer, code) => {
    const dir = await migrationsFolder({ 'step.json': content });
    const error = (await loadDeclarativeSteps(dir, { answers }).catch((e: unknown) => e)) as MigrationStepFileError;
    expect(error).toBeInstanceOf(MigrationStepFileError);
    expect(error.problems[0]).toMatchObject({ file: path.join(dir, 'step.json'), pointer, code });
  });

  it('rejects two files with the same step id', async () => {
    const dir = await migrationsFolder({ 'a.json': addHealth, 'b.json': addHealth });
    const error = (await loadDeclarativeSteps(dir, { answers }).catch((e: unknown) => e)) as MigrationStepFileError;
    expect(error.problems).toEqual([expect.objectContaining({ file: path.join(dir, 'b.json'), pointer: '/id', code: 'DUPLICATE_ID' })]);
  });

  it('fails the run, naming the step and the file, when rendering fails', async () => {
    const bad = { ...renameConfig, changes: [{ type: 'create', path: 'a.txt', content: "{% include 'secret.txt' %}" }] };
    const dir = await migrationsFolder({ 'bad.json': bad });
    const steps = await loadDeclarativeSteps(dir, { answers });
    const project = await tempDir('tr-project-');
    const result = await runMigrations(steps, context(project));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toMatch(/^step rename-config failed: .*bad\.json \/changes\/0\/content: /);
    expect(await snapshot(project)).toEqual({});
  });
});
