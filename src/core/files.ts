/**
 * File primitives every writer of the project uses: a durable write, an atomic replace, and a
 * read that tells a missing file apart from an unreadable one.
 */
import { stat as statWithCallback, statSync, type ReadStream, type Stats } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

import { ownedTempTag, tempNameOwner } from './temp-owner.js';

/**
 * Temp files made by `tempPathBeside`: `.<name>.<pid>.<28 hex>.tmp` (owner key and a random part,
 * core/temp-owner.ts), or `.<name>.<pid>.<12 hex>.tmp` as releases before owner keys made them.
 */
export const TEMP_FILE_PATTERN = /^\..+\.\d+\.(?:[0-9a-f]{12}|[0-9a-f]{28})\.tmp$/;

/** The longest file name most file systems take, in bytes. */
const MAX_NAME_BYTES = 255;
/** What a temp name adds to its file's name: `.`, `.<pid up to 7 digits>.<28 hex>.tmp`. */
const TEMP_NAME_EXTRA = 1 + 1 + 7 + 1 + 28 + 4;

/**
 * The start of every temp name `tempPathBeside(file)` makes: `.<file's name>.`, the name cut (on a
 * character) so that the temp name stays within 255 bytes however long the file's name is.
 */
export function tempNamePrefix(file: string): string {
  let base = path.basename(file);
  while (Buffer.byteLength(base) > MAX_NAME_BYTES - TEMP_NAME_EXTRA) base = base.slice(0, -1);
  return `.${base}.`;
}

/** A fresh temp path in the folder of `file` (same file system, so it can be renamed over it), naming this process as its owner. */
export function tempPathBeside(file: string): string {
  return path.join(path.dirname(file), `${tempNamePrefix(file)}${ownedTempTag()}.tmp`);
}

/** A fresh name for a temp file or folder in a folder of temp files (`<pid>.<28 hex><suffix>`), naming this process as its owner. */
export function ownedTempName(suffix = ''): string {
  return `${ownedTempTag()}${suffix}`;
}

/** How old a temp file of a process that cannot be seen (another machine or container) must be before a start removes it. */
export const FOREIGN_TEMP_AGE_MS = 60 * 60 * 1000;

export interface LeftoverTempOptions {
  /** Which entries are temp files: default `TEMP_FILE_PATTERN` (every entry of a folder of temp files: `() => true`). */
  isTemp?: (name: string) => boolean;
  /** Into sub-folders too (entries that are not temp files themselves). */
  recursive?: boolean;
  /** A temp file of a process that cannot be seen from here (another machine or container) is removed once older than this. */
  foreignAfterMs: number;
  /** A temp file without an owner (made by a release before owner keys) is removed once older than this (default `foreignAfterMs`). */
  legacyAfterMs?: number;
  /** The clock (tests); default Date.now. */
  now?: () => number;
}

/**
 * Removes the temp files in `dir` whose owner is dead (at once, whatever their age), or cannot be
 * seen from here (`foreignAfterMs`) or is not named (`legacyAfterMs`) and that is older than the
 * age given; never those of a process that runs (this one or another sharing the folder). A temp
 * folder goes with everything in it. Returns the paths removed.
 */
export async function removeLeftoverTemps(dir: string, options: LeftoverTempOptions): Promise<string[]> {
  const isTemp = options.isTemp ?? ((name: string) => TEMP_FILE_PATTERN.test(name));
  const now = (options.now ?? Date.now)();
  const cutoffs = { foreign: now - options.foreignAfterMs, legacy: now - (options.legacyAfterMs ?? options.foreignAfterMs) };
  const removed: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const file = path.join(dir, entry.name);
    if (!isTemp(entry.name)) {
      if (options.recursive && entry.isDirectory()) removed.push(...(await removeLeftoverTemps(file, options)));
      continue;
    }
    const owner = tempNameOwner(entry.name);
    if (owner === 'mine' || owner === 'live') continue;
    if (owner === 'foreign' || owner === 'legacy') {
      const info = await stat(file).catch(() => undefined);
      if (!info || info.mtimeMs >= cutoffs[owner]) continue;
    }
    await rm(file, { recursive: true, force: true });
    removed.push(file);
  }
  return removed;
}

/**
 * Writes a new file and flushes it to disk before returning, so a rename that follows publishes
 * either nothing or the whole content. Fails when `file` already exists.
 */
export async function writeNewFileDurably(file: string, data: Buffer | string, mode = 0o666): Promise<void> {
  const handle = await open(file, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes a file's bytes to disk. */
export async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes a folder's entries (names created or renamed in it) to disk; a no-op where folders cannot be opened. */
export async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
  } catch {
    return;
  }
  try {
    await handle.sync();
  } catch {
    // some file systems refuse to sync a folder; the rename itself is still atomic
  } finally {
    await handle.close();
  }
}

/**
 * Writes `file` atomically: a durable temp file in the same folder, then a rename over the target.
 * `mode` is the new file's mode, less the umask (0o600 stays 0o600).
 */
export async function writeFileAtomic(file: string, data: Buffer | string, options: { mode?: number } = {}): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = tempPathBeside(file);
  try {
    await writeNewFileDurably(temp, data, options.mode);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** What `read` gives, or undefined when the file or folder it reads does not exist (other errors are thrown). */
export async function unlessMissing<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The stats of `file`, or undefined when it or a folder above it does not exist (other errors are
 * thrown). On the callback API: a missing file costs a fifth of what fs/promises' rejection does,
 * which matters to a build that asks after thousands of archives.
 */
export function statIfExists(file: string): Promise<Stats | undefined> {
  return new Promise((resolve, reject) => {
    statWithCallback(file, (error, stats) => {
      if (!error) resolve(stats);
      else if (error.code === 'ENOENT' || error.code === 'ENOTDIR') resolve(undefined);
      else reject(error);
    });
  });
}

/**
 * `statIfExists` with a blocking call, for a caller that already blocks on local I/O (the embedded
 * store's SQLite): a stat takes microseconds, a round trip through the thread pool many more.
 */
export function statIfExistsSync(file: string): Stats | undefined {
  try {
    // No error made for a missing file (ENOTDIR still throws): a build stats the archive of every version it presents, most of them absent in a store of rows only.
    return statSync(file, { throwIfNoEntry: false });
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** A file's bytes, or undefined when it does not exist (other read errors are thrown). */
export function readIfExists(file: string): Promise<Buffer | undefined> {
  return unlessMissing(readFile(file));
}

/** The first `maxBytes` of `file` as UTF-8 text (a file from a stranger is read bounded). */
export async function readHead(file: string, maxBytes: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** A stream of `file` with its size, or undefined when there is no such file (the handle closes with the stream). */
export async function openFileStream(file: string): Promise<{ stream: ReadStream; size: number } | undefined> {
  const handle = await unlessMissing(open(file, 'r'));
  if (!handle) return undefined;
  try {
    const { size } = await handle.stat();
    return { stream: handle.createReadStream(), size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}
