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

/**
 * The first `maxBytes` of `response`'s body, never more read: once they have arrived the rest is
 * cancelled. `onChunk` sees each chunk as it arrives (a client's idle timer). A body that fails
 * half-way throws, or with `partialOnError` gives what arrived (an error message's details).
 */
export async function readBodyHead(response: Response, maxBytes: number, options: { onChunk?: () => void; partialOnError?: boolean } = {}): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      options.onChunk?.();
      chunks.push(value);
      size += value.byteLength;
    }
    if (size >= maxBytes) await reader.cancel().catch(() => undefined);
  } catch (error) {
    if (!options.partialOnError) throw error;
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}
