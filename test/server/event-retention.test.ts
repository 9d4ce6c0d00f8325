/**
 * The retention of raw analytics events: a pass at start and one every hour, each removing what
 * was received before the window; none at all when the retention is off (0 days).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { DEFAULT_EVENT_RETENTION_DAYS, EVENT_RETENTION_EVERY_MS, startEventRetention } from '../../src/server/event-retention.js';

const DAY = 24 * 60 * 60 * 1000;

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-06-01T00:00:00.000Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('event retention', () => {
  it('removes at start, then every hour, the events received before the window', async () => {
    const cutoffs: string[] = [];
    const retention = startEventRetention({
      days: DEFAULT_EVENT_RETENTION_DAYS,
      prune: (before) => {
        cutoffs.push(before.toISOString());
        return Promise.resolve(1);
      },
      onError: (error) => {
        throw error;
      },
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(cutoffs).toEqual([new Date(Date.parse('2026-06-01T00:00:00.000Z') - 400 * DAY).toISOString()]);
    await vi.advanceTimersByTimeAsync(2 * EVENT_RETENTION_EVERY_MS);
    expect(cutoffs).toHaveLength(3);
    expect(cutoffs[2]).toBe(new Date(Date.parse('2026-06-01T02:00:00.000Z') - 400 * DAY).toISOString());
    await retention.stop();
    await vi.advanceTimersByTimeAsync(5 * EVENT_RETENTION_EVERY_MS);
    expect(cutoffs).toHaveLength(3);
  });

  it('keeps every event with 0 days', async () => {
    const prune = vi.fn(() => Promise.resolve(0));
    const retention = startEventRetention({ days: 0, prune, onError: () => undefined });
    await vi.advanceTimersByTimeAsync(10 * EVENT_RETENTION_EVERY_MS);
    expect(await retention.run()).toBe(0);
    expect(prune).not.toHaveBeenCalled();
    await retention.stop();
  });

  it('reports a failed pass and tries again at the next one', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const retention = startEventRetention({
      days: 30,
      prune: () => (++calls === 1 ? Promise.reject(new Error('database gone')) : Promise.resolve(2)),
      onError: (error) => errors.push(error),
    });
    await vi.advanceTimersByTimeAsync(EVENT_RETENTION_EVERY_MS);
    expect(errors).toHaveLength(1);
    expect(calls).toBe(2);
    await retention.stop();
  });
});
