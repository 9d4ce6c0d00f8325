import { randomBytes } from 'node:crypto';

import type Database from 'better-sqlite3';

import { eventMatches, type DeliveryRecord, type NewWebhook, type StoredWebhook, type WebhookStore } from '../types.js';

// The signing secret is stored as given (deliveries are signed with it, so it cannot be hashed like
// tokens): the store folder must be readable by the server's account only.

interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret: string;
  active: number;
  created_at: string;
}

interface DeliveryRow {
  id: number;
  webhook_id: string;
  event: string;
  status: number | null;
  attempted_at: string;
  error: string | null;
}

const toWebhook = (row: WebhookRow): StoredWebhook => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  secret: row.secret,
  active: row.active !== 0,
  createdAt: row.created_at,
});

const toDelivery = (row: DeliveryRow): DeliveryRecord => ({
  id: String(row.id),
  webhookId: row.webhook_id,
  event: row.event,
  status: row.status,
  attemptedAt: row.attempted_at,
  error: row.error,
});

/** Webhooks and their delivery log, in SQLite. */
export class SqliteWebhookStore implements WebhookStore {
  constructor(private readonly db: Database.Database) {}

  createWebhook(options: NewWebhook): Promise<StoredWebhook> {
    const webhook: StoredWebhook = {
      id: `wh_${randomBytes(8).toString('hex')}`,
      url: options.url,
      events: [...options.events],
      secret: options.secret,
      active: options.active,
      createdAt: (options.now ?? new Date()).toISOString(),
    };
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
    return (await this.listWebhooks()).filter((w) => w.active && w.events.some((e) => eventMatches(e, event)));
  }

  deleteWebhook(id: string): Promise<boolean> {
    const removed = this.db.transaction(() => {
      const deleted = this.db.prepare('DELETE FROM webhooks WHERE id = ?').run(id).changes > 0;
      if (deleted) this.db.prepare('DELETE FROM deliveries WHERE webhook_id = ?').run(id);
      return deleted;
    })();
    return Promise.resolve(removed);
  }

  startDelivery(webhookId: string, event: string, attemptedAt: Date = new Date()): Promise<string> {
    const result = this.db
      .prepare('INSERT INTO deliveries (webhook_id, event, status, attempted_at, error) VALUES (?, ?, NULL, ?, NULL)')
      .run(webhookId, event, attemptedAt.toISOString());
    return Promise.resolve(String(result.lastInsertRowid));
  }

  finishDelivery(id: string, status: number | null, error: string | null): Promise<void> {
    this.db.prepare('UPDATE deliveries SET status = ?, error = ? WHERE id = ?').run(status, error, Number(id));
    return Promise.resolve();
  }

  listDeliveries(webhookId: string, limit = 20): Promise<DeliveryRecord[]> {
    const rows = this.db.prepare('SELECT * FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?').all(webhookId, limit) as DeliveryRow[];
    return Promise.resolve(rows.map(toDelivery));
  }

  pruneDeliveries(webhookId: string, keep: number): Promise<void> {
    this.db
      .prepare('DELETE FROM deliveries WHERE webhook_id = ? AND id NOT IN (SELECT id FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?)')
      .run(webhookId, webhookId, keep);
    return Promise.resolve();
  }
}
