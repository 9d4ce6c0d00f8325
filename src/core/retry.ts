/**
 * The one backoff policy of every outgoing request that is retried (uploads to a registry,
 * webhook deliveries): exponential delays with jitter, never shorter than a `Retry-After` the
 * other side asked for, never longer than a cap.
 */

export interface BackoffLimits {
  /** The first delay (and the shortest one). */
  minDelayMs: number;
  /** No delay is longer than this, `Retry-After` included. */
  maxDelayMs: number;
}

/**
 * Milliseconds a `Retry-After` header asks for: delay-seconds or an HTTP date (in the past: 0).
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Wait before retry number `retry` (1-based): `min * 2^(retry-1)` with ±25% jitter, at least
 * `min`, at least `retryAfterMs` when the other side asked for it, and never above `max`.
 */
export function retryDelay(retry: number, limits: BackoffLimits, retryAfterMs?: number, random: () => number = Math.random): number {
  const exponential = limits.minDelayMs * 2 ** Math.max(0, retry - 1);
  let delay = Math.max(limits.minDelayMs, exponential * (0.75 + random() * 0.5));
  if (retryAfterMs !== undefined) delay = Math.max(delay, retryAfterMs);
  return Math.round(Math.min(limits.maxDelayMs, delay));
}
