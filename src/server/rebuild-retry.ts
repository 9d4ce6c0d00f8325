/**
 * A registry build that failed (a full disk, an unwritable public folder), or that could not write
 * the files of some template (`result.failed`: that template keeps its previous files), is tried
 * again, with exponential backoff (core/retry.ts), until one succeeds whole: a version stored while
 * the disk was full gets listed without waiting for the next upload. Timers are unref'd and stopped
 * when the server closes.
 */
import { retryDelay, type BackoffLimits } from '../core/retry.js';

/** The backoff of rebuild retries by default: 1 s, doubling, at most 5 minutes apart. */
export const DEFAULT_REBUILD_RETRY: BackoffLimits = { minDelayMs: 1000, maxDelayMs: 5 * 60_000 };

export interface RebuildRetryOptions {
  /** Runs a build (the server's, coalesced with the others); its outcome is reported back through `failed`/`succeeded`. */
  rebuild: () => Promise<void>;
  limits?: Partial<BackoffLimits>;
  /** A retry failed (logged by the caller). */
  onError: (error: unknown) => void;
  /** The jitter's source (tests); default Math.random. */
  random?: () => number;
}

export interface RebuildRetry {
  /** A build failed or left templates out: plans the next try (once; further calls wait for it). */
  failed(): void;
  /** A build succeeded whole: no retry is needed any more, and the next failure starts the backoff again. */
  succeeded(): void;
  /** Milliseconds until the planned try; undefined when none is planned. */
  plannedInMs(): number | undefined;
  stop(): void;
}

export function rebuildRetry(options: RebuildRetryOptions): RebuildRetry {
  const limits: BackoffLimits = { ...DEFAULT_REBUILD_RETRY, ...options.limits };
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let due: number | undefined;
  let stopped = false;
  return {
    failed() {
      if (stopped || timer) return;
      attempt += 1;
      const delay = retryDelay(attempt, limits, undefined, options.random);
      due = Date.now() + delay;
      timer = setTimeout(() => {
        timer = undefined;
        due = undefined;
        // The build reports its own outcome (failed() again, or succeeded()).
        options.rebuild().catch(options.onError);
      }, delay);
      timer.unref();
    },
    succeeded() {
      attempt = 0;
      if (timer) clearTimeout(timer);
      timer = undefined;
      due = undefined;
    },
    plannedInMs: () => (due === undefined ? undefined : Math.max(0, due - Date.now())),
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      due = undefined;
    },
  };
}
