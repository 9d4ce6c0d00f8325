/**
 * `create` and the template's tasks: run with --run-tasks (output on stderr, so --json stays one
 * document), asked through `confirmTasks` (the CLI asks on a terminal), skipped with a notice
 * otherwise; a failing task is reported and the generated files stay; the lock records what ran.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { isCiFrom } from '../../src/cli/consumer-env.js';
import { createProject } from '../../src/project/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import type { PlannedTask } from '../../src/template/tasks.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, validManifest } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

const NODE = process.execPath;
const MARKER = [NODE, '-e', 'require("node:fs").writeFileSync("marker.txt", "done"); console.log("marker written")'];
const TASKS = [
  { description: 'Write a marker', run: MARKER },
  // The fixture's features default to ["api"]: this one does not apply.
  { description: 'Only with tests', run: [NODE, '-e', 'process.exit(9)'], when: 'features contains "testing"' },
];

async function registryWith(tasks: unknown[]): Promise<string> {
  const server = await startRegistryServer();
  await publishVersions(server, [{ version: '1.0.0', files: { 'template.json': { ...validManifest, tasks } } }]);
  return `${server.url}/registry.json`;
}

const lockOf = async (project: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;

describe('create and the template tasks', () => {
  it('without --run-tasks and without a terminal: none runs, a notice lists them, the lock records them skipped', async () => {
    const registry = await registryWith(TASKS);
    const project = path.join(await tempDir(), 'app');
    const run = await cli('create', TEMPLATE, project, '--registry', registry, '--defaults');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`note: the template's 1 task(s) were not run (run create with --run-tasks to run them):\n  Write a marker: ${NODE} -e`);
    expect(existsSync(path.join(project, 'marker.txt'))).toBe(false);
    expect((await lockOf(project)).tasks).toEqual([{ description: 'Write a marker', run: MARKER, status: 'skipped' }]);
  });

  it('with --run-tasks: runs the tasks that apply in the project, streams their output on stderr, and records them', async () => {
    const registry = await registryWith(TASKS);
    const project = path.join(await tempDir(), 'app');
    const run = await cli('create', TEMPLATE, project, '--registry', registry, '--defaults', '--run-tasks', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(path.join(project, 'marker.txt'), 'utf8')).toBe('done');
    expect(run.stderr).toContain('running ');
    expect(run.stderr).toContain('marker written\n');
    const document = JSON.parse(run.stdout) as { tasks: unknown[] };
    expect(document.tasks).toEqual([{ description: 'Write a marker', run: MARKER, status: 'succeeded', exitCode: 0 }]);
    expect((await lockOf(project)).tasks).toEqual([{ description: 'Write a marker', run: MARKER, status: 'succeeded', exitCode: 0 }]);
  });

  it('--json alone runs nothing (it is never asked), and says so on stderr', async () => {
    const registry = await registryWith(TASKS);
    const project = path.join(await tempDir(), 'app');
    const run = await cli('create', TEMPLATE, project, '--registry', registry, '--defaults', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { tasks: { status: string }[] }).tasks.map((task) => task.status)).toEqual(['skipped']);
    expect(run.stderr).toContain('were not run (run create with --run-tasks to run them)');
    expect(existsSync(path.join(project, 'marker.txt'))).toBe(false);
  });

  it('a failing task is reported (exit 1), the tasks after it are not run, and the generated files stay', async () => {
    const registry = await registryWith([
      { description: 'Install', run: [NODE, '-e', 'console.error("registry unreachable"); process.exit(3)'] },
      { description: 'Write a marker', run: MARKER },
    ]);
    const project = path.join(await tempDir(), 'app');
    const run = await cli('create', TEMPLATE, project, '--registry', registry, '--defaults', '--run-tasks');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('registry unreachable');
    expect(run.stderr).toContain(`error: task "Install" (${NODE} -e`);
    expect(run.stderr).toContain(`exited with 3; the 1 task(s) after it were not run. The project's files are generated in ${project}; run the rest yourself`);
    expect(await readFile(path.join(project, 'README.md'), 'utf8')).toBe('# app\n');
    expect(existsSync(path.join(project, 'marker.txt'))).toBe(false);
    expect((await lockOf(project)).tasks?.map((task) => [task.description, task.status, task.exitCode])).toEqual([
      ['Install', 'failed', 3],
      ['Write a marker', 'skipped', undefined],
    ]);
  });

  it('--task-timeout must be a positive number of seconds', async () => {
    const registry = await registryWith(TASKS);
    const run = await cli('create', TEMPLATE, path.join(await tempDir(), 'app'), '--registry', registry, '--task-timeout', 'soon');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--task-timeout must be a positive number of seconds (got "soon")');
  });

  it('asks through confirmTasks with the tasks that apply: no runs none, yes runs them', async () => {
    const registry = await registryWith(TASKS);
    const client = new RegistryClient({ registryUrl: registry });
    const shown: PlannedTask[][] = [];
    const declined = await createProject({ client, id: TEMPLATE, dir: path.join(await tempDir(), 'no'), doNotTrack: true, confirmTasks: (tasks) => (shown.push([...tasks]), false) });
    expect(shown).toEqual([[{ description: 'Write a marker', run: MARKER }]]);
    expect(declined.tasks.map((task) => task.status)).toEqual(['skipped']);
    expect(existsSync(path.join(declined.project.outDir, 'marker.txt'))).toBe(false);

    const accepted = await createProject({ client, id: TEMPLATE, dir: path.join(await tempDir(), 'yes'), doNotTrack: true, confirmTasks: () => true });
    expect(accepted.tasks.map((task) => task.status)).toEqual(['succeeded']);
    expect(await readFile(path.join(accepted.project.outDir, 'marker.txt'), 'utf8')).toBe('done');
  });
});

describe('where create may ask before running tasks', () => {
  it('never in CI: CI set to anything but 0 or false', () => {
    expect(isCiFrom({ CI: 'true' })).toBe(true);
    expect(isCiFrom({ CI: '1' })).toBe(true);
    expect(isCiFrom({ CI: 'false' })).toBe(false);
    expect(isCiFrom({ CI: '0' })).toBe(false);
    expect(isCiFrom({ CI: '' })).toBe(false);
    expect(isCiFrom({})).toBe(false);
  });
});
