/**
 * Uploads share registry builds: however many arrive while a build runs, they wait for one more
 * build, which sees all of them.
 */
import { describe, expect, it } from 'vitest';

import { coalesced } from '../../src/server/publisher.js';

/** A task whose runs finish when the test says so. */
function controlledTask() {
  const runs: { release: () => void; fail: (error: Error) => void }[] = [];
  const task = () =>
    new Promise<void>((resolve, reject) => {
      runs.push({ release: resolve, fail: reject });
    });
  return { runs, task };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesced builds', () => {
  it('run one build for a call while none runs', async () => {
    const { runs, task } = controlledTask();
    const build = coalesced(task);
    const done = build();
    expect(runs).toHaveLength(1);
    runs[0]?.release();
    await done;
    expect(runs).toHaveLength(1);
  });

  it('make every call that arrives during a build wait for one shared next build', async () => {
    const { runs, task } = controlledTask();
    const build = coalesced(task);
    const first = build();
    const waiting = [build(), build(), build()];
    let settled = 0;
    for (const call of waiting) void call.then(() => settled++);
    runs[0]?.release();
    await first;
    await settle();
    expect(runs).toHaveLength(2);
    expect(settled).toBe(0);
    runs[1]?.release();
    await Promise.all(waiting);
    expect(runs).toHaveLength(2);
  });

  it('start the next build even when the running one fails, and report each failure to its own callers', async () => {
    const { runs, task } = controlledTask();
    const build = coalesced(task);
    const first = build();
    const second = build();
    runs[0]?.fail(new Error('disk full'));
    await expect(first).rejects.toThrow('disk full');
    await settle();
    expect(runs).toHaveLength(2);
    runs[1]?.release();
    await expect(second).resolves.toBeUndefined();
  });

  it('start a new build for a call after the others finished', async () => {
    const { runs, task } = controlledTask();
    const build = coalesced(task);
    const first = build();
    runs[0]?.release();
    await first;
    const later = build();
    expect(runs).toHaveLength(2);
    runs[1]?.release();
    await later;
  });
});
