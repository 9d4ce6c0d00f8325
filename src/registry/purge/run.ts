/**
 * A purge run in one process (`build-registry`, the registry action): every target purged,
 * each retried with backoff (core/retry.ts) for a bounded number of attempts. What still failed is
 * returned, not thrown: the caller keeps it for the next run (so no purge is lost) and says so.
 * The server does not use this: its purges are jobs of a durable outbox (server/purges.ts).
 */
import { retryDelay } from '../../core/retry.js';
import { purgeInBatches, PurgeError, type PurgeTarget } from './target.js';

export interface PurgeRunOptions {
  /** The same for every attempt of this run's purges (CloudFront's CallerReference, with the target). */
  reference: string;
  /** Attempts per target (default 4: the first and three retries, about 1 + 2 + 4 s apart). */
  attempts?: number;
  /** The first retry's wait (default 1000 ms), doubled each time up to `maxDelayMs` (default 30 s). */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Waits (tests pass a fake clock's). */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Told of each failed attempt that will be retried. */
  onRetry?: (info: { target: string; attempt: number; delayMs: number; error: string }) => void;
}

export interface PurgeRunResult {
  /** Targets that purged every URL. */
  purged: string[];
  /** Targets that still failed after every attempt, with the last error. */
  failed: { target: string; error: string }[];
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Purges `urls` at every target (one after the other), each with its retries. */
export async function purgeWithRetries(targets: readonly PurgeTarget[], urls: readonly string[], options: PurgeRunOptions): Promise<PurgeRunResult> {
  const attempts = Math.max(1, options.attempts ?? 4);
  const sleep = options.sleep ?? realSleep;
  const limits = { minDelayMs: options.minDelayMs ?? 1000, maxDelayMs: options.maxDelayMs ?? 30_000 };
  const result: PurgeRunResult = { purged: [], failed: [] };
  if (urls.length === 0) return result;
  for (const target of targets) {
    for (let attempt = 1; ; attempt++) {
      try {
        await purgeInBatches(target, urls, { reference: `${options.reference}-${target.spec.replace(/[^A-Za-z0-9_-]+/g, '_')}` });
        result.purged.push(target.spec);
        break;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (attempt >= attempts) {
          result.failed.push({ target: target.spec, error: message });
          break;
        }
        const delayMs = retryDelay(attempt, limits, error instanceof PurgeError ? error.retryAfterMs : undefined, options.random);
        options.onRetry?.({ target: target.spec, attempt, delayMs, error: message });
        await sleep(delayMs);
      }
    }
  }
  return result;
}
