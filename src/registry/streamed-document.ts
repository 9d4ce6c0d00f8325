/**
 * A large document (registry.json of a build that keeps nothing between builds) written as it is
 * produced: each piece goes to a staged file of the output, into its gzip and brotli compressors
 * (whose output goes to staged files too) and into its digests, and is let go. Nothing holds the
 * document's bytes: a build's memory no longer grows with registry.json. The staged files become
 * visible under their names only when the builder puts them in order (`RegistryOutput.putInOrder`).
 *
 * The variants are the bytes `variantsOf` (build.ts) makes of the same document: both feed the
 * brotli compressor pieces of exactly `COMPRESSION_PIECE` bytes (brotli's output depends on how its
 * input is cut), with the options of `compressionOptions`, which are the same for every size above
 * `LARGE_DOCUMENT`; below it the size is known before the first piece is compressed (held until
 * then). Above it the gzip variant is made in pieces cut between the document's units (each
 * `write`), which a rebuild reuses (gzip-pieces.ts).
 */
import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliCompress, createGzip, type BrotliOptions, type ZlibOptions } from 'node:zlib';

import { COMPRESSION_PIECE, exactPieces } from './compress-parts.js';
import { GzipPieces, type DocumentUnit, type PieceReuse, type PieceTable } from './gzip-pieces.js';
import type { DigestAlgorithm, OutputFile, RegistryOutput, StagedFile } from './output.js';

/** How many bytes brotli may have waiting in a rebuild. */
const REBUILD_COMPRESSOR_QUEUE = 8 * COMPRESSION_PIECE;
/** Above this size a document is compressed with the same options whatever its size (`compressionOptions`). */
export const LARGE_DOCUMENT = 4 * 1024 * 1024;

/** Writes `chunk` to `stream`, waiting while the stream holds more than it wants (or failing with it). */
async function writeTo(stream: Writable, chunk: Buffer): Promise<void> {
  if (stream.write(chunk)) return;
  await once(stream, 'drain');
}

type Compressors = (size: number) => { gzip: ZlibOptions; brotli: BrotliOptions };

interface Variant {
  staged: StagedFile;
  compressor: Writable;
  done: Promise<void>;
  /** The compressed bytes' size and digest (the output's algorithm), known once `done`. */
  counted: { size: number; hash: Hash };
}

/** True when `next` starts where `first` ends, in the same memory. */
function adjacent(first: Buffer, next: Buffer): boolean {
  return next.buffer === first.buffer && next.byteOffset === first.byteOffset + first.length;
}

/** A pass-through that counts and hashes what goes through it. */
function counting(counted: { size: number; hash: Hash }): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      counted.size += chunk.length;
      counted.hash.update(chunk);
      callback(null, chunk);
    },
  });
}

/** A document streamed into staged files: see the module comment. */
export class StreamedDocument {
  #hashes: Map<DigestAlgorithm, Hash>;
  #size = 0;
  /** Bytes not yet a whole piece. */
  #pending: Buffer[] = [];
  #pendingSize = 0;
  /** Whole pieces held until the document is known to be large (or ends). */
  #early: Buffer[] | undefined = [];
  #variants: Variant[] | undefined;
  #staged: StagedFile[];
  /** The units written while the document is not yet known to be large (their gzip is made in pieces once it is). */
  #earlyUnits: DocumentUnit[] | undefined = [];
  /** The gzip variant of a large document, in pieces. */
  #gzip: GzipPieces | undefined;
  #gzipPieces: PieceTable | undefined;
  /** Compressed pieces of the last build to reuse (gzip-pieces.ts). */
  reuse: PieceReuse | undefined;

  private constructor(
    readonly name: string,
    private readonly output: RegistryOutput,
    private readonly file: StagedFile,
    private readonly options: Compressors,
    algorithms: readonly DigestAlgorithm[],
  ) {
    this.#hashes = new Map([...new Set(algorithms)].map((algorithm) => [algorithm, createHash(algorithm)]));
    this.#staged = [file];
  }

  /** Starts `name` in `output` (which must offer `stage`), hashed with `algorithms`. */
  static async open(output: RegistryOutput, name: string, options: Compressors, algorithms: readonly DigestAlgorithm[]): Promise<StreamedDocument> {
    if (!output.stage) throw new Error(`${output.location} cannot stage files`);
    return new StreamedDocument(name, output, await output.stage(name), options, algorithms);
  }

  /** How many bytes were written so far. */
  get size(): number {
    return this.#size;
  }

  /** The digest (hex) of the bytes written so far followed by `tail`, without writing `tail`. */
  digestWith(tail: Buffer, algorithm: DigestAlgorithm): string {
    const hash = this.#hashes.get(algorithm);
    if (!hash) throw new Error(`${this.name} is not hashed with ${algorithm}`);
    return hash.copy().update(tail).digest('hex');
  }

  /** Writes the document's next unit (`parts` in order): a piece of the gzip variant may end before it, never inside it; `alone`: nor after it; `key`: what decides the cut (gzip-pieces.ts). */
  async write(parts: readonly Buffer[], options: { alone?: boolean; key?: string } = {}): Promise<void> {
    const unit: DocumentUnit = { parts, ...(options.alone ? { alone: true } : {}), ...(options.key !== undefined ? { key: options.key } : {}) };
    if (this.#gzip) await this.#gzip.unit(unit);
    else this.#earlyUnits?.push(unit);
    for (const chunk of parts) await this.#append(chunk);
  }

  async #append(chunk: Buffer): Promise<void> {
    if (chunk.length === 0) return;
    for (const hash of this.#hashes.values()) hash.update(chunk);
    this.#size += chunk.length;
    // A chunk that continues the last one in the same memory (a run of the last registry.json's bytes)
    // joins it: its pieces are then views of that memory, not copies.
    const last = this.#pending.at(-1);
    if (last !== undefined && adjacent(last, chunk)) this.#pending[this.#pending.length - 1] = Buffer.from(last.buffer, last.byteOffset, last.length + chunk.length);
    else this.#pending.push(chunk);
    this.#pendingSize += chunk.length;
    if (this.#pendingSize < COMPRESSION_PIECE) return;
    const pieces = [...exactPieces(this.#pending)];
    const rest = pieces.at(-1) as Buffer;
    const whole = rest.length === COMPRESSION_PIECE ? pieces : pieces.slice(0, -1);
    // The rest stays a view (held until the next piece, less than one piece's bytes later), so that
    // the chunk after it can still join it.
    this.#pending = rest.length === COMPRESSION_PIECE ? [] : [rest];
    this.#pendingSize = rest.length === COMPRESSION_PIECE ? 0 : rest.length;
    for (const piece of whole) await this.#piece(piece);
  }

  async #piece(piece: Buffer): Promise<void> {
    await writeTo(this.file.stream, piece);
    if (this.#early) {
      this.#early.push(piece);
      if (this.#early.length * COMPRESSION_PIECE <= LARGE_DOCUMENT) return;
      // Large: the options are those of every large document, the size no longer matters.
      const early = this.#early;
      this.#early = undefined;
      await this.#startVariants(this.options(this.#size), true);
      for (const held of early) await this.#compress(held);
      return;
    }
    await this.#compress(piece);
  }

  /** Starts the compressors; `large`: the gzip variant in pieces, fed the units written so far. */
  async #startVariants(options: { gzip: ZlibOptions; brotli: BrotliOptions }, large: boolean): Promise<void> {
    const variants: Variant[] = [];
    this.#variants = variants;
    // In pieces, the gzip variant's bytes come from GzipPieces: its "compressor" only passes them on.
    const gzipStream = large ? new PassThrough() : createGzip(options.gzip);
    for (const [suffix, compressor] of [
      ['gz', gzipStream],
      // A rebuild (pieces to reuse) holds the last document's bytes anyway: its writer may run a few
      // pieces ahead of brotli instead of in step with it. A full build keeps the default (its memory counts).
      // (zlib's streams take the stream options too, which BrotliOptions does not list.)
      ['br', createBrotliCompress(this.reuse ? ({ ...options.brotli, writableHighWaterMark: REBUILD_COMPRESSOR_QUEUE } as BrotliOptions) : options.brotli)],
    ] as const) {
      const staged = await (this.output.stage as (name: string) => Promise<StagedFile>)(`${this.name}.${suffix}`);
      this.#staged.push(staged);
      const counted = { size: 0, hash: createHash(this.output.digest) };
      const done = pipeline(compressor, counting(counted), staged.stream).then(() => staged.finished);
      // A failure is reported by `end`; until then a waiting write must not hang on it.
      done.catch(() => undefined);
      variants.push({ staged, compressor, done, counted });
    }
    if (large) {
      const gzipDone = (variants[0] as Variant).done;
      this.#gzip = await GzipPieces.start((bytes) => Promise.race([writeTo(gzipStream, bytes), gzipDone]), this.reuse);
      const units = this.#earlyUnits ?? [];
      this.#earlyUnits = undefined;
      for (const unit of units) await this.#gzip.unit(unit);
    }
  }

  async #compress(piece: Buffer): Promise<void> {
    // A gzip variant in pieces is fed by its units (GzipPieces), not by these pieces.
    const compressed = (this.#variants ?? []).filter((variant, index) => index > 0 || this.#gzip === undefined);
    await Promise.all(compressed.map((variant) => Promise.race([writeTo(variant.compressor, piece), variant.done])));
  }

  /**
   * Ends the document (and its variants) and gives the files to put in order: the variants, then
   * the document; their sizes and digests are known.
   */
  async end(head: { contentType: string; cacheControl: string }): Promise<{ file: OutputFile; variants: OutputFile[]; gzipPieces?: PieceTable }> {
    for (const piece of exactPieces(this.#pending)) await this.#piece(piece);
    this.#pending = [];
    this.#pendingSize = 0;
    if (this.#early) {
      // Small: compressed now that its size is known, as `variantsOf` does.
      const early = this.#early;
      this.#early = undefined;
      // Held whole until now (between LARGE_DOCUMENT and the pieces held): large all the same.
      await this.#startVariants(this.options(this.#size), this.#size > LARGE_DOCUMENT);
      this.#earlyUnits = undefined;
      for (const piece of early) await this.#compress(piece);
    }
    this.file.stream.end();
    const variants = this.#variants ?? [];
    if (this.#gzip) this.#gzipPieces = (await this.#gzip.end()).pieces;
    for (const variant of variants) variant.compressor.end();
    await Promise.all([this.file.finished, ...variants.map((variant) => variant.done)]);
    const digests = Object.fromEntries([...this.#hashes].map(([algorithm, hash]) => [algorithm, hash.digest('hex')]));
    const { contentType, cacheControl } = head;
    return {
      ...(this.#gzipPieces ? { gzipPieces: this.#gzipPieces } : {}),
      file: { name: this.name, staged: this.file, size: this.#size, digests, contentType, cacheControl },
      variants: variants.map(({ staged, counted }, index) => ({
        name: `${this.name}.${index === 0 ? 'gz' : 'br'}`,
        staged,
        size: counted.size,
        digests: { [this.output.digest]: counted.hash.digest('hex') },
        contentType,
        cacheControl,
        contentEncoding: index === 0 ? ('gzip' as const) : ('br' as const),
      })),
    };
  }

  /** Removes every staged file (a build that failed, or a document the output already holds). */
  async discard(): Promise<void> {
    for (const variant of this.#variants ?? []) variant.compressor.destroy();
    await Promise.all(this.#staged.map((staged) => staged.discard()));
  }
}
