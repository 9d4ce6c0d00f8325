/**
 * Post-generation tasks: which apply (`when`), running one (argv, no shell, in the project, output
 * streamed, bounded in time), a failure stopping the rest, the lock recording what ran, and
 * `test` running them in its generated projects.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { generateProject, loadTemplate, testTemplate, validateTemplate, type TemplateLock } from '../../src/template/index.js';
import { DEFAULT_TASK_TIMEOUT_MS, plannedTasks, recordTasks, runTask, runTasks, TASK_INTERRUPTED, taskCommandLine } from '../../src/template/tasks.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const NODE = process.execPath;
/** A task that writes `file` with `text` in the folder it runs in. */
const writes = (file: string, text: string): string[] => [NODE, '-e', `require('node:fs').writeFileSync(${JSON.stringify(file)}, ${JSON.stringify(text)})`];

afterEach(() => {
  vi.useRealTimers();
});

describe('which tasks apply', () => {
  it('those whose when holds for the answers, in manifest order; validate checks their when', async () => {
    const dir = await writeTemplate({
      'template.json': {
        ...validManifest,
        tasks: [
          { description: 'Initialise git', run: ['git', 'init'] },
          { description: 'Install the test runner', run: ['npm', 'install', 'vitest'], when: 'features contains "testing"' },
          { description: 'Build', run: ['npm', 'run', 'build'] },
        ],
      },
    });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const template = await loadTemplate(dir);
    expect(plannedTasks(template.manifest, { features: ['api'] }).map((task) => task.description)).toEqual(['Initialise git', 'Build']);
    expect(plannedTasks(template.manifest, { features: ['api', 'testing'] }).map((task) => task.description)).toEqual(['Initialise git', 'Install the test runner', 'Build']);
    const generated = await generateProject(template, path.join(await tempDir(), 'app'), { features: ['testing'] });
    expect(generated.tasks).toEqual([
      { description: 'Initialise git', run: ['git', 'init'] },
      { description: 'Install the test runner', run: ['npm', 'install', 'vitest'] },
      { description: 'Build', run: ['npm', 'run', 'build'] },
    ]);
    // Generating runs none of them.
    expect(existsSync(path.join(generated.outDir, '.git'))).toBe(false);
  });

  it('validate refuses a task without run or description, an empty program, and a when naming an unknown variable', async () => {
    const dir = await writeTemplate({
      'template.json': {
        ...validManifest,
        tasks: [{ description: 'No program', run: [] }, { run: ['git', 'init'] }, { description: 'Typo', run: ['x'], when: 'featurs contains "api"' }],
      },
    });
    const problems = (await validateTemplate(dir)).errors.map((error) => `${error.pointer} ${error.message}`);
    expect(problems).toEqual([
      '/tasks/0/run must have at least 1 item(s)',
      '/tasks/1/description is required',
      '/tasks/2/when when of task "Typo" names unknown variable "featurs" (did you mean "features"?); declare it in template.vars.json or fix the spelling',
    ]);
  });
});

describe('running a task', () => {
  it('runs the program with its arguments in the project folder, never through a shell, and streams its output', async () => {
    const dir = await tempDir();
    const seen: string[] = [];
    const hostile = '$HOME; echo pwned > pwned.txt `id` | cat';
    const outcome = await runTask(
      { description: 'Echo', run: [NODE, '-e', 'require("node:fs").writeFileSync("arg.txt", process.argv[1]); console.log("hello from the task")', hostile] },
      dir,
      { onOutput: (text) => seen.push(text) },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0 });
    expect(await readFile(path.join(dir, 'arg.txt'), 'utf8')).toBe(hostile);
    expect(existsSync(path.join(dir, 'pwned.txt'))).toBe(false);
    expect(seen.join('')).toBe('hello from the task\n');
  });

  it('reports a program that exits with an error, and one that cannot be started', async () => {
    const dir = await tempDir();
    expect(await runTask({ description: 'Fail', run: [NODE, '-e', 'process.exit(3)'] }, dir)).toMatchObject({ status: 'failed', exitCode: 3 });
    const missing = await runTask({ description: 'Missing', run: ['no-such-program-for-a-task'] }, dir);
    expect(missing.status).toBe('failed');
    expect(missing.error).toContain('ENOENT');
  });

  it('stops a task at its time limit (10 minutes unless given), and the rest after a failure are skipped', async () => {
    expect(DEFAULT_TASK_TIMEOUT_MS).toBe(600_000);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const dir = await tempDir();
    const outcomes = await runTasks(
      [
        { description: 'Hang', run: [NODE, '-e', 'process.stdout.write("started"); setInterval(() => {}, 1000)'] },
        { description: 'After', run: writes('after.txt', 'x') },
      ],
      dir,
      {
        timeoutMs: 5_000,
        // Once the task shows it runs, its time is up.
        onOutput: (text) => {
          if (text.includes('started')) vi.advanceTimersByTime(5_000);
        },
      },
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['timed-out', 'skipped']);
    expect(existsSync(path.join(dir, 'after.txt'))).toBe(false);
  });

  it('is interrupted through its signal (Ctrl-C in the CLI): the task gets SIGINT, the rest are skipped', async () => {
    const dir = await tempDir();
    const controller = new AbortController();
    const outcomes = await runTasks(
      [
        {
          description: 'Long',
          run: [NODE, '-e', 'process.on("SIGINT", () => { require("node:fs").writeFileSync("got-sigint.txt", "yes"); process.exit(130); }); process.stdout.write("started"); setInterval(() => {}, 1000)'],
        },
        { description: 'After', run: writes('after.txt', 'x') },
      ],
      dir,
      { signal: controller.signal, onOutput: (text) => text.includes('started') && controller.abort() },
    );
    expect(outcomes.map(({ status, error }) => [status, error])).toEqual([
      ['failed', TASK_INTERRUPTED],
      ['skipped', undefined],
    ]);
    expect(await readFile(path.join(dir, 'got-sigint.txt'), 'utf8')).toBe('yes');
    expect(existsSync(path.join(dir, 'after.txt'))).toBe(false);
  });

  it('shows a task as a command line, quoting what needs it', () => {
    expect(taskCommandLine({ run: ['npm', 'install', '--save-dev', 'a b', '@types/node'] })).toBe('npm install --save-dev "a b" @types/node');
  });
});

describe('the lock file', () => {
  it('records each task with its status (and exit code) after the project is written', async () => {
    const template = await loadTemplate(await writeTemplate({ 'template.json': { ...validManifest, tasks: [{ description: 'Marker', run: writes('marker.txt', 'done') }] } }));
    const project = await generateProject(template, path.join(await tempDir(), 'app'));
    const outcomes = await runTasks(project.tasks, project.outDir);
    await recordTasks(project.outDir, outcomes);
    const lock = JSON.parse(await readFile(project.lockFile, 'utf8')) as TemplateLock;
    expect(lock.tasks).toEqual([{ description: 'Marker', run: writes('marker.txt', 'done'), status: 'succeeded', exitCode: 0 }]);
    expect(await readFile(path.join(project.outDir, 'marker.txt'), 'utf8')).toBe('done');
    expect(lock.files).not.toHaveProperty('marker.txt');
  });
});

describe('test', () => {
  it('runs the tasks in every generated project before the command; a failing task fails the set', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, tasks: [{ description: 'Marker', run: writes('marker.txt', 'done') }], test: { command: 'test -f marker.txt' } },
    });
    const report = await testTemplate(dir, { keep: true });
    expect(report.passed, JSON.stringify(report.sets.map((set) => set.problems))).toBe(true);
    for (const set of report.sets) {
      expect(set.tasks).toEqual([expect.objectContaining({ description: 'Marker', status: 'succeeded' })]);
      expect(await readFile(path.join(set.projectDir ?? '', 'marker.txt'), 'utf8')).toBe('done');
    }

    const failing = await writeTemplate({ 'template.json': { ...validManifest, tasks: [{ description: 'Broken', run: [NODE, '-e', 'process.exit(2)'] }] } });
    const failed = await testTemplate(failing);
    expect(failed.passed).toBe(false);
    expect(failed.sets[0]?.problems).toContain(`task "Broken" exited with 2: ${NODE} -e process.exit(2)`);
  });

  it('runs no task when told not to', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, tasks: [{ description: 'Broken', run: [NODE, '-e', 'process.exit(2)'] }] } });
    const report = await testTemplate(dir, { runTasks: false });
    expect(report.passed).toBe(true);
    expect(report.sets[0]?.tasks).toBeUndefined();
  });
});
