/**
 * CDN purges after a change, from a durable outbox (the storage's `PurgeStore`), as crates.io
 * queues its CloudFront invalidations: a build that changed files writes one job per configured
 * target (`--purge`) with the public URLs of exactly those files (`registry/purge` `purgeUrlsOf`),
 * and the dispatcher sends them in the background with the target's adapter.
 *
 * Retries: a purge the CDN did not accept (an error answer, no answer, CloudFront's
 * TooManyInvalidationsInProgress) stays pending and is tried again with exponential backoff and
 * jitter (core/retry.ts, `Retry-After` honoured): by default 10 attempts, the first retry after
 * about 10 s, doubling to at most 1 h between attempts; also after a restart (the job stays in the
 * outbox, and a job claimed by a process that died is due again when its lease ends). Each failed
 * attempt is logged as a warning with the target and the CDN's answer; a job that failed every
 * attempt is logged as an error naming the URLs left stale, and stays in the outbox as `failed`.
 * An instance claims only the jobs of targets it is configured with.
 */
import { retryDelay } from '../core/retry.js';
import { errorMessage } from '../core/errors.js';
import { purgeInBatches, PurgeError, type PurgeTarget } from '../registry/purge/index.js';
import type { PurgeJob, PurgeJobUpdate, PurgeStore } from '../store/types.js';

export const DEFAULT_PURGE_MAX_ATTEMPTS = 10;
export const DEFAULT_PURGE_MIN_RETRY_DELAY_MS = 10_000;
export const DEFAULT_PURGE_MAX_RETRY_DELAY_MS = 3_600_000;
/** How often the outbox is looked at when nothing is due sooner (jobs written by another instance). */
export const DEFAULT_PURGE_POLL_INTERVAL_MS = 30_000;
/** A claimed job is due again after this long (its process died during the attempt). */
const LEASE_MS = 5 * 60_000;
/** Finished jobs kept in the outbox (for operators); older ones are removed. */
export const PURGE_JOBS_KEPT = 200;
/** Jobs attempted at once, at most. */
const BATCH = 8;

export interface PurgeLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface PurgeDispatcherOptions {
  store: PurgeStore;
  targets: readonly PurgeTarget[];
  /** Attempts of one job before it is marked failed; default 10. */
  maxAttempts?: number;
  minRetryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Fixed waits before each retry (tests): their number + 1 is the number of attempts. */
  retryDelaysMs?: readonly number[];
  pollIntervalMs?: number;
  logger?: PurgeLogger;
  now?: () => Date;
  random?: () => number;
}

/** Sends the purge outbox's jobs of its targets in the background; see the module comment. */
export class PurgeDispatcher {
  readonly #store: PurgeStore;
  readonly #targets: ReadonlyMap<string, PurgeTarget>;
  readonly #maxAttempts: number;
  readonly #limits: { minDelayMs: number; maxDelayMs: number };
  readonly #retryDelaysMs: readonly number[] | undefined;
  readonly #pollIntervalMs: number;
  readonly #logger: PurgeLogger | undefined;
  readonly #now: () => Date;
  readonly #random: () => number;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #cancel = new AbortController();
  #started = false;
  #closing = false;
  #timer: NodeJS.Timeout | undefined;
  #passing: Promise<void> | undefined;
  #again = false;

  constructor(options: PurgeDispatcherOptions) {
    this.#store = options.store;
    this.#targets = new Map(options.targets.map((target) => [target.spec, target]));
    this.#retryDelaysMs = options.retryDelaysMs;
    this.#maxAttempts = options.retryDelaysMs ? options.retryDelaysMs.length + 1 : Math.max(1, options.maxAttempts ?? DEFAULT_PURGE_MAX_ATTEMPTS);
    this.#limits = { minDelayMs: options.minRetryDelayMs ?? DEFAULT_PURGE_MIN_RETRY_DELAY_MS, maxDelayMs: options.maxRetryDelayMs ?? DEFAULT_PURGE_MAX_RETRY_DELAY_MS };
    this.#pollIntervalMs = options.pollIntervalMs ?? DEFAULT_PURGE_POLL_INTERVAL_MS;
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
    this.#random = options.random ?? Math.random;
  }

  /** The configured targets (`PurgeTarget.spec`). */
  get targets(): string[] {
    return [...this.#targets.keys()];
  }

  /** Starts sending: the due jobs at once (a previous run's too), later ones when due. */
  start(): void {
    if (this.#started || this.#closing || this.#targets.size === 0) return;
    this.#started = true;
    this.kick();
  }

  /**
   * Writes one job per target for `urls` to the outbox and sends them in the background. Never
   * throws: a failure to write is logged as an error (the change is then not purged: the files'
   * max-age bounds how long the CDN serves the old copies).
   */
  async enqueue(urls: readonly string[]): Promise<PurgeJob[]> {
    if (this.#targets.size === 0 || urls.length === 0) return [];
    try {
      const jobs = await this.#store.enqueuePurges(this.targets, urls, this.#now());
      this.kick();
      return jobs;
    } catch (error) {
      this.#logger?.error({ err: error, urls: urls.length }, `the purge of ${urls.length} URL(s) could not be written to the purge outbox: the CDN serves their old copies until they expire`);
      return [];
    }
  }

  /** Looks at the outbox now. */
  kick(): void {
    if (!this.#started || this.#closing) return;
    if (this.#passing) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#passing = this.#pass()
      .catch((error: unknown) => this.#logger?.warn({ err: error }, 'reading the purge outbox failed'))
      .finally(() => {
        this.#passing = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Stops sending: no new attempts; attempts in flight are cancelled (their jobs stay pending for the next start). */
  async close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#passing) await this.#passing;
    this.#cancel.abort();
    await Promise.allSettled([...this.#inFlight.values()]);
    for (const target of this.#targets.values()) target.close?.();
  }

  async #pass(): Promise<void> {
    const room = BATCH - this.#inFlight.size;
    if (room > 0) {
      const due = await this.#store.claimDuePurges(this.targets, this.#now(), room, LEASE_MS);
      for (const job of due) {
        if (this.#inFlight.has(job.id)) continue;
        const task = this.#attempt(job)
          .catch((error: unknown) => this.#logger?.warn({ err: error, job: job.id }, 'recording a purge attempt failed'))
          .finally(() => {
            this.#inFlight.delete(job.id);
            this.kick();
          });
        this.#inFlight.set(job.id, task);
      }
    }
    if (this.#closing) return;
    const next = await this.#store.nextPurgeDueAt(this.targets);
    let wait = this.#pollIntervalMs;
    if (next && this.#inFlight.size < BATCH) wait = Math.min(wait, Math.max(0, next.getTime() - this.#now().getTime()));
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.kick(), wait);
    this.#timer.unref();
  }

  #retryWait(retry: number, retryAfterMs: number | undefined): number {
    if (this.#retryDelaysMs) {
      const fixed = this.#retryDelaysMs[retry - 1] ?? this.#retryDelaysMs.at(-1) ?? 0;
      return retryAfterMs === undefined ? fixed : Math.min(this.#limits.maxDelayMs, Math.max(fixed, retryAfterMs));
    }
    return retryDelay(retry, this.#limits, retryAfterMs, this.#random);
  }

  /** One attempt of a claimed job, and its new state in the outbox. */
  async #attempt(job: PurgeJob): Promise<void> {
    const target = this.#targets.get(job.target);
    if (!target) return;
    const attempts = job.attempts + 1;
    const details = { purge: job.id, target: job.target, attempt: attempts, urls: job.urls.length };
    let update: PurgeJobUpdate;
    try {
      // The job's id is the reference of every attempt: a retry after a lost answer is the same purge.
      await purgeInBatches(target, job.urls, { reference: `template-registry-${job.id}`, signal: this.#cancel.signal });
      update = { state: 'done', attempts, error: null };
      this.#logger?.info(details, `purged ${job.urls.length} URL(s) at ${job.target}`);
    } catch (error) {
      const message = errorMessage(error);
      if (this.#cancel.signal.aborted) {
        // The server is closing: due again at the next start, this attempt not counted.
        await this.#store.updatePurge(job.id, { state: 'pending', attempts: job.attempts, nextAttemptAt: this.#now(), error: message }, this.#now());
        return;
      }
      if (attempts >= this.#maxAttempts) {
        update = { state: 'failed', attempts, error: message };
        this.#logger?.error({ ...details, stale: job.urls }, `the purge at ${job.target} failed ${attempts} times and is given up (${message}); the CDN serves the old copies of these URLs until they expire`);
      } else {
        const waitMs = this.#retryWait(attempts, error instanceof PurgeError ? error.retryAfterMs : undefined);
        update = { state: 'pending', attempts, nextAttemptAt: new Date(this.#now().getTime() + waitMs), error: message };
        this.#logger?.warn({ ...details, retryInMs: waitMs }, `the purge at ${job.target} failed (attempt ${attempts} of ${this.#maxAttempts}): ${message}; retrying in ${Math.round(waitMs / 1000)} s`);
      }
    }
    await this.#store.updatePurge(job.id, update, this.#now());
    if (update.state !== 'pending') await this.#store.prunePurges(PURGE_JOBS_KEPT);
  }
}
