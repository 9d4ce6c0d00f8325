/**
 * A failed registry build is tried again with exponential backoff until one succeeds whole; a
 * success stops the retries and starts the backoff over (server/rebuild-retry.ts).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { DEFAULT_REBUILD_RETRY, rebuildRetry } from '../../src/server/rebuild-retry.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A retry whose builds fail `failures` times, then succeed; each build reports back as the server's does. */
function retrying(failures: number) {
  let left = failures;
  const builds: number[] = [];
  const retry = rebuildRetry({
    // No jitter: the delays are the backoff's own.
    random: () => 0.5,
    rebuild: () => {
      builds.push(Date.now());
      if (left-- > 0) {
        retry.failed();
        return Promise.reject(new Error('ENOSPC'));
      }
      retry.succeeded();
      return Promise.resolve();
    },
    onError: () => undefined,
  });
  return { retry, builds };
}

describe('rebuild retries', () => {
  it('tries a failed build again after 1 s, 2 s, 4 s ... until one succeeds, then stops', async () => {
    const start = Date.now();
    const { retry, builds } = retrying(3);
    retry.failed();
    expect(retry.plannedInMs()).toBe(1000);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(builds.map((at) => at - start)).toEqual([1000, 3000, 7000, 15_000]);
    expect(retry.plannedInMs()).toBeUndefined();
  });

  it('never waits longer than the cap', async () => {
    const { retry, builds } = retrying(100);
    retry.failed();
    await vi.advanceTimersByTimeAsync(2 * 60 * 60_000);
    const gaps = builds.slice(1).map((at, i) => at - (builds[i] as number));
    expect(Math.max(...gaps)).toBe(DEFAULT_REBUILD_RETRY.maxDelayMs);
    retry.stop();
  });

  it('plans one try for several failures, and a success in between (another build) cancels it', async () => {
    const { retry, builds } = retrying(0);
    retry.failed();
    retry.failed();
    retry.failed();
    await vi.advanceTimersByTimeAsync(1000);
    expect(builds).toHaveLength(1);
    retry.failed();
    retry.succeeded();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(builds).toHaveLength(1);
    // After a success the backoff starts over at its first delay.
    retry.failed();
    expect(retry.plannedInMs()).toBe(1000);
    retry.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(builds).toHaveLength(1);
  });
});
