import type Database from 'better-sqlite3';

import { dayOf, eventFacts, type AnalyticsAggregates } from '../../registry/analytics.js';
import type { AnalyticsQuery, EventFilter, EventOrigin, EventStore, RecordedEvent, StoredEvent, VersionUsage } from '../types.js';
import { addToAggregates, readAggregates } from './analytics.js';

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

/** Raw events removed per statement: a prune never holds the database for long. */
const PRUNE_BATCH = 5000;

/**
 * Analytics events in SQLite: the indexed fields as columns, the rest as JSON; and, in the same
 * transaction as each event, the aggregates analytics records and `stats` are made from (analytics.ts).
 */
export class SqliteEventStore implements EventStore {
  constructor(private readonly db: Database.Database) {}

  recordEvent(event: StoredEvent, origin: EventOrigin = {}): Promise<void> {
    const { type, templateId, version, timestamp, ...rest } = event;
    const data = JSON.stringify(rest);
    const receivedAt = (origin.receivedAt ?? new Date()).toISOString();
    this.db.transaction(() => {
      const { lastInsertRowid } = this.db
        .prepare('INSERT INTO events (type, template_id, version, timestamp, data, client, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(type, templateId, version, timestamp, data, origin.client ?? null, receivedAt);
      const id = Number(lastInsertRowid);
      // The event as listEvents gives it back: what it counts for is decided on what is stored.
      const stored = { ...(JSON.parse(data) as Record<string, unknown>), type, templateId, version, timestamp };
      const facts = eventFacts({ id: String(id), event: stored, ...(origin.client !== undefined ? { client: origin.client } : {}), receivedAt }, id);
      if (facts) addToAggregates(this.db, facts);
    })();
    return Promise.resolve();
  }

  /** Counted by the rule of analytics records, from the aggregates: `stats.downloads` equal their `total`. */
  usage(): Promise<Map<string, VersionUsage>> {
    const rows = this.db.prepare('SELECT template_id, version, downloads, last_download FROM analytics_totals WHERE downloads > 0').all() as {
      template_id: string;
      version: string;
      downloads: number;
      last_download: string | null;
    }[];
    return Promise.resolve(
      new Map(rows.map((row) => [`${row.template_id}@${row.version}`, row.last_download === null ? { downloads: row.downloads } : { downloads: row.downloads, lastDownload: row.last_download }])),
    );
  }

  downloadsRecorded(): Promise<number> {
    const row = this.db.prepare('SELECT COALESCE(SUM(download_events), 0) AS n FROM analytics_totals').get() as { n: number };
    return Promise.resolve(row.n);
  }

  analyticsAggregates(query: AnalyticsQuery): Promise<AnalyticsAggregates> {
    return Promise.resolve(readAggregates(this.db, query));
  }

  pruneEvents(before: Date): Promise<number> {
    const cutoff = before.toISOString();
    const remove = this.db.prepare(
      'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE received_at < ? OR (received_at IS NULL AND timestamp < ?) LIMIT ?)',
    );
    let removed = 0;
    for (;;) {
      const { changes } = remove.run(cutoff, cutoff, PRUNE_BATCH);
      removed += changes;
      if (changes < PRUNE_BATCH) break;
    }
    this.db.prepare('DELETE FROM analytics_download_clients WHERE day < ?').run(dayOf(before.getTime()));
    return Promise.resolve(removed);
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
