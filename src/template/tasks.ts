/**
 * A template's post-generation tasks (the manifest's `tasks`: `git init`, `npm install`): which
 * apply to a project, running them, and recording in the lock file which ran.
 *
 * A task is a program and its arguments, run with `spawn` and never through a shell, in the new
 * project's folder, without input, for a bounded time; a task that fails stops the ones after it.
 * Whether tasks run at all is the caller's decision (the user's consent): nothing here asks.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import type { TemplateManifest } from '../core/schema-types.js';
import { errorMessage } from '../core/errors.js';
import { writeFileAtomic } from '../core/files.js';
import { ExpressionEvaluator } from './expression.js';
import { LOCK_FILE, serializeLock, type TemplateLock } from './lock.js';

/** One task of the manifest: `{ "run": ["git", "init"], "description": "...", "when"?: "..." }`. */
export type TemplateTask = NonNullable<TemplateManifest['tasks']>[number];

/** A task as it applies to one project (its `when` was true): what it runs and why. */
export interface PlannedTask {
  description: string;
  run: string[];
}

/**
 * What became of a task: `succeeded` (exit 0), `failed` (another exit code, a signal, or the
 * program could not be started), `timed-out` (killed at its time limit), `skipped` (not run: no
 * consent, or an earlier task failed).
 */
export type TaskStatus = 'succeeded' | 'failed' | 'timed-out' | 'skipped';

export interface TaskOutcome extends PlannedTask {
  status: TaskStatus;
  /** The exit code of a task that ran and exited (null when a signal ended it). */
  exitCode?: number | null;
  /** Why a task failed without an exit code (the program was not found, ...). */
  error?: string;
  /** The last 4 KiB of its combined output (for reports; the output is also streamed to `onOutput`). */
  output?: string;
}

/** How long one task may run: 10 minutes (an `npm install` on a slow network). */
export const DEFAULT_TASK_TIMEOUT_MS = 10 * 60 * 1000;

const OUTPUT_TAIL = 4096;

/** The tasks whose `when` holds for the project's answers and computed values, in manifest order. */
export function plannedTasks(
  manifest: Pick<TemplateManifest, 'tasks'>,
  scope: object,
  evaluator = new ExpressionEvaluator(),
): PlannedTask[] {
  return (manifest.tasks ?? [])
    .filter((task) => task.when === undefined || evaluator.condition(task.when, scope))
    .map((task) => ({ description: task.description, run: [...task.run] }));
}

/** A task as a command line, for messages: `npm install`, arguments with spaces quoted. */
export function taskCommandLine(task: Pick<PlannedTask, 'run'>): string {
  return task.run.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(' ');
}

export interface RunTasksOptions {
  /** Most milliseconds one task may run; DEFAULT_TASK_TIMEOUT_MS unless given. */
  timeoutMs?: number;
  /** Told before each task starts. */
  onStart?: (task: PlannedTask) => void;
  /** The tasks' output (standard output and error), as it comes. */
  onOutput?: (text: string) => void;
  /** The tasks' environment; the process's unless given. */
  env?: NodeJS.ProcessEnv;
  /** Stops the running task (the CLI aborts it on Ctrl-C): its process group gets SIGINT, and the task fails as interrupted. */
  signal?: AbortSignal;
}

/** The error of a task stopped through `signal`. */
export const TASK_INTERRUPTED = 'interrupted';

/** Runs one task in `cwd`: its program with its arguments, no shell; the whole process group is killed at the time limit. */
export function runTask(task: PlannedTask, cwd: string, options: RunTasksOptions = {}): Promise<TaskOutcome> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TASK_TIMEOUT_MS;
  const [program = '', ...args] = task.run;
  return new Promise((resolve) => {
    let output = '';
    let timedOut = false;
    let error: string | undefined;
    // node:child_process is loaded by the first run, not at import.
    const child = process.getBuiltinModule('node:child_process').spawn(program, args, {
      cwd,
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so that a timeout also ends what it started (npm's children).
      detached: process.platform !== 'win32',
      windowsHide: true,
      ...(options.env ? { env: options.env } : {}),
    });
    const append = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-OUTPUT_TAIL);
      options.onOutput?.(text);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    // The task and whatever it started: it runs in a process group of its own.
    const stop = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        child.kill(signal);
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop('SIGKILL');
    }, timeoutMs);
    const interrupt = (): void => {
      error = TASK_INTERRUPTED;
      stop('SIGINT');
    };
    if (options.signal?.aborted) interrupt();
    else options.signal?.addEventListener('abort', interrupt, { once: true });
    child.on('error', (cause) => {
      error = errorMessage(cause);
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', interrupt);
      const status: TaskStatus = timedOut ? 'timed-out' : exitCode === 0 && error === undefined ? 'succeeded' : 'failed';
      resolve({
        description: task.description,
        run: [...task.run],
        status,
        ...(error === undefined ? { exitCode } : { error }),
        ...(output !== '' ? { output } : {}),
      });
    });
  });
}

/** Runs the tasks one after the other in `projectDir`; after one that does not succeed, the rest are skipped. */
export async function runTasks(tasks: readonly PlannedTask[], projectDir: string, options: RunTasksOptions = {}): Promise<TaskOutcome[]> {
  const outcomes: TaskOutcome[] = [];
  for (const task of tasks) {
    if (outcomes.some((outcome) => outcome.status !== 'succeeded')) {
      outcomes.push({ description: task.description, run: [...task.run], status: 'skipped' });
      continue;
    }
    options.onStart?.(task);
    outcomes.push(await runTask(task, projectDir, options));
  }
  return outcomes;
}

/** The tasks, none run. */
export function skippedTasks(tasks: readonly PlannedTask[]): TaskOutcome[] {
  return tasks.map((task) => ({ description: task.description, run: [...task.run], status: 'skipped' }));
}

/** Records in the project's lock file what became of its tasks (`tasks`: description, run, status), atomically. */
export async function recordTasks(projectDir: string, outcomes: readonly TaskOutcome[]): Promise<void> {
  const file = path.join(projectDir, LOCK_FILE);
  const lock = JSON.parse(await readFile(file, 'utf8')) as TemplateLock;
  lock.tasks = outcomes.map(({ description, run, status, exitCode }) => ({ description, run, status, ...(exitCode !== undefined ? { exitCode } : {}) }));
  await writeFileAtomic(file, serializeLock(lock));
}
