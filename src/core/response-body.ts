import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/**
 * The whole body of `response`, refused as soon as it passes `maxBytes`: at once when its
 * Content-Length says so (the body is cancelled unread), else once the bytes read pass it (the
 * stream is destroyed). `tooLarge` makes the caller's error; `declared` is the announced size, when
 * that is what refused it.
 */
export async function readBodyCapped(response: Response, maxBytes: number, tooLarge: (declared?: number) => Error): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(declared);
  }
  if (!response.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
