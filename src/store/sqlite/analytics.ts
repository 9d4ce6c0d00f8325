/**
 * The analytics aggregates of the embedded store (registry/analytics.ts decides what each event
 * changes; this file keeps it in tables): totals per version, numbers per version and UTC day, the
 * first and last days of each user, the clients that downloaded a version on a day (pruned with the
 * raw events), and each user's latest rating. Updated in the transaction that stores an event.
 */
import type Database from 'better-sqlite3';

import { AnalyticsAccumulator, planEvent, versionKey, type AggregateRows, type AnalyticsAggregates, type EventFacts, type EventPlan, type LatestRating, type VersionAggregates } from '../../registry/analytics.js';
import { AGGREGATE_ROW_QUERIES, aggregateRowsOf, DAY_FIELDS, RATING_COLUMNS, ratingValues, recordedEventOf, TOTAL_FIELDS, toDay, toRating, toTotals, toUser, type DayRow, type EventRow, type RatingRow, type TotalsRow, type UserRow } from '../analytics-rows.js';

/** The tables (schema migration 10 of database.ts). */
export const ANALYTICS_TABLES_SQL = `
CREATE TABLE IF NOT EXISTS analytics_totals (
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  downloads INTEGER NOT NULL,
  download_events INTEGER NOT NULL,
  successes INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  duration_sum REAL NOT NULL,
  duration_count INTEGER NOT NULL,
  users INTEGER NOT NULL,
  last_download TEXT,
  last_download_ms REAL,
  PRIMARY KEY (template_id, version)
);
CREATE TABLE IF NOT EXISTS analytics_days (
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  day INTEGER NOT NULL,
  downloads INTEGER NOT NULL,
  anonymous_successes INTEGER NOT NULL,
  first_users INTEGER NOT NULL,
  last_users INTEGER NOT NULL,
  last_success_users INTEGER NOT NULL,
  PRIMARY KEY (template_id, version, day)
);
CREATE TABLE IF NOT EXISTS analytics_users (
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  user_key TEXT NOT NULL,
  first_day INTEGER NOT NULL,
  last_day INTEGER NOT NULL,
  last_success_day INTEGER,
  PRIMARY KEY (template_id, version, user_key)
);
CREATE TABLE IF NOT EXISTS analytics_download_clients (
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  client TEXT NOT NULL,
  day INTEGER NOT NULL,
  PRIMARY KEY (template_id, version, client, day)
);
CREATE INDEX IF NOT EXISTS analytics_download_clients_by_day ON analytics_download_clients (day);
CREATE TABLE IF NOT EXISTS analytics_ratings (
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  user_id TEXT NOT NULL,
  rating REAL NOT NULL,
  comment TEXT,
  helpful INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  review_id TEXT NOT NULL,
  at REAL NOT NULL,
  seq INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  PRIMARY KEY (template_id, version, user_id)
);
CREATE INDEX IF NOT EXISTS events_by_received_at ON events (received_at);
`;


function writePlan(db: Database.Database, plan: EventPlan, user: string | undefined): void {
  const { templateId, version } = plan;
  const totals = TOTAL_FIELDS.map(([, field]) => plan.totals[field] ?? 0);
  db.prepare(
    `INSERT INTO analytics_totals (template_id, version, ${TOTAL_FIELDS.map(([column]) => column).join(', ')}) VALUES (?, ?, ${TOTAL_FIELDS.map(() => '?').join(', ')})
     ON CONFLICT (template_id, version) DO UPDATE SET ${TOTAL_FIELDS.map(([column]) => `${column} = ${column} + excluded.${column}`).join(', ')}`,
  ).run(templateId, version, ...totals);
  if (plan.lastDownload) {
    db.prepare('UPDATE analytics_totals SET last_download = ?, last_download_ms = ? WHERE template_id = ? AND version = ? AND (last_download_ms IS NULL OR last_download_ms < ?)').run(
      plan.lastDownload.text,
      plan.lastDownload.ms,
      templateId,
      version,
      plan.lastDownload.ms,
    );
  }
  const day = db.prepare(
    `INSERT INTO analytics_days (template_id, version, day, ${DAY_FIELDS.map(([column]) => column).join(', ')}) VALUES (?, ?, ?, ${DAY_FIELDS.map(() => '?').join(', ')})
     ON CONFLICT (template_id, version, day) DO UPDATE SET ${DAY_FIELDS.map(([column]) => `${column} = ${column} + excluded.${column}`).join(', ')}`,
  );
  for (const delta of plan.days) day.run(templateId, version, delta.day, ...DAY_FIELDS.map(([, field]) => delta[field] ?? 0));
  if (plan.user && user !== undefined) {
    db.prepare('INSERT OR REPLACE INTO analytics_users (template_id, version, user_key, first_day, last_day, last_success_day) VALUES (?, ?, ?, ?, ?, ?)').run(
      templateId,
      version,
      user,
      plan.user.firstDay,
      plan.user.lastDay,
      plan.user.lastSuccessDay,
    );
  }
  if (plan.rating) insertRating(db, templateId, version, plan.rating);
}

function insertRating(db: Database.Database, templateId: string, version: string, r: LatestRating): void {
  db.prepare(`INSERT OR REPLACE INTO analytics_ratings (${RATING_COLUMNS.join(', ')}) VALUES (${RATING_COLUMNS.map(() => '?').join(', ')})`).run(...ratingValues(templateId, version, r));
}

/** Adds one event's facts to the aggregates (call inside the transaction that stores the event). */
export function addToAggregates(db: Database.Database, facts: EventFacts): void {
  const { templateId, version } = facts;
  const firstOfDay =
    facts.type === 'download' && facts.client !== undefined
      ? db.prepare('INSERT OR IGNORE INTO analytics_download_clients (template_id, version, client, day) VALUES (?, ?, ?, ?)').run(templateId, version, facts.client, facts.day).changes > 0
      : false;
  const userRow =
    facts.user === undefined
      ? undefined
      : (db.prepare('SELECT * FROM analytics_users WHERE template_id = ? AND version = ? AND user_key = ?').get(templateId, version, facts.user) as UserRow | undefined);
  const ratingRow = facts.rating
    ? (db.prepare('SELECT * FROM analytics_ratings WHERE template_id = ? AND version = ? AND user_id = ?').get(templateId, version, facts.rating.userId) as RatingRow | undefined)
    : undefined;
  const plan = planEvent(facts, { firstOfDay, ...(userRow ? { user: toUser(userRow) } : {}), ...(ratingRow ? { rating: toRating(ratingRow) } : {}) });
  writePlan(db, plan, facts.user);
}

/** Writes aggregate rows into empty tables (a migration's backfill, a store copy). */
export function writeAggregateRows(db: Database.Database, rows: AggregateRows): void {
  const totals = db.prepare(
    `INSERT INTO analytics_totals (template_id, version, ${TOTAL_FIELDS.map(([column]) => column).join(', ')}, last_download, last_download_ms) VALUES (?, ?, ${TOTAL_FIELDS.map(() => '?').join(', ')}, ?, ?)`,
  );
  for (const t of rows.totals) totals.run(t.templateId, t.version, ...TOTAL_FIELDS.map(([, field]) => t[field]), t.lastDownload ?? null, t.lastDownloadMs ?? null);
  const day = db.prepare(`INSERT INTO analytics_days (template_id, version, day, ${DAY_FIELDS.map(([column]) => column).join(', ')}) VALUES (?, ?, ?, ${DAY_FIELDS.map(() => '?').join(', ')})`);
  for (const d of rows.days) day.run(d.templateId, d.version, d.day, ...DAY_FIELDS.map(([, field]) => d[field]));
  const user = db.prepare('INSERT INTO analytics_users (template_id, version, user_key, first_day, last_day, last_success_day) VALUES (?, ?, ?, ?, ?, ?)');
  for (const u of rows.users) user.run(u.templateId, u.version, u.user, u.firstDay, u.lastDay, u.lastSuccessDay);
  const client = db.prepare('INSERT INTO analytics_download_clients (template_id, version, client, day) VALUES (?, ?, ?, ?)');
  for (const c of rows.downloadClients) client.run(c.templateId, c.version, c.client, c.day);
  for (const r of rows.ratings) insertRating(db, r.templateId, r.version, r);
}

/** Every aggregate row (a store copy). */
export function readAggregateRows(db: Database.Database): AggregateRows {
  const all = <T>(sql: string): T[] => db.prepare(sql).all() as T[];
  return aggregateRowsOf({
    totals: all(AGGREGATE_ROW_QUERIES.totals),
    days: all(AGGREGATE_ROW_QUERIES.days),
    users: all(AGGREGATE_ROW_QUERIES.users),
    downloadClients: all(AGGREGATE_ROW_QUERIES.downloadClients),
    ratings: all(AGGREGATE_ROW_QUERIES.ratings),
  });
}

/** The aggregates a record of `versions` is made from: every version's downloads, and the days from `fromDay` to `toDay` and ratings of `versions`. */
export function readAggregates(db: Database.Database, query: { versions: readonly { templateId: string; version: string }[]; fromDay: number; toDay: number }): AnalyticsAggregates {
  const downloads = new Map(
    (db.prepare('SELECT template_id, version, downloads FROM analytics_totals').all() as Pick<TotalsRow, 'template_id' | 'version' | 'downloads'>[]).map((row) => [
      versionKey(row.template_id, row.version),
      row.downloads,
    ]),
  );
  const versions = new Map<string, VersionAggregates>();
  for (const { templateId, version } of query.versions) {
    const totals = db.prepare('SELECT * FROM analytics_totals WHERE template_id = ? AND version = ?').get(templateId, version) as TotalsRow | undefined;
    if (!totals) continue;
    const days = (db.prepare('SELECT * FROM analytics_days WHERE template_id = ? AND version = ? AND day BETWEEN ? AND ?').all(templateId, version, query.fromDay, query.toDay) as DayRow[]).map(toDay);
    const ratings = (db.prepare('SELECT * FROM analytics_ratings WHERE template_id = ? AND version = ?').all(templateId, version) as RatingRow[]).map(toRating);
    versions.set(versionKey(templateId, version), { totals: toTotals(totals), days, ratings });
  }
  return { downloads, version: (templateId, version) => versions.get(versionKey(templateId, version)) };
}

/**
 * Fills the (empty) aggregate tables from the stored events, read one at a time in the order they
 * were recorded: schema migration 10, for a store that kept only raw events until then.
 */
export function backfillAggregates(db: Database.Database): void {
  const aggregates = new AnalyticsAccumulator();
  for (const row of db.prepare('SELECT id, type, template_id, version, timestamp, data, client, received_at FROM events ORDER BY id').iterate() as IterableIterator<EventRow>) {
    aggregates.add(recordedEventOf(row), Number(row.id));
  }
  writeAggregateRows(db, aggregates.rows());
}
