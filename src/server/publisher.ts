/**
 * What happens after a change: the server's registry is rebuilt (builds coalesced; a failed build,
 * or one that left a template out, tried again with backoff until one succeeds whole), then the
 * static copy in the bucket is written (a job of its own, tried again with backoff until it is
 * written), the CDN purged of what changed, and `registry.updated` announced. Each step after the
 * build runs whatever became of the others: a failed copy does not lose the announcement, a failed
 * announcement does not lose the copy or the purge.
 *
 * The steps themselves (the build under the build lock, the copy, the purge outbox, the webhook
 * outbox) are given by the server (app.ts), so this module holds only the order and the state
 * between changes, and is driven by fakes in its tests.
 */
import type { BackoffLimits } from '../core/retry.js';
import { failedTemplateMessage, type FailedTemplate } from '../registry/build.js';
import { rebuildRetry, type RebuildRetry } from './rebuild-retry.js';

/**
 * What raised a build, and so what follows it: `local`, a change of this instance (an upload, a
 * lifecycle change): purged and announced; `peer`, another instance's change: purged, not announced
 * (that instance announces it); `stats`, new download numbers: announced, not purged (the numbers
 * show within the files' max-age); `start`, the build at start-up: neither.
 */
export type ChangeKind = 'start' | 'local' | 'peer' | 'stats';

const FOLLOW_UP: Record<ChangeKind, { announce: boolean; purge: boolean }> = {
  start: { announce: false, purge: false },
  local: { announce: true, purge: true },
  peer: { announce: false, purge: true },
  stats: { announce: true, purge: false },
};

/** What a build of the server's registry came to (registry/build.ts's result, as far as the publisher reads it). */
export interface BuiltRegistry {
  /** registry.json's ETag: a build that changes it changed what clients read. */
  etag: string;
  /** The files the build wrote and removed (their paths under the registry's root). */
  written: readonly string[];
  removed: readonly string[];
  /** The templates whose files could not be written (they keep their previous files). */
  failed: readonly FailedTemplate[];
}

/** The files a copy wrote and removed. */
export interface CopyResult {
  written: readonly string[];
  removed: readonly string[];
}

export interface PublisherSteps<B extends BuiltRegistry = BuiltRegistry> {
  /** Builds the server's registry and makes it the one served; throws when the build failed. */
  build(): Promise<B>;
  /** Writes the static copy (a bucket for a CDN); absent without one. */
  copy?: () => Promise<CopyResult>;
  /** Writes a CDN purge of these paths to the purge outbox; absent without purge targets. */
  purge?: (paths: readonly string[]) => Promise<unknown>;
  /** Raises `registry.updated` for this build. */
  announce(built: B): Promise<unknown>;
  /** Builds are whole again after a failure: the versions stored meanwhile are listed (their deliveries may go). */
  caughtUp(): void;
}

export interface PublisherLogger {
  error(details: object, message: string): void;
}

export interface PublisherOptions<B extends BuiltRegistry = BuiltRegistry> {
  steps: PublisherSteps<B>;
  /** The backoff of a failed build's and a failed copy's retries (`DEFAULT_REBUILD_RETRY`). */
  retry?: Partial<BackoffLimits>;
  logger: PublisherLogger;
  /** Where the copy is written, for the log. */
  copyLocation?: string;
  /** The jitter's source (tests). */
  random?: () => number;
}

export interface Publisher {
  /**
   * A change of `kind` was stored: resolves when a build that sees it is done (the registry served
   * lists it), rejects when that build failed (it is tried again in the background). The copy, the
   * purge and the announcement follow without holding up the caller.
   */
  changed(kind: ChangeKind): Promise<void>;
  /** Why the last build left template `id` out; undefined when it did not. */
  failure(id: string): string | undefined;
  /** Settles (never rejects) when the copy in progress, and what follows it, is done. */
  idle(): Promise<void>;
  /** No more retries (the server is closing). */
  stop(): void;
}

/**
 * Shares builds between callers: a call while no build runs starts one; calls while one runs all
 * wait for the single build that starts after it (it sees everything committed before they called).
 * So a caller waits for at most the build in progress and one more, however many arrive at once.
 */
export function coalesced(task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const run = task().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (!running) return start();
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
}

export function createPublisher<B extends BuiltRegistry>(options: PublisherOptions<B>): Publisher {
  const { steps, logger } = options;
  const purgeStep = steps.purge;
  const retryOptions = { ...(options.retry ? { limits: options.retry } : {}), ...(options.random ? { random: options.random } : {}), onError: () => undefined };
  const inSeconds = (retry: RebuildRetry): number => Math.round((retry.plannedInMs() ?? 0) / 1000);

  // What the next build is followed by: the changes it sees, or a failed build's left to its retry.
  let announceNext = false;
  let purgeNext = false;
  /** registry.json's ETag after the last build; undefined before the first one. */
  let servedEtag: string | undefined;
  /** A build failed or left a template out since the last whole one. */
  let behind = false;
  let lastFailed = new Map<string, string>();

  // The copy: a job that waits until it is written (`copyPending`), with the purge it owes.
  let copyPending = false;
  let copyPurge = false;
  let copying: Promise<void> = Promise.resolve();

  /** Runs a step after the build on its own: its failure is logged and touches no other step. */
  const alone = (what: string, step: () => Promise<unknown>): Promise<void> =>
    step().then(
      () => undefined,
      (error: unknown) => logger.error({ err: error }, `${what} failed`),
    );

  const buildRetry = rebuildRetry({ ...retryOptions, rebuild: () => build() });
  const copyRetry = rebuildRetry({ ...retryOptions, rebuild: () => runCopy() });

  const copy = coalesced(async () => {
    if (!steps.copy || !copyPending) return;
    copyPending = false;
    const purge = copyPurge;
    copyPurge = false;
    let result: CopyResult;
    try {
      result = await steps.copy();
    } catch (error) {
      copyPending = true;
      copyPurge ||= purge;
      copyRetry.failed();
      logger.error({ err: error }, `publishing the static registry to ${options.copyLocation ?? 'its output'} failed; tried again in ${inSeconds(copyRetry)} s`);
      throw error;
    }
    copyRetry.succeeded();
    // The CDN is in front of the copy: what it changed is purged (another instance's copy of the
    // same change finds nothing to write, and purges nothing).
    if (purge && purgeStep) await alone('writing the CDN purge of the static copy', () => purgeStep([...result.written, ...result.removed]));
  });

  /** Runs the copy job (a build's, or its retry); settles, never rejects, when it is done. */
  const runCopy = (): Promise<void> => {
    copying = copy().catch(() => undefined);
    return copying;
  };

  /** Starts the copy when one is owed; settles (never rejects) when it is written or failed. */
  const copyAfterBuild = (changed: boolean, purge: boolean): Promise<void> => {
    if (!steps.copy || !(changed || copyPending)) return Promise.resolve();
    copyPending = true;
    copyPurge ||= purge;
    return runCopy();
  };

  const build = coalesced(async () => {
    const announce = announceNext;
    const purge = purgeNext;
    announceNext = false;
    purgeNext = false;
    let built: B;
    try {
      built = await steps.build();
    } catch (error) {
      // What this build owed is owed by its retry.
      announceNext ||= announce;
      purgeNext ||= purge;
      // A failed first build fails the start (the caller's error); later ones are tried again.
      if (servedEtag !== undefined) {
        behind = true;
        buildRetry.failed();
        logger.error({ err: error }, `building the registry failed; tried again in ${inSeconds(buildRetry)} s`);
      }
      throw error;
    }
    lastFailed = new Map(built.failed.map((failure) => [failure.id, failure.message]));
    if (built.failed.length > 0) {
      // The templates left out are written by the retry, which then owes their purge and announcement.
      announceNext ||= announce;
      purgeNext ||= purge;
      behind = true;
      buildRetry.failed();
      for (const failure of built.failed) logger.error({ template: failure.id }, `${failedTemplateMessage(failure)}; tried again in ${inSeconds(buildRetry)} s`);
    } else {
      buildRetry.succeeded();
      if (behind) steps.caughtUp();
      behind = false;
    }
    const first = servedEtag === undefined;
    const changed = servedEtag !== built.etag;
    servedEtag = built.etag;
    const copied = copyAfterBuild(changed, purge);
    // Without a static copy the CDN is in front of this server: what this build changed is purged.
    if (purge && !steps.copy && purgeStep) void alone('writing the CDN purge', () => purgeStep([...built.written, ...built.removed]));
    // registry.updated when registry.json changed (not for the first build of a start); after the
    // copy is written (or failed), so that a CDN purged on this event fetches the new files.
    if (announce && !first && changed) void copied.then(() => alone('writing registry.updated to the webhook outbox', () => steps.announce(built)));
  });

  return {
    changed(kind) {
      announceNext ||= FOLLOW_UP[kind].announce;
      purgeNext ||= FOLLOW_UP[kind].purge;
      return build();
    },
    failure: (id) => lastFailed.get(id),
    idle: () => copying,
    stop() {
      buildRetry.stop();
      copyRetry.stop();
    },
  };
}
