import type pg from 'pg';

import { dayOf, eventFacts, type AnalyticsAggregates } from '../../registry/analytics.js';
import type { AnalyticsQuery, EventFilter, EventOrigin, EventStore, RecordedEvent, StoredEvent, VersionUsage } from '../types.js';
import { addToAggregates, readAggregates } from './analytics.js';
import { EVENT_COLUMNS, newEventRow, recordedEventOf, usageOf, type EventRow, type TotalsRow } from '../analytics-rows.js';
import { insertStatement } from '../rows.js';
import { placeholder, transaction } from './database.js';

/** Raw events removed per statement: a prune never holds many rows locked at once. */
const PRUNE_BATCH = 5000;

/**
 * Analytics events in PostgreSQL: the indexed fields as columns, the rest as JSON (the client's
 * `timestamp` kept as sent); and, in the same transaction as each event, the aggregates analytics
 * records and `stats` are made from (analytics.ts).
 */
export class PostgresEventStore implements EventStore {
  constructor(private readonly pool: pg.Pool) {}

  async recordEvent(event: StoredEvent, origin: EventOrigin = {}): Promise<void> {
    const row = newEventRow(event, origin);
    await transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `${insertStatement('events', EVENT_COLUMNS, placeholder)} RETURNING id`,
        EVENT_COLUMNS.map((column) => row[column]),
      );
      const id = String(rows[0]?.id);
      // The event as listEvents gives it back: what it counts for is decided on what is stored.
      const facts = eventFacts(recordedEventOf({ ...row, id }), Number(id));
      if (facts) await addToAggregates(client, facts);
    });
  }

  /** Counted by the rule of analytics records, from the aggregates: `stats.downloads` equal their `total`. */
  async usage(): Promise<Map<string, VersionUsage>> {
    const { rows } = await this.pool.query<TotalsRow>('SELECT template_id, version, downloads, last_download FROM analytics_totals WHERE downloads > 0');
    return usageOf(rows);
  }

  async downloadsRecorded(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string | number }>('SELECT COALESCE(SUM(download_events), 0) AS n FROM analytics_totals');
    return Number(rows[0]?.n ?? 0);
  }

  analyticsAggregates(query: AnalyticsQuery): Promise<AnalyticsAggregates> {
    return readAggregates(this.pool, query);
  }

  async pruneEvents(before: Date): Promise<number> {
    let removed = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE received_at < $1 OR (received_at IS NULL AND timestamp < $2) LIMIT $3)',
        [before, before.toISOString(), PRUNE_BATCH],
      );
      removed += rowCount ?? 0;
      if ((rowCount ?? 0) < PRUNE_BATCH) break;
    }
    await this.pool.query('DELETE FROM analytics_download_clients WHERE day < $1', [dayOf(before.getTime())]);
    return removed;
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
    return rows.map(recordedEventOf);
  }
}
