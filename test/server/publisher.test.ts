/**
 * What happens after a change (server/publisher.ts), driven with fake steps and fake timers: builds
 * coalesced, a failed build tried again with backoff, and each step after the build (the static
 * copy, the CDN purge, registry.updated) done whatever became of the others.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { FailedTemplate } from '../../src/registry/build.js';
import { createPublisher, type BuiltRegistry, type ChangeKind, type CopyResult, type PublisherSteps } from '../../src/server/publisher.js';

/** A step whose calls the test answers one at a time (or that answers at once with `auto`). */
function controlled<T>(auto?: () => T) {
  const calls: { resolve: (value: T) => void; reject: (error: Error) => void }[] = [];
  const fn = vi.fn(
    () =>
      new Promise<T>((resolve, reject) => {
        if (auto) resolve(auto());
        else calls.push({ resolve, reject });
      }),
  );
  return { fn, calls };
}

/** Lets every settled promise run its callbacks. */
async function flush(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await Promise.resolve();
}

interface Fakes {
  builds: number;
  /** What the next builds throw or leave out, in order. */
  outcomes: ('ok' | 'throw' | 'partial')[];
  copies: ('ok' | 'throw')[];
  purged: string[][];
  announced: string[];
  caughtUp: number;
  errors: string[];
}

function fakeSteps(fakes: Fakes, options: { copy?: boolean; failAnnounce?: boolean; failPurge?: boolean } = {}): PublisherSteps {
  const steps: PublisherSteps = {
    build: () => {
      fakes.builds += 1;
      const outcome = fakes.outcomes.shift() ?? 'ok';
      if (outcome === 'throw') return Promise.reject(new Error('ENOSPC: no space left on device'));
      const failed: FailedTemplate[] = outcome === 'partial' ? [{ id: 'left-out', message: 'ENOSPC', kept: false }] : [];
      const built: BuiltRegistry = { etag: `"build-${fakes.builds}"`, written: [`registry.json#${fakes.builds}`], removed: [], failed };
      return Promise.resolve(built);
    },
    purge: (paths) => {
      if (options.failPurge) return Promise.reject(new Error('the purge outbox is unavailable'));
      fakes.purged.push([...paths]);
      return Promise.resolve();
    },
    announce: (built) => {
      if (options.failAnnounce) return Promise.reject(new Error('the webhook outbox is unavailable'));
      fakes.announced.push(built.etag);
      return Promise.resolve();
    },
    caughtUp: () => {
      fakes.caughtUp += 1;
    },
  };
  if (options.copy) {
    steps.copy = (): Promise<CopyResult> => {
      const outcome = fakes.copies.shift() ?? 'ok';
      if (outcome === 'throw') return Promise.reject(new Error('the bucket is unreachable'));
      return Promise.resolve({ written: ['copy/registry.json'], removed: ['copy/archives/old.tgz'] });
    };
  }
  return steps;
}

function newFakes(): Fakes {
  return { builds: 0, outcomes: [], copies: [], purged: [], announced: [], caughtUp: 0, errors: [] };
}

function publisherOf(fakes: Fakes, steps: PublisherSteps) {
  return createPublisher({
    steps,
    retry: { minDelayMs: 1000, maxDelayMs: 60_000 },
    random: () => 0,
    logger: { error: (_details, message) => fakes.errors.push(message) },
    copyLocation: 's3://bucket/site',
  });
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the publisher', () => {
  it('coalesces many changes into one build after the one running, and every caller waits for it', async () => {
    const build = controlled<BuiltRegistry>();
    const announced: string[] = [];
    const publisher = createPublisher({
      steps: { build: build.fn, announce: (built) => Promise.resolve(announced.push(built.etag)), caughtUp: () => undefined },
      logger: { error: () => undefined },
    });
    const start = publisher.changed('start');
    build.calls[0]?.resolve({ etag: '"a"', written: [], removed: [], failed: [] });
    await start;

    const first = publisher.changed('local');
    const waiting = Array.from({ length: 5 }, () => publisher.changed('local'));
    let settled = 0;
    for (const change of waiting) void change.then(() => (settled += 1));
    expect(build.fn).toHaveBeenCalledTimes(2);
    build.calls[1]?.resolve({ etag: '"b"', written: [], removed: [], failed: [] });
    await first;
    await flush();
    // The five changes made while a build ran wait for the one build after it.
    expect(settled).toBe(0);
    expect(build.fn).toHaveBeenCalledTimes(3);
    build.calls[2]?.resolve({ etag: '"c"', written: [], removed: [], failed: [] });
    await Promise.all(waiting);
    expect(build.fn).toHaveBeenCalledTimes(3);
    expect(announced).toEqual(['"b"', '"c"']);
    publisher.stop();
  });

  it('tries a failed build again with backoff, and the retry does what the failed build owed', async () => {
    const fakes = newFakes();
    const publisher = publisherOf(fakes, fakeSteps(fakes));
    await publisher.changed('start');
    fakes.outcomes.push('throw', 'throw');
    await expect(publisher.changed('local')).rejects.toThrow(/ENOSPC/);
    expect(fakes.errors).toEqual(['building the registry failed; tried again in 1 s']);
    expect(fakes.purged).toEqual([]);
    expect(fakes.announced).toEqual([]);

    await vi.advanceTimersByTimeAsync(999);
    expect(fakes.builds).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(fakes.builds).toBe(3);
    // The second failure doubles the wait (1.5 s with no jitter: 2 s × 0.75).
    expect(fakes.errors.at(-1)).toBe('building the registry failed; tried again in 2 s');
    await vi.advanceTimersByTimeAsync(1500);
    expect(fakes.builds).toBe(4);
    await flush();
    expect(fakes.purged).toEqual([['registry.json#4']]);
    expect(fakes.announced).toEqual(['"build-4"']);
    // The versions stored while builds failed are listed now: their deliveries may go.
    expect(fakes.caughtUp).toBe(1);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(fakes.builds).toBe(4);
    publisher.stop();
  });

  it('tries again a build that left a template out, until one writes it, and names it meanwhile', async () => {
    const fakes = newFakes();
    const publisher = publisherOf(fakes, fakeSteps(fakes));
    await publisher.changed('start');
    fakes.outcomes.push('partial');
    await publisher.changed('local');
    expect(publisher.failure('left-out')).toBe('ENOSPC');
    expect(fakes.errors.at(-1)).toMatch(/^template left-out could not be written \(ENOSPC\).*; tried again in 1 s$/);
    await vi.advanceTimersByTimeAsync(1000);
    await flush();
    expect(fakes.builds).toBe(3);
    expect(publisher.failure('left-out')).toBeUndefined();
    // The retry wrote the template: purged and announced too.
    expect(fakes.purged).toEqual([['registry.json#2'], ['registry.json#3']]);
    expect(fakes.announced).toEqual(['"build-2"', '"build-3"']);
    publisher.stop();
  });

  it('a failed static copy does not lose the announcement, and is written (and purged) by its own retry', async () => {
    const fakes = newFakes();
    const publisher = publisherOf(fakes, fakeSteps(fakes, { copy: true }));
    await publisher.changed('start');
    await publisher.idle();
    fakes.copies.push('throw');
    await publisher.changed('local');
    await publisher.idle();
    await flush();
    expect(fakes.errors).toEqual(['publishing the static registry to s3://bucket/site failed; tried again in 1 s']);
    expect(fakes.announced).toEqual(['"build-2"']);
    expect(fakes.purged).toEqual([]);
    // No further change: the copy is written by its retry, and what it changed purged.
    await vi.advanceTimersByTimeAsync(1000);
    await publisher.idle();
    await flush();
    expect(fakes.builds).toBe(2);
    expect(fakes.purged).toEqual([['copy/registry.json', 'copy/archives/old.tgz']]);
    publisher.stop();
  });

  it('a failed announcement loses neither the copy nor its purge; a failed purge does not lose the announcement', async () => {
    const withCopy = newFakes();
    const first = publisherOf(withCopy, fakeSteps(withCopy, { copy: true, failAnnounce: true }));
    await first.changed('start');
    await first.changed('local');
    await first.idle();
    await flush();
    expect(withCopy.purged).toEqual([['copy/registry.json', 'copy/archives/old.tgz']]);
    expect(withCopy.errors).toEqual(['writing registry.updated to the webhook outbox failed']);
    first.stop();

    const noCopy = newFakes();
    const second = publisherOf(noCopy, fakeSteps(noCopy, { failPurge: true }));
    await second.changed('start');
    await second.changed('local');
    await flush();
    expect(noCopy.announced).toEqual(['"build-2"']);
    expect(noCopy.errors).toEqual(['writing the CDN purge failed']);
    second.stop();
  });

  it.each<[ChangeKind, { purged: boolean; announced: boolean }]>([
    ['local', { purged: true, announced: true }],
    ['peer', { purged: true, announced: false }],
    ['stats', { purged: false, announced: true }],
    ['start', { purged: false, announced: false }],
  ])('after a %s change: purged %o', async (kind, expected) => {
    const fakes = newFakes();
    const publisher = publisherOf(fakes, fakeSteps(fakes));
    await publisher.changed('start');
    expect(fakes.purged).toEqual([]);
    expect(fakes.announced).toEqual([]);
    await publisher.changed(kind);
    await flush();
    expect(fakes.purged.length > 0).toBe(expected.purged);
    expect(fakes.announced.length > 0).toBe(expected.announced);
    publisher.stop();
  });
});
