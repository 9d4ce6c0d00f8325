/**
 * Keeps the registry's download numbers (`stats` of its entries) current without waiting for the
 * next publish: every `everyMs` it rebuilds the registry, but only when events arrived since the
 * last look (a count of the stored download events, cheap to read). The timer is unref'd (it
 * never keeps a process alive) and stopped when the server closes.
 */

/** How often the server looks for new download events by default: 5 minutes. */
export const DEFAULT_STATS_REFRESH_MS = 5 * 60 * 1000;

export interface StatsRefreshOptions {
  /** Milliseconds between looks; 0 turns the refresh off. */
  everyMs: number;
  /** How many download events are stored. */
  count: () => Promise<number>;
  /** Rebuilds the registry (shared with uploads: builds never overlap). */
  rebuild: () => Promise<void>;
  onError: (error: unknown) => void;
}

export interface StatsRefresh {
  /** One look: rebuilds when the count moved; resolves true when it rebuilt. */
  check(): Promise<boolean>;
  /** Stops the timer and waits for a look in progress. */
  stop(): Promise<void>;
}

/** Starts the refresh; the count at start is taken as already built. */
export async function startStatsRefresh(options: StatsRefreshOptions): Promise<StatsRefresh> {
  let built = await options.count();
  let running: Promise<boolean> | undefined;
  const check = (): Promise<boolean> => {
    running ??= (async () => {
      const count = await options.count();
      if (count === built) return false;
      await options.rebuild();
      built = count;
      return true;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer =
    options.everyMs > 0
      ? setInterval(() => {
          check().catch(options.onError);
        }, options.everyMs)
      : undefined;
  timer?.unref();
  return {
    check,
    stop: async () => {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
