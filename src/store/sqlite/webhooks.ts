import type Database from 'better-sqlite3';

import { newAttemptId } from '../attempt-ids.js';
import type { AttemptOutcome, DeliveryRecord, NewWebhook, OutboxDelivery, OutboxUpdate, StoredWebhook, WebhookEventRecord, WebhookStore, WebhookUpdate } from '../types.js';
import { newOutboxDeliveries, newWebhookRecord, subscribedWebhooks, updatedWebhook } from '../records.js';
import { deliveryOf as toDelivery, outboxOf as toOutbox, webhookOf as toWebhook, type DeliveryRow, type OutboxRow, type WebhookRow } from '../rows.js';

// The signing secret is stored as given (deliveries are signed with it, so it cannot be hashed like
// tokens): the store folder must be readable by the server's account only.

/**
 * The oldest pending delivery of its webhook (rows are numbered as they were written): only that one
 * may be claimed, so that a webhook gets its deliveries one at a time, in the order of their events.
 */
const HEAD_OF_WEBHOOK = "NOT EXISTS (SELECT 1 FROM webhook_outbox e WHERE e.webhook_id = o.webhook_id AND e.state = 'pending' AND e.rowid < o.rowid)";

/**
 * Writes one pending outbox delivery of `record` per active webhook subscribed to its event, due at
 * `now`. Synchronous, so that a store method can call it inside its own transaction (the change and
 * its deliveries are written together, or neither is): what `commitVersion` does with its events.
 */
export function insertOutboxEvents(db: Database.Database, records: readonly WebhookEventRecord[], now: Date = new Date()): OutboxDelivery[] {
  if (records.length === 0) return [];
  const webhooks = (db.prepare('SELECT * FROM webhooks WHERE active = 1 ORDER BY created_at, id').all() as WebhookRow[]).map(toWebhook);
  const insert = db.prepare(
    "INSERT INTO webhook_outbox (id, webhook_id, event, body, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
  );
  // Due at `now` (the embedded store keeps due times as milliseconds).
  const created = newOutboxDeliveries(records, webhooks, now);
  for (const d of created) insert.run(d.id, d.webhookId, d.event, d.body, now.getTime(), d.createdAt, now.toISOString());
  return created;
}

/** Webhooks and their delivery log, in SQLite. */
export class SqliteWebhookStore implements WebhookStore {
  constructor(private readonly db: Database.Database) {}

  createWebhook(options: NewWebhook): Promise<StoredWebhook> {
    const webhook = newWebhookRecord(options);
    this.db
      .prepare('INSERT INTO webhooks (id, url, events, secret, active, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(webhook.id, webhook.url, JSON.stringify(webhook.events), webhook.secret, webhook.active ? 1 : 0, webhook.createdAt);
    return Promise.resolve(webhook);
  }

  getWebhook(id: string): Promise<StoredWebhook | undefined> {
    const row = this.db.prepare('SELECT * FROM webhooks WHERE id = ?').get(id) as WebhookRow | undefined;
    return Promise.resolve(row ? toWebhook(row) : undefined);
  }

  listWebhooks(): Promise<StoredWebhook[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM webhooks ORDER BY created_at, id').all() as WebhookRow[]).map(toWebhook));
  }

  async webhooksFor(event: string): Promise<StoredWebhook[]> {
    return subscribedWebhooks(await this.listWebhooks(), event);
  }

  deleteWebhook(id: string): Promise<boolean> {
    const removed = this.db.transaction(() => {
      const deleted = this.db.prepare('DELETE FROM webhooks WHERE id = ?').run(id).changes > 0;
      if (deleted) {
        this.db.prepare('DELETE FROM deliveries WHERE webhook_id = ?').run(id);
        this.db.prepare('DELETE FROM webhook_outbox WHERE webhook_id = ?').run(id);
      }
      return deleted;
    })();
    return Promise.resolve(removed);
  }

  updateWebhook(id: string, update: WebhookUpdate, now: Date = new Date()): Promise<StoredWebhook | undefined> {
    const updated = this.db
      .transaction(() => {
        const row = this.db.prepare('SELECT * FROM webhooks WHERE id = ?').get(id) as WebhookRow | undefined;
        if (!row) return undefined;
        const next = updatedWebhook(toWebhook(row), update, now);
        this.db
          .prepare('UPDATE webhooks SET url = ?, events = ?, secret = ?, active = ?, previous_secret = ?, previous_secret_expires_at = ? WHERE id = ?')
          .run(next.url, JSON.stringify(next.events), next.secret, next.active ? 1 : 0, next.previousSecret ?? null, next.previousSecretExpiresAt ?? null, id);
        return next;
      })
      .immediate();
    return Promise.resolve(updated);
  }

  setWebhookActive(id: string, active: boolean): Promise<boolean> {
    return Promise.resolve(this.db.prepare('UPDATE webhooks SET active = ? WHERE id = ?').run(active ? 1 : 0, id).changes > 0);
  }

  enqueueEvent(event: WebhookEventRecord, now: Date = new Date()): Promise<OutboxDelivery[]> {
    return Promise.resolve(this.db.transaction(() => insertOutboxEvents(this.db, [event], now)).immediate());
  }

  claimDueDeliveries(now: Date, limit: number, leaseMs: number): Promise<OutboxDelivery[]> {
    const claimed = this.db
      .transaction(() => {
        const rows = this.db
          .prepare(`SELECT o.* FROM webhook_outbox o WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND ${HEAD_OF_WEBHOOK} ORDER BY o.next_attempt_at, o.rowid LIMIT ?`)
          .all(now.getTime(), limit) as OutboxRow[];
        const lease = this.db.prepare('UPDATE webhook_outbox SET next_attempt_at = ? WHERE id = ?');
        for (const row of rows) lease.run(now.getTime() + leaseMs, row.id);
        return rows.map(toOutbox);
      })
      .immediate();
    return Promise.resolve(claimed);
  }

  nextDueAt(): Promise<Date | undefined> {
    const row = this.db.prepare(`SELECT MIN(o.next_attempt_at) AS due FROM webhook_outbox o WHERE o.state = 'pending' AND ${HEAD_OF_WEBHOOK}`).get() as { due: number | null };
    return Promise.resolve(row.due === null ? undefined : new Date(row.due));
  }

  countPendingDeliveries(): Promise<number> {
    const row = this.db.prepare("SELECT COUNT(*) AS n FROM webhook_outbox WHERE state = 'pending'").get() as { n: number };
    return Promise.resolve(row.n);
  }

  updateOutboxDelivery(id: string, update: OutboxUpdate, now: Date = new Date()): Promise<void> {
    this.db
      .prepare('UPDATE webhook_outbox SET state = ?, attempts = ?, next_attempt_at = ?, updated_at = ?, last_status = ?, last_error = ? WHERE id = ?')
      .run(update.state, update.attempts, (update.nextAttemptAt ?? now).getTime(), now.toISOString(), update.status, update.error, id);
    return Promise.resolve();
  }

  getOutboxDelivery(id: string): Promise<OutboxDelivery | undefined> {
    const row = this.db.prepare('SELECT * FROM webhook_outbox WHERE id = ?').get(id) as OutboxRow | undefined;
    return Promise.resolve(row ? toOutbox(row) : undefined);
  }

  listOutboxDeliveries(webhookId: string): Promise<OutboxDelivery[]> {
    const rows = this.db.prepare('SELECT * FROM webhook_outbox WHERE webhook_id = ? ORDER BY rowid DESC').all(webhookId) as OutboxRow[];
    return Promise.resolve(rows.map(toOutbox));
  }

  startDelivery(webhookId: string, event: string, attemptedAt: Date = new Date(), deliveryId?: string): Promise<string> {
    const attemptId = newAttemptId(attemptedAt);
    this.db
      .prepare('INSERT INTO deliveries (attempt_id, webhook_id, event, status, attempted_at, error, delivery_id) VALUES (?, ?, ?, NULL, ?, NULL, ?)')
      .run(attemptId, webhookId, event, attemptedAt.toISOString(), deliveryId ?? null);
    return Promise.resolve(attemptId);
  }

  recordAttemptOutcome(outcome: AttemptOutcome, now: Date = new Date()): Promise<boolean> {
    // A failed write rejects (as the PostgreSQL store's does), rather than throwing at the caller.
    return new Promise((resolve) => resolve(this.writeAttemptOutcome(outcome, now)));
  }

  private writeAttemptOutcome(outcome: AttemptOutcome, now: Date): boolean {
    return this.db
      .transaction(() => {
        this.db.prepare('UPDATE deliveries SET status = ?, error = ? WHERE attempt_id = ?').run(outcome.status, outcome.error, outcome.attemptId);
        // Only a pending delivery moves: a final state stays, whatever a late attempt came to.
        const moved =
          this.db
            .prepare("UPDATE webhook_outbox SET state = ?, attempts = ?, next_attempt_at = ?, updated_at = ?, last_status = ?, last_error = ? WHERE id = ? AND state = 'pending'")
            .run(outcome.state, outcome.attempts, (outcome.nextAttemptAt ?? now).getTime(), now.toISOString(), outcome.status, outcome.error, outcome.deliveryId).changes > 0;
        if (outcome.disableWebhook) {
          this.db.prepare('UPDATE webhooks SET active = 0 WHERE id = (SELECT webhook_id FROM webhook_outbox WHERE id = ?)').run(outcome.deliveryId);
        }
        return moved;
      })
      .immediate();
  }

  listDeliveries(webhookId: string, limit = 20): Promise<DeliveryRecord[]> {
    const rows = this.db.prepare('SELECT * FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?').all(webhookId, limit) as DeliveryRow[];
    return Promise.resolve(rows.map(toDelivery));
  }

  pruneDeliveries(webhookId: string, keep: number): Promise<void> {
    this.db
      .prepare('DELETE FROM deliveries WHERE webhook_id = ? AND id NOT IN (SELECT id FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?)')
      .run(webhookId, webhookId, keep);
    this.db
      .prepare(
        "DELETE FROM webhook_outbox WHERE webhook_id = ? AND state != 'pending' AND rowid NOT IN (SELECT rowid FROM webhook_outbox WHERE webhook_id = ? AND state != 'pending' ORDER BY rowid DESC LIMIT ?)",
      )
      .run(webhookId, webhookId, keep);
    return Promise.resolve();
  }
}
