/**
 * Small files of a folder output written on a worker thread of their own. Creating a file costs
 * the kernel 50 to 300 µs on this project's machines (most of it inode allocation), and a full build
 * creates one per template: on the builder's thread that time stops everything else, on a worker it
 * runs beside the builder's work. Each file is one job (create, write, stat, close, and a rename
 * when it replaces one), so its progress never waits for the builder's thread to be free; the files
 * asked for in one turn of the builder's event loop go in one message, or SEND_AT of them at once
 * (waking a thread costs a virtual machine some 20 µs, as much as a small file's write).
 *
 * Where there is no worker (job-thread.ts), `write` answers undefined and the caller writes the
 * file itself.
 */
import { JobThread } from './job-thread.js';

export interface FileWrite {
  /** Created here (it must not exist yet). */
  path: string;
  data: Uint8Array;
  /** Where `path` is renamed to once written and stated (a temp file replacing a file), if anywhere. */
  renameTo?: string;
}

/** One file's outcome: its modification time, or Node's error message and code. */
export type FileWritten = { mtimeMs: number; error?: undefined } | { error: string; code?: string };

export interface FileWriteJob {
  id: number;
  files: FileWrite[];
}

export type FileWriteAnswer = { id: number; written: FileWritten[]; error?: undefined } | { id: number; error: string; code?: string };

/** How many files asked for in one turn are sent without waiting for its end. */
const SEND_AT = 32;

const WORKER_SCRIPT = new URL('./file-writer-worker.js', import.meta.url);

export class FileWriterThread {
  // The worker only passes bytes it does not keep to the kernel: a young generation of 2 MB instead of
  // V8's default kept some 17 MB off a full build's peak RSS.
  readonly #thread = new JobThread<FileWriteJob, FileWriteAnswer>(WORKER_SCRIPT, 'the file writer worker', { maxYoungGenerationSizeMb: 2 });
  /** The files asked for in this turn and not yet sent (at its end, or once SEND_AT are waiting). */
  #pending: { file: FileWrite; resolve: (mtimeMs: number) => void; reject: (error: Error) => void }[] = [];

  /**
   * Writes `data` into the new file `path` (renamed to `renameTo` when given) and answers its
   * modification time; undefined when there is no worker. The worker gets its own copy of the bytes.
   * A failure rejects with Node's message and code (EEXIST when `path` exists), and leaves no file at `path`.
   */
  write(path: string, data: Uint8Array, renameTo?: string): Promise<number> | undefined {
    if (!this.#thread.ready()) return undefined;
    // A copy the size of the file alone (a view of a larger buffer would send all of it), moved
    // without another. Uint8Array's slice: a Buffer's is a view, and moving it would empty the caller's.
    const own = Uint8Array.prototype.slice.call(data);
    const written = new Promise<number>((resolve, reject) => {
      // Sent once this turn of the event loop is over: the files asked for from every callback it ran
      // go together. A builder whose work is all synchronous can make batch after batch in one turn:
      // SEND_AT files go at once, so that the worker writes them while the builder goes on.
      if (this.#pending.length === 0) setImmediate(() => this.#send());
      this.#pending.push({ file: { path, data: own, ...(renameTo === undefined ? {} : { renameTo }) }, resolve, reject });
      if (this.#pending.length >= SEND_AT) this.#send();
    });
    return written;
  }

  #send(): void {
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    const sent = this.#thread.run({ files: batch.map(({ file }) => file) }, batch.map(({ file }) => file.data.buffer as ArrayBuffer));
    if (!sent) {
      const error = new Error('the file writer worker is gone');
      for (const { reject } of batch) reject(error);
      return;
    }
    sent.then(
      (answer) => {
        const written = (answer as Extract<FileWriteAnswer, { written: FileWritten[] }>).written;
        batch.forEach(({ resolve, reject }, index) => {
          const outcome = written[index];
          if (outcome?.error === undefined && outcome !== undefined) resolve(outcome.mtimeMs);
          else reject(Object.assign(new Error(outcome?.error ?? 'the file writer worker gave no answer'), outcome?.code === undefined ? {} : { code: outcome.code }));
        });
      },
      (error: Error) => {
        for (const { reject } of batch) reject(error);
      },
    );
  }

  close(): Promise<void> {
    return this.#thread.close();
  }
}
