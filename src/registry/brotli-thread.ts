/**
 * The brotli variant of a large held document made on a worker thread of the builder's own. Fed
 * from the builder's thread, brotli waits for it between pieces: while the builder renders the
 * catalog page, 100 MB of registry.json took twice as long to compress as alone. The worker gets
 * the document without a copy when it lives in shared memory (`sharedBuffer`), and answers with the
 * same bytes `compressParts` gives, and the document's SHA-256.
 *
 * Where the worker's script is not beside this module (the sources run by the tests, a bundle that
 * leaves it out), or the worker fails, `compress` answers undefined and the caller compresses on
 * its own thread.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { BrotliOptions } from 'node:zlib';

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
  #worker: Worker | undefined;
  /** False once the worker could not be started or failed: the caller compresses itself from then on. */
  #usable = true;
  #next = 0;
  #jobs = new Map<number, { resolve: (result: { compressed: Buffer; sha256: string }) => void; reject: (error: Error) => void }>();

  /** Whether jobs go to a worker (started now if need be). */
  ready(): boolean {
    return this.#start() !== undefined;
  }

  /** The brotli variant of `bytes` and their SHA-256, made on the worker; undefined when there is none. */
  compress(bytes: Buffer, options: BrotliOptions): Promise<{ compressed: Buffer; sha256: string }> | undefined {
    const worker = this.#start();
    if (!worker) return undefined;
    const id = this.#next++;
    const done = new Promise<{ compressed: Buffer; sha256: string }>((resolve, reject) => this.#jobs.set(id, { resolve, reject }));
    // Waited for: the process lives while a job is out, and only then.
    worker.ref();
    worker.postMessage({ id, bytes, options } satisfies BrotliJob);
    return done;
  }

  #start(): Worker | undefined {
    if (this.#worker || !this.#usable) return this.#worker;
    if (WORKER_SCRIPT.protocol !== 'file:' || !existsSync(fileURLToPath(WORKER_SCRIPT))) {
      this.#usable = false;
      return undefined;
    }
    let worker: Worker;
    try {
      worker = new Worker(WORKER_SCRIPT);
    } catch {
      // No thread to be had (a resource limit): the caller compresses on its own.
      this.#usable = false;
      return undefined;
    }
    worker.unref();
    worker.on('message', (result: BrotliJobResult) => {
      const job = this.#jobs.get(result.id);
      this.#jobs.delete(result.id);
      if (this.#jobs.size === 0) worker.unref();
      if (!job) return;
      if (result.error !== undefined) job.reject(new Error(`brotli compression failed: ${result.error}`));
      else job.resolve({ compressed: Buffer.from(result.compressed.buffer, result.compressed.byteOffset, result.compressed.byteLength), sha256: result.sha256 });
    });
    const fail = (error: Error): void => {
      this.#usable = false;
      this.#worker = undefined;
      for (const job of this.#jobs.values()) job.reject(error);
      this.#jobs.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the brotli worker exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** Ends the worker (a job still out is refused). */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#usable = false;
    this.#worker = undefined;
    if (worker) await worker.terminate();
  }
}
