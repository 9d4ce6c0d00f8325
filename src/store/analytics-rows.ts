/**
 * The analytics events and aggregates as both backends' rows hold them, and what each row becomes
 * (the formulas: registry/analytics.ts).
 */
import type { AggregateRows, DayCounts, LatestRating, UserActivity, VersionTotals } from '../registry/analytics.js';
import { jsonOf, timeOf, type JsonColumn, type TimeColumn } from './rows.js';
import type { EventOrigin, RecordedEvent, StoredEvent, VersionUsage } from './types.js';

/** A raw event's row: its indexed fields as columns, the rest as JSON (the client's `timestamp` kept as sent). */
export interface EventRow {
  /** pg reads a bigint as text. */
  id: number | string;
  type: string;
  template_id: string;
  version: string;
  timestamp: string;
  data: JsonColumn<Record<string, unknown>>;
  client: string | null;
  received_at: TimeColumn | null;
}

/** The columns of a raw event, as `newEventRow` fills them (the id is the database's). */
export const EVENT_COLUMNS = ['type', 'template_id', 'version', 'timestamp', 'data', 'client', 'received_at'] as const;

/** The row of a new event from `origin` (received now unless it says when). */
export function newEventRow(event: StoredEvent, origin: EventOrigin): Omit<EventRow, 'id'> & { data: string; received_at: string } {
  const { type, templateId, version, timestamp, ...rest } = event;
  return {
    type,
    template_id: templateId,
    version,
    timestamp,
    data: JSON.stringify(rest),
    client: origin.client ?? null,
    received_at: (origin.receivedAt ?? new Date()).toISOString(),
  };
}

/** An event's row as `listEvents` gives it back (and as what it counts for is decided on). */
export function recordedEventOf(row: EventRow): RecordedEvent {
  return {
    id: String(row.id),
    event: { ...jsonOf(row.data), type: row.type, templateId: row.template_id, version: row.version, timestamp: row.timestamp },
    ...(row.client !== null ? { client: row.client } : {}),
    ...(row.received_at !== null ? { receivedAt: timeOf(row.received_at) } : {}),
  };
}

/** The usage of every version with a download, from its totals' rows: `stats.downloads` equal their `total`. */
export function usageOf(rows: readonly Pick<TotalsRow, 'template_id' | 'version' | 'downloads' | 'last_download'>[]): Map<string, VersionUsage> {
  return new Map(rows.map((row) => [`${row.template_id}@${row.version}`, row.last_download === null ? { downloads: row.downloads } : { downloads: row.downloads, lastDownload: row.last_download }]));
}

/** The columns of a day's counts and the fields they fill. */
export const DAY_FIELDS = [
  ['downloads', 'downloads'],
  ['anonymous_successes', 'anonymousSuccesses'],
  ['first_users', 'firstUsers'],
  ['last_users', 'lastUsers'],
  ['last_success_users', 'lastSuccessUsers'],
] as const;

/** The columns of a version's totals and the fields they fill. */
export const TOTAL_FIELDS = [
  ['downloads', 'downloads'],
  ['download_events', 'downloadEvents'],
  ['successes', 'successes'],
  ['failures', 'failures'],
  ['duration_sum', 'durationSum'],
  ['duration_count', 'durationCount'],
  ['users', 'users'],
] as const;

export interface TotalsRow {
  template_id: string;
  version: string;
  downloads: number;
  download_events: number;
  successes: number;
  failures: number;
  duration_sum: number;
  duration_count: number;
  users: number;
  last_download: string | null;
  last_download_ms: number | null;
}
export type DayRow = { template_id: string; version: string; day: number } & Record<(typeof DAY_FIELDS)[number][0], number>;
export interface UserRow {
  template_id: string;
  version: string;
  user_key: string;
  first_day: number;
  last_day: number;
  last_success_day: number | null;
}
export interface RatingRow {
  template_id: string;
  version: string;
  user_id: string;
  rating: number;
  comment: string | null;
  helpful: number;
  created_at: string;
  review_id: string;
  at: number;
  /** A number; PostgreSQL's bigint arrives as text. */
  seq: number | string;
  first_seq: number | string;
}

export const toTotals = (row: TotalsRow): VersionTotals => ({
  downloads: row.downloads,
  downloadEvents: row.download_events,
  successes: row.successes,
  failures: row.failures,
  durationSum: row.duration_sum,
  durationCount: row.duration_count,
  users: row.users,
  ...(row.last_download !== null && row.last_download_ms !== null ? { lastDownload: row.last_download, lastDownloadMs: row.last_download_ms } : {}),
});
export const toDay = (row: DayRow): DayCounts => ({
  day: row.day,
  downloads: row.downloads,
  anonymousSuccesses: row.anonymous_successes,
  firstUsers: row.first_users,
  lastUsers: row.last_users,
  lastSuccessUsers: row.last_success_users,
});
export const toUser = (row: UserRow): UserActivity => ({ firstDay: row.first_day, lastDay: row.last_day, lastSuccessDay: row.last_success_day });
export const toRating = (row: RatingRow): LatestRating => ({
  userId: row.user_id,
  rating: row.rating,
  comment: row.comment,
  helpful: row.helpful,
  createdAt: row.created_at,
  reviewId: row.review_id,
  at: row.at,
  seq: Number(row.seq),
  firstSeq: Number(row.first_seq),
});

/** A client that downloaded a version on a day. */
export interface DownloadClientRow {
  template_id: string;
  version: string;
  client: string;
  day: number;
}

/** Every row of each aggregate table, in a stable order (a store copy); no parameters, so one text for both dialects. */
export const AGGREGATE_ROW_QUERIES = {
  totals: 'SELECT * FROM analytics_totals ORDER BY template_id, version',
  days: 'SELECT * FROM analytics_days ORDER BY template_id, version, day',
  users: 'SELECT * FROM analytics_users ORDER BY template_id, version, user_key',
  downloadClients: 'SELECT * FROM analytics_download_clients ORDER BY template_id, version, client, day',
  ratings: 'SELECT * FROM analytics_ratings ORDER BY template_id, version, user_id',
} as const;

/** The rows `AGGREGATE_ROW_QUERIES` read, per table. */
export interface AggregateTableRows {
  totals: TotalsRow[];
  days: DayRow[];
  users: UserRow[];
  downloadClients: DownloadClientRow[];
  ratings: RatingRow[];
}

/** The aggregate rows of every table as the analytics give them (`AggregateRows`). */
export function aggregateRowsOf(tables: AggregateTableRows): AggregateRows {
  return {
    totals: tables.totals.map((row) => ({ templateId: row.template_id, version: row.version, ...toTotals(row) })),
    days: tables.days.map((row) => ({ templateId: row.template_id, version: row.version, ...toDay(row) })),
    users: tables.users.map((row) => ({ templateId: row.template_id, version: row.version, user: row.user_key, ...toUser(row) })),
    downloadClients: tables.downloadClients.map((row) => ({ templateId: row.template_id, version: row.version, client: row.client, day: row.day })),
    ratings: tables.ratings.map((row) => ({ templateId: row.template_id, version: row.version, ...toRating(row) })),
  };
}

/** The columns of a rating row, in the order of `ratingValues` (the first three are its key). */
export const RATING_COLUMNS = ['template_id', 'version', 'user_id', 'rating', 'comment', 'helpful', 'created_at', 'review_id', 'at', 'seq', 'first_seq'] as const;

/** A rating's row, in the order of `RATING_COLUMNS`. */
export const ratingValues = (templateId: string, version: string, r: LatestRating): unknown[] => [templateId, version, r.userId, r.rating, r.comment, r.helpful, r.createdAt, r.reviewId, r.at, r.seq, r.firstSeq];
