/**
 * The analytics aggregates of the PostgreSQL store (registry/analytics.ts decides what each event
 * changes; this file keeps it in tables), as the embedded store keeps them (store/sqlite/analytics.ts).
 * Updated in the transaction that stores an event, under a transaction-level advisory lock on the
 * version: events of one version, from any instance, are added one at a time.
 */
import type pg from 'pg';

import { AnalyticsAccumulator, planEvent, versionKey, type AggregateRows, type AnalyticsAggregates, type EventFacts, type EventPlan, type VersionAggregates } from '../../registry/analytics.js';
import { AGGREGATE_ROW_QUERIES, aggregateRowsOf, DAY_FIELDS, RATING_COLUMNS, ratingValues, recordedEventOf, TOTAL_FIELDS, toDay, toRating, toTotals, toUser, type DayRow, type EventRow, type RatingRow, type TotalsRow, type UserRow } from '../analytics-rows.js';
import { insertRows, type Queryable } from './database.js';

type Client = Pick<pg.ClientBase, 'query'>;

/** The tables (schema migration 4 of migrations.ts); made again harmlessly. */
export const ANALYTICS_TABLES_SQL = `
CREATE TABLE IF NOT EXISTS analytics_totals (
  template_id text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  downloads integer NOT NULL,
  download_events integer NOT NULL,
  successes integer NOT NULL,
  failures integer NOT NULL,
  duration_sum double precision NOT NULL,
  duration_count integer NOT NULL,
  users integer NOT NULL,
  last_download text,
  last_download_ms double precision,
  PRIMARY KEY (template_id, version)
);
CREATE TABLE IF NOT EXISTS analytics_days (
  template_id text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  day integer NOT NULL,
  downloads integer NOT NULL,
  anonymous_successes integer NOT NULL,
  first_users integer NOT NULL,
  last_users integer NOT NULL,
  last_success_users integer NOT NULL,
  PRIMARY KEY (template_id, version, day)
);
CREATE TABLE IF NOT EXISTS analytics_users (
  template_id text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  user_key text COLLATE "C" NOT NULL,
  first_day integer NOT NULL,
  last_day integer NOT NULL,
  last_success_day integer,
  PRIMARY KEY (template_id, version, user_key)
);
CREATE TABLE IF NOT EXISTS analytics_download_clients (
  template_id text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  client text COLLATE "C" NOT NULL,
  day integer NOT NULL,
  PRIMARY KEY (template_id, version, client, day)
);
CREATE INDEX IF NOT EXISTS analytics_download_clients_by_day ON analytics_download_clients (day);
CREATE TABLE IF NOT EXISTS analytics_ratings (
  template_id text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  user_id text COLLATE "C" NOT NULL,
  rating double precision NOT NULL,
  comment text,
  helpful integer NOT NULL,
  created_at text NOT NULL,
  review_id text NOT NULL,
  at double precision NOT NULL,
  seq bigint NOT NULL,
  first_seq bigint NOT NULL,
  PRIMARY KEY (template_id, version, user_id)
);
CREATE INDEX IF NOT EXISTS events_by_received_at ON events (received_at);
`;

async function writePlan(client: Client, plan: EventPlan, user: string | undefined): Promise<void> {
  const { templateId, version } = plan;
  const columns = TOTAL_FIELDS.map(([column]) => column);
  await client.query(
    `INSERT INTO analytics_totals (template_id, version, ${columns.join(', ')}) VALUES ($1, $2, ${columns.map((_, i) => `$${i + 3}`).join(', ')})
     ON CONFLICT (template_id, version) DO UPDATE SET ${columns.map((column) => `${column} = analytics_totals.${column} + EXCLUDED.${column}`).join(', ')}`,
    [templateId, version, ...TOTAL_FIELDS.map(([, field]) => plan.totals[field] ?? 0)],
  );
  if (plan.lastDownload) {
    await client.query(
      'UPDATE analytics_totals SET last_download = $1, last_download_ms = $2 WHERE template_id = $3 AND version = $4 AND (last_download_ms IS NULL OR last_download_ms < $2)',
      [plan.lastDownload.text, plan.lastDownload.ms, templateId, version],
    );
  }
  const dayColumns = DAY_FIELDS.map(([column]) => column);
  for (const delta of plan.days) {
    await client.query(
      `INSERT INTO analytics_days (template_id, version, day, ${dayColumns.join(', ')}) VALUES ($1, $2, $3, ${dayColumns.map((_, i) => `$${i + 4}`).join(', ')})
       ON CONFLICT (template_id, version, day) DO UPDATE SET ${dayColumns.map((column) => `${column} = analytics_days.${column} + EXCLUDED.${column}`).join(', ')}`,
      [templateId, version, delta.day, ...DAY_FIELDS.map(([, field]) => delta[field] ?? 0)],
    );
  }
  if (plan.user && user !== undefined) {
    await client.query(
      `INSERT INTO analytics_users (template_id, version, user_key, first_day, last_day, last_success_day) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (template_id, version, user_key) DO UPDATE SET first_day = EXCLUDED.first_day, last_day = EXCLUDED.last_day, last_success_day = EXCLUDED.last_success_day`,
      [templateId, version, user, plan.user.firstDay, plan.user.lastDay, plan.user.lastSuccessDay],
    );
  }
  if (plan.rating) {
    await client.query(
      `INSERT INTO analytics_ratings (${RATING_COLUMNS.join(', ')}) VALUES (${RATING_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})
       ON CONFLICT (template_id, version, user_id) DO UPDATE SET ${RATING_COLUMNS.slice(3)
         .map((column) => `${column} = EXCLUDED.${column}`)
         .join(', ')}`,
      ratingValues(templateId, version, plan.rating),
    );
  }
}

/** Adds one event's facts to the aggregates: call inside the transaction that stores the event. */
export async function addToAggregates(client: Client, facts: EventFacts): Promise<void> {
  const { templateId, version } = facts;
  // One event of a version at a time, whichever instance recorded it: each reads what the one before wrote.
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 20260))', [versionKey(templateId, version)]);
  const firstOfDay =
    facts.type === 'download' && facts.client !== undefined
      ? ((
          await client.query('INSERT INTO analytics_download_clients (template_id, version, client, day) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING', [
            templateId,
            version,
            facts.client,
            facts.day,
          ])
        ).rowCount ?? 0) > 0
      : false;
  const userRow =
    facts.user === undefined
      ? undefined
      : (await client.query<UserRow>('SELECT * FROM analytics_users WHERE template_id = $1 AND version = $2 AND user_key = $3', [templateId, version, facts.user])).rows[0];
  const ratingRow = facts.rating
    ? (await client.query<RatingRow>('SELECT * FROM analytics_ratings WHERE template_id = $1 AND version = $2 AND user_id = $3', [templateId, version, facts.rating.userId])).rows[0]
    : undefined;
  const plan = planEvent(facts, { firstOfDay, ...(userRow ? { user: toUser(userRow) } : {}), ...(ratingRow ? { rating: toRating(ratingRow) } : {}) });
  await writePlan(client, plan, facts.user);
}

/** Writes aggregate rows into empty tables (a migration's backfill, a store copy). */
export async function writeAggregateRows(client: Client, rows: AggregateRows): Promise<void> {
  await insertRows(
    client,
    'analytics_totals',
    ['template_id', 'version', ...TOTAL_FIELDS.map(([column]) => column), 'last_download', 'last_download_ms'],
    rows.totals.map((t) => [t.templateId, t.version, ...TOTAL_FIELDS.map(([, field]) => t[field]), t.lastDownload ?? null, t.lastDownloadMs ?? null]),
  );
  await insertRows(
    client,
    'analytics_days',
    ['template_id', 'version', 'day', ...DAY_FIELDS.map(([column]) => column)],
    rows.days.map((d) => [d.templateId, d.version, d.day, ...DAY_FIELDS.map(([, field]) => d[field])]),
  );
  await insertRows(
    client,
    'analytics_users',
    ['template_id', 'version', 'user_key', 'first_day', 'last_day', 'last_success_day'],
    rows.users.map((u) => [u.templateId, u.version, u.user, u.firstDay, u.lastDay, u.lastSuccessDay]),
  );
  await insertRows(
    client,
    'analytics_download_clients',
    ['template_id', 'version', 'client', 'day'],
    rows.downloadClients.map((c) => [c.templateId, c.version, c.client, c.day]),
  );
  await insertRows(client, 'analytics_ratings', RATING_COLUMNS, rows.ratings.map((r) => ratingValues(r.templateId, r.version, r)));
}

/** Every aggregate row (a store copy). */
export async function readAggregateRows(client: Queryable): Promise<AggregateRows> {
  const all = async <T extends pg.QueryResultRow>(sql: string): Promise<T[]> => (await client.query<T>(sql)).rows;
  return aggregateRowsOf({
    totals: await all(AGGREGATE_ROW_QUERIES.totals),
    days: await all(AGGREGATE_ROW_QUERIES.days),
    users: await all(AGGREGATE_ROW_QUERIES.users),
    downloadClients: await all(AGGREGATE_ROW_QUERIES.downloadClients),
    ratings: await all(AGGREGATE_ROW_QUERIES.ratings),
  });
}

/** The aggregates a record of `versions` is made from: every version's downloads, and the days from `fromDay` to `toDay` and ratings of `versions`. */
export async function readAggregates(
  client: Queryable,
  query: { versions: readonly { templateId: string; version: string }[]; fromDay: number; toDay: number },
): Promise<AnalyticsAggregates> {
  const { rows } = await client.query<Pick<TotalsRow, 'template_id' | 'version' | 'downloads'>>('SELECT template_id, version, downloads FROM analytics_totals');
  const downloads = new Map(rows.map((row) => [versionKey(row.template_id, row.version), row.downloads]));
  const versions = new Map<string, VersionAggregates>();
  for (const { templateId, version } of query.versions) {
    const totals = (await client.query<TotalsRow>('SELECT * FROM analytics_totals WHERE template_id = $1 AND version = $2', [templateId, version])).rows[0];
    if (!totals) continue;
    const days = (
      await client.query<DayRow>('SELECT * FROM analytics_days WHERE template_id = $1 AND version = $2 AND day BETWEEN $3 AND $4', [templateId, version, query.fromDay, query.toDay])
    ).rows.map(toDay);
    const ratings = (await client.query<RatingRow>('SELECT * FROM analytics_ratings WHERE template_id = $1 AND version = $2', [templateId, version])).rows.map(toRating);
    versions.set(versionKey(templateId, version), { totals: toTotals(totals), days, ratings });
  }
  return { downloads, version: (templateId, version) => versions.get(versionKey(templateId, version)) };
}

/** Events read per query of a backfill: its memory stays bounded by the aggregates, not the events. */
const BACKFILL_BATCH = 10_000;

/**
 * Fills the aggregate tables from the stored events, read in batches in the order they were
 * recorded (what was in them is replaced): schema migration 4, for a database that kept only raw
 * events until then.
 */
export async function backfillAggregates(client: Client): Promise<void> {
  for (const table of ['analytics_totals', 'analytics_days', 'analytics_users', 'analytics_download_clients', 'analytics_ratings']) await client.query(`DELETE FROM ${table}`);
  const aggregates = new AnalyticsAccumulator();
  let after = '0';
  for (;;) {
    const { rows } = await client.query<EventRow>(
      'SELECT id, type, template_id, version, timestamp, data, client, received_at FROM events WHERE id > $1 ORDER BY id LIMIT $2',
      [after, BACKFILL_BATCH],
    );
    for (const row of rows) aggregates.add(recordedEventOf(row), Number(row.id));
    if (rows.length < BACKFILL_BATCH) break;
    after = String(rows[rows.length - 1]?.id);
  }
  await writeAggregateRows(client, aggregates.rows());
}
