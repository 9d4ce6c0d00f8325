/**
 * The brotli variant of a large held document made on a worker thread of the builder's own. Fed
 * from the builder's thread, brotli waits for it between pieces: while the builder renders the
 * catalog page, 100 MB of registry.json took twice as long to compress as alone. The worker gets
 * the document without a copy when it lives in shared memory (`sharedBuffer`), and answers with the
 * same bytes `compressParts` gives, and the document's SHA-256.
 *
 * Where there is no worker (job-thread.ts), `compress` answers undefined and the caller compresses
 * on its own thread.
 */
import type { BrotliOptions } from 'node:zlib';

import { JobThread } from './job-thread.js';

export interface BrotliJob {
  id: number;
  bytes: Uint8Array;
  options: BrotliOptions;
}

export type BrotliJobResult = { id: number; compressed: Uint8Array; sha256: string; error?: undefined } | { id: number; error: string };

/** A buffer of `size` bytes in memory a worker can read without a copy. */
export const sharedBuffer = (size: number): Buffer => Buffer.from(new SharedArrayBuffer(size));

const WORKER_SCRIPT = new URL('./brotli-worker.js', import.meta.url);

export class BrotliThread {
  readonly #thread = new JobThread<BrotliJob, BrotliJobResult>(WORKER_SCRIPT, 'the brotli worker');

  /** Whether jobs go to a worker (started now if need be). */
  ready(): boolean {
    return this.#thread.ready();
  }

  /** The brotli variant of `bytes` and their SHA-256, made on the worker; undefined when there is none. */
  compress(bytes: Buffer, options: BrotliOptions): Promise<{ compressed: Buffer; sha256: string }> | undefined {
    return this.#thread.run({ bytes, options })?.then((result) => {
      const { compressed, sha256 } = result as Extract<BrotliJobResult, { sha256: string }>;
      return { compressed: Buffer.from(compressed.buffer, compressed.byteOffset, compressed.byteLength), sha256 };
    });
  }

  /** Ends the worker (a job still out is refused). */
  close(): Promise<void> {
    return this.#thread.close();
  }
}
