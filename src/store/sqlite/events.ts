import type Database from 'better-sqlite3';

import { dayOf, eventFacts, type AnalyticsAggregates } from '../../registry/analytics.js';
import type { AnalyticsQuery, EventFilter, EventOrigin, EventStore, RecordedEvent, StoredEvent, VersionUsage } from '../types.js';
import { EVENT_COLUMNS, newEventRow, recordedEventOf, usageOf, type EventRow, type TotalsRow } from '../analytics-rows.js';
import { insertStatement } from '../rows.js';
import { addToAggregates, readAggregates } from './analytics.js';
import { placeholder } from './database.js';

/** Raw events removed per statement: a prune never holds the database for long. */
const PRUNE_BATCH = 5000;

/**
 * Analytics events in SQLite: the indexed fields as columns, the rest as JSON; and, in the same
 * transaction as each event, the aggregates analytics records and `stats` are made from (analytics.ts).
 */
export class SqliteEventStore implements EventStore {
  constructor(private readonly db: Database.Database) {}

  recordEvent(event: StoredEvent, origin: EventOrigin = {}): Promise<void> {
    const row = newEventRow(event, origin);
    this.db.transaction(() => {
      const { lastInsertRowid } = this.db.prepare(insertStatement('events', EVENT_COLUMNS, placeholder)).run(...EVENT_COLUMNS.map((column) => row[column]));
      const id = Number(lastInsertRowid);
      // The event as listEvents gives it back: what it counts for is decided on what is stored.
      const facts = eventFacts(recordedEventOf({ ...row, id }), id);
      if (facts) addToAggregates(this.db, facts);
    })();
    return Promise.resolve();
  }

  /** Counted by the rule of analytics records, from the aggregates: `stats.downloads` equal their `total`. */
  usage(): Promise<Map<string, VersionUsage>> {
    const rows = this.db.prepare('SELECT template_id, version, downloads, last_download FROM analytics_totals WHERE downloads > 0').all() as TotalsRow[];
    return Promise.resolve(usageOf(rows));
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
    return Promise.resolve(rows.map(recordedEventOf));
  }
}
