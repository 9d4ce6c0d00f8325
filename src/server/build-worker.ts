/**
 * The server's build thread (build-thread.ts): opens the store from its folder on the first job,
 * with a connection of its own, and keeps it and one builder (which keeps its entries, so a rebuild
 * serializes only what changed) for its life. Jobs run one after another.
 */
import { parentPort } from 'node:worker_threads';

import { errorMessage } from '../core/errors.js';
import { RegistryBuilder } from '../registry/build.js';
import { openSqliteStorage } from '../store/sqlite/index.js';
import { storeSource } from '../store/source.js';
import { serverBuildOf, type BuildJob, type BuildJobAnswer } from './build-thread.js';

const port = parentPort;
let builder: Promise<RegistryBuilder> | undefined;
let queue: Promise<void> = Promise.resolve();

async function open(job: BuildJob): Promise<RegistryBuilder> {
  // Opened by the server already: never created here, never recovered (the server did that).
  const storage = await openSqliteStorage(job.dir, { create: false });
  return new RegistryBuilder(storeSource(storage, job.publicUrl), { outDir: storage.publicDir, publicUrl: job.publicUrl });
}

async function answer(job: BuildJob): Promise<BuildJobAnswer> {
  try {
    // A store that would not open is tried again by the next job.
    builder ??= open(job).catch((error: unknown) => {
      builder = undefined;
      throw error;
    });
    const result = await (await builder).build();
    return { id: job.id, built: serverBuildOf(result) };
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    return { id: job.id, error: errorMessage(error), ...(typeof code === 'string' ? { code } : {}) };
  }
}

function send(answer: BuildJobAnswer): void {
  try {
    port?.postMessage(answer);
  } catch (error) {
    // A document that cannot be copied to the serving thread fails the build, not the worker.
    port?.postMessage({ id: answer.id, error: `the build could not be handed to the server: ${errorMessage(error)}` } satisfies BuildJobAnswer);
  }
}

port?.on('message', (job: BuildJob) => {
  queue = queue.then(async () => send(await answer(job)));
});
