import type Database from 'better-sqlite3';

import { downloadUsage } from '../../registry/analytics.js';
import type { EventFilter, EventOrigin, EventStore, RecordedEvent, StoredEvent, VersionUsage } from '../types.js';

interface EventRow {
  id: number;
  type: string;
  template_id: string;
  version: string;
  timestamp: string;
  data: string;
  client: string | null;
  received_at: string | null;
}

/** Analytics events in SQLite: the indexed fields as columns, the rest as JSON. */
export class SqliteEventStore implements EventStore {
  constructor(private readonly db: Database.Database) {}

  recordEvent(event: StoredEvent, origin: EventOrigin = {}): Promise<void> {
    const { type, templateId, version, timestamp, ...rest } = event;
    this.db
      .prepare('INSERT INTO events (type, template_id, version, timestamp, data, client, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(type, templateId, version, timestamp, JSON.stringify(rest), origin.client ?? null, (origin.receivedAt ?? new Date()).toISOString());
    return Promise.resolve();
  }

  /** Counted by the rule of analytics records (`downloadUsage`), so `stats.downloads` equal their `total`. */
  async usage(): Promise<Map<string, VersionUsage>> {
    return downloadUsage(await this.listEvents({ type: 'download' }));
  }

  countEvents(type?: string): Promise<number> {
    const row = (type
      ? this.db.prepare('SELECT COUNT(*) AS n FROM events WHERE type = ?').get(type)
      : this.db.prepare('SELECT COUNT(*) AS n FROM events').get()) as { n: number };
    return Promise.resolve(row.n);
  }

  listEvents(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    const where: string[] = [];
    const values: string[] = [];
    if (filter.templateId !== undefined) {
      where.push('template_id = ?');
      values.push(filter.templateId);
    }
    if (filter.type !== undefined) {
      where.push('type = ?');
      values.push(filter.type);
    }
    const rows = this.db
      .prepare(`SELECT id, type, template_id, version, timestamp, data, client, received_at FROM events${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id`)
      .all(...values) as EventRow[];
    return Promise.resolve(
      rows.map((row) => ({
        id: String(row.id),
        event: { ...(JSON.parse(row.data) as Record<string, unknown>), type: row.type, templateId: row.template_id, version: row.version, timestamp: row.timestamp },
        ...(row.client !== null ? { client: row.client } : {}),
        ...(row.received_at !== null ? { receivedAt: row.received_at } : {}),
      })),
    );
  }
}
