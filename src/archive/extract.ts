/**
 * The one way a template archive is unpacked (downloads, and the server's check of an upload):
 * scanned first (archive/scan.ts refuses links, special files, unsafe paths, duplicates and
 * anything over the limits), then written entry by entry by this code, not by tar's extractor: only
 * the files and folders the scan listed, their paths normalised exactly as the scan normalised them
 * (so `./package/x`, as GNU tar writes it, lands where `package/x` does), each created exclusively
 * inside `dest`, with modes 0644/0755. Nothing outside `dest` is ever touched.
 * Throws UnsafeArchiveError when the archive is at fault, and an I/O error (a full disk) as it is.
 */
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';

import type { ReadEntry } from 'tar';

import { errorMessage } from '../core/errors.js';
import { loadTar } from '../core/lazy/tar.load.js';
import { DEFAULT_ARCHIVE_LIMITS, normaliseEntryPath, scanArchive, unpackedLimit, UnsafeArchiveError, type ArchiveLimits, type ArchiveScan } from './scan.js';

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** `dest`-relative path of an entry after the scan's strip, or undefined for the stripped top folder. */
function targetOf(entryPath: string, strip: 0 | 1): string | undefined {
  const parts = normaliseEntryPath(entryPath).split('/').slice(strip);
  const relative = parts.join('/');
  return relative === '' ? undefined : relative;
}

/** The absolute path of `relative` below `root`, or an error when it would leave it. */
function inside(root: string, relative: string): string {
  const target = path.resolve(root, relative);
  const back = path.relative(root, target);
  if (back === '' || back.startsWith('..') || path.isAbsolute(back)) throw new UnsafeArchiveError(`archive entry ${JSON.stringify(relative)} would be written outside the destination`, relative);
  return target;
}

/**
 * Unpacks the gzip tar `file` into `dest` (created when missing; files already there are never
 * overwritten). Throws UnsafeArchiveError for anything the scan refuses; returns the scan.
 */
export async function extractArchive(file: string, dest: string, limits: Partial<ArchiveLimits> = {}): Promise<ArchiveScan> {
  const scan = await scanArchive(file, limits);
  const { maxUnpackedBytes } = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  const root = path.resolve(dest);
  mkdirSync(root, { recursive: true });
  const expected = new Set(scan.files);
  const writes: Promise<void>[] = [];
  let problem: Error | undefined;

  // The archive is read a second time: it is checked again as it streams, so that a file changed
  // since the scan cannot slip anything through.
  const counter = unpackedLimit(maxUnpackedBytes);
  const refuse = (error: Error): void => {
    problem ??= error;
    counter.destroy(problem);
  };
  const { Parser, createGunzip } = loadTar();
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      if (problem) return void entry.resume();
      try {
        const relative = targetOf(entry.path, scan.strip);
        if (entry.type === 'Directory') {
          if (relative !== undefined) mkdirSync(inside(root, relative), { recursive: true, mode: 0o755 });
          return void entry.resume();
        }
        if (!FILE_TYPES.has(entry.type) || relative === undefined || !expected.has(relative)) {
          throw new UnsafeArchiveError(`archive entry ${JSON.stringify(entry.path)} changed since the archive was checked`, entry.path);
        }
        expected.delete(relative);
        const target = inside(root, relative);
        mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
        const out: Writable = createWriteStream(target, { flags: 'wx', mode: (entry.mode ?? 0) & 0o111 ? 0o755 : 0o644 });
        entry.pipe(out);
        writes.push(finished(out).catch((error: unknown) => refuse(error instanceof Error ? error : new Error(String(error)))));
      } catch (error) {
        entry.resume();
        refuse(error instanceof Error ? error : new Error(String(error)));
      }
    },
  });

  try {
    await pipeline(createReadStream(file), createGunzip(), counter, parser);
  } catch (error) {
    problem ??= error instanceof Error ? error : new Error(errorMessage(error));
  }
  await Promise.all(writes);
  // UnsafeArchiveError for the archive's fault; an I/O error (a full disk) as it is.
  if (problem) throw problem;
  return scan;
}
