/**
 * The one-pass unpack of an archive whose bytes are arriving (the server's upload): each chunk is
 * handed to `write` as it is received, and the archive is scanned (archive/scan.ts, every rule of
 * the scan) and its files written below `dest` in the same pass, so that the archive is read, and
 * decompressed, once. Nothing is held whole: the chunks flow through with backpressure.
 *
 * The strip of a top folder is known only once the last entry was seen, so entries are written
 * under their own (normalised) paths and `dir` names the template's folder: `dest`, or the top
 * folder below it. Only what the scan admitted is written, each file created exclusively, with
 * modes 0644/0755; a duplicate is not written (the scan refuses it at the end), and a file where a
 * folder is (or the reverse) is refused as the archive's fault. `dest` is the caller's private
 * temp folder, removed by the caller whatever the outcome.
 *
 * For a check (`headOnly`: the server's, with the binary rule of template/text-files.ts), a file
 * whose head is binary is written as that head and extended to its size as a hole: whatever
 * classifies it (binary, its size, a JSON syntax error, which the NUL in that head puts there at
 * the latest) reads what the archive holds, and its bytes past the head, which only a copy would
 * need, are never written.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { truncate } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Transform, type TransformCallback, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

import type { ReadEntry } from 'tar';

import { scanArchiveStream, UnsafeArchiveError, type ArchiveLimits, type ArchiveScan, type EntryBody, type ScannedEntry } from './scan.js';

/** An archive unpacked: its scan, and the folder its template's files are in. */
export interface UnpackedArchive extends ArchiveScan {
  /** `dest` when the files are at the archive's root, else `dest/<top folder>`. */
  dir: string;
}

/**
 * A check that needs only the head of some files: past the first `bytes` of a file whose head
 * `opaque` holds, nothing is written (a hole keeps its size).
 */
export interface HeadOnly {
  bytes: number;
  opaque: (head: Buffer) => boolean;
}

export interface UnpackOptions {
  /** Default: every file written whole. */
  headOnly?: HeadOnly;
}

/**
 * Passes a file's bytes through until its first `rule.bytes` are known; when `rule.opaque` holds
 * for them, the rest is counted and dropped. `size` is every byte that went by.
 */
export class HeadOnlyFilter extends Transform {
  #head: Buffer[] = [];
  #headBytes = 0;
  #opaque: boolean | undefined;
  size = 0;

  constructor(readonly rule: HeadOnly) {
    super();
  }

  /** Whether bytes were dropped (the file written is shorter than `size`). */
  get dropped(): boolean {
    return this.#opaque === true && this.size > this.rule.bytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.#opaque === false) return done(null, chunk);
    if (this.#opaque === true) return done();
    this.#head.push(chunk);
    this.#headBytes += chunk.length;
    if (this.#headBytes >= this.rule.bytes) this.#decide();
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.#opaque === undefined) this.#decide();
    done();
  }

  #decide(): void {
    const read = Buffer.concat(this.#head);
    this.#head = [];
    const head = read.subarray(0, this.rule.bytes);
    this.#opaque = this.rule.opaque(head);
    this.push(this.#opaque ? head : read);
  }
}

/** Errors of creating a path that an earlier entry already holds with another kind (a file under a file). */
const CONFLICTS = new Set(['EEXIST', 'ENOTDIR', 'EISDIR']);

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

export class ArchiveUnpacker {
  readonly #root: string;
  readonly #headOnly: HeadOnly | undefined;
  /** Room for a few chunks of the upload while the previous ones are decompressed (bounded: backpressure past it). */
  readonly #tap = new PassThrough({ highWaterMark: 1024 * 1024 });
  readonly #written = new Set<string>();
  readonly #writes: Promise<void>[] = [];
  /** The files being written: a refused archive leaves its last entry unended, and these are closed then. */
  readonly #open = new Set<Writable>();
  /** Set once the files still open are closed on purpose: their errors are no failure then. */
  #closing = false;
  readonly #scan: Promise<ArchiveScan>;
  /** Settles (never rejects) once the scan is over, whichever way. */
  readonly #over: Promise<void>;
  #failure: Error | undefined;
  #ended = false;

  constructor(dest: string, limits: Partial<ArchiveLimits> = {}, options: UnpackOptions = {}) {
    this.#root = path.resolve(dest);
    this.#headOnly = options.headOnly;
    mkdirSync(this.#root, { recursive: true, mode: 0o700 });
    this.#scan = scanArchiveStream(this.#tap, limits, (entry, admitted, refuse, body) => this.#visit(entry, admitted, refuse, body));
    this.#over = this.#scan.then(
      () => undefined,
      () => undefined,
    );
  }

  /** The absolute path of `relative` below the root, or the archive's fault when it would leave it. */
  #inside(relative: string): string {
    const target = path.resolve(this.#root, relative);
    const back = path.relative(this.#root, target);
    if (back === '' || back.startsWith('..') || path.isAbsolute(back)) throw new UnsafeArchiveError(`archive entry ${JSON.stringify(relative)} would be written outside the destination`, relative);
    return target;
  }

  #conflict(error: unknown, entry: string): Error {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    return code !== undefined && CONFLICTS.has(code) ? new UnsafeArchiveError(`archive entry ${JSON.stringify(entry)} conflicts with another entry of the same path (a file and a folder)`, entry) : asError(error);
  }

  #visit(entry: ReadEntry, admitted: ScannedEntry, refuse: (error: Error) => void, body: EntryBody): boolean {
    const fail = (error: Error): void => {
      this.#failure ??= error;
      refuse(error);
    };
    try {
      const target = this.#inside(admitted.path);
      if (admitted.kind === 'dir') {
        mkdirSync(target, { recursive: true, mode: 0o755 });
        return false;
      }
      // A duplicate: the scan refuses it once it has seen every entry; its bytes are not written.
      if (this.#written.has(admitted.path)) return false;
      this.#written.add(admitted.path);
      mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
      const out = createWriteStream(target, { flags: 'wx', mode: (entry.mode ?? 0) & 0o111 ? 0o755 : 0o644 });
      this.#open.add(out);
      const tail = this.#headOnly ? new HeadOnlyFilter(this.#headOnly) : undefined;
      if (tail) body.pipe(tail).pipe(out);
      else body.pipe(out);
      this.#writes.push(
        finished(out).then(
          async () => {
            this.#open.delete(out);
            // The rest of the file as a hole: its size as in the archive, nothing written.
            if (tail?.dropped === true) await truncate(target, tail.size).catch((error: unknown) => fail(asError(error)));
          },
          (error: unknown) => {
            this.#open.delete(out);
            if (!this.#closing) fail(this.#conflict(error, entry.path));
          },
        ),
      );
      return true;
    } catch (error) {
      fail(this.#conflict(error, entry.path));
      return false;
    }
  }

  /**
   * Hands the next chunk of the archive on; resolves when more may come (backpressure). Once the
   * archive was refused, chunks are ignored: the refusal waits for `end()`, so that the caller
   * still reads (and digests) the whole upload.
   */
  async write(chunk: Buffer): Promise<void> {
    if (this.#ended || this.#tap.destroyed) return;
    // A refusal destroys the tap with its error, which \`once\` would throw: the refusal is for end().
    if (!this.#tap.write(chunk)) await Promise.race([once(this.#tap, 'drain').catch(() => undefined), this.#over]);
  }

  /**
   * The archive is whole: resolves with what it holds, unpacked, or throws UnsafeArchiveError for
   * anything the scan refuses and an I/O error (a full disk) as it is.
   */
  async end(): Promise<UnpackedArchive> {
    if (!this.#ended && !this.#tap.destroyed) this.#tap.end();
    this.#ended = true;
    let scan: ArchiveScan | undefined;
    let problem: Error | undefined;
    try {
      scan = await this.#scan;
    } catch (error) {
      problem = asError(error);
      this.#closeOpenFiles();
    }
    // Every file closed before the caller removes the folder, whichever way it went.
    await Promise.all(this.#writes);
    // An I/O error (a full disk) is the server's, whatever the scan made of the stream it cut.
    if (this.#failure !== undefined && !(this.#failure instanceof UnsafeArchiveError)) throw this.#failure;
    // A write that failed after the scan's last entry is a refusal too.
    problem ??= this.#failure;
    if (problem !== undefined || scan === undefined) throw problem ?? new Error('the archive scan ended without a result');
    return { ...scan, dir: scan.root === '' ? this.#root : path.join(this.#root, ...scan.root.replace(/\/$/, '').split('/')) };
  }

  #closeOpenFiles(): void {
    this.#closing = true;
    for (const out of this.#open) out.destroy();
  }

  /** Stops at once (the upload failed): what was written stays for the caller to remove. */
  async abort(): Promise<void> {
    this.#ended = true;
    this.#tap.destroy();
    await this.#over;
    this.#closeOpenFiles();
    await Promise.all(this.#writes);
  }
}

/** Unpacks the gzip tar that `source` yields into `dest` in one pass (see ArchiveUnpacker). */
export async function unpackArchive(source: AsyncIterable<Buffer>, dest: string, limits: Partial<ArchiveLimits> = {}, options: UnpackOptions = {}): Promise<UnpackedArchive> {
  const unpacker = new ArchiveUnpacker(dest, limits, options);
  try {
    for await (const chunk of source) await unpacker.write(chunk);
  } catch (error) {
    await unpacker.abort();
    throw error;
  }
  return unpacker.end();
}
