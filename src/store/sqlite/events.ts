import type Database from 'better-sqlite3';

import type { EventOrigin, EventStore, StoredEvent, VersionUsage } from '../types.js';

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

  usage(): Promise<Map<string, VersionUsage>> {
    const rows = this.db
      .prepare(
        `SELECT template_id, version,
           COUNT(DISTINCT CASE WHEN client IS NULL THEN 'event:' || id ELSE client || '@' || substr(received_at, 1, 10) END) AS downloads,
           MAX(timestamp) AS last
         FROM events WHERE type = 'download' GROUP BY template_id, version`,
      )
      .all() as { template_id: string; version: string; downloads: number; last: string }[];
    return Promise.resolve(new Map(rows.map((r) => [`${r.template_id}@${r.version}`, { downloads: r.downloads, lastDownload: r.last }])));
  }

  countEvents(type?: string): Promise<number> {
    const row = (type
      ? this.db.prepare('SELECT COUNT(*) AS n FROM events WHERE type = ?').get(type)
      : this.db.prepare('SELECT COUNT(*) AS n FROM events').get()) as { n: number };
    return Promise.resolve(row.n);
  }
}
