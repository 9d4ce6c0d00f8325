/**
 * Outgoing webhooks, one job a module (the protocol for receivers: docs/registry-hosting.md,
 * "Webhooks"): the events and their bodies (`webhooks/payloads.ts`), what clients see
 * (`webhooks/views.ts`), signatures (`webhooks/signing.ts`), where a delivery may go
 * (`webhooks/targets.ts`), one HTTP attempt and what it comes to (`webhooks/attempt.ts`), and the
 * outbox dispatcher (`webhooks/dispatcher.ts`). This module is their public face.
 */
export { WEBHOOK_EVENTS, registryUpdatedData, webhookEvent, type WebhookEvent, type WebhookPayload } from './webhooks/payloads.js';
export { publicWebhook, publicDelivery, type WebhookView, type DeliveryView } from './webhooks/views.js';
export { signWebhookPayload, signWebhookBody, verifyWebhookSignature, DEFAULT_TIMESTAMP_TOLERANCE_SECONDS, type VerifyWebhookOptions } from './webhooks/signing.js';
export { pointsAtSelf } from './webhooks/targets.js';
export { noAnswerError } from './webhooks/attempt.js';
export {
  WebhookDispatcher,
  WEBHOOK_USER_AGENT,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MIN_RETRY_DELAY_MS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_CLOSE_GRACE_MS,
  DEFAULT_POLL_INTERVAL_MS,
  DELIVERIES_KEPT,
  type WebhookDispatcherOptions,
  type WebhookLogger,
} from './webhooks/dispatcher.js';
