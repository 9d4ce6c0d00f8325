/**
 * When the registry's download numbers are rebuilt (server/stats-refresh.ts): soon after a
 * download, a burst of downloads as one rebuild, at most one rebuild per gap under a steady stream,
 * a regular look for other instances' downloads, and nothing once stopped.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { startStatsRefresh } from '../../src/server/stats-refresh.js';

describe('the stats refresh', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  async function refresh(everyMs = 60_000) {
    let downloads = 0;
    const rebuilds: number[] = [];
    const stats = await startStatsRefresh({
      everyMs,
      settleMs: 2_000,
      minGapMs: 30_000,
      count: () => Promise.resolve(downloads),
      rebuild: () => {
        rebuilds.push(Date.now());
        return Promise.resolve();
      },
      onError: (error) => {
        throw error;
      },
      now: () => Date.now(),
    });
    const download = (): void => {
      downloads += 1;
      stats.soon();
    };
    return { stats, rebuilds, download, start: Date.now() };
  }

  it('rebuilds once, settleMs after the first of a burst of downloads', async () => {
    const { rebuilds, download, start } = await refresh();
    download();
    await vi.advanceTimersByTimeAsync(500);
    download();
    download();
    await vi.advanceTimersByTimeAsync(1_499);
    expect(rebuilds).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(rebuilds).toEqual([start + 2_000]);
    await vi.advanceTimersByTimeAsync(60_000 - 2_000 - 1);
    // The regular look finds nothing new.
    await vi.advanceTimersByTimeAsync(1);
    expect(rebuilds).toHaveLength(1);
  });

  it('keeps minGapMs between two looks asked for by downloads', async () => {
    const { rebuilds, download, start } = await refresh();
    download();
    await vi.advanceTimersByTimeAsync(2_000);
    download();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(rebuilds).toEqual([start + 2_000]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(rebuilds).toEqual([start + 2_000, start + 32_000]);
  });

  it('looks every everyMs for downloads it was not told of (another instance), and never once stopped', async () => {
    const { stats, rebuilds, download, start } = await refresh(10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(rebuilds).toEqual([]);
    download();
    await stats.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(rebuilds).toEqual([]);
    expect(Date.now()).toBe(start + 70_000);
  });

  it('with everyMs 0 never rebuilds, even after downloads', async () => {
    const { rebuilds, download } = await refresh(0);
    download();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(rebuilds).toEqual([]);
  });
});
