/**
 * File primitives every writer of the project uses: a durable write, an atomic replace, and a
 * read that tells a missing file apart from an unreadable one.
 */
import { randomBytes } from 'node:crypto';
import type { ReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** Temp files made by `tempPathBeside`: `.<name>.<pid>.<12 hex>.tmp`. */
export const TEMP_FILE_PATTERN = /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/;

/** A fresh temp path in the folder of `file` (same file system, so it can be renamed over it). */
export function tempPathBeside(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
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

/** A file's bytes, or undefined when it does not exist (other read errors are thrown). */
export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
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
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    return { stream: handle.createReadStream(), size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}
