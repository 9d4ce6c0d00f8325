/**
 * Applies a planned set of file operations to a project all together: every new content is
 * written to a temp file beside its target first, then the old files are copied aside, then the
 * temp files are renamed over their targets. A failure before the renames changes nothing; a
 * failure during them is rolled back from the copies (best effort).
 *
 * A crash (SIGKILL, power loss) cannot roll anything back, so the apply keeps a journal in the
 * project (`JOURNAL_FILE`), written durably before anything changes and removed once the apply
 * is complete or rolled back: which files it touches and where their old copies are. The next run
 * finds it and restores the project as it was before (`recoverInterruptedApply`), or, when the
 * apply had finished (`done`), only removes the copies nobody asked to keep. Every step of both is
 * one call of an `ApplyFileSystem` and may be the last one before a kill: whatever a kill leaves,
 * the next recovery finishes, and so does the one after a kill during a recovery.
 */
import * as nodeFs from 'node:fs/promises';
import path from 'node:path';

import { readIfExists, syncDirectory, syncFile, TEMP_FILE_PATTERN, tempNamePrefix, tempPathBeside, writeFileAtomic, writeNewFileDurably } from '../core/files.js';
import { errorMessage } from '../core/errors.js';

/** The journal of an apply in progress, at the project root. */
export const JOURNAL_FILE = '.template-migration-journal.json';

interface Journal {
  journalVersion: 1;
  /**
   * `prepare`: nothing visible changed yet; `apply`: the renames may have started; `restored`: a
   * recovery put every file back (the copies are no longer needed); `done`: every rename was made.
   */
  phase: 'prepare' | 'apply' | 'restored' | 'done';
  /** The backup folder of this apply, relative to the project root. */
  backupDir: string;
  /**
   * Every path the apply touches; `saved` when its old version was copied into backupDir (same
   * relative path); `keep` when that copy stays once the apply is done.
   */
  files: { path: string; saved: boolean; keep?: boolean }[];
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
  readFile(file: string): Promise<Buffer | undefined>;
  /** Replaces `file` atomically and durably (the journal, a restored file). */
  replaceFile(file: string, data: string | Buffer): Promise<void>;
  syncFile(file: string): Promise<void>;
  syncDirectory(dir: string): Promise<void>;
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
  readFile: readIfExists,
  replaceFile: (file, data) => writeFileAtomic(file, data),
  syncFile,
  syncDirectory: (dir) => syncDirectory(dir).catch(() => undefined),
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
    files: prepared.map((item) => ({ path: item.operation.path, saved: item.saved !== undefined, keep: item.operation.backup === true })),
  });
  const journalFile = path.join(root, JOURNAL_FILE);
  const writeJournal = (phase: Journal['phase']): Promise<void> => fs.replaceFile(journalFile, `${JSON.stringify(journal(phase), null, 2)}\n`);
  const dropJournal = async (): Promise<void> => {
    await fs.rm(journalFile);
    await fs.syncDirectory(root);
  };
  try {
    await writeJournal('prepare');
  } catch (error) {
    throw new ApplyError(`could not write the migration journal, nothing was changed: ${errorMessage(error)}`, true, undefined, { cause: error });
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
    throw new ApplyError(`could not write the new files, nothing was changed: ${errorMessage(error)}`, true, undefined, { cause: error });
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
    throw new ApplyError(`could not back up the old files, nothing was changed: ${errorMessage(error)}`, true, undefined, { cause: error });
  }
  try {
    // The copies must be on disk before the journal says they can be restored from.
    for (const item of prepared) if (item.saved) await fs.syncFile(item.saved);
    await writeJournal('apply');
  } catch (error) {
    await cleanTemps();
    await cleanCreatedDirs();
    await pruneBackups(fs, backupDir, prepared, new Set(), root);
    await dropJournal();
    throw new ApplyError(`could not write the migration journal, nothing was changed: ${errorMessage(error)}`, true, undefined, { cause: error });
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
        failures.push(`${item.operation.path}: ${errorMessage(undoError)}`);
      }
    }
    await cleanTemps();
    if (failures.length === 0) {
      await cleanCreatedDirs();
      await pruneBackups(fs, backupDir, prepared, new Set(), root);
      await dropJournal();
      throw new ApplyError(`could not apply the changes, rolled back: ${errorMessage(error)}`, true, undefined, { cause: error });
    }
    throw new ApplyError(
      `could not apply the changes: ${errorMessage(error)}; the rollback failed for ${failures.join(', ')}; the old files are in ${backupDir}`,
      false,
      backupDir,
      { cause: error },
    );
  }

  // 4. Done: the renames on disk and the journal says so (the project is complete: a recovery
  // only prunes), then the backups not asked for, then the journal.
  const keep = new Set(prepared.filter((item) => item.saved && item.operation.backup).map((item) => item.operation.path));
  for (const dir of new Set(prepared.map((item) => path.dirname(item.target)))) await fs.syncDirectory(dir);
  let journalDone = true;
  try {
    await writeJournal('done');
  } catch {
    // Without a `done` journal the next run would roll the finished apply back: no journal at all then.
    journalDone = false;
    await dropJournal();
  }
  await pruneBackups(fs, backupDir, prepared, keep, root);
  // A `done` journal left behind only makes the next run finish this cleanup.
  if (journalDone) await dropJournal().catch(() => undefined);
  const backups = [...keep];
  return backups.length > 0 ? { backupDir, backups } : { backups };
}

export interface Recovery {
  /** What the interrupted apply had reached: `prepare` (nothing had changed) or `apply` (rolled back). */
  phase: 'prepare' | 'apply';
  /** Paths put back as they were before the interrupted apply. */
  restored: string[];
}

/** Removes the temp files `tempPathBeside(file)` may have left beside `file`. */
async function removeTempsBeside(fs: ApplyFileSystem, file: string): Promise<void> {
  const prefix = tempNamePrefix(file);
  const names = await fs.readdir(path.dirname(file)).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(prefix) && TEMP_FILE_PATTERN.test(name)) await fs.rm(path.join(path.dirname(file), name));
  }
}

const PHASES: readonly Journal['phase'][] = ['prepare', 'apply', 'restored', 'done'];

function parseJournal(text: string): Journal | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const journal = value as Partial<Journal> | null;
  if (!journal || journal.journalVersion !== 1 || !PHASES.includes(journal.phase as Journal['phase']) || typeof journal.backupDir !== 'string' || !Array.isArray(journal.files)) return undefined;
  if (!journal.files.every((f) => typeof f === 'object' && f !== null && typeof f.path === 'string' && typeof f.saved === 'boolean' && (f.keep === undefined || typeof f.keep === 'boolean'))) return undefined;
  return journal as Journal;
}

/** `relative` below `root`, or undefined when it would leave it (a journal is read, not trusted). */
function insideRoot(root: string, relative: string): string | undefined {
  const target = path.resolve(root, toNative(relative));
  const back = path.relative(root, target);
  return back === '' || back.startsWith('..') || path.isAbsolute(back) ? undefined : target;
}

export interface RecoverOptions {
  /** The file-system calls (tests stop a recovery half-way with them). */
  fs?: Partial<ApplyFileSystem>;
}

/**
 * Finishes what a crashed apply left in `root`, when its journal is there. An apply that had not
 * finished is undone: every file it touched is put back as it was before (from the copies in its
 * backup folder; a file it created is removed), then the journal says `restored`. Then, whatever
 * the phase, its temp files and the copies nobody asked to keep are removed (file by file: the
 * backup folder is never removed wholesale, so nothing else in it is lost and a folder something
 * else still writes into cannot fail the recovery), and the journal last. Each step can be
 * repeated, so a recovery killed half-way is finished by the next one. Returns undefined when
 * there was nothing to recover (no journal, or an apply that had finished). Throws when the
 * journal is unreadable (it is left for a person).
 */
export async function recoverInterruptedApply(root: string, options: RecoverOptions = {}): Promise<Recovery | undefined> {
  const fs: ApplyFileSystem = { ...nodeFileSystem, ...options.fs };
  const journalFile = path.join(root, JOURNAL_FILE);
  // A crash while the journal itself was written leaves its temp file (and no change yet).
  await removeTempsBeside(fs, journalFile);
  const text = await fs.readFile(journalFile);
  if (text === undefined) return undefined;
  const journal = parseJournal(text.toString('utf8'));
  const backupDir = journal ? insideRoot(root, journal.backupDir) : undefined;
  if (!journal || !backupDir) throw new ApplyError(`${journalFile} is not a migration journal this version can read; restore the project from ${BACKUPS_HINT} by hand and remove it`, false);
  const files = journal.files.flatMap((file) => {
    const target = insideRoot(root, file.path);
    return target ? [{ ...file, target, copy: path.join(backupDir, toNative(file.path)) }] : [];
  });
  for (const file of files) await removeTempsBeside(fs, file.target);

  if (journal.phase === 'apply') {
    for (const file of files) {
      if (!file.saved) {
        await fs.rm(file.target);
        continue;
      }
      const bytes = await fs.readFile(file.copy);
      if (bytes === undefined) throw new ApplyError(`${journalFile} names a copy of ${file.path} that is missing from ${backupDir}; restore the project from ${BACKUPS_HINT} by hand and remove the journal`, false, backupDir);
      await fs.replaceFile(file.target, bytes);
      const mode = await fs.modeOf(file.copy);
      if (mode !== undefined) await fs.chmod(file.target, mode);
    }
    for (const dir of new Set(files.map((file) => path.dirname(file.target)))) await fs.syncDirectory(dir);
    // From here the copies are not needed any more: a recovery killed while removing them must not look for them.
    await fs.replaceFile(journalFile, `${JSON.stringify({ ...journal, phase: 'restored' }, null, 2)}\n`);
  }

  for (const file of files) {
    if (journal.phase === 'done' && file.saved && file.keep) continue;
    await fs.rm(file.copy);
    await removeEmptyDirs(fs, path.dirname(file.copy), root);
  }
  await removeEmptyDirs(fs, backupDir, root);
  await fs.rm(journalFile);
  await fs.syncDirectory(root);
  if (journal.phase === 'done') return undefined;
  const restored = journal.phase === 'prepare' ? [] : files.map((file) => file.path);
  return { phase: journal.phase === 'prepare' ? 'prepare' : 'apply', restored };
}
