/**
 * The gzip variant of a large document made of pieces compressed one by one, as pigz does: each
 * piece is a raw deflate stream of its own bytes ended by a sync flush (byte-aligned, not final),
 * so the pieces join into one deflate stream, closed by an empty final block and the gzip trailer
 * (CRC-32 and size of the whole document). Why: a rebuild after one new version recompresses only
 * the pieces whose bytes changed and copies the others' compressed bytes as they are (100 MB of
 * registry.json cost 0.5 s to gzip; one piece costs a few milliseconds), and the pieces compress
 * on every core at once.
 *
 * A document is given as units (registry.json: its head, each template's entries with the comma
 * before them, its tail). A piece ends only between units, where the content says: before a unit
 * whose first bytes hash to a cut, once the piece holds PIECE_MIN bytes (or before any unit once it
 * holds PIECE_MAX). So the cuts depend on the bytes alone, whichever way the document is made
 * (streamed or held), and a new template moves no cut but those of its own piece. A unit marked
 * `alone` is a piece of its own (registry.json's tail, whose lastUpdated changes at every build).
 */
import { crc32, constants as zlibConstants, deflateRaw } from 'node:zlib';

/** A piece ends at the first cut after this many bytes... */
export const PIECE_MIN = 512 * 1024;
/** ...and before the next unit once it holds this many, cut or not. */
export const PIECE_MAX = 8 * 1024 * 1024;
/** One unit in CUT_ONE_IN starts a piece (once the piece holds PIECE_MIN bytes). */
const CUT_ONE_IN = 16;
/** How many of a unit's first bytes decide whether it starts a piece. */
const CUT_KEY_BYTES = 64;
/** The compression of every piece: the level large documents get (see compressionLevels in build.ts). */
export const GZIP_PIECE_LEVEL = 2;
/** Pieces compressed at once on the thread pool. */
const IN_FLIGHT = 2;

/** gzip's header: deflate, no name, no time, unknown OS (the same bytes whatever the machine). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);
/** An empty fixed-Huffman block marked final: what ends the joined deflate stream. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);
export const GZIP_HEADER_SIZE = GZIP_HEADER.length;
/** The final block and the trailer (CRC-32, size). */
export const GZIP_END_SIZE = FINAL_BLOCK.length + 8;

export interface DocumentUnit {
  parts: readonly Buffer[];
  /** A piece of its own: no piece spans it. */
  alone?: boolean;
  /** What decides whether the unit starts a piece (registry.json: the template's id); else its first bytes. */
  key?: string;
}

/** What the last build made of a piece: its bytes' size, its compressed size and its bytes' CRC-32 (absent in tables of older releases). */
export type PieceTable = ([size: number, deflatedSize: number] | [size: number, deflatedSize: number, crc: number])[];

/** A piece as made: the parts of its bytes, its compressed bytes and their CRC-32. */
export interface MadePiece {
  parts: readonly Buffer[];
  deflated: Buffer;
  crc: number;
}

/** A piece made before: its compressed bytes, and the CRC-32 of its bytes when known. */
export interface ReusedPiece {
  deflated: Buffer;
  crc?: number;
}

const EMPTY = Buffer.alloc(0);

/** The piece of exactly these bytes made before, if any. */
export type PieceReuse = (parts: readonly Buffer[], size: number) => ReusedPiece | undefined;

const CRC_POLYNOMIAL = 0xedb88320;

/** a(x) * b(x) modulo the CRC-32 polynomial (zlib's multmodp; bit 31 is x^0). */
function multiplyModulo(a: number, b: number): number {
  let m = 1 << 31;
  let product = 0;
  for (;;) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ CRC_POLYNOMIAL : b >>> 1;
  }
  return product >>> 0;
}

/** x^(2^k) modulo the polynomial, for k in 0..31. */
const X_POWERS: readonly number[] = (() => {
  const powers: number[] = [];
  let power = 1 << 30; // x^1
  for (let k = 0; k < 32; k++) {
    powers.push(power >>> 0);
    power = multiplyModulo(power, power);
  }
  return powers;
})();

/**
 * The CRC-32 of two byte strings joined, from the CRC-32 of each and the second one's length
 * (zlib's crc32_combine): a piece copied from the last build adds its recorded CRC, not a pass over
 * its bytes.
 */
export function crc32Combine(first: number, second: number, secondLength: number): number {
  // x^(8 * secondLength): the first CRC shifted past the second's bytes.
  let shift = 1 << 31; // x^0
  let k = 3;
  for (let n = secondLength; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) shift = multiplyModulo(X_POWERS[k % 32] as number, shift);
  return (multiplyModulo(shift, first) ^ second) >>> 0;
}

/** A piece's size and its first and last bytes, as a string: where to look for a piece made before (compared whole then). */
export function pieceKey(parts: readonly Buffer[], size: number): string {
  let head = '';
  for (const part of parts) {
    head += part.toString('latin1', 0, Math.min(part.length, CUT_KEY_BYTES - head.length));
    if (head.length >= CUT_KEY_BYTES) break;
  }
  let tail = '';
  for (let index = parts.length - 1; index >= 0 && tail.length < CUT_KEY_BYTES; index--) {
    const part = parts[index] as Buffer;
    tail = part.toString('latin1', Math.max(0, part.length - (CUT_KEY_BYTES - tail.length))) + tail;
  }
  return `${size}:${head}:${tail}`;
}

/** FNV-1a of the unit's key, else of the first CUT_KEY_BYTES bytes of its parts (skipping a 1-byte separator). */
function cutHash(unit: DocumentUnit): number {
  let hash = 0x811c9dc5;
  if (unit.key !== undefined) {
    for (let i = 0; i < unit.key.length; i++) hash = Math.imul(hash ^ unit.key.charCodeAt(i), 0x01000193) >>> 0;
    return hash;
  }
  let taken = 0;
  const { parts } = unit;
  for (const part of parts.length > 1 && (parts[0] as Buffer).length === 1 ? parts.slice(1) : parts) {
    for (let i = 0; i < part.length && taken < CUT_KEY_BYTES; i++, taken++) hash = Math.imul(hash ^ (part[i] as number), 0x01000193) >>> 0;
    if (taken >= CUT_KEY_BYTES) break;
  }
  return hash;
}

/** Whether `unit` starts a new piece after a piece of `pieceSize` bytes. */
export function startsPiece(unit: DocumentUnit, pieceSize: number): boolean {
  if (pieceSize === 0) return false;
  if (unit.alone === true || pieceSize >= PIECE_MAX) return true;
  return pieceSize >= PIECE_MIN && cutHash(unit) % CUT_ONE_IN === 0;
}

const deflatePiece = (bytes: Buffer): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    deflateRaw(bytes, { level: GZIP_PIECE_LEVEL, finishFlush: zlibConstants.Z_SYNC_FLUSH, chunkSize: 256 * 1024 }, (error, result) => (error ? reject(error) : resolve(result)));
  });

/**
 * A gzip document made of pieces (see the module comment): units go in, in document order; the
 * compressed bytes come out, in order, through `sink`.
 */
export class GzipPieces {
  #crc = 0;
  #size = 0;
  #piece: Buffer[] = [];
  #pieceSize = 0;
  /** Pieces compressing, in order. */
  #inFlight: Promise<Buffer>[] = [];
  #table: PieceTable = [];
  /** Each piece's parts and compressed bytes, for a builder that keeps them (`reuseFromParts`). */
  #made: MadePiece[] = [];
  #compressedSize = GZIP_HEADER.length;
  #reused = 0;

  private constructor(
    private readonly sink: (bytes: Buffer) => Promise<void>,
    private readonly reuse: PieceReuse | undefined,
    private readonly keep: boolean,
  ) {}

  /**
   * Starts a document whose compressed bytes go to `sink`; `keep`: each piece's parts and bytes are
   * kept for `end()` (a builder that keeps its documents; a streamed one must not hold them all).
   */
  static async start(sink: (bytes: Buffer) => Promise<void>, reuse?: PieceReuse, keep = false): Promise<GzipPieces> {
    await sink(GZIP_HEADER);
    return new GzipPieces(sink, reuse, keep);
  }

  /** The document's next unit. */
  async unit(unit: DocumentUnit): Promise<void> {
    if (startsPiece(unit, this.#pieceSize)) await this.#endPiece();
    for (const part of unit.parts) {
      if (part.length === 0) continue;
      this.#size += part.length;
      this.#piece.push(part);
      this.#pieceSize += part.length;
    }
    if (unit.alone) await this.#endPiece();
  }

  async #endPiece(): Promise<void> {
    if (this.#pieceSize === 0) return;
    const parts = this.#piece;
    const size = this.#pieceSize;
    this.#piece = [];
    this.#pieceSize = 0;
    const reused = this.reuse?.(parts, size);
    if (reused) this.#reused += 1;
    const deflated = reused ? Promise.resolve(reused.deflated) : deflatePiece(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size));
    // Awaited in order by #writeFirst: a failure while an earlier piece is awaited is reported then.
    void deflated.catch(() => undefined);
    // The document's CRC-32 piece by piece: a reused piece's own, when recorded, is combined in without reading its bytes.
    const crc = reused?.crc ?? parts.reduce((running, part) => crc32(part, running), 0);
    this.#crc = crc32Combine(this.#crc, crc, size);
    this.#inFlight.push(deflated);
    this.#table.push([size, 0, crc]);
    if (this.keep) this.#made.push({ parts, deflated: EMPTY, crc });
    while (this.#inFlight.length >= IN_FLIGHT) await this.#writeFirst();
  }

  async #writeFirst(): Promise<void> {
    const deflated = await (this.#inFlight[0] as Promise<Buffer>);
    void this.#inFlight.shift();
    const index = this.#table.length - 1 - this.#inFlight.length;
    (this.#table[index] as [number, number, number])[1] = deflated.length;
    const made = this.#made[index];
    if (made) made.deflated = deflated;
    this.#compressedSize += deflated.length;
    await this.sink(deflated);
  }

  /** Ends the document: its pieces (to reuse in the next build; `made` only when kept), its compressed size, how many pieces were reused. */
  async end(): Promise<{ pieces: PieceTable; made: MadePiece[]; size: number; reused: number }> {
    await this.#endPiece();
    while (this.#inFlight.length > 0) await this.#writeFirst();
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(this.#crc >>> 0, 0);
    trailer.writeUInt32LE(this.#size % 2 ** 32, 4);
    await this.sink(FINAL_BLOCK);
    await this.sink(trailer);
    this.#compressedSize += FINAL_BLOCK.length + trailer.length;
    return { pieces: this.#table, made: this.#made, size: this.#compressedSize, reused: this.#reused };
  }
}

/** The gzip bytes of `units` in pieces (held), with the pieces' compressed bytes as views of them. */
export async function gzipPieces(units: Iterable<DocumentUnit>, reuse?: PieceReuse): Promise<{ data: Buffer; pieces: PieceTable; made: MadePiece[]; reused: number }> {
  const chunks: Buffer[] = [];
  const gzip = await GzipPieces.start(
    (bytes) => {
      chunks.push(bytes);
      return Promise.resolve();
    },
    reuse,
    true,
  );
  for (const unit of units) await gzip.unit(unit);
  const { pieces, made, size, reused } = await gzip.end();
  return { data: Buffer.concat(chunks, size), pieces, made, reused };
}

/**
 * Finds pieces of a previous document (`document`, its gzip `gzip` and their `pieces`) by their
 * bytes: a piece of the same size and first bytes whose bytes are the same reuses its compressed
 * bytes (a view of `gzip`).
 */
export function reuseFrom(document: Buffer, gzip: Buffer, pieces: PieceTable): PieceReuse {
  const known = new Map<string, { offset: number; piece: ReusedPiece }[]>();
  let offset = 0;
  let at = GZIP_HEADER.length;
  for (const [size, deflatedSize, crc] of pieces) {
    if (offset + size > document.length || at + deflatedSize > gzip.length) break;
    const bytes = document.subarray(offset, offset + size);
    const key = pieceKey([bytes], size);
    let list = known.get(key);
    if (!list) known.set(key, (list = []));
    list.push({ offset, piece: { deflated: gzip.subarray(at, at + deflatedSize), ...(crc === undefined ? {} : { crc }) } });
    offset += size;
    at += deflatedSize;
  }
  return (parts, size) => {
    const candidates = known.get(pieceKey(parts, size));
    return candidates?.find((candidate) => sameBytes(parts, document, candidate.offset))?.piece;
  };
}

/** Whether `parts` joined are the bytes of `document` at `offset`. */
function sameBytes(parts: readonly Buffer[], document: Buffer, offset: number): boolean {
  let at = offset;
  for (const part of parts) {
    if (document.compare(part, 0, part.length, at, at + part.length) !== 0) return false;
    at += part.length;
  }
  return true;
}

/** Finds pieces made by a previous build of this process by their parts (the same buffers, or equal ones). */
export function reuseFromParts(made: readonly MadePiece[]): PieceReuse {
  const known = new Map<string, MadePiece[]>();
  for (const piece of made) {
    const size = piece.parts.reduce((sum, part) => sum + part.length, 0);
    const key = pieceKey(piece.parts, size);
    let list = known.get(key);
    if (!list) known.set(key, (list = []));
    list.push(piece);
  }
  const same = (a: readonly Buffer[], b: readonly Buffer[]): boolean => a.length === b.length && a.every((part, index) => part === b[index] || part.equals(b[index] as Buffer));
  return (parts, size) => known.get(pieceKey(parts, size))?.find((piece) => same(piece.parts, parts));
}
