/**
 * Analytics records: the spec's record (metrics, trends, feedback) of every template version. Every
 * formula is here, and works on aggregates, not on events: per version its all-time totals, its
 * numbers per UTC day, the first and last day of each of its users and each user's latest rating
 * (`AnalyticsAggregates`). What one event adds to them is decided here too (`eventFacts`,
 * `planEvent`); the stores keep the aggregates as events arrive (so a record costs O(days), not
 * O(events)), and `AnalyticsAccumulator` keeps them in memory for `aggregateAnalytics(events)` and
 * `downloadUsage(events)`. Pure: no I/O, no clock. The download count is the one rule the
 * registry's `stats.downloads` use too, so a record's `total` and a registry entry's downloads
 * never differ. Every formula is written in docs/analytics.md.
 */
import { createHash } from 'node:crypto';

import { canonicalJson } from '../core/canonical-json.js';
import { compareText, selectLatest } from '../core/listing.js';
import type { AnalyticsRecord, RegistryDocument, Review } from '../core/schema-types.js';
import { compareVersions } from '../core/versions.js';

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
  /** The storage's id of the event (its order; review ids never show it). */
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

const DAY_MS = 24 * 60 * 60 * 1000;
/** Days of `daily` and of `lastMonth`, of the adoption window and of `activeProjects`. */
const MONTH_DAYS = 30;
/** Days of `lastWeek`, and of each of the two weeks the trend compares. */
const WEEK_DAYS = 7;
/** Within this change (in percent, either way) the download trend is `stable`. */
export const TREND_DEAD_BAND_PERCENT = 10;
/** `growthRate` when the week before had no download and this week has some. */
const GROWTH_FROM_ZERO_PERCENT = 100;
/** Most reviews a record lists (the newest). */
const MAX_REVIEWS = 100;
/** Most entries of `commonIssues` and of `featureRequests`. */
const MAX_FEEDBACK_TOPICS = 5;
/** A rating at or below this makes a comment an issue. */
const ISSUE_RATING = 2;

const ISSUE_WORDS = /\b(bugs?|errors?|fail(s|ed|ing|ure)?|broken|breaks|crash(es|ed|ing)?|does ?n[o']t work|not working|missing)\b/i;
const REQUEST_WORDS = /\b(please add|add support|support for|would be (nice|great|good)|would love|feature request|could you add|can you add|wish|should (support|have|include))\b/i;

/** A version's key in the aggregates: `name@version`. */
export const versionKey = (templateId: string, version: string): string => `${templateId}@${version}`;
/** The UTC day of an instant (epoch milliseconds): days since 1970-01-01. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);
/** Days a record looks back over (today included): `daily` and the month before it, for the trends. */
const RECORD_DAYS = MONTH_DAYS * 2;

const round = (value: number, digits: number): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value : undefined);

function isEventRecord(input: AnalyticsInput): input is AnalyticsEventRecord {
  return typeof (input as { type?: unknown }).type !== 'string' && typeof (input as { event?: unknown }).event === 'object';
}

/** `now` as epoch milliseconds; a value that names no instant is an error naming the option, not a record of zeros. */
function instantOf(now: unknown): number {
  const time = now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : typeof now === 'number' ? now : Number.NaN;
  if (!Number.isFinite(time)) throw new TypeError(`aggregateAnalytics: options.now must be a valid Date, ISO 8601 text or epoch milliseconds (got ${String(now)})`);
  return time;
}

/** The days of a record made at `now`: from `fromDay` to `toDay` (today), both included. */
export function recordWindow(now: Date | string | number): { fromDay: number; toDay: number } {
  const toDay = dayOf(instantOf(now));
  return { fromDay: toDay - RECORD_DAYS + 1, toDay };
}

/** What the aggregates keep of a version, all time. */
export interface VersionTotals {
  /** Counted downloads (one per client, version and day). */
  downloads: number;
  /** Every download event, counted or not (it moves whenever `lastDownload` may have). */
  downloadEvents: number;
  successes: number;
  failures: number;
  /** Sum and number of the durations of successful generations (in the order the events came). */
  durationSum: number;
  durationCount: number;
  /** Users (userId, else client) the version has seen. */
  users: number;
  /** The latest `timestamp` of its download events, as sent, and as an instant. */
  lastDownload?: string;
  lastDownloadMs?: number;
}

/** What the aggregates keep of a version per UTC day. */
export interface DayCounts {
  day: number;
  /** Counted downloads that day. */
  downloads: number;
  /** Successful generations without a user that day (each one a project of its own). */
  anonymousSuccesses: number;
  /** Users whose first event of the version was that day. */
  firstUsers: number;
  /** Users whose latest event of the version was that day. */
  lastUsers: number;
  /** Users whose latest successful generation of the version was that day. */
  lastSuccessUsers: number;
}

/** What the aggregates keep of one user of a version. */
export interface UserActivity {
  firstDay: number;
  lastDay: number;
  lastSuccessDay: number | null;
}

/** A user's latest rating of a version, as its review would show it. */
export interface LatestRating {
  userId: string;
  rating: number;
  /** The comment; null without a non-blank one. */
  comment: string | null;
  helpful: number;
  createdAt: string;
  reviewId: string;
  /** When the event happened (ms), and its order among the events: the latest replaces the earlier. */
  at: number;
  seq: number;
  /** The order of the user's first rating of the version: the average sums in that order. */
  firstSeq: number;
}

/** What one event is, for the aggregates. */
export interface EventFacts {
  templateId: string;
  version: string;
  type: string;
  /** When it happened: the server's receipt, else its `timestamp` (ms); and its UTC day. */
  at: number;
  day: number;
  /** Its order among the events (the storage's id, or the input order). */
  seq: number;
  client?: string;
  /** The user it belongs to: `user:<userId>`, else `client:<client>`. */
  user?: string;
  /** A download's `timestamp` as sent and as an instant (for `lastDownload`). */
  timestamp?: { text: string; ms: number };
  /** A generation's outcome, and the duration of a successful one. */
  success?: boolean;
  duration?: number;
  /** A feedback event's rating, when it counts (a userId and a rating from 1 to 5). */
  rating?: Omit<LatestRating, 'firstSeq'>;
}

/**
 * A review's external id: a hash of the event as it was recorded (what it says, who sent it, when it
 * arrived), never the storage's row id (an internal database id, which a store copy renumbers too).
 * The same event has the same id in every store and every build.
 */
function reviewId(data: AnalyticsEventData, userId: string, at: number, client: string | undefined): string {
  const digest = createHash('sha256').update(canonicalJson({ event: data, userId, at, client: client ?? null }));
  return `review-${digest.digest('hex').slice(0, 32)}`;
}

/**
 * The facts of one event; undefined for anything that is not an event (events come from strangers:
 * never thrown on) or has no time. `seq` orders it among the others.
 */
export function eventFacts(input: AnalyticsInput, seq: number): EventFacts | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const record: AnalyticsEventRecord = isEventRecord(input) ? input : { event: input };
  const data = record.event;
  if (typeof data !== 'object' || data === null || typeof data.templateId !== 'string' || typeof data.version !== 'string') return undefined;
  const at = Date.parse(record.receivedAt ?? data.timestamp ?? '');
  if (Number.isNaN(at)) return undefined;
  const userId = nonEmpty(data.userId);
  const client = nonEmpty(record.client);
  const facts: EventFacts = { templateId: data.templateId, version: data.version, type: data.type, at, day: dayOf(at), seq };
  if (client !== undefined) facts.client = client;
  const user = userId !== undefined ? `user:${userId}` : client !== undefined ? `client:${client}` : undefined;
  if (user !== undefined) facts.user = user;
  if (data.type === 'download') {
    const text = nonEmpty(data.timestamp);
    const ms = text === undefined ? Number.NaN : Date.parse(text);
    if (text !== undefined && !Number.isNaN(ms)) facts.timestamp = { text, ms };
  } else if (data.type === 'generation') {
    if (data.success === true || data.success === false) facts.success = data.success;
    if (data.success === true && typeof data.duration === 'number' && data.duration >= 0) facts.duration = data.duration;
  } else if (data.type === 'feedback') {
    const rating = data.rating;
    if (userId !== undefined && typeof rating === 'number' && rating >= 1 && rating <= 5) {
      const written = Date.parse(typeof data.timestamp === 'string' ? data.timestamp : '');
      const helpful = data.helpful;
      facts.rating = {
        userId,
        rating,
        comment: nonEmpty(data.comment) === undefined ? null : (data.comment as string),
        helpful: typeof helpful === 'number' && Number.isInteger(helpful) && helpful >= 0 ? helpful : 0,
        createdAt: new Date(Number.isNaN(written) ? at : written).toISOString(),
        reviewId: reviewId(data, userId, at, client),
        at,
        seq,
      };
    }
  }
  return facts;
}

/** What a store knows, before an event, of what the event touches. */
export interface EventState {
  /** For a download with a client: whether it is that client's first download of the version that day. */
  firstOfDay: boolean;
  /** The activity of the event's user so far (undefined: a user not seen before, or none). */
  user?: UserActivity;
  /** The user's latest rating so far (for a feedback event that counts). */
  rating?: LatestRating;
}

type TotalsDelta = Partial<Record<'downloads' | 'downloadEvents' | 'successes' | 'failures' | 'durationSum' | 'durationCount' | 'users', number>>;
export type DayDelta = Partial<Omit<DayCounts, 'day'>> & { day: number };

/** What one event changes: increments of the totals and of some days, and rows to write. */
export interface EventPlan {
  templateId: string;
  version: string;
  totals: TotalsDelta;
  /** A candidate for `lastDownload`: kept when later than the one the totals hold. */
  lastDownload?: { text: string; ms: number };
  /** Increments per day (some negative: a user's first or last day moved), by day. */
  days: DayDelta[];
  /** The user's activity after the event, when it changed. */
  user?: UserActivity;
  /** The user's latest rating after the event, when it changed. */
  rating?: LatestRating;
}

/** What an event with `facts` changes in aggregates in `state`: the one rule of what every event counts for. */
export function planEvent(facts: EventFacts, state: EventState): EventPlan {
  const totals: TotalsDelta = {};
  const days = new Map<number, DayDelta>();
  const add = (day: number, field: keyof Omit<DayCounts, 'day'>, by: number): void => {
    const delta = days.get(day) ?? { day };
    delta[field] = (delta[field] ?? 0) + by;
    days.set(day, delta);
  };
  const plan: EventPlan = { templateId: facts.templateId, version: facts.version, totals, days: [] };
  const successful = facts.type === 'generation' && facts.success === true;

  if (facts.type === 'download') {
    totals.downloadEvents = 1;
    if (facts.client === undefined || state.firstOfDay) {
      totals.downloads = 1;
      add(facts.day, 'downloads', 1);
    }
    if (facts.timestamp) plan.lastDownload = facts.timestamp;
  } else if (facts.type === 'generation') {
    if (facts.success === true) {
      totals.successes = 1;
      if (facts.duration !== undefined) {
        totals.durationSum = facts.duration;
        totals.durationCount = 1;
      }
      if (facts.user === undefined) add(facts.day, 'anonymousSuccesses', 1);
    } else if (facts.success === false) {
      totals.failures = 1;
    }
  }

  if (facts.user !== undefined) {
    const before = state.user;
    if (!before) {
      plan.user = { firstDay: facts.day, lastDay: facts.day, lastSuccessDay: successful ? facts.day : null };
      totals.users = 1;
      add(facts.day, 'firstUsers', 1);
      add(facts.day, 'lastUsers', 1);
      if (successful) add(facts.day, 'lastSuccessUsers', 1);
    } else {
      const after = { ...before };
      if (facts.day < before.firstDay) {
        add(before.firstDay, 'firstUsers', -1);
        add(facts.day, 'firstUsers', 1);
        after.firstDay = facts.day;
      }
      if (facts.day > before.lastDay) {
        add(before.lastDay, 'lastUsers', -1);
        add(facts.day, 'lastUsers', 1);
        after.lastDay = facts.day;
      }
      if (successful && (before.lastSuccessDay === null || facts.day > before.lastSuccessDay)) {
        if (before.lastSuccessDay !== null) add(before.lastSuccessDay, 'lastSuccessUsers', -1);
        add(facts.day, 'lastSuccessUsers', 1);
        after.lastSuccessDay = facts.day;
      }
      if (after.firstDay !== before.firstDay || after.lastDay !== before.lastDay || after.lastSuccessDay !== before.lastSuccessDay) plan.user = after;
    }
  }

  if (facts.rating) {
    const previous = state.rating;
    // One rating per user: the latest (by time, then by order) replaces the earlier ones.
    if (!previous || facts.rating.at > previous.at || (facts.rating.at === previous.at && facts.rating.seq > previous.seq)) {
      plan.rating = { ...facts.rating, firstSeq: previous?.firstSeq ?? facts.rating.seq };
    }
  }
  plan.days = [...days.values()].sort((a, b) => a.day - b.day);
  return plan;
}

/** Every row of a set of aggregates, in one backend-neutral shape (what a store writes in bulk and a store copy moves). */
export interface AggregateRows {
  totals: ({ templateId: string; version: string } & VersionTotals)[];
  days: ({ templateId: string; version: string } & DayCounts)[];
  users: ({ templateId: string; version: string; user: string } & UserActivity)[];
  /** The clients that downloaded a version on a day (kept as long as the raw events: see the retention). */
  downloadClients: { templateId: string; version: string; client: string; day: number }[];
  ratings: ({ templateId: string; version: string } & LatestRating)[];
}

/** The aggregates of one version a record is made from. */
export interface VersionAggregates {
  totals: VersionTotals;
  /** Its days (at least those of the record's window; others are ignored). */
  days: readonly DayCounts[];
  /** Every user's latest rating, in any order. */
  ratings: readonly LatestRating[];
}

/** What records are made from: every version's downloads (for the ranks), and the aggregates of the versions asked for. */
export interface AnalyticsAggregates {
  /** Counted downloads of each version (`name@version`); a version without any may be missing. */
  downloads: ReadonlyMap<string, number>;
  /** The aggregates of a version; undefined when it has no events. */
  version(templateId: string, version: string): VersionAggregates | undefined;
}

const emptyTotals = (): VersionTotals => ({ downloads: 0, downloadEvents: 0, successes: 0, failures: 0, durationSum: 0, durationCount: 0, users: 0 });
const emptyDay = (day: number): DayCounts => ({ day, downloads: 0, anonymousSuccesses: 0, firstUsers: 0, lastUsers: 0, lastSuccessUsers: 0 });

/** Adds a plan's increments to totals (in place); `lastDownload` when later. */
function applyTotals(totals: VersionTotals, plan: EventPlan): void {
  for (const [field, by] of Object.entries(plan.totals) as [keyof TotalsDelta, number][]) totals[field] += by;
  if (plan.lastDownload && !(plan.lastDownload.ms <= (totals.lastDownloadMs ?? -Infinity))) {
    totals.lastDownload = plan.lastDownload.text;
    totals.lastDownloadMs = plan.lastDownload.ms;
  }
}

/**
 * Aggregates kept in memory, event after event, by the same rules as the stores' (`planEvent`):
 * what `aggregateAnalytics` and `downloadUsage` work on, and what a store's schema migration
 * fills its tables from.
 */
export class AnalyticsAccumulator implements AnalyticsAggregates {
  readonly #totals = new Map<string, { templateId: string; version: string; totals: VersionTotals }>();
  readonly #days = new Map<string, Map<number, DayCounts>>();
  readonly #users = new Map<string, Map<string, UserActivity>>();
  readonly #seen = new Set<string>();
  readonly #ratings = new Map<string, Map<string, LatestRating>>();
  #order = 0;

  /** Adds one event (skipped when it is none); `seq` orders it (default: after the ones added before). */
  add(input: AnalyticsInput, seq?: number): EventFacts | undefined {
    const facts = eventFacts(input, seq ?? this.#order);
    this.#order = Math.max(this.#order, (seq ?? this.#order) + 1);
    if (facts) this.addFacts(facts);
    return facts;
  }

  addFacts(facts: EventFacts): void {
    const key = versionKey(facts.templateId, facts.version);
    let firstOfDay = false;
    if (facts.type === 'download' && facts.client !== undefined) {
      const once = `${key}\n${facts.client}\n${facts.day}`;
      firstOfDay = !this.#seen.has(once);
      this.#seen.add(once);
    }
    const users = this.#users.get(key) ?? new Map<string, UserActivity>();
    const ratings = this.#ratings.get(key) ?? new Map<string, LatestRating>();
    const user = facts.user === undefined ? undefined : users.get(facts.user);
    const rating = facts.rating ? ratings.get(facts.rating.userId) : undefined;
    const plan = planEvent(facts, { firstOfDay, ...(user ? { user } : {}), ...(rating ? { rating } : {}) });

    const entry = this.#totals.get(key) ?? { templateId: facts.templateId, version: facts.version, totals: emptyTotals() };
    this.#totals.set(key, entry);
    applyTotals(entry.totals, plan);
    const days = this.#days.get(key) ?? new Map<number, DayCounts>();
    this.#days.set(key, days);
    for (const delta of plan.days) {
      const day = days.get(delta.day) ?? emptyDay(delta.day);
      for (const [field, by] of Object.entries(delta) as [keyof DayCounts, number][]) if (field !== 'day') day[field] += by;
      days.set(delta.day, day);
    }
    if (plan.user && facts.user !== undefined) {
      users.set(facts.user, plan.user);
      this.#users.set(key, users);
    }
    if (plan.rating) {
      ratings.set(plan.rating.userId, plan.rating);
      this.#ratings.set(key, ratings);
    }
  }

  get downloads(): ReadonlyMap<string, number> {
    return new Map([...this.#totals].map(([key, { totals }]) => [key, totals.downloads]));
  }

  version(templateId: string, version: string): VersionAggregates | undefined {
    const key = versionKey(templateId, version);
    const entry = this.#totals.get(key);
    if (!entry) return undefined;
    return { totals: entry.totals, days: [...(this.#days.get(key)?.values() ?? [])], ratings: [...(this.#ratings.get(key)?.values() ?? [])] };
  }

  /** Downloads and last download of every version that has a download. */
  usage(): Map<string, DownloadUsage> {
    const usage = new Map<string, DownloadUsage>();
    for (const [key, { totals }] of this.#totals) {
      if (totals.downloads === 0) continue;
      usage.set(key, totals.lastDownload === undefined ? { downloads: totals.downloads } : { downloads: totals.downloads, lastDownload: totals.lastDownload });
    }
    return usage;
  }

  rows(): AggregateRows {
    const split = (key: string): { templateId: string; version: string } => {
      const entry = this.#totals.get(key);
      if (entry) return { templateId: entry.templateId, version: entry.version };
      const at = key.lastIndexOf('@');
      return { templateId: key.slice(0, at), version: key.slice(at + 1) };
    };
    return {
      totals: [...this.#totals.values()].map(({ templateId, version, totals }) => ({ templateId, version, ...totals })),
      days: [...this.#days].flatMap(([key, days]) => [...days.values()].map((day) => ({ ...split(key), ...day }))),
      users: [...this.#users].flatMap(([key, users]) => [...users].map(([user, activity]) => ({ ...split(key), user, ...activity }))),
      downloadClients: [...this.#seen].map((once) => {
        const [key = '', client = '', day = '0'] = once.split('\n');
        return { ...split(key), client, day: Number(day) };
      }),
      ratings: [...this.#ratings].flatMap(([key, ratings]) => [...ratings.values()].map((rating) => ({ ...split(key), ...rating }))),
    };
  }
}

/**
 * Downloads per version (`name@version`): the counting rule of analytics records, which the
 * registry's `stats.downloads` use. With `now`, events after it are left out.
 */
export function downloadUsage(events: Iterable<AnalyticsInput>, options: { now?: Date } = {}): Map<string, DownloadUsage> {
  const limit = options.now?.getTime() ?? Infinity;
  const aggregates = new AnalyticsAccumulator();
  let seq = 0;
  for (const input of events) {
    const facts = eventFacts(input, seq++);
    if (facts?.type === 'download' && facts.at <= limit) aggregates.addFacts(facts);
  }
  return aggregates.usage();
}

/** `growthRate`: this week's downloads against the week before, in percent (one decimal). */
function growthRate(thisWeek: number, weekBefore: number): number {
  if (weekBefore === 0) return thisWeek === 0 ? 0 : GROWTH_FROM_ZERO_PERCENT;
  return round(((thisWeek - weekBefore) / weekBefore) * 100, 1);
}

/** `downloadTrend`: `stable` within the dead band (±10 %, both weeks at zero included). */
function downloadTrend(thisWeek: number, weekBefore: number): 'increasing' | 'decreasing' | 'stable' {
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

function feedbackOf(latest: readonly LatestRating[], version: string): AnalyticsRecord['feedback'] {
  // Summed in the order the users first rated, as ratings arrived.
  const ratings = [...latest].sort((a, b) => a.firstSeq - b.firstSeq);
  const total = ratings.length;
  const averageRating = total === 0 ? 0 : round(ratings.reduce((sum, r) => sum + r.rating, 0) / total, 2);
  const commented = ratings.filter((r): r is LatestRating & { comment: string } => r.comment !== null).sort((a, b) => b.at - a.at || b.seq - a.seq);
  const reviews: Review[] = commented.slice(0, MAX_REVIEWS).map((r) => ({
    id: r.reviewId,
    userId: r.userId,
    rating: r.rating,
    comment: r.comment,
    helpful: r.helpful,
    version,
    createdAt: r.createdAt,
  }));
  const comments = commented.map((r) => ({ text: r.comment, at: r.at, rating: r.rating }));
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
 * first), from `aggregates` as of `now` (their days up to today; aggregates hold what happened up
 * to `now`). Versions the registry does not list are left out, also from the ranks.
 */
export function analyticsRecords(aggregates: AnalyticsAggregates, options: AggregateOptions): AnalyticsRecord[] {
  const { fromDay, toDay } = recordWindow(options.now);
  const monthStart = toDay - MONTH_DAYS + 1;
  const entries = options.registry.templates;

  // Downloads per template for the ranks: its listed versions' counted downloads.
  const templateTotals = new Map<string, number>();
  const counted = new Set<string>();
  const downloads = aggregates.downloads;
  for (const entry of entries) {
    const key = versionKey(entry.id, entry.version);
    const total = counted.has(key) ? 0 : (downloads.get(key) ?? 0);
    counted.add(key);
    templateTotals.set(entry.id, (templateTotals.get(entry.id) ?? 0) + total);
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
    const found = aggregates.version(entry.id, entry.version);
    const totals = found?.totals ?? emptyTotals();
    const byDay = new Map((found?.days ?? []).filter((d) => d.day >= fromDay && d.day <= toDay).map((d) => [d.day, d]));
    const sumDays = (from: number, to: number, field: keyof Omit<DayCounts, 'day'>): number => {
      let sum = 0;
      for (let day = from; day <= to; day++) sum += byDay.get(day)?.[field] ?? 0;
      return sum;
    };
    const daily = Array.from({ length: MONTH_DAYS }, (_, i) => byDay.get(toDay - MONTH_DAYS + 1 + i)?.downloads ?? 0);
    const lastWeek = sumDays(toDay - WEEK_DAYS + 1, toDay, 'downloads');
    const weekBefore = sumDays(toDay - 2 * WEEK_DAYS + 1, toDay - WEEK_DAYS, 'downloads');

    // Adoption: users whose first day, or latest day, is within the last 30 days.
    const newUsers = sumDays(monthStart, toDay, 'firstUsers');
    const returningUsers = sumDays(monthStart, toDay, 'lastUsers') - newUsers;
    const earlierUsers = totals.users - newUsers;

    const category = categories.get(entry.id) ?? '';
    const templateTotal = templateTotals.get(entry.id) ?? 0;
    records.push({
      templateId: entry.id,
      version: entry.version,
      metrics: {
        downloads: {
          total: totals.downloads,
          lastMonth: sumDays(monthStart, toDay, 'downloads'),
          lastWeek,
          daily,
        },
        usage: {
          activeProjects: sumDays(monthStart, toDay, 'lastSuccessUsers') + sumDays(monthStart, toDay, 'anonymousSuccesses'),
          successfulGenerations: totals.successes,
          failedGenerations: totals.failures,
          averageGenerationTime: totals.durationCount === 0 ? 0 : round(totals.durationSum / totals.durationCount, 2),
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
      feedback: feedbackOf(found?.ratings ?? [], entry.version),
    });
  }
  return records;
}

/**
 * The analytics record of every template version in `registry` (by id, then highest version
 * first), from `events` as of `now`: the events (up to `now`) made into aggregates, then
 * `analyticsRecords`. Events of versions the registry does not list are ignored, and so are
 * events after `now`.
 */
export function aggregateAnalytics(events: Iterable<AnalyticsInput>, options: AggregateOptions): AnalyticsRecord[] {
  const now = instantOf(options.now);
  const aggregates = new AnalyticsAccumulator();
  let seq = 0;
  for (const input of events) {
    const facts = eventFacts(input, seq++);
    if (facts && facts.at <= now) aggregates.addFacts(facts);
  }
  return analyticsRecords(aggregates, options);
}
