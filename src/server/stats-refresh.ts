/**
 * Keeps the registry's download numbers (`stats` of its entries) current without waiting for the
 * next publish. The server looks at the number of download events ever recorded (one sum over the
 * aggregates' versions: cheap, and it only grows, whatever the retention removes) and rebuilds the
 * registry only when it moved:
 *
 * - soon after a download this server recorded (`soon()`): after `settleMs`, so that a burst of
 *   downloads is one rebuild, and at most once per `minGapMs`, so that a steady stream of downloads
 *   costs one rebuild per gap, not one per download;
 * - every `everyMs` in any case, for the downloads other instances on the same database recorded.
 *
 * Timers are unref'd (they never keep a process alive) and stopped when the server closes.
 */

import { oneAtATime } from '../core/concurrency.js';

/** How often the server looks for new download events by default: every minute. */
export const DEFAULT_STATS_REFRESH_MS = 60 * 1000;
/** How long after a download the server looks by default (more downloads in between join it). */
export const DEFAULT_STATS_SETTLE_MS = 2 * 1000;
/** The shortest time between two looks that downloads ask for, by default. */
export const DEFAULT_STATS_MIN_GAP_MS = 30 * 1000;

export interface StatsRefreshOptions {
  /** Milliseconds between regular looks; 0 turns the refresh off (`soon()` included). */
  everyMs: number;
  /** Milliseconds from a download to the look it asks for (default DEFAULT_STATS_SETTLE_MS). */
  settleMs?: number;
  /** Least milliseconds between two looks asked for by downloads (default DEFAULT_STATS_MIN_GAP_MS). */
  minGapMs?: number;
  /** How many download events were ever recorded. */
  count: () => Promise<number>;
  /** Rebuilds the registry (shared with uploads: builds never overlap). */
  rebuild: () => Promise<void>;
  onError: (error: unknown) => void;
  /** The clock (tests); default Date.now. */
  now?: () => number;
}

export interface StatsRefresh {
  /** One look: rebuilds when the count moved; resolves true when it rebuilt. */
  check(): Promise<boolean>;
  /** A download was recorded: look soon (see the module comment); does nothing when one is planned. */
  soon(): void;
  /** Stops the timers and waits for a look in progress. */
  stop(): Promise<void>;
}

/** Starts the refresh; the count at start is taken as already built. */
export async function startStatsRefresh(options: StatsRefreshOptions): Promise<StatsRefresh> {
  const now = options.now ?? Date.now;
  const settleMs = options.settleMs ?? DEFAULT_STATS_SETTLE_MS;
  const minGapMs = options.minGapMs ?? DEFAULT_STATS_MIN_GAP_MS;
  let built = await options.count();
  let lastLook = Number.NEGATIVE_INFINITY;
  let planned: NodeJS.Timeout | undefined;
  let stopped = options.everyMs <= 0;
  const checking = oneAtATime(async () => {
    lastLook = now();
    const count = await options.count();
    if (count === built) return false;
    await options.rebuild();
    built = count;
    return true;
  });
  const check = checking.run;
  const look = (): void => {
    check().catch(options.onError);
  };
  const timer = stopped ? undefined : setInterval(look, options.everyMs);
  timer?.unref();
  return {
    check,
    soon: () => {
      if (stopped || planned) return;
      planned = setTimeout(
        () => {
          planned = undefined;
          look();
        },
        Math.max(settleMs, lastLook + minGapMs - now()),
      );
      planned.unref();
    },
    stop: async () => {
      stopped = true;
      if (timer) clearInterval(timer);
      if (planned) clearTimeout(planned);
      planned = undefined;
      await checking.idle();
    },
  };
}
