/**
 * Every password hash the server computes (a login's check, a new account's hash) goes through one
 * queue: scrypt runs on libuv's threadpool (4 threads unless UV_THREADPOOL_SIZE says otherwise),
 * which file reads and writes, DNS and zlib share. Unbounded, a burst of unauthenticated logins fills
 * it and an archive download waits behind seconds of hashing. So at most `concurrency` hashes run at
 * once, at most `queueLength` wait, and past that a login is refused at once: 503 with Retry-After.
 */
import { ApiError } from './envelope.js';
import type { PasswordHasher } from './passwords.js';

/** Seconds a refused login is told to wait: a hash takes about 0.3 s of one core, a full queue a few. */
const RETRY_AFTER_SECONDS = 1;

export class HashQueue implements PasswordHasher {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(
    private readonly hasher: PasswordHasher,
    readonly concurrency: number,
    readonly queueLength: number,
  ) {}

  /** Hashes computing now. */
  get running(): number {
    return this.#running;
  }

  /** Hashes waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  hash(password: string): Promise<string> {
    return this.run(() => this.hasher.hash(password));
  }

  verify(password: string, hash: string | undefined): Promise<boolean> {
    return this.run(() => this.hasher.verify(password, hash));
  }

  /** Runs `task` in its turn; a 503 ApiError (never queued) when the queue is full. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running < this.concurrency) this.#running++;
    else if (this.#waiting.length < this.queueLength) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else throw busy();
    try {
      return await task();
    } finally {
      // The turn passes straight to the next one waiting (the count of running hashes stays).
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

function busy(): ApiError {
  return new ApiError(
    503,
    'SERVICE_UNAVAILABLE',
    `the server is checking too many passwords at once: retry in ${RETRY_AFTER_SECONDS} second${RETRY_AFTER_SECONDS === 1 ? '' : 's'}`,
    [],
    { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    { retryAfter: RETRY_AFTER_SECONDS },
  );
}
