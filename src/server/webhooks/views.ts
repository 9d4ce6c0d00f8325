/** What clients see of a webhook and of its delivery log (the secret never). */
import type { DeliveryRecord, StoredWebhook } from '../../store/types.js';

/** A webhook as clients see it: without its secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
}

/** A delivery attempt as clients see it. */
export interface DeliveryView {
  /** The attempt's external id (X-Webhook-Delivery): a UUID version 7, so its text sorts as the attempts were made. */
  id: string;
  /** The external id of the delivery the attempt belongs to (X-Webhook-Id); null for attempts logged before the outbox. */
  deliveryId: string | null;
  event: string;
  status: number | null;
  attemptedAt: string;
  error: string | null;
}

export function publicWebhook(webhook: StoredWebhook): WebhookView {
  return { id: webhook.id, url: webhook.url, events: [...webhook.events], active: webhook.active, createdAt: webhook.createdAt };
}

export function publicDelivery(delivery: DeliveryRecord): DeliveryView {
  return {
    id: delivery.id,
    deliveryId: delivery.deliveryId,
    event: delivery.event,
    status: delivery.status,
    attemptedAt: delivery.attemptedAt,
    error: delivery.error,
  };
}
