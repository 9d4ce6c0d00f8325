import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

import { Parser, type ReadEntry } from 'tar';

export interface ArchiveLimits {
  /** Most entries an archive may hold. */
  maxEntries: number;
  /** Most bytes the archive may unpack to: a gzip bomb is stopped as soon as it passes this. */
  maxUnpackedBytes: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxEntries: 20_000, maxUnpackedBytes: 512 * 1024 * 1024 };

export interface ArchiveSummary {
  /** File paths in the archive, as stored, without a leading `./`. */
  files: string[];
  /** The folder every file is under (`package/` style archives), or '' when files are at the root. */
  root: string;
  /** The text of `<root>template.json`, when present. */
  manifestText?: string;
}

export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
}

const MAX_MANIFEST_BYTES = 1024 * 1024;
const MAX_TRAILING_BYTES = 1024 * 1024;

/** Paths an archive may hold: relative, no `..`, no NUL. */
export function isSafeArchivePath(entryPath: string): boolean {
  if (entryPath === '' || entryPath.includes('\0') || entryPath.startsWith('/') || /^[A-Za-z]:/.test(entryPath)) return false;
  return !entryPath.split(/[\\/]+/).includes('..');
}

/**
 * Reads a gzip tar without unpacking it: lists its files and reads its template.json. Refuses
 * anything that is not a gzip tar, unsafe paths, links and special files, and archives over the
 * entry or size limits.
 */
export async function inspectArchive(file: string, limits: Partial<ArchiveLimits> = {}): Promise<ArchiveSummary> {
  const { maxEntries, maxUnpackedBytes } = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  const files: string[] = [];
  const manifests = new Map<string, Buffer>();
  let unpacked = 0;
  let problem: ArchiveError | undefined;

  let ended = false;
  let trailing = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      unpacked += chunk.length;
      if (unpacked > maxUnpackedBytes) callback(new ArchiveError(`archive unpacks to more than ${maxUnpackedBytes} bytes`));
      else if (ended) {
        // tar's parser re-concatenates whatever follows the end-of-archive blocks (quadratic time),
        // so trailing data is not passed on, and more than a little of it is refused.
        trailing += chunk.length;
        if (trailing > MAX_TRAILING_BYTES) callback(new ArchiveError(`archive has more than ${MAX_TRAILING_BYTES} bytes after its end`));
        else callback();
      } else callback(null, chunk);
    },
  });
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      const entryPath = entry.path.replace(/^\.\//, '');
      if (problem) {
        entry.resume();
        return;
      }
      if (!isSafeArchivePath(entryPath)) problem = new ArchiveError(`archive entry ${JSON.stringify(entry.path)} has an unsafe path`);
      else if (entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile') {
        files.push(entryPath);
        if (files.length > maxEntries) problem = new ArchiveError(`archive has more than ${maxEntries} entries`);
        if (/^(?:[^/]+\/)?template\.json$/.test(entryPath)) {
          const chunks: Buffer[] = [];
          let size = 0;
          entry.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_MANIFEST_BYTES) chunks.push(chunk);
          });
          entry.on('end', () => {
            if (size > MAX_MANIFEST_BYTES) problem ??= new ArchiveError('template.json in the archive is larger than 1 MiB');
            else manifests.set(entryPath, Buffer.concat(chunks));
          });
          return;
        }
      } else if (entry.type !== 'Directory') {
        problem = new ArchiveError(`archive entry ${JSON.stringify(entry.path)} is a ${entry.type}, not a file or folder`);
      }
      entry.resume();
    },
  });

  parser.on('eof', () => {
    ended = true;
  });
  try {
    await pipeline(createReadStream(file), createGunzip(), counter, parser);
  } catch (error) {
    if (error instanceof ArchiveError) throw error;
    throw new ArchiveError(`not a gzip-compressed tar archive (${error instanceof Error ? error.message : String(error)})`);
  }
  if (problem) throw problem;
  if (files.length === 0) throw new ArchiveError('archive holds no files');

  const tops = new Set(files.map((f) => (f.includes('/') ? f.slice(0, f.indexOf('/') + 1) : '')));
  const root = tops.size === 1 && !manifests.has('template.json') ? ([...tops][0] ?? '') : '';
  const manifest = manifests.get(`${root}template.json`);
  return { files, root, ...(manifest ? { manifestText: manifest.toString('utf8') } : {}) };
}
