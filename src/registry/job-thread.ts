/**
 * A worker thread of the builder's own that answers numbered jobs (brotli-thread.ts, file-writer-thread.ts).
 *
 * Where the worker's script is not beside this module (the sources run by the tests, a bundle that
 * leaves it out), or the worker fails, `run` answers undefined and the caller does the job on its
 * own thread. The worker keeps the process alive while a job is out, and only then.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';

/** What a worker answers: the job's id, and an error's message (and code) when the job failed. */
export type JobAnswer = { id: number; error?: undefined } | { id: number; error: string; code?: string };

export class JobThread<Job extends { id: number }, Answer extends JobAnswer> {
  #worker: Worker | undefined;
  /** False once the worker could not be started or failed: the caller does its jobs from then on. */
  #usable = true;
  #next = 0;
  #jobs = new Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void }>();

  /** `script`: the worker's module; `what`: how its failures name it ("the brotli worker"); `resourceLimits`: the worker's heap. */
  constructor(
    private readonly script: URL,
    private readonly what: string,
    private readonly resourceLimits: ResourceLimits = {},
  ) {}

  /** Whether jobs go to a worker (started now if need be). */
  ready(): boolean {
    return this.#start() !== undefined;
  }

  /**
   * The worker's answer to `job` (its id set here); undefined when there is no worker. A failed job
   * rejects with the worker's message and, when it gave one, its `code` (as Node's own errors carry).
   */
  run(job: Omit<Job, 'id'>, transfer: readonly Transferable[] = []): Promise<Answer> | undefined {
    const worker = this.#start();
    if (!worker) return undefined;
    const id = this.#next++;
    const done = new Promise<Answer>((resolve, reject) => this.#jobs.set(id, { resolve, reject }));
    worker.ref();
    worker.postMessage({ ...job, id }, transfer);
    return done;
  }

  #start(): Worker | undefined {
    if (this.#worker || !this.#usable) return this.#worker;
    if (this.script.protocol !== 'file:' || !existsSync(fileURLToPath(this.script))) {
      this.#usable = false;
      return undefined;
    }
    let worker: Worker;
    try {
      worker = new Worker(this.script, { resourceLimits: this.resourceLimits });
    } catch {
      // No thread to be had (a resource limit): the caller does the job on its own.
      this.#usable = false;
      return undefined;
    }
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const job = this.#jobs.get(answer.id);
      this.#jobs.delete(answer.id);
      if (this.#jobs.size === 0) worker.unref();
      if (!job) return;
      if (answer.error === undefined) job.resolve(answer);
      else job.reject(Object.assign(new Error(answer.error), answer.code === undefined ? {} : { code: answer.code }));
    });
    const fail = (error: Error): void => {
      this.#usable = false;
      this.#worker = undefined;
      for (const job of this.#jobs.values()) job.reject(error);
      this.#jobs.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`${this.what} exited (code ${code})`)));
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
