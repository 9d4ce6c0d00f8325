/**
 * Several server instances on one shared storage (PostgreSQL and a bucket) behave as one registry:
 * each builds its own copy of the static registry, and rebuilds it whenever another instance changed
 * what the registry shows (a version committed or recovered, a lifecycle change), as the storage's
 * `watchChanges` tells. A storage without `watchChanges` has one process: nothing to follow.
 *
 * What is shared needs nothing here: tokens (and their revocation) are read from the storage on
 * every request, the webhook outbox is claimed row by row (`FOR UPDATE SKIP LOCKED`), uploads are
 * reserved in the database. Rate limits are counted per instance (rate-limit.ts).
 */
import type { RegistryStorage } from '../store/types.js';

export interface PeerFollower {
  /** Stops listening and waits for a rebuild it started. */
  stop(): Promise<void>;
}

export interface FollowPeersOptions {
  storage: Pick<RegistryStorage, 'watchChanges'>;
  /** Rebuilds the registry (coalesced with the instance's own builds). */
  rebuild: () => Promise<void>;
  onError: (error: unknown) => void;
}

/** Subscribes to the other instances' changes: each one rebuilds the registry; undefined when the storage has one process. */
export async function followPeers(options: FollowPeersOptions): Promise<PeerFollower | undefined> {
  const { storage } = options;
  if (!storage.watchChanges) return undefined;
  let stopped = false;
  let last: Promise<void> = Promise.resolve();
  const unsubscribe = await storage.watchChanges(() => {
    if (stopped) return;
    // A burst of notifications costs one build in progress and one more (coalesced).
    last = options.rebuild().catch(options.onError);
  });
  return {
    async stop() {
      stopped = true;
      await unsubscribe();
      await last;
    },
  };
}
