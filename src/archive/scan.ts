/**
 * The one scanner of template archives, for uploads (the server) and downloads (the client):
 * reads every tar header of a gzip tar without writing anything, and refuses what must never be
 * unpacked. Archives hold regular files and folders only (the packer never writes links), so links
 * of any kind, devices and other special entries are refused, as are unsafe paths, duplicates, and
 * archives over the entry or unpacked-size limits (counted as the bytes stream, so a gzip bomb
 * stops at the limit).
 */
import { createReadStream } from 'node:fs';
import { PassThrough, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { ReadEntry } from 'tar';

import { compareText } from '../core/listing.js';
import { errorMessage } from '../core/errors.js';
import { loadTar } from '../core/lazy/tar.load.js';
import { reservedPathProblem } from '../core/reserved-paths.js';

export interface ArchiveLimits {
  /** Most entries (files and folders) an archive may hold. */
  maxEntries: number;
  /** Most bytes the archive may unpack to, tar headers included. */
  maxUnpackedBytes: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxEntries: 20_000, maxUnpackedBytes: 512 * 1024 * 1024 };

/** The largest template.json read from an archive. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

/** Bytes allowed after the end-of-archive blocks (tar pads archives to whole records, 10 KiB for GNU tar). */
const MAX_TRAILING_BYTES = 1024 * 1024;

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** The archive was refused: an unsafe entry, a limit passed, or not a gzip tar. */
export class UnsafeArchiveError extends Error {
  override readonly name = 'UnsafeArchiveError';
  /** The offending entry's path as stored in the archive, when one entry is to blame. */
  readonly entry: string | undefined;

  constructor(message: string, entry?: string) {
    super(message);
    this.entry = entry;
  }
}

export interface ArchiveScan {
  /** 1 when every file sits under one top folder (`package/...`), which unpacking strips; else 0. */
  strip: 0 | 1;
  /** That top folder with its slash (`package/`), or '' when files are at the root. */
  root: string;
  /** Files as they unpack (the top folder stripped), `/`-separated, sorted. */
  files: string[];
  /** The text of the template's `template.json`, when the archive has one. */
  manifestText?: string;
}

/** Paths an archive may hold: relative, no `..`, no NUL. */
function isSafeArchivePath(entryPath: string): boolean {
  if (entryPath === '' || entryPath.includes('\0') || entryPath.startsWith('/') || entryPath.startsWith('\\') || /^[A-Za-z]:/.test(entryPath)) {
    return false;
  }
  return !entryPath.split(/[\\/]+/).includes('..');
}

/** An entry path as unpacked: no leading `./`, no trailing `/`. */
export function normaliseEntryPath(entryPath: string): string {
  return entryPath.replace(/^(?:\.\/)+/, '').replace(/\/+$/, '');
}

/** An entry the scan admitted: a file or a folder. */
export interface ScannedEntry {
  /** Normalised: no leading `./`, no trailing `/`; the top folder not stripped (the strip is known only at the end). */
  path: string;
  kind: 'file' | 'dir';
}

/**
 * Output chunks of the decompression: each one is a round trip to the thread pool, and zlib's
 * default (16 KiB) makes that 6,400 of them for 100 MB (0.6 s of a 100 MB publish spent waiting).
 * With large chunks tar's parser often holds an entry's whole body before its first consumer is
 * attached: template.json, read by the scan and written by the unpack, has one consumer only
 * (`readManifest`), which passes the bytes on.
 */
const INFLATE_CHUNK_BYTES = 256 * 1024;

/**
 * Reads a template.json entry up to its limit (a bigger one is refused), and returns its bytes as a
 * stream of their own for a visitor. One consumer only: an entry whose body the parser already
 * holds (it runs ahead of a slow consumer of an earlier entry, most often with large chunks) hands
 * all of it to its first consumer at once, and a second one attached after would get nothing.
 */
function readManifest(entry: ReadEntry, onText: (text: Buffer) => void, refuse: (error: UnsafeArchiveError) => void): PassThrough {
  const chunks: Buffer[] = [];
  const body = new PassThrough();
  let size = 0;
  entry.on('data', (chunk: Buffer) => {
    size += chunk.length;
    // Past its limit the archive is refused: nothing more is kept, nor passed on.
    if (size > MAX_MANIFEST_BYTES) return;
    chunks.push(chunk);
    body.write(chunk);
  });
  entry.on('end', () => {
    body.end();
    if (size > MAX_MANIFEST_BYTES) refuse(new UnsafeArchiveError(`template.json in the archive is larger than ${MAX_MANIFEST_BYTES} bytes`, entry.path));
    else onText(Buffer.concat(chunks));
  });
  return body;
}

/**
 * What sees each admitted entry as the bytes stream (the one-pass unpack of `archive/unpack.ts`):
 * its bytes are `body` (the entry itself, or for template.json a copy of what the scan reads);
 * return true when it consumes them (pipes them somewhere), false to let the scan drain them.
 * A failure it reports through `refuse` stops the scan like one of the scan's own.
 */
export type EntryVisitor = (entry: ReadEntry, admitted: ScannedEntry, refuse: (error: Error) => void, body: EntryBody) => boolean;

/** The bytes of an entry as a visitor reads them. */
export interface EntryBody {
  pipe<T extends NodeJS.WritableStream>(destination: T): T;
}

/** A pass-through of an archive's decompressed bytes that refuses it once more than `maxUnpackedBytes` have passed. */
export function unpackedLimit(maxUnpackedBytes: number): Transform {
  let unpacked = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      unpacked += chunk.length;
      if (unpacked > maxUnpackedBytes) callback(new UnsafeArchiveError(`the archive unpacks to more than ${maxUnpackedBytes} bytes`));
      else callback(null, chunk);
    },
  });
}

/**
 * Scans the gzip tar `file`: throws UnsafeArchiveError for anything that is not a gzip tar of
 * regular files and folders within the limits; otherwise returns what it holds.
 */
export async function scanArchive(file: string, limits: Partial<ArchiveLimits> = {}): Promise<ArchiveScan> {
  return scanArchiveStream(createReadStream(file), limits);
}

/**
 * Scans a gzip tar as its bytes come from `source` (read once, never held whole), with the rules of
 * `scanArchive`; `visit` sees every entry the scan admits, in archive order. A non-archive failure
 * reported by `visit` (a full disk) is thrown as it is; anything else the archive is to blame for is
 * an UnsafeArchiveError.
 */
export async function scanArchiveStream(source: NodeJS.ReadableStream | AsyncIterable<Buffer>, limits: Partial<ArchiveLimits> = {}, visit?: EntryVisitor): Promise<ArchiveScan> {
  const { maxEntries, maxUnpackedBytes } = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  const entries: ScannedEntry[] = [];
  const manifests = new Map<string, Buffer>();
  let declared = 0;
  let trailing = 0;
  let ended = false;
  let problem: Error | undefined;

  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (ended) {
        // tar's parser buffers (re-concatenating) whatever follows the end-of-archive blocks, which
        // costs quadratic time: that data is not handed to it, and more than a little is refused.
        trailing += chunk.length;
        if (trailing > MAX_TRAILING_BYTES) callback(new UnsafeArchiveError(`the archive has more than ${MAX_TRAILING_BYTES} bytes after its end`));
        else callback();
      } else {
        callback(null, chunk);
      }
    },
  });
  const refuse = (error: Error): void => {
    problem ??= error;
    // Stops reading at once: the rest of the archive is never decompressed.
    counter.destroy(problem);
  };

  const { Parser, createGunzip } = loadTar();
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      const raw = entry.path;
      const quoted = JSON.stringify(raw);
      const normalised = normaliseEntryPath(raw);
      if (problem || (normalised === '' && entry.type === 'Directory')) {
        entry.resume();
        return;
      }
      if (entries.length + 1 > maxEntries) return refuse(new UnsafeArchiveError(`the archive has more than ${maxEntries} entries (at ${quoted})`, raw));
      if (!isSafeArchivePath(raw) || !isSafeArchivePath(normalised)) {
        return refuse(new UnsafeArchiveError(`archive entry ${quoted} has an unsafe path (absolute or with ..)`, raw));
      }
      const reserved = reservedPathProblem(normalised);
      if (reserved) return refuse(new UnsafeArchiveError(`archive entry ${reserved}`, raw));
      declared += entry.size ?? 0;
      if (declared > maxUnpackedBytes) return refuse(new UnsafeArchiveError(`the archive unpacks to more than ${maxUnpackedBytes} bytes (at ${quoted})`, raw));
      let admitted: ScannedEntry;
      let manifestBody: PassThrough | undefined;
      if (entry.type === 'Directory') {
        admitted = { path: normalised, kind: 'dir' };
      } else if (FILE_TYPES.has(entry.type)) {
        admitted = { path: normalised, kind: 'file' };
        if (/^(?:[^/]+\/)?template\.json$/.test(normalised)) manifestBody = readManifest(entry, (text) => manifests.set(normalised, text), refuse);
      } else {
        return refuse(new UnsafeArchiveError(`archive entry ${quoted} is a ${entry.type}, not a file or folder (archives hold no links or special files)`, raw));
      }
      entries.push(admitted);
      const consumed = visit?.(entry, admitted, refuse, manifestBody ?? entry) ?? false;
      // A template.json flows to readManifest's 'data' listener (and from its copy to the visitor, if any).
      if (!consumed) (manifestBody ?? entry).resume();
    },
  });
  parser.on('eof', () => {
    ended = true;
  });

  try {
    await pipeline(source, createGunzip({ chunkSize: INFLATE_CHUNK_BYTES }), unpackedLimit(maxUnpackedBytes), counter, parser);
  } catch (error) {
    if (problem) throw problem;
    if (error instanceof UnsafeArchiveError) throw error;
    throw new UnsafeArchiveError(`not a gzip-compressed tar archive (${errorMessage(error)})`);
  }
  if (problem) throw problem;
  return summarise(entries, manifests);
}

/** Refuses duplicates and empty archives, and decides the strip. */
function summarise(entries: readonly ScannedEntry[], manifests: ReadonlyMap<string, Buffer>): ArchiveScan {
  const files = entries.filter((e) => e.kind === 'file');
  if (files.length === 0) throw new UnsafeArchiveError('the archive holds no files');

  const tops = new Set(entries.map((e) => e.path.split('/')[0]));
  const strip: 0 | 1 = tops.size === 1 && files.every((e) => e.path.includes('/')) ? 1 : 0;
  const root = strip ? `${[...tops][0] ?? ''}/` : '';
  const stripped = (p: string): string => (strip ? p.split('/').slice(1).join('/') : p);

  const kinds = new Map<string, ScannedEntry['kind']>();
  for (const entry of entries) {
    const p = stripped(entry.path);
    if (p === '') continue; // the stripped top folder
    const seen = kinds.get(p);
    if (seen !== undefined && (seen !== 'dir' || entry.kind !== 'dir')) {
      throw new UnsafeArchiveError(`archive entry ${JSON.stringify(entry.path)} appears more than once`, entry.path);
    }
    kinds.set(p, entry.kind);
  }

  const manifest = manifests.get(`${root}template.json`);
  return {
    strip,
    root,
    files: files.map((e) => stripped(e.path)).sort(compareText),
    ...(manifest ? { manifestText: manifest.toString('utf8') } : {}),
  };
}
