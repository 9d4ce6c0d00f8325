/** The analytics aggregates as both backends' rows hold them, and what each row becomes (the formulas: registry/analytics.ts). */
import type { DayCounts, LatestRating, UserActivity, VersionTotals } from '../registry/analytics.js';

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
