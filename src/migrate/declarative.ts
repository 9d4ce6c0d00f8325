/**
 * Declarative migration steps: one JSON file per step in the template's `migrations/` folder,
 * checked against the `migration-step` schema. Contents and paths are Liquid templates rendered
 * with the project's answers (lock answers and computed values).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import type { Liquid } from 'liquidjs';

import { nearestPosition, type SourcePosition } from '../core/json-source.js';
import type { FileChange, MigrationStep as DeclarativeStepData } from '../core/schema-types.js';
import { checkJsonText, formatValidationErrorAt, type ValidationProblem } from '../core/validation.js';
import { firstLine } from '../core/errors.js';
import { createEngine, type WhitespaceMode } from '../template/expression.js';
import { checkMigrationStep, RENDERED_CHANGE_FIELDS } from '../template/migration-check.js';
import type { TemplateLock } from '../template/lock.js';
import { MANIFEST_FILE } from '../template/validate.js';
import type { MigrationStep } from './run.js';

export { MIGRATIONS_FOLDER } from '../template/validate.js';

export interface DeclarativeStepOptions {
  /** The Liquid scope: the project's answers and computed values (see `migrationScope`). */
  answers: Record<string, unknown>;
  /** Sets `templateId` on every step, so it applies only to that template. */
  templateId?: string;
  /** The engine to render with; a fresh `createEngine()` (safe for untrusted templates) unless given. */
  engine?: Liquid;
}

/**
 * The whitespace control of the template whose `migrations/` folder `dir` is (its manifest's
 * `whitespace`), so that steps render as its content files do; the default when it cannot be read.
 */
async function templateWhitespace(dir: string): Promise<WhitespaceMode | undefined> {
  try {
    const manifest = JSON.parse(await readFile(path.join(path.dirname(dir), MANIFEST_FILE), 'utf8')) as { whitespace?: unknown };
    return manifest.whitespace === 'line' || manifest.whitespace === 'liquid' ? manifest.whitespace : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One problem in a step file, shaped like a template validation error (`file` is `dir` joined with
 * the file name; codes add LIQUID, VERSION_ORDER, PATH_OUTSIDE_PROJECT, DUPLICATE_ID).
 */
export type StepFileProblem = ValidationProblem;

/** `migrations/1.1.0-to-1.2.0.json:3:18 /fromVersion: must be MAJOR.MINOR.PATCH (got "1.2")`. */
export function formatStepFileProblem(problem: StepFileProblem): string {
  return formatValidationErrorAt(problem);
}

/** One or more step files are invalid; `problems` lists every one (each naming its file and field). */
export class MigrationStepFileError extends Error {
  constructor(readonly problems: StepFileProblem[]) {
    super(`invalid migration step file${problems.length === 1 ? '' : 's'}:\n${problems.map((p) => `  - ${formatStepFileProblem(p)}`).join('\n')}`);
    this.name = 'MigrationStepFileError';
  }
}

/** The Liquid scope of a project's declarative steps: its lock answers with the computed values. */
export function migrationScope(lock: Pick<TemplateLock, 'answers' | 'computed'>): Record<string, unknown> {
  return { ...lock.answers, ...lock.computed };
}

const RENDERED_FIELDS = RENDERED_CHANGE_FIELDS;

interface LoadedFile {
  file: string;
  data: DeclarativeStepData;
}

/** Reads and checks one step file; pushes its problems and returns its data when it has none. */
async function loadFile(file: string, engine: Liquid, problems: StepFileProblem[]): Promise<LoadedFile | undefined> {
  const checked = checkJsonText(file, await readFile(file, 'utf8'), 'migration-step');
  problems.push(...checked.problems);
  if (checked.problems.length > 0) return undefined;
  const at = (pointer: string): SourcePosition | undefined => nearestPosition(checked.positions, pointer);

  const data = checked.value as DeclarativeStepData;
  // Versions in order, Liquid that parses, paths inside the project: a broken step fails now, not half-way through a run.
  const found = checkMigrationStep(data, engine).map((violation) => ({ file, ...violation, ...at(violation.pointer) }));
  problems.push(...found);
  return found.length === 0 ? { file, data } : undefined;
}

function toStep({ file, data }: LoadedFile, engine: Liquid, options: DeclarativeStepOptions): MigrationStep {
  const scope = options.answers;
  const render = async (source: string, pointer: string): Promise<string> => {
    try {
      return String(await engine.parseAndRender(source, scope));
    } catch (error) {
      throw new Error(`${file} ${pointer}: ${firstLine(error)}`, { cause: error });
    }
  };
  return {
    id: data.id,
    description: data.description,
    fromVersion: data.fromVersion,
    toVersion: data.toVersion,
    breaking: data.breaking,
    automatic: data.automatic,
    ...(options.templateId !== undefined ? { templateId: options.templateId } : {}),
    async execute() {
      const changes: FileChange[] = [];
      for (const [index, change] of data.changes.entries()) {
        const rendered: FileChange = { ...change };
        for (const field of RENDERED_FIELDS) {
          const source = change[field];
          if (source !== undefined) rendered[field] = await render(source, `/changes/${index}/${field}`);
        }
        changes.push(rendered);
      }
      return { success: true, changes, warnings: [], errors: [] };
    },
  };
}

/**
 * Loads the declarative steps of a template: every `*.json` file in `dir` (its `migrations/`
 * folder), in name order. Each file is checked against the `migration-step` schema, its
 * `toVersion` must be greater than its `fromVersion`, its ids unique, its Liquid parse and its
 * paths (as written) stay inside the project;
 * otherwise throws a MigrationStepFileError listing every problem of every file. A folder that
 * does not exist gives no steps.
 *
 * A step's `execute` returns its `changes` with `path`, `newPath` and `content` rendered through
 * Liquid, with `options.answers` as the scope.
 */
export async function loadDeclarativeSteps(dir: string, options: DeclarativeStepOptions): Promise<MigrationStep[]> {
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error(`${dir} is not a folder`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.json'))
    .map((entry) => entry.name)
    .sort();
  const whitespace = options.engine ? undefined : await templateWhitespace(dir);
  const engine = options.engine ?? createEngine(whitespace ? { whitespace } : {});
  const problems: StepFileProblem[] = [];
  const loaded: LoadedFile[] = [];
  const ids = new Map<string, string>();
  for (const name of names) {
    const file = path.join(dir, name);
    const result = await loadFile(file, engine, problems);
    if (!result) continue;
    const other = ids.get(result.data.id);
    if (other !== undefined) {
      problems.push({ file, pointer: '/id', message: `duplicates the id of ${other} (${JSON.stringify(result.data.id)})`, code: 'DUPLICATE_ID' });
      continue;
    }
    ids.set(result.data.id, file);
    loaded.push(result);
  }
  if (problems.length > 0) throw new MigrationStepFileError(problems);
  return loaded.map((item) => toStep(item, engine, options));
}
