/**
 * Applies a planned set of file operations to a project all together: every new content is
 * written to a temp file beside its target first, then the old files are copied aside, then the
 * temp files are renamed over their targets. A failure before the renames changes nothing; a
 * failure during them is rolled back from the copies (best effort).
 *
 * A crash (SIGKILL, power loss) cannot roll anything back, so the apply keeps a journal in the
 * project (`JOURNAL_FILE`), written durably before anything changes and removed once the apply
 * is complete or rolled back: which files it touches and where their old copies are. The next run
 * finds it and restores the project as it was before (`recoverInterruptedApply`).
 */
import * as nodeFs from 'node:fs/promises';
import path from 'node:path';

import { readIfExists, syncDirectory, syncFile, TEMP_FILE_PATTERN, tempPathBeside, writeFileAtomic, writeNewFileDurably } from '../core/files.js';
import { errorMessage } from '../core/errors.js';

/** The journal of an apply in progress, at the project root. */
export const JOURNAL_FILE = '.template-migration-journal.json';

interface Journal {
  journalVersion: 1;
  /** `prepare`: nothing visible changed yet; `apply`: the renames may have started. */
  phase: 'prepare' | 'apply';
  /** The backup folder of this apply, relative to the project root. */
  backupDir: string;
  /** Every path the apply touches; `saved` when its old version was copied into backupDir (same relative path). */
  files: { path: string; saved: boolean }[];
}

/** One change to one file, by `/`-separated path relative to the project root. */
export type ApplyOperation =
  /** Writes `data` to `path` (creating or replacing it). */
  | { kind: 'write'; path: string; data: string | Buffer; backup?: boolean; mode?: number }
  /** Writes to `path` the bytes that the file `from` holds before the apply (a move, with a delete of `from`). */
  | { kind: 'copy'; path: string; from: string; backup?: boolean }
  /** Removes `path`. */
  | { kind: 'delete'; path: string; backup?: boolean };

/** The file-system calls the apply makes; replaceable to test failures half-way. */
export interface ApplyFileSystem {
  writeFile(file: string, data: string | Buffer): Promise<void>;
  copyFile(from: string, to: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(file: string): Promise<void>;
  mkdir(dir: string): Promise<string | undefined>;
  /** The mode of an existing file; undefined when there is none. */
  modeOf(file: string): Promise<number | undefined>;
  chmod(file: string, mode: number): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  rmdir(dir: string): Promise<void>;
}

export const nodeFileSystem: ApplyFileSystem = {
  writeFile: writeNewFileDurably,
  copyFile: (from, to) => nodeFs.copyFile(from, to),
  rename: (from, to) => nodeFs.rename(from, to),
  rm: (file) => nodeFs.rm(file, { force: true }),
  mkdir: (dir) => nodeFs.mkdir(dir, { recursive: true }),
  modeOf: async (file) => {
    try {
      const info = await nodeFs.stat(file);
      return info.isFile() ? info.mode & 0o7777 : undefined;
    } catch {
      return undefined;
    }
  },
  chmod: (file, mode) => nodeFs.chmod(file, mode),
  readdir: (dir) => nodeFs.readdir(dir),
  rmdir: (dir) => nodeFs.rmdir(dir),
};

export interface ApplyOptions {
  /**
   * Absolute folder where the old version of every replaced or removed file is copied before
   * the renames. Copies of operations with `backup: true` are kept there; the others are removed
   * after a successful apply (and the folder too when it ends up empty).
   */
  backupDir: string;
  fs?: Partial<ApplyFileSystem>;
}

export interface ApplyOutcome {
  /** The backup folder, when at least one backup was kept. */
  backupDir?: string;
  /** `/`-separated paths of the kept backups, relative to backupDir. */
  backups: string[];
}

/** An apply that failed; `rolledBack` says whether the project is back as it was. */
export class ApplyError extends Error {
  constructor(
    message: string,
    readonly rolledBack: boolean,
    /** Where the copies of the old files are, when the rollback left some work undone. */
    readonly backupDir?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ApplyError';
  }
}

const BACKUPS_HINT = 'the backup folder it names';

function messageOf(error: unknown): string {
  return errorMessage(error);
}

function toNative(relative: string): string {
  return relative.split('/').join(path.sep);
}

interface Prepared {
  operation: ApplyOperation;
  target: string;
  temp?: string;
  /** The copy of the old file, when there was one. */
  saved?: string;
}

/** Removes `dir` and its parents up to (not including) `stop` while they are empty. */
async function removeEmptyDirs(fs: ApplyFileSystem, dir: string, stop: string): Promise<void> {
  const prefix = stop.endsWith(path.sep) ? stop : stop + path.sep;
  for (let current = dir; current !== stop && current.startsWith(prefix); current = path.dirname(current)) {
    try {
      if ((await fs.readdir(current)).length > 0) return;
      await fs.rmdir(current);
    } catch {
      return;
    }
  }
}

/** Removes the files below `dir` whose relative path is not in `keep`, then the emptied folders. */
async function pruneBackups(fs: ApplyFileSystem, dir: string, saved: Prepared[], keep: Set<string>, root: string): Promise<void> {
  for (const item of saved) {
    if (!item.saved || keep.has(item.operation.path)) continue;
    await fs.rm(item.saved).catch(() => undefined);
    await removeEmptyDirs(fs, path.dirname(item.saved), root);
  }
  await removeEmptyDirs(fs, dir, root);
}

/**
 * Applies `operations` under `root` (an absolute, already checked project folder; every path must
 * already be known to lie inside it). Either all operations take effect or, on a failure, none
 * does: throws an ApplyError after restoring what was already renamed (best effort; the error
 * says when the rollback was incomplete and where the copies of the old files are).
 */
export async function applyOperations(root: string, operations: readonly ApplyOperation[], options: ApplyOptions): Promise<ApplyOutcome> {
  const fs: ApplyFileSystem = { ...nodeFileSystem, ...options.fs };
  const backupDir = options.backupDir;
  const prepared: Prepared[] = operations.map((operation) => ({ operation, target: path.join(root, toNative(operation.path)) }));
  /** Folders made for new files: the deepest one and the parent of the topmost one made. */
  const createdDirs: { deepest: string; above: string }[] = [];

  const cleanTemps = async (): Promise<void> => {
    for (const item of prepared) if (item.temp) await fs.rm(item.temp).catch(() => undefined);
  };
  const cleanCreatedDirs = async (): Promise<void> => {
    for (const dir of createdDirs.reverse()) await removeEmptyDirs(fs, dir.deepest, dir.above);
  };

  const journal = (phase: Journal['phase']): Journal => ({
    journalVersion: 1,
    phase,
    backupDir: path.relative(root, backupDir).split(path.sep).join('/'),
    files: prepared.map((item) => ({ path: item.operation.path, saved: item.saved !== undefined })),
  });
  const journalFile = path.join(root, JOURNAL_FILE);
  const dropJournal = async (): Promise<void> => {
    await nodeFs.rm(journalFile, { force: true });
    await syncDirectory(root).catch(() => undefined);
  };
  try {
    await writeFileAtomic(journalFile, `${JSON.stringify(journal('prepare'), null, 2)}\n`);
  } catch (error) {
    throw new ApplyError(`could not write the migration journal, nothing was changed: ${messageOf(error)}`, true, undefined, { cause: error });
  }

  // 1. New contents into temp files beside their targets; nothing visible changes yet.
  try {
    for (const item of prepared) {
      const { operation, target } = item;
      if (operation.kind === 'delete') continue;
      const created = await fs.mkdir(path.dirname(target));
      if (created) createdDirs.push({ deepest: path.dirname(target), above: path.dirname(created) });
      const temp = tempPathBeside(target);
      item.temp = temp;
      if (operation.kind === 'write') {
        await fs.writeFile(temp, operation.data);
        // A replaced file keeps its permissions (an executable script stays executable); a new one takes the operation's.
        const mode = (await fs.modeOf(target)) ?? operation.mode;
        if (mode !== undefined) await fs.chmod(temp, mode);
      } else {
        await fs.copyFile(path.join(root, toNative(operation.from)), temp);
      }
    }
  } catch (error) {
    await cleanTemps();
    await cleanCreatedDirs();
    await dropJournal();
    throw new ApplyError(`could not write the new files, nothing was changed: ${messageOf(error)}`, true, undefined, { cause: error });
  }

  // 2. The old version of every file about to be replaced or removed, copied aside.
  try {
    for (const item of prepared) {
      if ((await fs.modeOf(item.target)) === undefined) continue;
      const saved = path.join(backupDir, toNative(item.operation.path));
      await fs.mkdir(path.dirname(saved));
      await fs.copyFile(item.target, saved);
      item.saved = saved;
    }
  } catch (error) {
    await cleanTemps();
    await cleanCreatedDirs();
    await pruneBackups(fs, backupDir, prepared, new Set(), root);
    await dropJournal();
    throw new ApplyError(`could not back up the old files, nothing was changed: ${messageOf(error)}`, true, undefined, { cause: error });
  }
  try {
    // The copies must be on disk before the journal says they can be restored from.
    for (const item of prepared) if (item.saved) await syncFile(item.saved);
    await writeFileAtomic(journalFile, `${JSON.stringify(journal('apply'), null, 2)}\n`);
  } catch (error) {
    await cleanTemps();
    await cleanCreatedDirs();
    await pruneBackups(fs, backupDir, prepared, new Set(), root);
    await dropJournal();
    throw new ApplyError(`could not write the migration journal, nothing was changed: ${messageOf(error)}`, true, undefined, { cause: error });
  }

  // 3. The renames (and removals); on a failure, undo the ones done, newest first.
  const done: Prepared[] = [];
  try {
    for (const item of prepared) {
      if (item.operation.kind === 'delete') await fs.rm(item.target);
      else if (item.temp) await fs.rename(item.temp, item.target);
      done.push(item);
    }
  } catch (error) {
    const failures: string[] = [];
    for (const item of done.reverse()) {
      try {
        if (item.saved) {
          await fs.mkdir(path.dirname(item.target));
          await fs.copyFile(item.saved, item.target);
        } else {
          await fs.rm(item.target);
        }
      } catch (undoError) {
        failures.push(`${item.operation.path}: ${messageOf(undoError)}`);
      }
    }
    await cleanTemps();
    if (failures.length === 0) {
      await cleanCreatedDirs();
      await pruneBackups(fs, backupDir, prepared, new Set(), root);
      await dropJournal();
      throw new ApplyError(`could not apply the changes, rolled back: ${messageOf(error)}`, true, undefined, { cause: error });
    }
    throw new ApplyError(
      `could not apply the changes: ${messageOf(error)}; the rollback failed for ${failures.join(', ')}; the old files are in ${backupDir}`,
      false,
      backupDir,
      { cause: error },
    );
  }

  // 4. Done: the journal goes first (the project is complete), then the backups not asked for.
  await Promise.all(prepared.map((item) => syncDirectory(path.dirname(item.target)).catch(() => undefined)));
  await dropJournal();
  const keep = new Set(prepared.filter((item) => item.saved && item.operation.backup).map((item) => item.operation.path));
  await pruneBackups(fs, backupDir, prepared, keep, root);
  const backups = [...keep];
  return backups.length > 0 ? { backupDir, backups } : { backups };
}

export interface Recovery {
  /** What the interrupted apply had reached: `prepare` (nothing had changed) or `apply`. */
  phase: Journal['phase'];
  /** Paths put back as they were before the interrupted apply. */
  restored: string[];
}

/** Removes the temp files `tempPathBeside(file)` may have left beside `file`. */
async function removeTempsBeside(file: string): Promise<void> {
  const prefix = `.${path.basename(file)}.`;
  const names = await nodeFs.readdir(path.dirname(file)).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(prefix) && TEMP_FILE_PATTERN.test(name)) await nodeFs.rm(path.join(path.dirname(file), name), { force: true });
  }
}

function parseJournal(text: string): Journal | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const journal = value as Partial<Journal> | null;
  if (!journal || journal.journalVersion !== 1 || (journal.phase !== 'prepare' && journal.phase !== 'apply') || typeof journal.backupDir !== 'string' || !Array.isArray(journal.files)) return undefined;
  if (!journal.files.every((f) => typeof f === 'object' && f !== null && typeof f.path === 'string' && typeof f.saved === 'boolean')) return undefined;
  return journal as Journal;
}

/** `relative` below `root`, or undefined when it would leave it (a journal is read, not trusted). */
function insideRoot(root: string, relative: string): string | undefined {
  const target = path.resolve(root, toNative(relative));
  const back = path.relative(root, target);
  return back === '' || back.startsWith('..') || path.isAbsolute(back) ? undefined : target;
}

/**
 * Finishes what a crashed apply left in `root`: when its journal is there, every file it touched
 * is put back as it was before (from the copies in its backup folder; a file it created is
 * removed), its temp files and backup folder are removed, and the journal last. Returns undefined
 * when there was nothing to recover. Throws when the journal is unreadable (it is left for a person).
 */
export async function recoverInterruptedApply(root: string): Promise<Recovery | undefined> {
  const journalFile = path.join(root, JOURNAL_FILE);
  // A crash while the journal itself was written leaves its temp file (and no change yet).
  await removeTempsBeside(journalFile);
  const text = await readIfExists(journalFile);
  if (text === undefined) return undefined;
  const journal = parseJournal(text.toString('utf8'));
  const backupDir = journal ? insideRoot(root, journal.backupDir) : undefined;
  if (!journal || !backupDir) throw new ApplyError(`${journalFile} is not a migration journal this version can read; restore the project from ${BACKUPS_HINT} by hand and remove it`, false);
  const restored: string[] = [];
  for (const file of journal.files) {
    const target = insideRoot(root, file.path);
    if (!target) continue;
    await removeTempsBeside(target);
    if (journal.phase !== 'apply') continue;
    if (file.saved) {
      const saved = path.join(backupDir, toNative(file.path));
      await writeFileAtomic(target, await nodeFs.readFile(saved));
      const mode = await nodeFileSystem.modeOf(saved);
      if (mode !== undefined) await nodeFs.chmod(target, mode);
    } else {
      await nodeFs.rm(target, { force: true });
    }
    restored.push(file.path);
  }
  await nodeFs.rm(backupDir, { recursive: true, force: true });
  await removeEmptyDirs(nodeFileSystem, path.dirname(backupDir), root);
  await nodeFs.rm(journalFile, { force: true });
  await syncDirectory(root).catch(() => undefined);
  return { phase: journal.phase, restored };
}
