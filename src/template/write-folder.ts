/**
 * Writing a set of files into a folder all or nothing, for `generate`/`create` and `init`: the files
 * are written into a staging folder beside the target and only then moved into place; with `force`
 * into a folder that has files, each replaced file is set aside first and every move is undone on a
 * failure. What cannot be replaced without losing data (a folder where a file goes, a file or a link
 * where a folder goes) is refused before anything is touched.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { ReservedPathError, reservedPathProblem } from '../core/reserved-paths.js';
import { unlessMissing } from '../core/files.js';

export interface FolderFile {
  /** Relative, `/`-separated. */
  path: string;
  content: string | Buffer;
  mode?: number;
}

/** The target has files and `force` was not given. */
export class FolderNotEmptyError extends Error {
  override readonly name: string = 'FolderNotEmptyError';
  constructor(readonly dir: string) {
    super(`${dir} is not empty; use --force to write into it`);
  }
}

/** Something in the target would be lost or escaped by writing a file (a folder where a file goes). */
export class FolderConflictError extends Error {
  override readonly name = 'FolderConflictError';
  constructor(
    readonly dir: string,
    readonly problem: string,
  ) {
    super(`${dir}: ${problem}`);
  }
}

/** The entries of `dir`; undefined when it does not exist, FolderConflictError when it is not a folder. */
export async function folderEntries(dir: string): Promise<string[] | undefined> {
  const info = await unlessMissing(lstat(dir));
  if (!info) return undefined;
  if (!info.isDirectory()) throw new FolderConflictError(dir, 'exists and is not a folder');
  return unlessMissing(readdir(dir));
}

/**
 * Why `file` cannot be written into `root` by replacing what is there, or undefined when it can: a
 * folder (or anything but a file) of that name would be lost, and a folder on the way that is a
 * file or a link would fail the write or lead it outside `root`.
 */
async function replaceProblem(root: string, file: string): Promise<string | undefined> {
  const segments = file.split('/');
  for (let index = 1; index <= segments.length; index++) {
    const relative = segments.slice(0, index).join('/');
    const info = await unlessMissing(lstat(path.join(root, ...segments.slice(0, index))));
    if (!info) return undefined;
    const last = index === segments.length;
    if (last && !info.isFile() && !info.isSymbolicLink()) return `${relative} exists and is not a file; move it away first`;
    if (!last && !info.isDirectory()) return `${relative} exists and is not a folder; move it away first`;
  }
  return undefined;
}

/** Moves `files` of `from` into `to`, replaced files set aside first; on a failure every move is undone. */
async function moveInto(from: string, to: string, files: readonly string[]): Promise<void> {
  const aside = path.join(from, `.replaced-${randomBytes(6).toString('hex')}`);
  const done: { target: string; saved: string | undefined }[] = [];
  try {
    for (const file of files) {
      const target = path.join(to, ...file.split('/'));
      await mkdir(path.dirname(target), { recursive: true });
      let saved: string | undefined = path.join(aside, ...file.split('/'));
      await mkdir(path.dirname(saved), { recursive: true });
      try {
        await rename(target, saved);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        saved = undefined;
      }
      done.push({ target, saved });
      await rename(path.join(from, ...file.split('/')), target);
    }
  } catch (error) {
    for (const { target, saved } of done.reverse()) {
      if (saved) await rename(saved, target).catch(() => undefined);
      else await rm(target, { force: true }).catch(() => undefined);
    }
    throw error;
  }
}

/**
 * Writes `files` into `dir` (created when missing) all or nothing. A folder with files in it is
 * refused (FolderNotEmptyError) unless `force`; with `force`, a file that would replace a folder, or
 * a path through a file or a link, is refused (FolderConflictError) before anything is written.
 */
export async function writeFolderAtomically(dir: string, files: readonly FolderFile[], options: { force?: boolean } = {}): Promise<void> {
  const target = path.resolve(dir);
  for (const file of files) {
    if (reservedPathProblem(file.path)) throw new ReservedPathError(file.path, dir);
  }
  const existing = await folderEntries(target);
  if (existing && existing.length > 0) {
    if (!options.force) throw new FolderNotEmptyError(dir);
    for (const file of files) {
      const problem = await replaceProblem(target, file.path);
      if (problem) throw new FolderConflictError(dir, problem);
    }
  }
  await mkdir(path.dirname(target), { recursive: true });
  const staging = path.join(path.dirname(target), `.${path.basename(target)}.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await mkdir(staging);
    for (const file of files) {
      const destination = path.join(staging, ...file.path.split('/'));
      await mkdir(path.dirname(destination), { recursive: true });
      await writeFile(destination, file.content, { mode: file.mode ?? 0o644 });
      if (file.mode !== undefined) await chmod(destination, file.mode);
    }
    if (existing === undefined) {
      await rename(staging, target);
    } else if (existing.length === 0) {
      await rmdir(target);
      await rename(staging, target);
    } else {
      await moveInto(staging, target, files.map((f) => f.path));
      await rm(staging, { recursive: true, force: true });
    }
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}
