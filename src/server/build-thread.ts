/**
 * Where the server's registry is built: on a worker thread of its own when the store can be opened
 * there (`selfContainedStoreFolder`: an embedded store keeping its bytes in its folder), else on the
 * serving thread.
 *
 * Why a thread: a build streams archives through gunzip and tar, compresses with gzip and brotli
 * and writes through file streams. Run on the serving thread, that work leaves Node's shared stream
 * and event code slower for the sockets from then on: a minimal route answered its 304s 11-18% slower
 * after a first build of 1,000 versions in its process, 0-8% with the build on this thread
 * (bench/RESULTS.md, server-read). The document comes back as a copy (structured clone), which the
 * serving thread answers from as before.
 *
 * Where the worker's script is not beside this module (the sources the tests run), the worker
 * fails, or it is gone, builds run on the serving thread with a builder of its own (job-thread.ts).
 */
import { RegistryBuilder, type BuildResult } from '../registry/build.js';
import { JobThread } from '../registry/job-thread.js';
import { selfContainedStoreFolder } from '../store/sqlite/index.js';
import { storeSource } from '../store/source.js';
import type { RegistryStorage } from '../store/types.js';

/** What the server reads of a build (registry/build.ts's result). */
export type ServerBuild = Pick<BuildResult, 'document' | 'changed' | 'etag' | 'files' | 'written' | 'removed' | 'skipped' | 'failed'>;

export interface BuildJob {
  id: number;
  /** The store folder the worker opens (once: later jobs reuse its connection and builder). */
  dir: string;
  publicUrl: string;
}

export type BuildJobAnswer = { id: number; built: ServerBuild; error?: undefined } | { id: number; error: string; code?: string };

/** The fields of a build the serving thread gets: the rest (the builder's notices, counts) stays on the worker. */
export function serverBuildOf(result: BuildResult): ServerBuild {
  const { document, changed, etag, files, written, removed, skipped, failed } = result;
  return { document, changed, etag, files, written, removed, skipped, failed };
}

const WORKER_SCRIPT = new URL('./build-worker.js', import.meta.url);

export class ServerBuilder {
  readonly #storage: RegistryStorage;
  readonly #publicUrl: string;
  /** The worker and what its jobs say, for a store a thread can open. */
  readonly #thread: { runner: JobThread<BuildJob, BuildJobAnswer>; job: Omit<BuildJob, 'id'> } | undefined;
  /** The serving thread's builder, made when a build runs there (it keeps its entries from build to build). */
  #local: RegistryBuilder | undefined;
  /** The build in progress: closing waits for it. */
  #running: Promise<unknown> = Promise.resolve();

  /** `script`: the worker's module (tests). */
  constructor(storage: RegistryStorage, publicUrl: string, script: URL = WORKER_SCRIPT) {
    this.#storage = storage;
    this.#publicUrl = publicUrl;
    const dir = selfContainedStoreFolder(storage);
    this.#thread = dir === undefined ? undefined : { runner: new JobThread<BuildJob, BuildJobAnswer>(script, 'the registry build worker'), job: { dir, publicUrl } };
  }

  /** Whether builds run on the worker thread (started now if need be). */
  onThread(): boolean {
    return this.#thread?.runner.ready() ?? false;
  }

  /** Builds the registry into the store's public folder; rejects when the build failed. */
  build(): Promise<ServerBuild> {
    const job = this.#thread?.runner.run(this.#thread.job);
    const built = job ? job.then((answer) => (answer as Extract<BuildJobAnswer, { built: ServerBuild }>).built) : this.#buildHere();
    this.#running = built.catch(() => undefined);
    return built;
  }

  async #buildHere(): Promise<ServerBuild> {
    this.#local ??= new RegistryBuilder(storeSource(this.#storage, this.#publicUrl), { outDir: this.#storage.publicDir, publicUrl: this.#publicUrl });
    return serverBuildOf(await this.#local.build());
  }

  /** Waits for the build in progress, then ends the worker (and the local builder's threads). */
  async close(): Promise<void> {
    await this.#running;
    await this.#thread?.runner.close();
    await this.#local?.close();
  }
}
