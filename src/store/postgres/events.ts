import type pg from 'pg';

import { downloadUsage } from '../../registry/analytics.js';
import type { EventFilter, EventOrigin, EventStore, RecordedEvent, StoredEvent, VersionUsage } from '../types.js';
import { iso } from './database.js';

interface EventRow {
  id: string;
  type: string;
  template_id: string;
  version: string;
  timestamp: string;
  data: Record<string, unknown>;
  client: string | null;
  received_at: Date | null;
}

/** Analytics events in PostgreSQL: the indexed fields as columns, the rest as JSON (the client's `timestamp` kept as sent). */
export class PostgresEventStore implements EventStore {
  constructor(private readonly pool: pg.Pool) {}

  async recordEvent(event: StoredEvent, origin: EventOrigin = {}): Promise<void> {
    const { type, templateId, version, timestamp, ...rest } = event;
    await this.pool.query('INSERT INTO events (type, template_id, version, timestamp, data, client, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      type,
      templateId,
      version,
      timestamp,
      JSON.stringify(rest),
      origin.client ?? null,
      (origin.receivedAt ?? new Date()).toISOString(),
    ]);
  }

  /** Counted by the rule of analytics records (`downloadUsage`), so `stats.downloads` equal their `total`. */
  async usage(): Promise<Map<string, VersionUsage>> {
    return downloadUsage(await this.listEvents({ type: 'download' }));
  }

  async countEvents(type?: string): Promise<number> {
    const { rows } = type
      ? await this.pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM events WHERE type = $1', [type])
      : await this.pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM events');
    return rows[0]?.n ?? 0;
  }

  async listEvents(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    const where: string[] = [];
    const values: string[] = [];
    if (filter.templateId !== undefined) {
      values.push(filter.templateId);
      where.push(`template_id = $${values.length}`);
    }
    if (filter.type !== undefined) {
      values.push(filter.type);
      where.push(`type = $${values.length}`);
    }
    const { rows } = await this.pool.query<EventRow>(
      `SELECT id, type, template_id, version, timestamp, data, client, received_at FROM events${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id`,
      values,
    );
    return rows.map((row) => ({
      id: String(row.id),
      event: { ...row.data, type: row.type, templateId: row.template_id, version: row.version, timestamp: row.timestamp },
      ...(row.client !== null ? { client: row.client } : {}),
      ...(row.received_at !== null ? { receivedAt: iso(row.received_at) } : {}),
    }));
  }
}
