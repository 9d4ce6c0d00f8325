import type Database from 'better-sqlite3';

import type { EventStore, StoredEvent, VersionUsage } from '../types.js';

/** Analytics events in SQLite: the indexed fields as columns, the rest as JSON. */
export class SqliteEventStore implements EventStore {
  constructor(private readonly db: Database.Database) {}

  recordEvent(event: StoredEvent): Promise<void> {
    const { type, templateId, version, timestamp, ...rest } = event;
    this.db
      .prepare('INSERT INTO events (type, template_id, version, timestamp, data) VALUES (?, ?, ?, ?, ?)')
      .run(type, templateId, version, timestamp, JSON.stringify(rest));
    return Promise.resolve();
  }

  usage(): Promise<Map<string, VersionUsage>> {
    const rows = this.db
      .prepare("SELECT template_id, version, COUNT(*) AS downloads, MAX(timestamp) AS last FROM events WHERE type = 'download' GROUP BY template_id, version")
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
