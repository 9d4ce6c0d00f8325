/**
 * A document's bytes fed to a compressor in pieces of exactly `COMPRESSION_PIECE` bytes: brotli's
 * output depends on how its input is cut, so a streamed registry.json (streamed-document.ts), a held
 * one (build.ts) and one compressed on the builder's brotli thread (brotli-thread.ts) come out as the
 * same bytes.
 */
import type { Hash } from 'node:crypto';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** What a compressor is fed at a time. */
export const COMPRESSION_PIECE = 1024 * 1024;

/** `parts` (in order) cut into pieces of exactly `size` bytes, the last one shorter. */
export function* exactPieces(parts: Iterable<Buffer>, size = COMPRESSION_PIECE): Generator<Buffer> {
  let pending: Buffer[] = [];
  let pendingSize = 0;
  for (let part of parts) {
    while (pendingSize + part.length >= size) {
      const take = size - pendingSize;
      pending.push(part.subarray(0, take));
      yield pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, size);
      part = part.subarray(take);
      pending = [];
      pendingSize = 0;
    }
    if (part.length > 0) {
      pending.push(part);
      pendingSize += part.length;
    }
  }
  if (pendingSize > 0) yield pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingSize);
}

/** Each piece of `pieces`, added to `hash` as it goes by. */
function* hashed(pieces: Iterable<Buffer>, hash: Hash | undefined): Generator<Buffer> {
  for (const piece of pieces) {
    hash?.update(piece);
    yield piece;
  }
}

/** `parts` compressed by `compressor`, fed pieces of exactly COMPRESSION_PIECE bytes; `hash` (when given) sees every byte on the way. */
export async function compressParts(parts: readonly Buffer[], compressor: Transform, hash?: Hash): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await pipeline(Readable.from(hashed(exactPieces(parts), hash), { objectMode: false }), compressor, async (compressed: AsyncIterable<Buffer>) => {
    for await (const chunk of compressed) chunks.push(chunk);
  });
  return Buffer.concat(chunks);
}
