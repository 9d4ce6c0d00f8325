import type pg from 'pg';

import { newAttemptId } from '../attempt-ids.js';
// One body format for every backend; that module only imports SQLite's types.
import { newOutboxDeliveries, newWebhookRecord, subscribedWebhooks, updatedWebhook } from '../records.js';
import { deliveryOf as toDelivery, outboxOf as toOutbox, webhookOf as toWebhook, type DeliveryRow, type OutboxRow, type WebhookRow } from '../rows.js';
import type { AttemptOutcome, DeliveryRecord, NewWebhook, OutboxDelivery, OutboxUpdate, StoredWebhook, WebhookEventRecord, WebhookStore, WebhookUpdate } from '../types.js';
import { transaction, type Queryable } from './database.js';

// The signing secret is stored as given (deliveries are signed with it, so it cannot be hashed like
// tokens): the database must be readable by the registry's role only.

const OUTBOX_COLUMNS = 'id, webhook_id, event, body, state, attempts, next_attempt_at, created_at, last_status, last_error';

/**
 * The oldest pending delivery of its webhook (`seq` follows the order they were written): only that
 * one may be claimed, so that a webhook gets its deliveries one at a time, in the order of their events.
 */
const HEAD_OF_WEBHOOK = "NOT EXISTS (SELECT 1 FROM webhook_outbox e WHERE e.webhook_id = o.webhook_id AND e.state = 'pending' AND e.seq < o.seq)";

/**
 * Writes one pending outbox delivery of each record per active webhook subscribed to its event, due
 * at `now`, through `db` (a transaction's client: the change and its deliveries commit together).
 */
export async function insertOutboxEvents(db: Queryable, records: readonly WebhookEventRecord[], now: Date = new Date()): Promise<OutboxDelivery[]> {
  if (records.length === 0) return [];
  const webhooks = (await db.query<WebhookRow>('SELECT * FROM webhooks WHERE active ORDER BY created_at, id')).rows.map(toWebhook);
  const created = newOutboxDeliveries(records, webhooks, now);
  if (created.length === 0) return [];
  // One statement for them all, in order (their seq follows the array).
  await db.query(
    `INSERT INTO webhook_outbox (id, webhook_id, event, body, state, attempts, next_attempt_at, created_at, updated_at)
     SELECT id, webhook_id, event, body, 'pending', 0, $5, $5, $5
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS d (id, webhook_id, event, body, n) ORDER BY n`,
    [created.map((d) => d.id), created.map((d) => d.webhookId), created.map((d) => d.event), created.map((d) => d.body), now.toISOString()],
  );
  return created;
}

/** Webhooks, the shared outbox and the delivery log in PostgreSQL. */
export class PostgresWebhookStore implements WebhookStore {
  constructor(private readonly pool: pg.Pool) {}

  async createWebhook(options: NewWebhook): Promise<StoredWebhook> {
    const webhook = newWebhookRecord(options);
    await this.pool.query('INSERT INTO webhooks (id, url, events, secret, active, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      webhook.id,
      webhook.url,
      JSON.stringify(webhook.events),
      webhook.secret,
      webhook.active,
      webhook.createdAt,
    ]);
    return webhook;
  }

  async getWebhook(id: string): Promise<StoredWebhook | undefined> {
    const row = (await this.pool.query<WebhookRow>('SELECT * FROM webhooks WHERE id = $1', [id])).rows[0];
    return row ? toWebhook(row) : undefined;
  }

  async listWebhooks(): Promise<StoredWebhook[]> {
    return (await this.pool.query<WebhookRow>('SELECT * FROM webhooks ORDER BY created_at, id')).rows.map(toWebhook);
  }

  async webhooksFor(event: string): Promise<StoredWebhook[]> {
    return subscribedWebhooks(await this.listWebhooks(), event);
  }

  deleteWebhook(id: string): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      const deleted = ((await client.query('DELETE FROM webhooks WHERE id = $1', [id])).rowCount ?? 0) > 0;
      if (deleted) {
        await client.query('DELETE FROM deliveries WHERE webhook_id = $1', [id]);
        await client.query('DELETE FROM webhook_outbox WHERE webhook_id = $1', [id]);
      }
      return deleted;
    });
  }

  updateWebhook(id: string, update: WebhookUpdate, now: Date = new Date()): Promise<StoredWebhook | undefined> {
    return transaction(this.pool, async (client) => {
      // FOR UPDATE: two changes of one webhook (two rotations) are applied one after the other.
      const row = (await client.query<WebhookRow>('SELECT * FROM webhooks WHERE id = $1 FOR UPDATE', [id])).rows[0];
      if (!row) return undefined;
      const next = updatedWebhook(toWebhook(row), update, now);
      await client.query('UPDATE webhooks SET url = $1, events = $2, secret = $3, active = $4, previous_secret = $5, previous_secret_expires_at = $6 WHERE id = $7', [
        next.url,
        JSON.stringify(next.events),
        next.secret,
        next.active,
        next.previousSecret ?? null,
        next.previousSecretExpiresAt ?? null,
        id,
      ]);
      return next;
    });
  }

  async setWebhookActive(id: string, active: boolean): Promise<boolean> {
    return ((await this.pool.query('UPDATE webhooks SET active = $1 WHERE id = $2', [active, id])).rowCount ?? 0) > 0;
  }

  enqueueEvent(event: WebhookEventRecord, now: Date = new Date()): Promise<OutboxDelivery[]> {
    return transaction(this.pool, (client) => insertOutboxEvents(client, [event], now));
  }

  async claimDueDeliveries(now: Date, limit: number, leaseMs: number): Promise<OutboxDelivery[]> {
    // SKIP LOCKED: instances claiming at once take disjoint rows; a row another instance leased since
    // this statement's snapshot is re-checked under its lock, found not due, and left out. Only the
    // head of each webhook: while one instance holds it (locked, then leased), the next delivery of
    // that webhook is not a head in anyone's snapshot, so no instance sends it ahead.
    // The deliveries come back as they were due (before the lease), as the embedded store gives them.
    const { rows } = await this.pool.query<OutboxRow & { due_at: Date; seq: string }>(
      `WITH due AS (
         SELECT o.id, o.next_attempt_at AS due_at FROM webhook_outbox o
         WHERE o.state = 'pending' AND o.next_attempt_at <= $1 AND ${HEAD_OF_WEBHOOK}
         ORDER BY o.next_attempt_at, o.seq LIMIT $2
         FOR UPDATE OF o SKIP LOCKED
       )
       UPDATE webhook_outbox o SET next_attempt_at = $3 FROM due WHERE o.id = due.id
       RETURNING o.id, o.webhook_id, o.event, o.body, o.state, o.attempts, due.due_at, o.created_at, o.last_status, o.last_error, o.seq`,
      [now.toISOString(), limit, new Date(now.getTime() + leaseMs).toISOString()],
    );
    return rows
      .sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || Number(a.seq) - Number(b.seq))
      .map((row) => toOutbox({ ...row, next_attempt_at: row.due_at }));
  }

  async nextDueAt(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ due: Date | null }>(`SELECT min(o.next_attempt_at) AS due FROM webhook_outbox o WHERE o.state = 'pending' AND ${HEAD_OF_WEBHOOK}`);
    return rows[0]?.due ?? undefined;
  }

  async countPendingDeliveries(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM webhook_outbox WHERE state = 'pending'");
    return rows[0]?.n ?? 0;
  }

  async updateOutboxDelivery(id: string, update: OutboxUpdate, now: Date = new Date()): Promise<void> {
    await this.pool.query('UPDATE webhook_outbox SET state = $1, attempts = $2, next_attempt_at = $3, updated_at = $4, last_status = $5, last_error = $6 WHERE id = $7', [
      update.state,
      update.attempts,
      (update.nextAttemptAt ?? now).toISOString(),
      now.toISOString(),
      update.status,
      update.error,
      id,
    ]);
  }

  async getOutboxDelivery(id: string): Promise<OutboxDelivery | undefined> {
    const row = (await this.pool.query<OutboxRow>(`SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox WHERE id = $1`, [id])).rows[0];
    return row ? toOutbox(row) : undefined;
  }

  async listOutboxDeliveries(webhookId: string): Promise<OutboxDelivery[]> {
    return (await this.pool.query<OutboxRow>(`SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox WHERE webhook_id = $1 ORDER BY seq DESC`, [webhookId])).rows.map(toOutbox);
  }

  async startDelivery(webhookId: string, event: string, attemptedAt: Date = new Date(), deliveryId?: string): Promise<string> {
    const attemptId = newAttemptId(attemptedAt);
    await this.pool.query('INSERT INTO deliveries (attempt_id, webhook_id, event, status, attempted_at, error, delivery_id) VALUES ($1, $2, $3, NULL, $4, NULL, $5)', [
      attemptId,
      webhookId,
      event,
      attemptedAt.toISOString(),
      deliveryId ?? null,
    ]);
    return attemptId;
  }

  recordAttemptOutcome(outcome: AttemptOutcome, now: Date = new Date()): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      await client.query('UPDATE deliveries SET status = $1, error = $2 WHERE attempt_id = $3', [outcome.status, outcome.error, outcome.attemptId]);
      // Only a pending delivery moves: a final state stays, whatever a late attempt came to.
      const moved = await client.query(
        "UPDATE webhook_outbox SET state = $1, attempts = $2, next_attempt_at = $3, updated_at = $4, last_status = $5, last_error = $6 WHERE id = $7 AND state = 'pending'",
        [outcome.state, outcome.attempts, (outcome.nextAttemptAt ?? now).toISOString(), now.toISOString(), outcome.status, outcome.error, outcome.deliveryId],
      );
      if (outcome.disableWebhook) {
        await client.query('UPDATE webhooks SET active = false WHERE id = (SELECT webhook_id FROM webhook_outbox WHERE id = $1)', [outcome.deliveryId]);
      }
      return (moved.rowCount ?? 0) > 0;
    });
  }

  async listDeliveries(webhookId: string, limit = 20): Promise<DeliveryRecord[]> {
    return (await this.pool.query<DeliveryRow>('SELECT * FROM deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2', [webhookId, limit])).rows.map(toDelivery);
  }

  async pruneDeliveries(webhookId: string, keep: number): Promise<void> {
    await this.pool.query('DELETE FROM deliveries WHERE webhook_id = $1 AND id NOT IN (SELECT id FROM deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2)', [webhookId, keep]);
    await this.pool.query(
      "DELETE FROM webhook_outbox WHERE webhook_id = $1 AND state != 'pending' AND seq NOT IN (SELECT seq FROM webhook_outbox WHERE webhook_id = $1 AND state != 'pending' ORDER BY seq DESC LIMIT $2)",
      [webhookId, keep],
    );
  }
}
