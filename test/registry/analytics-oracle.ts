/**
 * The analytics records as the release before aggregates computed them, from every event at once:
 * the oracle the aggregate-based records (src/registry/analytics.ts) must equal, event for event.
 * A copy kept for the tests only; do not change it with the formulas (docs/analytics.md).
 */
import { createHash } from 'node:crypto';

import { canonicalJson } from '../../src/core/canonical-json.js';
import { compareText, selectLatest } from '../../src/core/listing.js';
import type { AnalyticsRecord, RegistryDocument, Review } from '../../src/core/schema-types.js';
import { compareVersions } from '../../src/core/versions.js';

/** One analytics event: the spec's download, generation or feedback event. */
export interface AnalyticsEventData {
  type: string;
  templateId: string;
  version: string;
  timestamp?: string;
  [field: string]: unknown;
}

/** An event as a server recorded it: the event, who sent it and when the server received it. */
export interface AnalyticsEventRecord {
  event: AnalyticsEventData;
  /** An opaque id of the sender's address; undefined: unknown. */
  client?: string;
  /** When the server received the event (ISO 8601); undefined: its `timestamp` stands for it. */
  receivedAt?: string;
  /** The storage's id of the event (review ids derive from it). */
  id?: string;
}

/** What the aggregation takes: recorded events, or bare events (no client, received at their timestamp). */
export type AnalyticsInput = AnalyticsEventData | AnalyticsEventRecord;

export interface AggregateOptions {
  /** The instant the record describes (a Date, an ISO 8601 text or epoch milliseconds); events after it are left out. */
  now: Date | string | number;
  /** The registry document: a record is made for each of its entries; ranks are among its templates. */
  registry: Pick<RegistryDocument, 'templates'>;
  /** Only the records of this template (ranks still compare every template). */
  templateId?: string;
  /** Only the record of this version (with `templateId`). */
  version?: string;
}

/** Downloads of one version as the registry's `stats` show them. */
export interface DownloadUsage {
  downloads: number;
  /** The latest `timestamp` of its download events. */
  lastDownload?: string;
}

export const DAY_MS = 24 * 60 * 60 * 1000;
/** Days of `daily` and of `lastMonth`, of the adoption window and of `activeProjects`. */
export const MONTH_DAYS = 30;
/** Days of `lastWeek`, and of each of the two weeks the trend compares. */
export const WEEK_DAYS = 7;
/** Within this change (in percent, either way) the download trend is `stable`. */
export const TREND_DEAD_BAND_PERCENT = 10;
/** `growthRate` when the week before had no download and this week has some. */
export const GROWTH_FROM_ZERO_PERCENT = 100;
/** Most reviews a record lists (the newest). */
export const MAX_REVIEWS = 100;
/** Most entries of `commonIssues` and of `featureRequests`. */
export const MAX_FEEDBACK_TOPICS = 5;
/** A rating at or below this makes a comment an issue. */
export const ISSUE_RATING = 2;

const ISSUE_WORDS = /\b(bugs?|errors?|fail(s|ed|ing|ure)?|broken|breaks|crash(es|ed|ing)?|does ?n[o']t work|not working|missing)\b/i;
const REQUEST_WORDS = /\b(please add|add support|support for|would be (nice|great|good)|would love|feature request|could you add|can you add|wish|should (support|have|include))\b/i;

interface Normal {
  type: string;
  key: string;
  data: AnalyticsEventData;
  /** When it happened, for every window: the server's receipt, else the event's timestamp (ms). */
  at: number;
  day: number;
  client: string | undefined;
  user: string | undefined;
  id: string | undefined;
  order: number;
}

const versionKey = (templateId: string, version: string): string => `${templateId}@${version}`;
const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);
const round = (value: number, digits: number): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value : undefined);

function isEventRecord(input: AnalyticsInput): input is AnalyticsEventRecord {
  return typeof (input as { type?: unknown }).type !== 'string' && typeof (input as { event?: unknown }).event === 'object';
}

/** The events in one form, in input order; those without a parseable time are left out. */
/** `now` as epoch milliseconds; a value that names no instant is an error naming the option, not a record of zeros. */
function instantOf(now: unknown): number {
  const time = now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : typeof now === 'number' ? now : Number.NaN;
  if (!Number.isFinite(time)) throw new TypeError(`aggregateAnalytics: options.now must be a valid Date, ISO 8601 text or epoch milliseconds (got ${String(now)})`);
  return time;
}

function normalize(events: Iterable<AnalyticsInput>): Normal[] {
  const result: Normal[] = [];
  let order = 0;
  for (const input of events) {
    // Events come from strangers: anything that is not an event object is skipped, never thrown on.
    if (typeof input !== 'object' || input === null) continue;
    const record: AnalyticsEventRecord = isEventRecord(input) ? input : { event: input };
    const data = record.event;
    if (typeof data !== 'object' || data === null || typeof data.templateId !== 'string' || typeof data.version !== 'string') continue;
    const at = Date.parse(record.receivedAt ?? data.timestamp ?? '');
    if (Number.isNaN(at)) continue;
    const userId = nonEmpty(data.userId);
    const client = nonEmpty(record.client);
    result.push({
      type: data.type,
      key: versionKey(data.templateId, data.version),
      data,
      at,
      day: dayOf(at),
      client,
      user: userId !== undefined ? `user:${userId}` : client !== undefined ? `client:${client}` : undefined,
      id: record.id,
      order: order++,
    });
  }
  return result;
}

/**
 * The downloads that count: a client counts at most one download of a version per UTC day (by
 * when the server received it); a download of an unknown client counts on its own.
 */
function countedDownloads(events: readonly Normal[]): Normal[] {
  const seen = new Set<string>();
  const counted: Normal[] = [];
  for (const event of events) {
    if (event.type !== 'download') continue;
    if (event.client !== undefined) {
      const once = `${event.key}\n${event.client}\n${event.day}`;
      if (seen.has(once)) continue;
      seen.add(once);
    }
    counted.push(event);
  }
  return counted;
}

/**
 * Downloads per version (`name@version`): the counting rule of analytics records, which the
 * registry's `stats.downloads` use. With `now`, events after it are left out.
 */
export function downloadUsage(events: Iterable<AnalyticsInput>, options: { now?: Date } = {}): Map<string, DownloadUsage> {
  const limit = options.now?.getTime() ?? Infinity;
  const downloads = normalize(events).filter((e) => e.type === 'download' && e.at <= limit);
  const usage = new Map<string, DownloadUsage & { last: number }>();
  for (const event of countedDownloads(downloads)) {
    const entry = usage.get(event.key) ?? { downloads: 0, last: -Infinity };
    entry.downloads += 1;
    usage.set(event.key, entry);
  }
  // The last download is the latest timestamp of any download event, counted or not.
  for (const event of downloads) {
    const entry = usage.get(event.key);
    const timestamp = nonEmpty(event.data.timestamp);
    if (!entry || timestamp === undefined) continue;
    const at = Date.parse(timestamp);
    if (at > entry.last) {
      entry.last = at;
      entry.lastDownload = timestamp;
    }
  }
  return new Map([...usage].map(([key, { downloads, lastDownload }]) => [key, lastDownload === undefined ? { downloads } : { downloads, lastDownload }]));
}

/** `growthRate`: this week's downloads against the week before, in percent (one decimal). */
export function growthRate(thisWeek: number, weekBefore: number): number {
  if (weekBefore === 0) return thisWeek === 0 ? 0 : GROWTH_FROM_ZERO_PERCENT;
  return round(((thisWeek - weekBefore) / weekBefore) * 100, 1);
}

/** `downloadTrend`: `stable` within the dead band (±10 %, both weeks at zero included). */
export function downloadTrend(thisWeek: number, weekBefore: number): 'increasing' | 'decreasing' | 'stable' {
  const rate = growthRate(thisWeek, weekBefore);
  if (rate > TREND_DEAD_BAND_PERCENT) return 'increasing';
  if (rate < -TREND_DEAD_BAND_PERCENT) return 'decreasing';
  return 'stable';
}

/** Competition ranking ("1224"): 1 + the number of others with strictly more; ties share a rank. */
function rankOf(value: number, values: readonly number[]): number {
  return 1 + values.filter((other) => other > value).length;
}

/** Comments grouped by their text (case and spacing aside), most frequent first, then most recent. */
function topics(comments: readonly { text: string; at: number }[]): string[] {
  const groups = new Map<string, { text: string; count: number; last: number }>();
  for (const { text, at } of comments) {
    const shown = text.trim().replace(/\s+/g, ' ');
    const key = shown.toLowerCase().replace(/[.!?]+$/, '');
    const group = groups.get(key) ?? { text: shown, count: 0, last: -Infinity };
    group.count += 1;
    if (at >= group.last) {
      group.last = at;
      group.text = shown;
    }
    groups.set(key, group);
  }
  return [...groups.values()]
    .sort((a, b) => b.count - a.count || b.last - a.last || compareText(a.text, b.text))
    .slice(0, MAX_FEEDBACK_TOPICS)
    .map((group) => group.text);
}

function reviewId(event: Normal, userId: string): string {
  // An external id: a hash of the recorded event, never the storage's row id.
  const digest = createHash('sha256').update(canonicalJson({ event: event.data, userId, at: event.at, client: event.client ?? null }));
  return `review-${digest.digest('hex').slice(0, 32)}`;
}

function feedbackOf(events: readonly Normal[], version: string): AnalyticsRecord['feedback'] {
  // One rating per user: the latest (by time, then by input order) replaces the earlier ones.
  const latest = new Map<string, Normal>();
  for (const event of events) {
    if (event.type !== 'feedback') continue;
    const userId = nonEmpty(event.data.userId);
    const rating = event.data.rating;
    if (userId === undefined || typeof rating !== 'number' || !(rating >= 1 && rating <= 5)) continue;
    const previous = latest.get(userId);
    if (!previous || event.at > previous.at || (event.at === previous.at && event.order > previous.order)) latest.set(userId, event);
  }
  const ratings = [...latest.entries()];
  const total = ratings.length;
  const averageRating = total === 0 ? 0 : round(ratings.reduce((sum, [, e]) => sum + (e.data.rating as number), 0) / total, 2);
  const commented = ratings
    .filter(([, e]) => nonEmpty(e.data.comment) !== undefined)
    .sort(([, a], [, b]) => b.at - a.at || b.order - a.order);
  const reviews: Review[] = commented.slice(0, MAX_REVIEWS).map(([userId, e]) => {
    const written = Date.parse(typeof e.data.timestamp === 'string' ? e.data.timestamp : '');
    const helpful = e.data.helpful;
    return {
      id: reviewId(e, userId),
      userId,
      rating: e.data.rating as number,
      comment: e.data.comment as string,
      helpful: typeof helpful === 'number' && Number.isInteger(helpful) && helpful >= 0 ? helpful : 0,
      version,
      createdAt: new Date(Number.isNaN(written) ? e.at : written).toISOString(),
    };
  });
  const comments = commented.map(([, e]) => ({ text: e.data.comment as string, at: e.at, rating: e.data.rating as number }));
  return {
    averageRating,
    totalRatings: total,
    reviews,
    commonIssues: topics(comments.filter((c) => c.rating <= ISSUE_RATING || ISSUE_WORDS.test(c.text))),
    featureRequests: topics(comments.filter((c) => REQUEST_WORDS.test(c.text))),
  };
}

/**
 * The analytics record of every template version in `registry` (by id, then highest version
 * first), from `events` as of `now`. Events of versions the registry does not list are ignored,
 * and so are events after `now`.
 */
export function aggregateAnalytics(events: Iterable<AnalyticsInput>, options: AggregateOptions): AnalyticsRecord[] {
  const now = instantOf(options.now);
  const today = dayOf(now);
  const monthStart = today - MONTH_DAYS + 1;
  const entries = options.registry.templates;
  const known = new Set(entries.map((e) => versionKey(e.id, e.version)));

  const byVersion = new Map<string, Normal[]>();
  for (const event of normalize(events)) {
    if (event.at > now || !known.has(event.key)) continue;
    let list = byVersion.get(event.key);
    if (!list) byVersion.set(event.key, (list = []));
    list.push(event);
  }

  // Downloads: counted per version, then per template for the ranks.
  const daily = new Map<string, number[]>();
  const totals = new Map<string, number>();
  const templateTotals = new Map<string, number>();
  for (const entry of entries) templateTotals.set(entry.id, 0);
  for (const [key, list] of byVersion) {
    const days = new Array<number>(MONTH_DAYS * 2).fill(0);
    const counted = countedDownloads(list);
    for (const event of counted) {
      const back = today - event.day;
      if (back >= 0 && back < days.length) days[days.length - 1 - back]! += 1;
    }
    daily.set(key, days);
    totals.set(key, counted.length);
    const id = list[0]!.data.templateId;
    templateTotals.set(id, (templateTotals.get(id) ?? 0) + counted.length);
  }
  const categories = new Map<string, string>();
  for (const id of templateTotals.keys()) categories.set(id, selectLatest(entries, id, { includeYanked: true })?.category ?? '');
  const allTotals = [...templateTotals.values()];

  const selected = entries
    .filter((e) => (options.templateId === undefined || e.id === options.templateId) && (options.version === undefined || e.version === options.version))
    .sort((a, b) => compareText(a.id, b.id) || compareVersions(b.version, a.version));
  const seen = new Set<string>();
  const records: AnalyticsRecord[] = [];
  for (const entry of selected) {
    const key = versionKey(entry.id, entry.version);
    if (seen.has(key)) continue;
    seen.add(key);
    const list = byVersion.get(key) ?? [];
    const days = daily.get(key) ?? new Array<number>(MONTH_DAYS * 2).fill(0);
    const sum = (from: number, to: number): number => days.slice(from, to).reduce((s, n) => s + n, 0);
    const end = days.length;
    const lastWeek = sum(end - WEEK_DAYS, end);
    const weekBefore = sum(end - 2 * WEEK_DAYS, end - WEEK_DAYS);

    // Usage: generation events.
    const generations = list.filter((e) => e.type === 'generation');
    const successes = generations.filter((e) => e.data.success === true);
    const durations = successes.map((e) => e.data.duration).filter((d): d is number => typeof d === 'number' && d >= 0);
    const projects = new Set<string>();
    for (const e of successes) if (e.day >= monthStart) projects.add(e.user ?? `event:${e.order}`);

    // Adoption: users (userId, else the client) of this version.
    const firstDay = new Map<string, number>();
    const active = new Set<string>();
    for (const e of list) {
      if (e.user === undefined) continue;
      firstDay.set(e.user, Math.min(firstDay.get(e.user) ?? Infinity, e.day));
      if (e.day >= monthStart) active.add(e.user);
    }
    let newUsers = 0;
    let returningUsers = 0;
    for (const user of active) {
      if ((firstDay.get(user) ?? today) >= monthStart) newUsers += 1;
      else returningUsers += 1;
    }
    const earlierUsers = [...firstDay.values()].filter((day) => day < monthStart).length;

    const category = categories.get(entry.id) ?? '';
    const templateTotal = templateTotals.get(entry.id) ?? 0;
    records.push({
      templateId: entry.id,
      version: entry.version,
      metrics: {
        downloads: {
          total: totals.get(key) ?? 0,
          lastMonth: sum(end - MONTH_DAYS, end),
          lastWeek,
          daily: days.slice(end - MONTH_DAYS),
        },
        usage: {
          activeProjects: projects.size,
          successfulGenerations: successes.length,
          failedGenerations: generations.filter((e) => e.data.success === false).length,
          averageGenerationTime: durations.length === 0 ? 0 : round(durations.reduce((s, d) => s + d, 0) / durations.length, 2),
        },
        adoption: {
          newUsers,
          returningUsers,
          retentionRate: earlierUsers === 0 ? 0 : round(returningUsers / earlierUsers, 4),
        },
      },
      trends: {
        downloadTrend: downloadTrend(lastWeek, weekBefore),
        popularityRank: rankOf(templateTotal, allTotals),
        categoryRank: rankOf(
          templateTotal,
          [...templateTotals].filter(([id]) => categories.get(id) === category).map(([, total]) => total),
        ),
        growthRate: growthRate(lastWeek, weekBefore),
      },
      feedback: feedbackOf(list, entry.version),
    });
  }
  return records;
}
