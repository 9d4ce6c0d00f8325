/**
 * Waiting for the server's background outboxes through the store's state, as an operator would see
 * it: the dispatchers have no method that exists only for tests.
 */
import { expect, vi } from 'vitest';

import type { PurgeJob, PurgeStore, WebhookStore } from '../../src/store/types.js';

/** Until the webhook outbox holds no pending delivery: each one delivered, given up or cancelled (an attempt in flight is still pending). */
export async function deliveriesSettled(store: WebhookStore, timeout = 30_000): Promise<void> {
  await vi.waitFor(async () => expect(await store.countPendingDeliveries()).toBe(0), { timeout, interval: 10 });
}

/** Until the purge outbox's jobs (newest first) match `expected` (one object per job, as toMatchObject), and returns them. */
export async function purgesMatch(store: PurgeStore, expected: readonly Partial<PurgeJob>[], timeout = 30_000): Promise<PurgeJob[]> {
  return vi.waitFor(
    async () => {
      const jobs = await store.listPurges();
      expect(jobs).toMatchObject(expected);
      return jobs;
    },
    { timeout, interval: 10 },
  );
}
