/**
 * Flushing many files to disk at once. Node has no syncfs(2); `sync -f <dir>` does it in one call,
 * where one fsync per file costs a journal commit each (10,000 template files: seconds). But
 * starting a process forks this one, and after a fork every page of a large heap is copy-on-write:
 * writing 100 MB afterwards costs half a second of page faults. So one small helper process is
 * started while the heap is still small (when the output is made) and asked to sync whenever a build
 * needs it; a few files are flushed one by one instead.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';

import { syncDirectory, syncFile } from '../core/files.js';

/** At most this many files are flushed one by one; more are flushed with the whole file system. */
const ONE_BY_ONE = 32;

const SYNCER_SCRIPT = 'while IFS= read -r _; do if sync -f "$1"; then echo ok; else echo fail; fi; done';

export class FileSystemSync {
  #child: ChildProcessByStdio<Writable, Readable, null> | undefined;
  #waiting: ((ok: boolean) => void)[] = [];
  #buffered = '';

  #started = false;

  /**
   * `startNow` false: the helper is started by `start()`, or when a sync first needs it. A process
   * whose heap stays small (a build that streams) need not start it at all when it writes a few
   * files: the spawn took 20-30 ms of a 500 ms rebuild.
   */
  constructor(
    private readonly dir: string,
    startNow = true,
  ) {
    if (startNow) this.start();
  }

  /** Starts the helper process, unless it was started (or cannot run here). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    const { dir } = this;
    if (process.platform !== 'linux') return;
    try {
      const child = spawn('sh', ['-c', SYNCER_SCRIPT, 'sh', dir], { stdio: ['pipe', 'pipe', 'ignore'] });
      child.on('error', () => this.#fail());
      child.on('exit', () => this.#fail());
      child.stdin.on('error', () => this.#fail());
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        this.#buffered += chunk;
        let end: number;
        while ((end = this.#buffered.indexOf('\n')) >= 0) {
          const answer = this.#buffered.slice(0, end);
          this.#buffered = this.#buffered.slice(end + 1);
          this.#waiting.shift()?.(answer === 'ok');
          if (this.#waiting.length === 0) this.#hold(false);
        }
      });
      this.#child = child;
      this.#hold(false);
    } catch {
      this.#child = undefined;
    }
  }

  /** Keeps the process alive while an answer is awaited, and only then (an idle helper holds nothing). */
  #hold(waiting: boolean): void {
    const child = this.#child;
    if (!child) return;
    const handles = [child, child.stdin, child.stdout] as { ref?: () => void; unref?: () => void }[];
    for (const handle of handles) (waiting ? handle.ref : handle.unref)?.call(handle);
  }

  #fail(): void {
    this.#child = undefined;
    for (const waiter of this.#waiting.splice(0)) waiter(false);
  }

  /**
   * Starts a sync of the file system and does not wait for it, unless one is under way: what a build
   * wrote so far goes to the disk while it writes the rest, and the sync that `flush` waits for has
   * less left to do (at 100,000 versions that sync took 300-480 ms after the last file; 40 ms with
   * a sync started every 16 MB of template files).
   */
  early(): void {
    this.start();
    const child = this.#child;
    if (!child || this.#waiting.length > 0) return;
    this.#waiting.push(() => undefined);
    this.#hold(true);
    child.stdin.write('\n');
  }

  /** Asks the helper to sync the file system; false when it cannot. */
  #syncAll(): Promise<boolean> {
    this.start();
    const child = this.#child;
    if (!child) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#hold(true);
      child.stdin.write('\n');
    });
  }

  /** Puts `files` (and the names of their folders) on stable storage. */
  async flush(files: readonly string[]): Promise<void> {
    if (files.length === 0) return;
    if (files.length > ONE_BY_ONE && (await this.#syncAll())) return;
    for (const file of files) await syncFile(file);
    for (const folder of new Set(files.map((f) => path.dirname(f)))) await syncDirectory(folder);
  }

  /** Ends the helper process. */
  close(): void {
    this.#started = true; // never started after it is closed
    this.#child?.stdin.end();
    this.#child = undefined;
  }
}
