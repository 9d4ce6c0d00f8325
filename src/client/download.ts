/**
 * Downloads a template archive and unpacks it safely.
 *
 * 1. The archive is streamed to a private temp file (never held in memory), stopping as soon as it
 *    passes `limits.maxBytes`.
 * 2. Its integrity (SRI, else the hex sha256, and the size when known) is checked before anything is
 *    read from it. An entry with neither hash is refused unless `allowUnverified`.
 * 3. The archive scanner (archive/scan.ts) reads every tar header without writing anything:
 *    unsafe paths, links, special files, duplicates and archives over the entry or unpacked-size
 *    limits are refused (unpacked bytes are counted as they stream, so a gzip bomb stops at the limit).
 * 4. Only then `tar.x` unpacks it, with tar's own path protections on, no owner changes, and modes
 *    normalised to 0644 / 0755. An archive whose entries all sit under one top folder
 *    (`package/...`) is unpacked with that folder stripped.
 * Any failure leaves `dest` as it was found: removed when this call created it, else emptied.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

import { extract, type ReadEntry } from 'tar';

import { DigestStream, digestOf, IntegrityError, verifyIntegrity } from '../archive/integrity.js';
import { scanArchive, UnsafeArchiveError, type ArchiveScan } from '../archive/scan.js';
import { errorMessage } from '../core/errors.js';
import type { TemplateEntry } from '../core/schema-types.js';

export { IntegrityError } from '../archive/integrity.js';
export { UnsafeArchiveError } from '../archive/scan.js';

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

// ---------------------------------------------------------------------------------------------
// Download
// ---------------------------------------------------------------------------------------------

/** Counts the bytes going through and stops past `maxBytes`. */
class ByteLimit extends Transform {
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
    this.onChunk(this.received);
    callback(null, chunk);
  }
}

async function fetchToFile(entry: DownloadableEntry, file: string, options: DownloadOptions, maxBytes: number): Promise<DigestStream> {
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
      throw new DownloadError(url, errorMessage(error), { cause: error });
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
    const limit = new ByteLimit(
      maxBytes,
      (received) => options.onProgress?.(received, total),
      () => {
        controller.abort();
        return new DownloadError(url, `the archive is larger than the limit of ${maxBytes} bytes`);
      },
    );
    const digest = new DigestStream();
    try {
      await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), limit, digest, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      if (error instanceof DownloadError) throw error;
      throw new DownloadError(url, errorMessage(error), { cause: error });
    }
    return digest;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Checks a downloaded archive before anything is unpacked: the archive scanner's rules with the
 * download limits. Throws UnsafeArchiveError.
 */
export async function checkArchive(file: string, limits: { maxEntries?: number; maxUnpackedBytes?: number } = {}): Promise<ArchivePlan> {
  const scan = await scanArchive(file, {
    ...(limits.maxEntries === undefined ? {} : { maxEntries: limits.maxEntries }),
    ...(limits.maxUnpackedBytes === undefined ? {} : { maxUnpackedBytes: limits.maxUnpackedBytes }),
  });
  return { strip: scan.strip, files: scan.files };
}

/** What unpacking a checked archive does: the folder it strips and the files it writes. */
export type ArchivePlan = Pick<ArchiveScan, 'strip' | 'files'>;

// ---------------------------------------------------------------------------------------------
// Unpack
// ---------------------------------------------------------------------------------------------

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

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
    // The scan bounded the unpacked size absolutely; a legitimately repetitive file is fine.
    maxDecompressionRatio: Number.POSITIVE_INFINITY,
    filter: (_path, entry) => {
      const read = entry as ReadEntry;
      // The scan refused everything else; this keeps it so should the archive change under us.
      if (read.type === 'Directory') read.mode = 0o755;
      else if (FILE_TYPES.has(read.type)) read.mode = (read.mode ?? 0) & 0o111 ? 0o755 : 0o644;
      else return false;
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
    const digest = (await fetchToFile(entry, archive, options, maxBytes)).result();
    verifyIntegrity(entry, digest, label);
    const plan = await checkArchive(archive, options.limits ?? {});

    await mkdir(dir, { recursive: true });
    try {
      await unpack(archive, dir, plan.strip);
    } catch (error) {
      await emptyDestination(dir, created);
      if (error instanceof UnsafeArchiveError) throw error;
      throw new UnsafeArchiveError(`unpacking ${label} failed: ${errorMessage(error)}`);
    }
    const { integrity, size } = digestOf(digest);
    return { dir, files: plan.files, integrity, size };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}
