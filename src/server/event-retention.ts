/**
 * The retention of raw analytics events: events received more than `days` days ago are removed
 * (with the per-day marks of which client downloaded what), at start and every hour after; the
 * aggregates analytics records and `stats` are made from keep every count, so no number changes.
 * Bounds the events table (and a store copy) by the traffic of the window, not of all time.
 * Timers are unref'd and stopped when the server closes.
 */

import { oneAtATime } from '../core/concurrency.js';

/** How many days of raw events are kept by default. */
export const DEFAULT_EVENT_RETENTION_DAYS = 400;
/** How often the server removes the events that left the window. */
export const EVENT_RETENTION_EVERY_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface EventRetentionOptions {
  /** Days of raw events kept; 0 keeps them all. */
  days: number;
  /** Removes the events received before an instant; resolves with how many went. */
  prune: (before: Date) => Promise<number>;
  onPruned?: (removed: number, before: Date) => void;
  onError: (error: unknown) => void;
  /** The clock (tests); default Date.now. */
  now?: () => number;
  everyMs?: number;
}

export interface EventRetention {
  /** One pass now; resolves with how many events went (0 when the retention is off). */
  run(): Promise<number>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** The instant before which events are removed at `now`, keeping `days` days. */
export function retentionCutoff(now: number, days: number): Date {
  return new Date(now - days * DAY_MS);
}

/** Starts the retention: a first pass at once (in the background), then one every `everyMs`. */
export function startEventRetention(options: EventRetentionOptions): EventRetention {
  const now = options.now ?? Date.now;
  const pruning = oneAtATime(async () => {
    const before = retentionCutoff(now(), options.days);
    const removed = await options.prune(before);
    if (removed > 0) options.onPruned?.(removed, before);
    return removed;
  });
  const run = (): Promise<number> => (options.days <= 0 ? Promise.resolve(0) : pruning.run());
  const pass = (): void => {
    run().catch(options.onError);
  };
  const timer = options.days > 0 ? setInterval(pass, options.everyMs ?? EVENT_RETENTION_EVERY_MS) : undefined;
  timer?.unref();
  pass();
  return {
    run,
    stop: async () => {
      if (timer) clearInterval(timer);
      await pruning.idle();
    },
  };
}
