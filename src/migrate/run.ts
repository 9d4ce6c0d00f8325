/**
 * Runs migration steps over a project: picks the applicable steps the way the spec says, runs
 * them in order against a planned view of the project, and applies the planned file changes all
 * together (or, in a dry run, only reports them with a diff per file).
 */
import { readFile, realpath, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describeSchemaErrors } from '../core/messages.js';
import type {
  FileChange,
  MigrationContext as MigrationContextShape,
  MigrationStep as MigrationStepShape,
} from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { reservedPathProblem } from '../core/reserved-paths.js';
import { applicableInOrder, chainInOrder } from '../core/step-order.js';
import { LOCK_FILE, readLock, serializeLock, sha256Hex, type TemplateLock } from '../template/lock.js';
import { isInside } from '../template/paths.js';
import { isBinary } from '../template/text-files.js';
import { ApplyError, applyOperations, JOURNAL_FILE, recoverInterruptedApply, type ApplyFileSystem, type ApplyOperation, type Recovery } from './apply.js';
import { unifiedDiff } from './diff.js';
import { errorMessage } from '../core/errors.js';

export type { FileChange } from '../core/schema-types.js';

/**
 * Folder, inside the project, that holds the backups of a run: `<BACKUP_FOLDER>/<timestamp>/<path>`.
 * It ignores itself (its own `.gitignore` holds `*`, as a Python venv's does), so the project's
 * version control never picks up a backup and the project's `.gitignore` is left alone.
 */
export const BACKUP_FOLDER = '.template-backups';

/** The `.gitignore` of the backup folder: everything in it, itself included. */
const BACKUP_GITIGNORE = '# backups of template-registry migrate and update: never committed\n*\n';

/** Gives the backup folder of `root` its own `.gitignore` when it has none (one written by hand is kept). */
async function ignoreBackups(root: string): Promise<void> {
  await writeFile(path.join(root, BACKUP_FOLDER, '.gitignore'), BACKUP_GITIGNORE, { flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
}

/**
 * A read-only view of the project as planned so far: the files on disk with the changes of the
 * steps that already ran laid over them. Paths are relative to the project root, `/`-separated.
 * A path outside the project rejects.
 */
export interface ProjectFiles {
  /** The file's text as planned so far (UTF-8); undefined when there is no such file. */
  read(path: string): Promise<string | undefined>;
  /** Whether a file (not a folder) is there as planned so far. */
  exists(path: string): Promise<boolean>;
}

/** What a step is given: the spec's migration context, plus backups and the planned project. */
export interface MigrationContext extends MigrationContextShape {
  /** Keep every replaced or removed file in `.template-backups/<timestamp>/`. */
  backup?: boolean;
  /** The project as planned so far: a step sees the changes of the steps before it. */
  files: ProjectFiles;
}

/** What `runMigrations` is given: a context without `files` (the runner provides them). */
export type MigrationRunContext = Omit<MigrationContext, 'files'>;

/** The result of one step (and the base of a run's result). */
export interface MigrationResult {
  success: boolean;
  changes: FileChange[];
  warnings: string[];
  errors: string[];
}

/** A migration step in code. Steps never write: they return the changes they want. */
export interface MigrationStep extends Omit<MigrationStepShape, 'changes'> {
  /** The template the step belongs to; a step without one applies to any template. */
  templateId?: string;
  execute(context: MigrationContext): Promise<MigrationResult> | MigrationResult;
}

/** The net effect of a run on one file. */
export interface PlannedFile {
  /** The file (for a rename, its old path). */
  path: string;
  type: FileChange['type'];
  /** The new path of a renamed file. */
  newPath?: string;
  /** The content before; absent for a created or a binary file. */
  before?: string;
  /** The content after; absent for a deleted or a binary file. */
  after?: string;
  /** True when the file is binary (it holds a NUL byte): no contents or line diff then. */
  binary?: boolean;
  /** Unified diff, `--- a/<path>` / `+++ b/<path>`, 3 lines of context. */
  diff: string;
}

/** The result of `runMigrations`. */
export interface MigrationRunResult extends MigrationResult {
  /** Ids of the steps that ran and succeeded, in order. Written to disk only when `success` is true and `dryRun` false. */
  applied: string[];
  /** Ids of the applicable steps already listed in the lock file's `appliedMigrations`; not run. */
  skipped: string[];
  /** The net change of every file (empty when the run failed). */
  plan: PlannedFile[];
  /** Absolute folder holding the backups of this run, when any were kept. */
  backupDir?: string;
  /** An earlier apply interrupted by a crash, rolled back before this run. */
  recovered?: Recovery;
  /** The version the chained steps lead to (present when at least one step applied). */
  reachedVersion?: string;
  /** Files the run refused to overwrite or remove because the project changed them (`protectChangedFiles`). */
  changedFiles?: string[];
}

export interface RunMigrationsOptions {
  /** The clock, for the backup folder's timestamp. */
  now?: () => Date;
  /** File-system calls of the apply phase (to test failures half-way). */
  fs?: Partial<ApplyFileSystem>;
  /**
   * Refuse (fail, writing nothing) a run that would overwrite or remove a file the project changed
   * since generation (its hash differs from the lock's); see `changedByUser`.
   */
  protectChangedFiles?: boolean;
  /** The lock's `template.source` for the version reached; unchanged unless given. */
  lockSource?: (version: string) => string;
}

/**
 * The steps that apply to a project, in the order they run: those for its template (a step
 * without `templateId` applies to any) whose `fromVersion` <= `currentVersion` and whose
 * `toVersion` > `currentVersion`, sorted by ascending `toVersion` (ties keep their order).
 */
export function applicableSteps(
  steps: readonly MigrationStep[],
  context: Pick<MigrationRunContext, 'currentVersion' | 'templateId'>,
): MigrationStep[] {
  return applicableInOrder(forTemplate(steps, context.templateId), context.currentVersion);
}

const forTemplate = (steps: readonly MigrationStep[], templateId: string): MigrationStep[] =>
  steps.filter((step) => step.templateId === undefined || step.templateId === templateId);

/** The warning added before a non-dry run with breaking steps. */
export function breakingWarning(count: number): string {
  return `${count} breaking migration step${count === 1 ? '' : 's'}: review the migration guide before applying`;
}

/** A change the runner refuses: the message names the path. */
class ChangeError extends Error {}

type DiskState = { kind: 'file'; data: Buffer } | { kind: 'folder' } | { kind: 'missing' };

/** What a path holds as planned: new text, the bytes another file held on disk (a move), or nothing. */
type Planned =
  /** `movedFrom`: the file on disk this one was renamed from, if any (shown as a rename). */
  | { kind: 'write'; content: string | Buffer; movedFrom?: string; mode?: number }
  | { kind: 'copy'; from: string }
  | { kind: 'delete' };

/** The project as the steps planned it: the disk with their changes laid over it. */
export class PlannedProject implements ProjectFiles {
  private readonly disk = new Map<string, DiskState>();
  /** Planned state by path; paths never touched are as on disk. */
  readonly overlay = new Map<string, Planned>();
  /** Disk paths whose old file a change asked to back up. */
  readonly backups = new Set<string>();

  constructor(
    readonly root: string,
    private readonly realRoot: string,
  ) {}

  /**
   * The `/`-separated project path of `name`; throws when it leaves the project, or, for a
   * change (`forChange`), when it is the lock file or inside the backup folder.
   */
  async key(name: unknown, forChange = false): Promise<string> {
    if (typeof name !== 'string' || name === '') throw new ChangeError('a path must be a non-empty string');
    const shown = JSON.stringify(name);
    if (name.includes('\0')) throw new ChangeError(`path ${shown} is not valid`);
    if (path.isAbsolute(name) || path.win32.isAbsolute(name)) throw new ChangeError(`path ${shown} is outside the project (absolute)`);
    const absolute = path.resolve(this.root, name);
    if (!isInside(this.root, absolute) || absolute === this.root) throw new ChangeError(`path ${shown} is outside the project`);
    // Through a symbolic link: the deepest part of the path that exists must really be inside.
    for (let current = absolute; isInside(this.root, current); current = path.dirname(current)) {
      let real: string;
      try {
        real = await realpath(current);
      } catch {
        if (current === this.root) break;
        continue;
      }
      if (!isInside(this.realRoot, real)) throw new ChangeError(`path ${shown} is outside the project (through a symbolic link)`);
      break;
    }
    const key = path.relative(this.root, absolute).split(path.sep).join('/');
    const reserved = reservedPathProblem(key);
    if (reserved) throw new ChangeError(reserved);
    if (forChange && (key === LOCK_FILE || key === JOURNAL_FILE || key === BACKUP_FOLDER || key.startsWith(`${BACKUP_FOLDER}/`))) {
      throw new ChangeError(`path ${shown} is managed by the migration runner and cannot be changed by a step`);
    }
    return key;
  }

  /** The file at `key` on disk, before any change. */
  async onDisk(key: string): Promise<DiskState> {
    let state = this.disk.get(key);
    if (!state) {
      const file = path.join(this.root, ...key.split('/'));
      try {
        state = { kind: 'file', data: await readFile(file) };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EISDIR') state = { kind: 'folder' };
        else if (code === 'ENOENT' || code === 'ENOTDIR') state = { kind: 'missing' };
        else throw error;
      }
      this.disk.set(key, state);
    }
    return state;
  }

  /** The bytes at `key` as planned; 'folder' for a folder on disk; undefined for nothing. */
  async planned(key: string): Promise<Buffer | 'folder' | undefined> {
    const entry = this.overlay.get(key);
    if (entry?.kind === 'write') return typeof entry.content === 'string' ? Buffer.from(entry.content, 'utf8') : entry.content;
    if (entry?.kind === 'delete') return undefined;
    const state = await this.onDisk(entry?.kind === 'copy' ? entry.from : key);
    return state.kind === 'file' ? state.data : state.kind === 'folder' ? 'folder' : undefined;
  }

  async read(name: string): Promise<string | undefined> {
    const key = await this.key(name);
    const entry = this.overlay.get(key);
    if (entry?.kind === 'write' && typeof entry.content === 'string') return entry.content;
    const data = await this.planned(key);
    return Buffer.isBuffer(data) ? data.toString('utf8') : undefined;
  }

  async exists(name: string): Promise<boolean> {
    return Buffer.isBuffer(await this.planned(await this.key(name)));
  }

  /** Lays `content` over `name`, creating or replacing it (update's merge, not a step's change). */
  async put(name: string, content: string | Buffer, mode?: number): Promise<void> {
    const key = await this.key(name, true);
    if ((await this.planned(key)) === 'folder') throw new ChangeError(`cannot write ${JSON.stringify(name)}: it is a folder`);
    const entry = this.overlay.get(key);
    const movedFrom = entry?.kind === 'write' ? entry.movedFrom : entry?.kind === 'copy' ? entry.from : undefined;
    this.overlay.set(key, { kind: 'write', content, ...(movedFrom !== undefined ? { movedFrom } : {}), ...(mode !== undefined ? { mode } : {}) });
  }

  /** Removes `name` from the plan (update's merge, not a step's change). */
  async remove(name: string): Promise<void> {
    const key = await this.key(name, true);
    if (Buffer.isBuffer(await this.planned(key))) this.overlay.set(key, { kind: 'delete' });
  }

  /** Whether the steps (or the merge) planned `key` away: deleted, or renamed to another path. */
  removedBySteps(key: string): boolean {
    return this.overlay.get(key)?.kind === 'delete';
  }

  /** Why `name` cannot be changed (outside the project, the lock file, ...), or undefined when it can. */
  async refusal(name: string): Promise<string | undefined> {
    try {
      await this.key(name, true);
      return undefined;
    } catch (error) {
      if (error instanceof ChangeError) return error.message;
      throw error;
    }
  }

  /** Where the steps moved each file they renamed: old path to new path. */
  moves(): Map<string, string> {
    const moved = new Map<string, string>();
    for (const [key, entry] of this.overlay) {
      const from = entry.kind === 'copy' ? entry.from : entry.kind === 'write' ? entry.movedFrom : undefined;
      if (from !== undefined && from !== key) moved.set(from, key);
    }
    return moved;
  }

  /** Lays one change over the plan; throws a ChangeError naming the path when it cannot be made. */
  async plan(change: FileChange): Promise<void> {
    const key = await this.key(change.path, true);
    const current = await this.planned(key);
    const shown = JSON.stringify(change.path);
    if (current === 'folder') throw new ChangeError(`cannot ${change.type} ${shown}: it is a folder`);
    switch (change.type) {
      case 'create': {
        const content = change.content ?? '';
        if (current !== undefined) {
          if (current.equals(Buffer.from(content, 'utf8'))) return; // already there, same content
          throw new ChangeError(`cannot create ${shown}: the file already exists`);
        }
        this.overlay.set(key, { kind: 'write', content });
        return;
      }
      case 'update':
        if (change.content === undefined) throw new ChangeError(`cannot update ${shown}: the change has no content`);
        if (current === undefined) throw new ChangeError(`cannot update ${shown}: the file does not exist`);
        this.overlay.set(key, { kind: 'write', content: change.content });
        if (change.backup) this.backups.add(key);
        return;
      case 'delete':
        if (current === undefined) throw new ChangeError(`cannot delete ${shown}: the file does not exist`);
        this.overlay.set(key, { kind: 'delete' });
        if (change.backup) this.backups.add(key);
        return;
      case 'rename': {
        const target = await this.key(change.newPath, true);
        const shownTarget = JSON.stringify(change.newPath);
        if (current === undefined) throw new ChangeError(`cannot rename ${shown} to ${shownTarget}: ${shown} does not exist`);
        if ((await this.planned(target)) !== undefined) {
          throw new ChangeError(`cannot rename ${shown} to ${shownTarget}: ${shownTarget} already exists`);
        }
        const entry = this.overlay.get(key);
        if (entry?.kind === 'write') {
          const onDisk = (await this.onDisk(key)).kind === 'file';
          const movedFrom = entry.movedFrom ?? (onDisk ? key : undefined);
          this.overlay.set(target, { kind: 'write', content: entry.content, ...(movedFrom !== undefined ? { movedFrom } : {}) });
        } else {
          this.overlay.set(target, entry ?? { kind: 'copy', from: key });
        }
        this.overlay.set(key, { kind: 'delete' });
        if (change.backup) this.backups.add(key);
        return;
      }
    }
  }
}

/** One file's net change: the plan entry and the operation that makes it. */
export interface NetChange {
  key: string;
  operation: ApplyOperation;
  /** The disk file this one was renamed from. */
  movedFrom?: string;
  before?: Buffer;
  after?: Buffer;
}

async function netChanges(project: PlannedProject, backupAll: boolean): Promise<NetChange[]> {
  const result: NetChange[] = [];
  for (const [key, entry] of project.overlay) {
    const disk = await project.onDisk(key);
    const before = disk.kind === 'file' ? disk.data : undefined;
    const backup = backupAll || project.backups.has(key);
    if (entry.kind === 'delete') {
      if (before) result.push({ key, operation: { kind: 'delete', path: key, backup }, before });
      continue;
    }
    if (entry.kind === 'copy' && entry.from === key) continue; // moved away and back
    const after = await project.planned(key);
    if (!Buffer.isBuffer(after) || (before && before.equals(after))) continue;
    const operation: ApplyOperation =
      entry.kind === 'write'
        ? { kind: 'write', path: key, data: entry.content, backup, ...(entry.mode !== undefined ? { mode: entry.mode } : {}) }
        : { kind: 'copy', path: key, from: entry.from, backup };
    const movedFrom = entry.kind === 'copy' ? entry.from : entry.movedFrom;
    result.push({ key, operation, ...(movedFrom !== undefined ? { movedFrom } : {}), ...(before ? { before } : {}), after });
  }
  return result;
}

function describe(key: string | undefined, side: 'a' | 'b'): string {
  return key === undefined ? '/dev/null' : `${side}/${key}`;
}

function plannedFile(type: FileChange['type'], oldKey: string | undefined, newKey: string | undefined, before?: Buffer, after?: Buffer): PlannedFile {
  const shownPath = (oldKey ?? newKey) as string;
  const binary = (before !== undefined && isBinary(before)) || (after !== undefined && isBinary(after));
  const base: PlannedFile = { path: shownPath, type, diff: '', ...(type === 'rename' && newKey !== undefined ? { newPath: newKey } : {}) };
  if (binary) {
    const same = before !== undefined && after !== undefined && before.equals(after);
    const header = `--- ${describe(oldKey, 'a')}\n+++ ${describe(newKey, 'b')}\n`;
    return { ...base, binary: true, diff: same ? header : `Binary files ${describe(oldKey, 'a')} and ${describe(newKey, 'b')} differ\n` };
  }
  const beforeText = before?.toString('utf8');
  const afterText = after?.toString('utf8');
  return {
    ...base,
    ...(beforeText !== undefined ? { before: beforeText } : {}),
    ...(afterText !== undefined ? { after: afterText } : {}),
    diff: unifiedDiff(beforeText, afterText, { ...(oldKey !== undefined ? { oldPath: oldKey } : {}), ...(newKey !== undefined ? { newPath: newKey } : {}) }),
  };
}

/** The plan shown to people: a move of an unchanged-or-edited file shows as one rename. */
function toPlan(changes: NetChange[]): PlannedFile[] {
  const deleted = new Map(changes.filter((c) => c.operation.kind === 'delete').map((c) => [c.key, c]));
  const shownAsRename = new Set<string>();
  const plan: PlannedFile[] = [];
  const renamed = new Set<NetChange>();
  for (const change of changes) {
    const from = change.movedFrom;
    if (from !== undefined && !change.before && deleted.has(from) && !shownAsRename.has(from)) {
      shownAsRename.add(from);
      renamed.add(change);
      plan.push(plannedFile('rename', from, change.key, deleted.get(from)?.before, change.after));
    }
  }
  for (const change of changes) {
    const { operation } = change;
    if (operation.kind === 'delete') {
      if (!shownAsRename.has(change.key)) plan.push(plannedFile('delete', change.key, undefined, change.before));
    } else if (!renamed.has(change)) {
      plan.push(plannedFile(change.before ? 'update' : 'create', change.before ? change.key : undefined, change.key, change.before, change.after));
    }
  }
  // In the order the files were first touched.
  const order = new Map(changes.map((c, i) => [c.key, i]));
  const rank = (file: PlannedFile): number => Math.min(order.get(file.path) ?? Infinity, file.newPath ? (order.get(file.newPath) ?? Infinity) : Infinity);
  return plan.map((file, i) => ({ file, i })).sort((x, y) => rank(x.file) - rank(y.file) || x.i - y.i).map(({ file }) => file);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** The problem with a step's result, or undefined when it has the MigrationResult shape. */
function resultProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'expected an object { success, changes, warnings, errors }';
  const result = value as Record<string, unknown>;
  if (typeof result.success !== 'boolean') return 'success must be a boolean';
  if (!Array.isArray(result.changes)) return 'changes must be an array';
  if (!isStringArray(result.warnings)) return 'warnings must be an array of strings';
  if (!isStringArray(result.errors)) return 'errors must be an array of strings';
  return undefined;
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-');
}

async function pathExists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

async function freshBackupDir(root: string, date: Date): Promise<string> {
  const base = path.join(root, BACKUP_FOLDER, timestamp(date));
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? base : `${base}-${n}`;
    if (!(await pathExists(candidate))) return candidate;
  }
}

/** The lock after a run: applied ids appended, version moved to the one reached, file hashes updated. */
function updatedLock(lock: TemplateLock, applied: string[], reachedVersion: string, changes: readonly NetChange[], source?: string): TemplateLock {
  const files = { ...lock.files };
  for (const change of changes) {
    if (change.operation.kind === 'delete') {
      delete files[change.key];
    } else if (change.after) {
      files[change.key] = { sha256: sha256Hex(change.after), size: change.after.length };
    }
  }
  return {
    ...lock,
    template: { ...lock.template, version: reachedVersion, ...(source !== undefined ? { source } : {}) },
    files,
    appliedMigrations: [...(lock.appliedMigrations ?? []), ...applied],
  };
}

/** One step of a chained run, with the version its hop starts from (the step's `currentVersion`). */
export interface ChainedStep {
  step: MigrationStep;
  hopVersion: string;
}

/**
 * The steps of a run for the project's template, hop after hop (`chainInOrder`: the spec's rule,
 * then again from the highest `toVersion` each hop reached, until no step applies).
 */
export function chainSteps(
  steps: readonly MigrationStep[],
  context: Pick<MigrationRunContext, 'currentVersion' | 'templateId'>,
): { steps: ChainedStep[]; reachedVersion: string } {
  return chainInOrder(forTemplate(steps, context.templateId), context.currentVersion);
}

/** The steps of a run planned over the project, nothing written: what `applyPlannedRun` finishes. */
export interface PlannedRun {
  /** The run so far (`plan` still empty); when `success` is false, nothing more can be done. */
  result: MigrationRunResult;
  /** The version the chained steps lead to. */
  reachedVersion: string;
  /** The project as the steps left it (absent when the run failed before the steps ran). */
  project?: PlannedProject;
  /** The project's lock file, when it has one. */
  lock?: TemplateLock;
  /** The changes each step that ran asked for, in the order the steps ran. */
  stepChanges: { id: string; changes: FileChange[] }[];
}

/**
 * Rolls back an interrupted earlier apply in the project at `context.projectPath` (the one write it
 * may make, so it is no dry run), then plans the chained steps (`chainSteps`) over the project
 * without writing: each step sees the project as the steps before it left it. A step that fails,
 * throws, or asks for a change that cannot be made ends the plan with `success: false`.
 */
export async function recoverAndPlanRun(steps: readonly MigrationStep[], context: MigrationRunContext): Promise<PlannedRun> {
  const chain = chainSteps(steps, context);
  const result: MigrationRunResult = { success: true, changes: [], warnings: [], errors: [], applied: [], skipped: [], plan: [] };
  if (chain.steps.length > 0) result.reachedVersion = chain.reachedVersion;
  const stepChanges: PlannedRun['stepChanges'] = [];
  const planned = (extra: Partial<PlannedRun> = {}): PlannedRun => ({ result, reachedVersion: chain.reachedVersion, stepChanges, ...extra });
  const fail = (message: string, extra: Partial<PlannedRun> = {}): PlannedRun => {
    result.success = false;
    result.errors.push(message);
    return planned(extra);
  };

  const root = path.resolve(context.projectPath);
  let realRoot: string;
  try {
    if (!(await stat(root)).isDirectory()) return fail(`project folder ${context.projectPath} is not a folder`);
    realRoot = await realpath(root);
  } catch {
    return fail(`project folder ${context.projectPath} does not exist`);
  }
  if (context.dryRun) {
    if (await pathExists(path.join(root, JOURNAL_FILE))) return fail(`an earlier migration of ${context.projectPath} was interrupted (${JOURNAL_FILE}); run without a dry run to roll it back first`);
  } else {
    try {
      const recovered = await recoverInterruptedApply(root);
      if (recovered) result.recovered = recovered;
    } catch (error) {
      return fail(errorMessage(error));
    }
  }

  let lock: TemplateLock | undefined;
  if (await pathExists(path.join(root, LOCK_FILE))) {
    try {
      lock = await readLock(root);
    } catch (error) {
      return fail(errorMessage(error));
    }
  }
  const alreadyApplied = new Set(Array.isArray(lock?.appliedMigrations) ? lock.appliedMigrations : []);
  const toRun = chain.steps.filter(({ step }) => !alreadyApplied.has(step.id));
  result.skipped = chain.steps.filter(({ step }) => alreadyApplied.has(step.id)).map(({ step }) => step.id);

  const breaking = toRun.filter(({ step }) => step.breaking).length;
  if (breaking > 0 && !context.dryRun) result.warnings.push(breakingWarning(breaking));

  const project = new PlannedProject(root, realRoot);
  const withLock = lock ? { lock } : {};
  // Steps get a read-only face of the plan, not the planner itself.
  const files: ProjectFiles = Object.freeze({ read: (name: string) => project.read(name), exists: (name: string) => project.exists(name) });
  for (const { step, hopVersion } of toRun) {
    let outcome: unknown;
    try {
      outcome = await step.execute({ ...context, currentVersion: hopVersion, files });
    } catch (error) {
      return fail(`step ${step.id} failed: ${errorMessage(error)}`, withLock);
    }
    const problem = resultProblem(outcome);
    if (problem) return fail(`step ${step.id} returned an invalid result: ${problem}`, withLock);
    const stepResult = outcome as MigrationResult;
    result.changes.push(...stepResult.changes);
    result.warnings.push(...stepResult.warnings);
    result.errors.push(...stepResult.errors);
    if (!stepResult.success) {
      if (stepResult.errors.length > 0) {
        result.success = false;
        return planned(withLock);
      }
      return fail(`step ${step.id} failed`, withLock);
    }
    for (const [index, change] of stepResult.changes.entries()) {
      const violations = describeSchemaErrors(schemaErrors('file-change', change));
      if (violations.length > 0) {
        const text = violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ');
        return fail(`step ${step.id}: change ${index + 1} is not a valid file change: ${text}`, withLock);
      }
      try {
        await project.plan(change);
      } catch (error) {
        return fail(`step ${step.id}: ${errorMessage(error)}`, withLock);
      }
    }
    result.applied.push(step.id);
    stepChanges.push({ id: step.id, changes: stepResult.changes });
  }
  return planned({ project, ...withLock });
}

export interface ApplyPlannedRunOptions extends RunMigrationsOptions {
  dryRun: boolean;
  /** Keep every replaced or removed file in the backup folder. */
  backup: boolean;
  /** The lock file to write with the changes, given every file's net change; none when undefined. */
  lockFor?: (changes: readonly NetChange[]) => TemplateLock | undefined;
  /** Files whose change is refused because the project changed them: the run fails naming them (`changedFiles`), nothing is written. */
  refuse?: (changes: readonly NetChange[]) => string[];
}

/**
 * Finishes a planned run: the net change of every file with its diff into `result.plan`, then,
 * unless a dry run, every change and the lock file applied all together (see `applyOperations`).
 */
export async function applyPlannedRun(planned: PlannedRun, options: ApplyPlannedRunOptions): Promise<MigrationRunResult> {
  const { result, project } = planned;
  if (!result.success || !project) return { ...result, plan: [] };
  const changes = await netChanges(project, options.backup);
  const refused = options.refuse?.(changes) ?? [];
  if (refused.length > 0) return { ...result, success: false, errors: [...result.errors, changedFilesMessage(refused)], plan: [], changedFiles: refused };
  const done: MigrationRunResult = { ...result, plan: toPlan(changes) };
  if (options.dryRun) return done;

  const operations = changes.map((change) => change.operation);
  const lock = options.lockFor?.(changes);
  if (lock) operations.push({ kind: 'write', path: LOCK_FILE, data: serializeLock(lock), backup: options.backup });
  if (operations.length === 0) return done;
  try {
    const backupDir = await freshBackupDir(project.root, (options.now ?? (() => new Date()))());
    const outcome = await applyOperations(project.root, operations, { backupDir, ...(options.fs ? { fs: options.fs } : {}) });
    if (outcome.backupDir) {
      done.backupDir = outcome.backupDir;
      // The changes are made: a backup folder that cannot ignore itself costs a line in `git status`, not the run.
      await ignoreBackups(project.root).catch(() => undefined);
    }
  } catch (error) {
    if (!(error instanceof ApplyError)) throw error;
    return { ...done, success: false, errors: [...done.errors, error.message], plan: [], ...(error.backupDir ? { backupDir: error.backupDir } : {}) };
  }
  return done;
}

/**
 * Files a run would replace or delete although the project changed them since they were
 * generated (their content no longer matches the lock's hash, or the lock does not list them).
 * A file only moved by a rename keeps its content and is not counted.
 */
export function changedByUser(changes: readonly NetChange[], lock: TemplateLock): string[] {
  const movedAway = new Set(changes.map((change) => change.movedFrom).filter((from): from is string => from !== undefined));
  const changed: string[] = [];
  for (const change of changes) {
    if (!change.before || change.operation.kind === 'copy') continue;
    if (change.operation.kind === 'delete' && movedAway.has(change.key)) continue;
    if (lock.files[change.key]?.sha256 !== sha256Hex(change.before)) changed.push(change.key);
  }
  return changed;
}

/**
 * Files the planned run (as planned so far) would replace or remove although the project changed
 * them since generation (`changedByUser`); none without a lock listing files.
 */
export async function plannedChangesToChangedFiles(planned: PlannedRun): Promise<string[]> {
  if (!planned.project || !planned.lock?.files) return [];
  return changedByUser(await netChanges(planned.project, false), planned.lock);
}

/**
 * Runs the applicable `steps` over the project at `context.projectPath`, hop after hop (see
 * `chainSteps`: the spec's rule, then again from the version each hop reached).
 *
 * Steps run one after the other; each sees, through `context.files`, the project as the steps
 * before it planned it, and gets the version its hop starts from as `currentVersion`. Nothing is
 * written while they run. The results of all steps are concatenated; the first step that fails
 * (returns `success: false`, throws, or returns a change that cannot be made or leaves the
 * project) stops the run with `success: false`, and nothing is written. When every step
 * succeeded and `dryRun` is false, the planned changes are applied all together (see
 * `applyOperations`), with the lock file moved to the version reached. With `dryRun`, nothing is
 * written and `plan` holds a unified diff per file.
 */
export async function runMigrations(
  steps: readonly MigrationStep[],
  context: MigrationRunContext,
  options: RunMigrationsOptions = {},
): Promise<MigrationRunResult> {
  if (chainSteps(steps, context).steps.length === 0) {
    return { success: true, changes: [], warnings: [], errors: [], applied: [], skipped: [], plan: [] };
  }
  const planned = await recoverAndPlanRun(steps, context);
  const { result, lock, reachedVersion } = planned;
  if (result.success && result.applied.length === 0) return result;
  return applyPlannedRun(planned, {
    ...options,
    dryRun: context.dryRun,
    backup: context.backup === true,
    ...(lock ? { lockFor: (changes) => updatedLock(lock, result.applied, reachedVersion, changes, options.lockSource?.(reachedVersion)) } : {}),
    ...(options.protectChangedFiles && lock?.files ? { refuse: (changes) => changedByUser(changes, lock) } : {}),
  });
}

/** The error of a run refused because it would overwrite files the project changed. */
export function changedFilesMessage(changed: readonly string[]): string {
  return `the steps would overwrite or remove ${changed.length === 1 ? 'a file' : `${changed.length} files`} changed in the project since it was generated: ${changed.join(', ')}`;
}
