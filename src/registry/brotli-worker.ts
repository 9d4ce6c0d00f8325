/**
 * The brotli thread's worker (brotli-thread.ts): compresses a document fed in exact pieces, as the
 * builder would (compress-parts.ts), and takes its SHA-256 on the way. On a thread of its own, the
 * compressor gets its next piece whatever the builder's thread is busy with.
 */
import { createHash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { createBrotliCompress } from 'node:zlib';

import { compressParts } from './compress-parts.js';
import type { BrotliJob, BrotliJobResult } from './brotli-thread.js';

const port = parentPort;
port?.on('message', (job: BrotliJob) => {
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  const hash = createHash('sha256');
  compressParts([bytes], createBrotliCompress(job.options), hash).then(
    (compressed) => {
      // The compressed bytes move to the builder's thread without a copy when they fill their own memory.
      const own = compressed.byteOffset === 0 && compressed.byteLength === compressed.buffer.byteLength && !(compressed.buffer instanceof SharedArrayBuffer);
      const result: BrotliJobResult = { id: job.id, compressed, sha256: hash.digest('hex') };
      port.postMessage(result, own ? [compressed.buffer] : []);
    },
    (error: unknown) => port.postMessage({ id: job.id, error: `brotli compression failed: ${error instanceof Error ? error.message : String(error)}` } satisfies BrotliJobResult),
  );
});
