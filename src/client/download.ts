/**
 * Downloads a template archive and unpacks it safely.
 *
 * 1. The archive is streamed to a private temp file (never held in memory), stopping as soon as it
 *    passes `limits.maxBytes`.
 * 2. Its integrity (SRI, else the hex sha256, and the size when known) is checked before anything is
 *    read from it. An entry with neither hash is refused unless `allowUnverified`.
 * 3. A first pass reads every tar header without writing anything: unsafe paths, links leaving the
 *    destination, special files and archives over the entry or unpacked-size limits are refused
 *    (unpacked bytes are counted as they stream, so a gzip bomb stops at the limit).
 * 4. Only then `tar.x` unpacks it, with tar's own path protections on, no owner changes, and modes
 *    normalised to 0644 / 0755. An archive whose entries all sit under one top folder
 *    (`package/...`) is unpacked with that folder stripped.
 * Any failure leaves `dest` as it was found: removed when this call created it, else emptied.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';

import { Parser, extract, type ReadEntry } from 'tar';

import type { TemplateEntry } from '../manifest/schema-types.js';
import { DEFAULT_ARCHIVE_LIMITS, isSafeArchivePath } from '../pack/inspect.js';

/** Default most bytes downloaded: 200 MiB. */
export const DEFAULT_MAX_DOWNLOAD_BYTES = 200 * 1024 * 1024;

export interface DownloadLimits {
  /** Most bytes downloaded (the compressed archive); default 200 MiB. */
  maxBytes?: number;
  /** Most entries (files, folders, links) in the archive; default 20,000. */
  maxEntries?: number;
  /** Most bytes the archive may unpack to (tar headers included); default 512 MiB. */
  maxUnpackedBytes?: number;
}

export interface DownloadOptions {
  fetch?: typeof globalThis.fetch;
  limits?: DownloadLimits;
  /** Called as bytes arrive; `total` is the expected size when known (entry size or Content-Length). */
  onProgress?: (received: number, total?: number) => void;
  /** Accept an entry with neither `integrity` nor `sha256` (the archive is then not verified). */
  allowUnverified?: boolean;
  /** Aborts the download. */
  signal?: AbortSignal;
}

export type DownloadableEntry = Pick<TemplateEntry, 'id' | 'version' | 'downloadUrl'> & {
  integrity?: string;
  sha256?: string;
  size?: number;
};

export interface DownloadResult {
  /** Absolute path of the folder the template was unpacked into. */
  dir: string;
  /** Unpacked files and links, relative to `dir`, `/`-separated, sorted. */
  files: string[];
  /** `sha512-<base64>` of the downloaded archive. */
  integrity: string;
  /** Bytes downloaded. */
  size: number;
}

/** The archive could not be downloaded (HTTP status, network, size limit). */
export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  readonly url: string;
  readonly status: number | undefined;

  constructor(url: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(`download of ${url} failed: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.url = url;
    this.status = options.status;
  }
}

/** The archive is not the one the registry described (or could not be verified); nothing was unpacked. */
export class IntegrityError extends Error {
  override readonly name = 'IntegrityError';
  readonly expected: string;
  readonly actual: string;

  constructor(message: string, expected: string, actual: string) {
    super(message);
    this.expected = expected;
    this.actual = actual;
  }
}

/** The archive was refused: an unsafe entry, a limit passed, or not a gzip tar. Nothing was left in `dest`. */
export class UnsafeArchiveError extends Error {
  override readonly name = 'UnsafeArchiveError';
  /** The offending entry's path as stored in the archive, when one entry is to blame. */
  readonly entry: string | undefined;

  constructor(message: string, entry?: string) {
    super(message);
    this.entry = entry;
  }
}

// ---------------------------------------------------------------------------------------------
// Integrity
// ---------------------------------------------------------------------------------------------

const SRI_ALGORITHMS = ['sha256', 'sha384', 'sha512'] as const;
type SriAlgorithm = (typeof SRI_ALGORITHMS)[number];

interface SriHash {
  algorithm: SriAlgorithm;
  digest: string;
}

/** The hashes of an SRI string (`sha512-<b64> sha256-<b64>?opt`) with a supported algorithm. */
function parseSri(integrity: string): SriHash[] {
  const hashes: SriHash[] = [];
  for (const token of integrity.trim().split(/\s+/)) {
    const match = /^(sha256|sha384|sha512)-([A-Za-z0-9+/]+={0,2})(?:\?.*)?$/.exec(token);
    if (match) hashes.push({ algorithm: match[1] as SriAlgorithm, digest: match[2] as string });
  }
  return hashes;
}

/** Throws IntegrityError unless the digests match what the entry says. */
function verify(entry: DownloadableEntry, digests: Record<SriAlgorithm, string>, size: number): void {
  const label = `${entry.id}@${entry.version}`;
  if (entry.size !== undefined && entry.size !== size) {
    throw new IntegrityError(`size mismatch for ${label}: expected ${entry.size} bytes, got ${size}`, String(entry.size), String(size));
  }
  if (entry.integrity !== undefined) {
    const hashes = parseSri(entry.integrity);
    if (hashes.length === 0) throw new IntegrityError(`integrity of ${label} has no supported hash: ${entry.integrity}`, entry.integrity, '');
    // SRI: only the strongest algorithm listed counts; any of its digests may match.
    const strongest = SRI_ALGORITHMS.filter((a) => hashes.some((h) => h.algorithm === a)).pop() as SriAlgorithm;
    const actual = `${strongest}-${Buffer.from(digests[strongest], 'hex').toString('base64')}`;
    const wanted = hashes.filter((h) => h.algorithm === strongest);
    if (!wanted.some((h) => `${h.algorithm}-${h.digest}` === actual)) {
      const expected = wanted.map((h) => `${h.algorithm}-${h.digest}`).join(' ');
      throw new IntegrityError(`integrity mismatch for ${label}: expected ${expected}, got ${actual}`, expected, actual);
    }
  }
  if (entry.sha256 !== undefined && entry.sha256.toLowerCase() !== digests.sha256) {
    throw new IntegrityError(`sha256 mismatch for ${label}: expected ${entry.sha256}, got ${digests.sha256}`, entry.sha256, digests.sha256);
  }
}

// ---------------------------------------------------------------------------------------------
// Download
// ---------------------------------------------------------------------------------------------

class HashAndLimit extends Transform {
  readonly hashes: Record<SriAlgorithm, Hash> = {
    sha256: createHash('sha256'),
    sha384: createHash('sha384'),
    sha512: createHash('sha512'),
  };
  received = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly onChunk: (received: number) => void,
    private readonly tooLarge: () => Error,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.maxBytes) {
      callback(this.tooLarge());
      return;
    }
    for (const hash of Object.values(this.hashes)) hash.update(chunk);
    this.onChunk(this.received);
    callback(null, chunk);
  }
}

async function fetchToFile(
  entry: DownloadableEntry,
  file: string,
  options: DownloadOptions,
  maxBytes: number,
): Promise<{ size: number; digests: Record<SriAlgorithm, string> }> {
  const url = entry.downloadUrl;
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let response: Response;
    try {
      response = await (options.fetch ?? globalThis.fetch)(url, {
        headers: { accept: 'application/gzip, application/octet-stream;q=0.9, */*;q=0.1' },
        signal: controller.signal,
      });
    } catch (error) {
      throw new DownloadError(url, error instanceof Error ? error.message : String(error), { cause: error });
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw new DownloadError(url, `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`, { status: response.status });
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      controller.abort();
      throw new DownloadError(url, `the archive is ${declared} bytes, more than the limit of ${maxBytes}`);
    }
    const total = entry.size ?? (Number.isFinite(declared) ? declared : undefined);
    const counter = new HashAndLimit(
      maxBytes,
      (received) => options.onProgress?.(received, total),
      () => {
        controller.abort();
        return new DownloadError(url, `the archive is larger than the limit of ${maxBytes} bytes`);
      },
    );
    try {
      await pipeline(
        Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
        counter,
        createWriteStream(file, { flags: 'wx', mode: 0o600 }),
      );
    } catch (error) {
      if (error instanceof DownloadError) throw error;
      throw new DownloadError(url, error instanceof Error ? error.message : String(error), { cause: error });
    }
    const digests = {
      sha256: counter.hashes.sha256.digest('hex'),
      sha384: counter.hashes.sha384.digest('hex'),
      sha512: counter.hashes.sha512.digest('hex'),
    };
    return { size: counter.received, digests };
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

// ---------------------------------------------------------------------------------------------
// Archive check (first pass: headers only, nothing written)
// ---------------------------------------------------------------------------------------------

interface PlannedEntry {
  /** Path as stored (for messages). */
  raw: string;
  /** Normalised: no leading `./`, no trailing `/`. */
  path: string;
  kind: 'file' | 'dir' | 'symlink' | 'hardlink';
  linkpath?: string;
}

export interface ArchivePlan {
  /** 1 when every entry sits under one top folder, which is then stripped; else 0. */
  strip: 0 | 1;
  /** Files and links as they will be unpacked (stripped), `/`-separated, sorted. */
  files: string[];
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** Bytes allowed after the end-of-archive blocks (tar pads archives to whole records, 10 KiB for GNU tar). */
const MAX_TRAILING_BYTES = 1024 * 1024;

function normalise(entryPath: string): string {
  return entryPath.replace(/^(?:\.\/)+/, '').replace(/\/+$/, '');
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Reads every header of the gzip tar `file` and decides whether it is safe to unpack: throws
 * UnsafeArchiveError for unsafe paths, links leaving the archive, special files, duplicates that
 * would replace a link, and archives over the limits. Writes nothing.
 */
export async function checkArchive(file: string, limits: { maxEntries?: number; maxUnpackedBytes?: number } = {}): Promise<ArchivePlan> {
  const maxEntries = limits.maxEntries ?? DEFAULT_ARCHIVE_LIMITS.maxEntries;
  const maxUnpackedBytes = limits.maxUnpackedBytes ?? DEFAULT_ARCHIVE_LIMITS.maxUnpackedBytes;
  const entries: PlannedEntry[] = [];
  let declared = 0;
  let unpacked = 0;
  let trailing = 0;
  let ended = false;
  let problem: UnsafeArchiveError | undefined;

  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      unpacked += chunk.length;
      if (unpacked > maxUnpackedBytes) {
        callback(new UnsafeArchiveError(`the archive unpacks to more than ${maxUnpackedBytes} bytes`));
      } else if (ended) {
        // tar's parser buffers (re-concatenating) whatever follows the end-of-archive blocks, so
        // that data is not handed to it, and more than a little of it is refused: tar.x would
        // spend quadratic time on it.
        trailing += chunk.length;
        if (trailing > MAX_TRAILING_BYTES) callback(new UnsafeArchiveError(`the archive has more than ${MAX_TRAILING_BYTES} bytes after its end`));
        else callback();
      } else {
        callback(null, chunk);
      }
    },
  });
  const refuse = (error: UnsafeArchiveError): void => {
    problem ??= error;
    // Stops reading at once: the rest of the archive is never decompressed.
    counter.destroy(problem);
  };

  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      entry.resume();
      if (problem) return;
      const raw = entry.path;
      const quoted = JSON.stringify(raw);
      if (entries.length + 1 > maxEntries) return refuse(new UnsafeArchiveError(`the archive has more than ${maxEntries} entries (at ${quoted})`, raw));
      const normalised = normalise(raw);
      if (normalised === '' && entry.type === 'Directory') return; // `./` itself
      if (!isSafeArchivePath(raw) || !isSafeArchivePath(normalised)) {
        return refuse(new UnsafeArchiveError(`archive entry ${quoted} has an unsafe path (absolute or with ..)`, raw));
      }
      declared += entry.size ?? 0;
      if (declared > maxUnpackedBytes) return refuse(new UnsafeArchiveError(`the archive unpacks to more than ${maxUnpackedBytes} bytes (at ${quoted})`, raw));
      let kind: PlannedEntry['kind'];
      if (FILE_TYPES.has(entry.type)) kind = 'file';
      else if (entry.type === 'Directory') kind = 'dir';
      else if (entry.type === 'SymbolicLink') kind = 'symlink';
      else if (entry.type === 'Link') kind = 'hardlink';
      else return refuse(new UnsafeArchiveError(`archive entry ${quoted} is a ${entry.type}, not a file, folder or link`, raw));
      const planned: PlannedEntry = { raw, path: normalised, kind };
      if (kind === 'symlink' || kind === 'hardlink') planned.linkpath = entry.linkpath ?? '';
      entries.push(planned);
    },
  });
  parser.on('eof', () => {
    ended = true;
  });

  try {
    await pipeline(createReadStream(file), createGunzip(), counter, parser);
  } catch (error) {
    if (problem) throw problem;
    if (error instanceof UnsafeArchiveError) throw error;
    throw new UnsafeArchiveError(`not a gzip-compressed tar archive (${error instanceof Error ? error.message : String(error)})`);
  }
  if (problem) throw problem;
  return planArchive(entries);
}

/** Checks links and duplicates of the whole archive, and decides the strip. */
function planArchive(entries: readonly PlannedEntry[]): ArchivePlan {
  if (!entries.some((e) => e.kind !== 'dir')) throw new UnsafeArchiveError('the archive holds no files');

  const tops = new Set(entries.map((e) => e.path.split('/')[0]));
  const strip: 0 | 1 = tops.size === 1 && entries.every((e) => e.kind === 'dir' || e.path.includes('/')) ? 1 : 0;
  const stripped = (p: string): string => (strip ? p.split('/').slice(1).join('/') : p);

  const kinds = new Map<string, PlannedEntry['kind']>();
  const symlinks = new Set<string>();
  for (const entry of entries) {
    const p = stripped(entry.path);
    if (p === '') continue; // the stripped top folder
    const seen = kinds.get(p);
    if (seen !== undefined && (seen !== 'dir' || entry.kind !== 'dir')) {
      throw new UnsafeArchiveError(`archive entry ${JSON.stringify(entry.raw)} appears more than once`, entry.raw);
    }
    kinds.set(p, entry.kind);
    if (entry.kind === 'symlink') symlinks.add(p);
  }

  /** True when some proper prefix of `p` (a/b of a/b/c) is a symbolic link of the archive. */
  const throughLink = (p: string): boolean => {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) if (symlinks.has(parts.slice(0, i).join('/'))) return true;
    return false;
  };

  const files = new Set<string>();
  for (const entry of entries) {
    const p = stripped(entry.path);
    if (p === '') continue;
    const quoted = JSON.stringify(entry.raw);
    if (throughLink(p)) throw new UnsafeArchiveError(`archive entry ${quoted} lies inside a symbolic link of the archive`, entry.raw);

    if (entry.kind === 'symlink') {
      const target = entry.linkpath ?? '';
      if (target === '' || target.includes('\0') || target.startsWith('/') || target.startsWith('\\') || /^[A-Za-z]:/.test(target)) {
        throw new UnsafeArchiveError(`symbolic link ${quoted} points outside the destination (${JSON.stringify(target)})`, entry.raw);
      }
      // Resolved lexically from the link's folder; each step must stay inside, and may not go
      // through another link of the archive (whose own `..` would be resolved from elsewhere).
      const stack = p.split('/').slice(0, -1);
      const segments = target.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
      segments.forEach((segment, i) => {
        if (segment === '..') {
          if (stack.length === 0) throw new UnsafeArchiveError(`symbolic link ${quoted} points outside the destination (${JSON.stringify(target)})`, entry.raw);
          stack.pop();
          return;
        }
        stack.push(segment);
        if (i < segments.length - 1 && symlinks.has(stack.join('/'))) {
          throw new UnsafeArchiveError(`symbolic link ${quoted} points through another link (${JSON.stringify(target)})`, entry.raw);
        }
      });
      if (stack.length === 0) throw new UnsafeArchiveError(`symbolic link ${quoted} points at the destination folder itself`, entry.raw);
    } else if (entry.kind === 'hardlink') {
      const target = normalise(entry.linkpath ?? '');
      const strippedTarget = stripped(target);
      // tar resolves a hard link from the destination: it must name a file unpacked before it.
      if (!isSafeArchivePath(entry.linkpath ?? '') || !isSafeArchivePath(target) || strippedTarget === '' || !files.has(strippedTarget)) {
        throw new UnsafeArchiveError(`hard link ${quoted} points outside the destination or at no earlier file (${JSON.stringify(entry.linkpath)})`, entry.raw);
      }
    }
    if (entry.kind === 'file') files.add(p);
  }

  const listed = entries.filter((e) => e.kind !== 'dir').map((e) => stripped(e.path));
  return { strip, files: [...new Set(listed)].sort(compareText) };
}

// ---------------------------------------------------------------------------------------------
// Unpack
// ---------------------------------------------------------------------------------------------

async function prepareDestination(dest: string): Promise<{ created: boolean }> {
  try {
    const info = await stat(dest);
    if (!info.isDirectory()) throw new Error(`destination ${dest} exists and is not a folder`);
    if ((await readdir(dest)).length > 0) throw new Error(`destination ${dest} is not empty`);
    return { created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { created: true };
  }
}

async function emptyDestination(dest: string, created: boolean): Promise<void> {
  if (created) {
    await rm(dest, { recursive: true, force: true });
    return;
  }
  const names = await readdir(dest).catch(() => [] as string[]);
  await Promise.all(names.map((name) => rm(path.join(dest, name), { recursive: true, force: true })));
}

/** Unpacks a checked archive into `dest` with tar's protections on and normalised modes. */
async function unpack(file: string, dest: string, strip: 0 | 1): Promise<void> {
  await extract({
    file,
    cwd: dest,
    strip,
    strict: true,
    preservePaths: false,
    preserveOwner: false,
    unlink: false,
    // The first pass bounded the unpacked size absolutely; a legitimately repetitive file is fine.
    maxDecompressionRatio: Number.POSITIVE_INFINITY,
    filter: (_path, entry) => {
      const read = entry as ReadEntry;
      if (read.type === 'Directory') read.mode = 0o755;
      else if (FILE_TYPES.has(read.type)) read.mode = (read.mode ?? 0) & 0o111 ? 0o755 : 0o644;
      return true;
    },
  });
}

/**
 * Downloads `entry.downloadUrl`, verifies it against `entry.integrity` / `entry.sha256` (and
 * `entry.size`), checks every archive entry, and unpacks it into `dest` (which must be missing or
 * empty; it is created).
 */
export async function downloadTemplate(entry: DownloadableEntry, dest: string, options: DownloadOptions = {}): Promise<DownloadResult> {
  const dir = path.resolve(dest);
  const maxBytes = options.limits?.maxBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
  const label = `${entry.id}@${entry.version}`;
  if (entry.integrity === undefined && entry.sha256 === undefined && !options.allowUnverified) {
    throw new IntegrityError(`${label} has neither integrity nor sha256, so its archive cannot be verified (allowUnverified accepts it)`, '', '');
  }
  if (entry.size !== undefined && entry.size > maxBytes) {
    throw new DownloadError(entry.downloadUrl, `the archive is ${entry.size} bytes, more than the limit of ${maxBytes}`);
  }
  const { created } = await prepareDestination(dir);

  const temp = await mkdtemp(path.join(tmpdir(), 'tr-download-'));
  try {
    const archive = path.join(temp, 'archive.tgz');
    const { size, digests } = await fetchToFile(entry, archive, options, maxBytes);
    verify(entry, digests, size);
    const plan = await checkArchive(archive, options.limits ?? {});

    await mkdir(dir, { recursive: true });
    try {
      await unpack(archive, dir, plan.strip);
    } catch (error) {
      await emptyDestination(dir, created);
      if (error instanceof UnsafeArchiveError) throw error;
      throw new UnsafeArchiveError(`unpacking ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { dir, files: plan.files, integrity: `sha512-${Buffer.from(digests.sha512, 'hex').toString('base64')}`, size };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}
