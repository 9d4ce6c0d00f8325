import type { WebhookStore } from '../../src/store/types.js';

/**
 * Records the status and error of attempt `attemptId` as the dispatcher does (`recordAttemptOutcome`),
 * for an attempt a test started with `startDelivery` outside any outbox delivery: no outbox row moves.
 */
export async function finishAttempt(webhooks: WebhookStore, attemptId: string, status: number | null, error: string | null): Promise<void> {
  await webhooks.recordAttemptOutcome({ attemptId, deliveryId: 'no-outbox-delivery', state: status !== null && status < 300 ? 'delivered' : 'failed', attempts: 1, status, error });
}
