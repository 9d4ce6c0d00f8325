/**
 * A BlobStore on a local folder: one file per key, below the folder, private to the account.
 *
 * Every put goes through a name in the target's own folder and a rename, so a reader sees the old
 * or the new bytes, never a part; the bytes and the folder entry are flushed before the put
 * resolves. Temp files left by a crash keep `tempPathBeside`'s shape, which no key may have, and
 * are never listed.
 */
import type { Dirent } from 'node:fs';
import { chmod, copyFile, lstat, mkdir, readdir, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';

import { openFileStream, readIfExists, statIfExists, statIfExistsSync, removeLeftoverTemps, syncDirectory, syncFile, TEMP_FILE_PATTERN, tempPathBeside, writeFileAtomic } from '../../core/files.js';
import { BLOB_TOP_FOLDERS } from '../blob-layout.js';
import type { ArchiveReader, BlobStore } from '../types.js';

import { checkBlobKey, checkBlobPrefix } from './keys.js';

/** The store may hold token hashes' neighbours and unpublished archives: its account's only. */
const PRIVATE_FOLDER = 0o700;
const PRIVATE_FILE = 0o600;

/** A key's path below a folder that does not exist as a file (a missing one, or one under a file). */
const isMissing = (error: unknown): boolean => {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
};

export class FolderBlobStore implements BlobStore {
  readonly location: string;

  constructor(readonly folder: string) {
    this.location = path.resolve(folder);
  }

  /**
   * Removes the temp files a killed writer left below the key folders: a dead process's at once,
   * one of an owner that cannot be seen (another machine, an older release) once older than `afterMs`, never a running one's (another instance
   * may share the folder). Returns the paths removed.
   */
  async removeLeftoverTemps(afterMs: { foreignAfterMs: number; legacyAfterMs?: number }): Promise<string[]> {
    const removed: string[] = [];
    for (const folder of BLOB_TOP_FOLDERS) removed.push(...(await removeLeftoverTemps(path.join(this.location, folder), { recursive: true, ...afterMs })));
    return removed;
  }

  /** The file of a key; the key check is what keeps every path inside the folder. */
  #path(key: string): string {
    return path.join(this.location, ...checkBlobKey(key).split('/'));
  }

  /** Creates the folders of `file` private, and flushes the entries of those it created. */
  async #prepareFolder(file: string): Promise<void> {
    const dir = path.dirname(file);
    const first = await mkdir(dir, { recursive: true, mode: PRIVATE_FOLDER });
    if (first === undefined) return;
    // A new folder is durable only once its parent's entry is: flush each parent, from the first one created down.
    let current = path.dirname(first);
    for (const name of path.relative(current, dir).split(path.sep)) {
      await syncDirectory(current);
      current = path.join(current, name);
    }
  }

  async putBytes(key: string, bytes: Uint8Array | string): Promise<void> {
    const file = this.#path(key);
    await this.#prepareFolder(file);
    await writeFileAtomic(file, typeof bytes === 'string' ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { mode: PRIVATE_FILE });
    await syncDirectory(path.dirname(file));
  }

  /** Moves `localFile` in when it is on the folder's file system; copies it (and leaves it) otherwise. A folder copies nothing within itself: undefined. */
  async putFile(key: string, localFile: string): Promise<undefined> {
    const file = this.#path(key);
    await this.#prepareFolder(file);
    await chmod(localFile, PRIVATE_FILE);
    await syncFile(localFile);
    try {
      await rename(localFile, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      await copyInto(localFile, file);
    }
    await syncDirectory(path.dirname(file));
    return undefined;
  }

  async open(key: string): Promise<ArchiveReader | undefined> {
    const file = this.#path(key);
    // Blocking, as the store's SQLite queries are: a build opens the archive of every version its catalog presents.
    if (!statIfExistsSync(file)?.isFile()) return undefined;
    try {
      const reader = await openFileStream(file);
      return reader && { ...reader, file };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async readBytes(key: string): Promise<Buffer | undefined> {
    try {
      return await readIfExists(this.#path(key));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    const info = await statIfExists(this.#path(key));
    return info?.isFile() ? { size: info.size } : undefined;
  }

  async delete(key: string): Promise<void> {
    const file = this.#path(key);
    try {
      await unlink(file);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    await syncDirectory(path.dirname(file));
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    checkBlobPrefix(prefix);
    yield* this.#walk(prefix);
  }

  async *#walk(prefix: string): AsyncGenerator<{ key: string; size: number }> {
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(this.location, ...prefix.split('/')), { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    for (const entry of entries) {
      if (TEMP_FILE_PATTERN.test(entry.name)) continue;
      const key = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        yield* this.#walk(`${key}/`);
      } else if (entry.isFile()) {
        const size = await sizeIfFile(path.join(this.location, ...key.split('/')));
        if (size !== undefined) yield { key, size };
      }
    }
  }
}

/** Copies across file systems through a durable temp file beside the target, then renames it over. */
async function copyInto(source: string, file: string): Promise<void> {
  const temp = tempPathBeside(file);
  try {
    await copyFile(source, temp);
    await chmod(temp, PRIVATE_FILE);
    await syncFile(temp);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** A file's size, or undefined when it went away between the listing and now. */
async function sizeIfFile(file: string): Promise<number | undefined> {
  try {
    const info = await lstat(file);
    return info.isFile() ? info.size : undefined;
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
