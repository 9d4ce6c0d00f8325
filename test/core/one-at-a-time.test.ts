/** A periodic job runs once at a time: a call while it runs joins that run (core/concurrency.ts `oneAtATime`). */
import { describe, expect, it } from 'vitest';

import { oneAtATime } from '../../src/core/concurrency.js';

describe('oneAtATime', () => {
  it('joins a call made while a run is under way, and starts a new run after it', async () => {
    let started = 0;
    let finish: (value: number) => void = () => undefined;
    const job = oneAtATime(() => {
      started++;
      return new Promise<number>((resolve) => (finish = resolve));
    });
    const first = job.run();
    const second = job.run();
    expect(second).toBe(first);
    expect(started).toBe(1);
    finish(7);
    expect(await second).toBe(7);
    const third = job.run();
    expect(started).toBe(2);
    finish(8);
    expect(await third).toBe(8);
  });

  it('waits in idle() for the run under way, whose failure stays its callers', async () => {
    let fail: (error: Error) => void = () => undefined;
    const job = oneAtATime(() => new Promise<number>((_resolve, reject) => (fail = reject)));
    await job.idle();
    const running = job.run();
    let idle = false;
    const waited = job.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    fail(new Error('the store is closed'));
    await expect(running).rejects.toThrow('the store is closed');
    await waited;
    expect(idle).toBe(true);
    expect(job.run()).not.toBe(running);
  });
});
