import { describe, expect, it } from 'vitest';

import type { AnalyticsRecord, RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { aggregateAnalytics, downloadUsage, type AnalyticsEventRecord, type AnalyticsInput } from '../../src/server-package.js';
import { templateEntry } from '../helpers/builders.js';

const NOW = new Date('2026-03-31T12:00:00.000Z');
const DAY = 24 * 60 * 60 * 1000;

/** The instant `days` days (and `hours` hours) before NOW. */
const ago = (days: number, hours = 0): string => new Date(NOW.getTime() - days * DAY - hours * 3_600_000).toISOString();

function entry(id: string, version: string, category = 'backend'): TemplateEntry {
  return templateEntry(id, { version, category });
}

const registry: Pick<RegistryDocument, 'templates'> = {
  templates: [entry('web-app', '1.0.0', 'frontend'), entry('web-app', '1.1.0', 'frontend'), entry('api', '2.0.0'), entry('worker', '1.0.0'), entry('site', '1.0.0', 'frontend')],
};

function download(at: string, options: { id?: string; version?: string; client?: string; userId?: string } = {}): AnalyticsEventRecord {
  const event = {
    type: 'download',
    templateId: options.id ?? 'web-app',
    version: options.version ?? '1.0.0',
    timestamp: at,
    userAgent: 'test',
    platform: 'linux',
    ...(options.userId ? { userId: options.userId } : {}),
  };
  return { event, receivedAt: at, ...(options.client ? { client: options.client } : {}) };
}

function generation(at: string, success: boolean, duration: number, userId?: string): AnalyticsInput {
  return { type: 'generation', templateId: 'web-app', version: '1.0.0', success, duration, timestamp: at, ...(userId ? { userId } : {}) };
}

function feedback(at: string, userId: string, rating: number, comment = '', extra: Record<string, unknown> = {}): AnalyticsInput {
  return { type: 'feedback', templateId: 'web-app', version: '1.0.0', rating, comment, userId, timestamp: at, ...extra };
}

function recordOf(events: AnalyticsInput[], id = 'web-app', version = '1.0.0'): AnalyticsRecord {
  const record = aggregateAnalytics(events, { now: NOW, registry }).find((r) => r.templateId === id && r.version === version);
  if (!record) throw new Error(`no record of ${id}@${version}`);
  expect(schemaErrors('analytics-record', record)).toEqual([]);
  return record;
}

describe('aggregateAnalytics', () => {
  it('makes a schema-valid record of every version, all zero without history', () => {
    const records = aggregateAnalytics([], { now: NOW, registry });
    expect(records.map((r) => `${r.templateId}@${r.version}`)).toEqual(['api@2.0.0', 'site@1.0.0', 'web-app@1.1.0', 'web-app@1.0.0', 'worker@1.0.0']);
    for (const record of records) expect(schemaErrors('analytics-record', record)).toEqual([]);
    const [api] = records;
    expect(api?.metrics).toEqual({
      downloads: { total: 0, lastMonth: 0, lastWeek: 0, daily: new Array<number>(30).fill(0) },
      usage: { activeProjects: 0, successfulGenerations: 0, failedGenerations: 0, averageGenerationTime: 0 },
      adoption: { newUsers: 0, returningUsers: 0, retentionRate: 0 },
    });
    expect(api?.trends).toEqual({ downloadTrend: 'stable', popularityRank: 1, categoryRank: 1, growthRate: 0 });
    expect(api?.feedback).toEqual({ averageRating: 0, totalRatings: 0, reviews: [], commonIssues: [], featureRequests: [] });
  });

  it('works for a registry of one template, and limits the records to a template or version', () => {
    const one = { templates: [entry('solo', '0.1.0')] };
    const records = aggregateAnalytics([download(ago(0), { id: 'solo', version: '0.1.0' })], { now: NOW, registry: one });
    expect(records).toHaveLength(1);
    expect(records[0]?.metrics.downloads.total).toBe(1);
    expect(records[0]?.trends).toMatchObject({ popularityRank: 1, categoryRank: 1, downloadTrend: 'increasing', growthRate: 100 });
    expect(aggregateAnalytics([], { now: NOW, registry, templateId: 'web-app' }).map((r) => r.version)).toEqual(['1.1.0', '1.0.0']);
    expect(aggregateAnalytics([], { now: NOW, registry, templateId: 'web-app', version: '1.0.0' }).map((r) => r.version)).toEqual(['1.0.0']);
  });

  it('takes now as a Date, an ISO text or epoch milliseconds, refuses one that is no instant, and skips entries that are no events', () => {
    const events = [download(ago(1)), download(ago(2), { client: 'c1' })];
    const expected = aggregateAnalytics(events, { now: NOW, registry });
    expect(aggregateAnalytics(events, { now: NOW.toISOString(), registry })).toEqual(expected);
    expect(aggregateAnalytics(events, { now: NOW.getTime(), registry })).toEqual(expected);
    expect(() => aggregateAnalytics(events, { now: new Date('not a date'), registry })).toThrow(/options\.now must be a valid Date/);
    expect(() => aggregateAnalytics(events, { now: 'yesterday', registry })).toThrow(/options\.now/);
    const hostile = [null, 42, 'download', { event: null }, { type: 'download' }, ...events] as unknown as AnalyticsInput[];
    expect(aggregateAnalytics(hostile, { now: NOW, registry })).toEqual(expected);
  });

  describe('downloads', () => {
    it('counts total, the last 7 and 30 UTC days and the daily series, oldest first', () => {
      const record = recordOf([
        download(ago(0)), // today
        download('2026-03-25T00:00:00.000Z'), // first instant of the 7th day back (today is day 1): in lastWeek
        download(ago(7)), // exactly 7 days ago: the 8th day, out of lastWeek, in lastMonth
        download('2026-03-02T00:00:00.000Z'), // first instant of the 30th day: in lastMonth
        download(ago(30)), // exactly 30 days ago: out of the month, in total
        download(ago(400)),
      ]);
      const { downloads } = record.metrics;
      expect(downloads.total).toBe(6);
      expect(downloads.lastWeek).toBe(2);
      expect(downloads.lastMonth).toBe(4);
      expect(downloads.daily).toHaveLength(30);
      expect(downloads.daily[29]).toBe(1);
      expect(downloads.daily[23]).toBe(1);
      expect(downloads.daily[22]).toBe(1);
      expect(downloads.daily[0]).toBe(1);
      expect(downloads.daily.reduce((a, b) => a + b, 0)).toBe(downloads.lastMonth);
      expect(downloads.daily.slice(-7).reduce((a, b) => a + b, 0)).toBe(downloads.lastWeek);
    });

    it('counts a client once per version and UTC day; unknown clients once per event; events after now not at all', () => {
      const record = recordOf([
        download('2026-03-31T00:10:00.000Z', { client: 'c1' }),
        download('2026-03-31T11:00:00.000Z', { client: 'c1' }),
        download('2026-03-30T23:59:59.000Z', { client: 'c1' }),
        download('2026-03-31T01:00:00.000Z', { client: 'c2' }),
        download('2026-03-31T01:00:00.000Z', { client: 'c1', version: '1.1.0' }),
        download('2026-03-31T02:00:00.000Z'),
        download('2026-03-31T02:00:00.000Z'),
        download('2026-03-31T12:00:00.001Z', { client: 'c3' }),
      ]);
      expect(record.metrics.downloads.total).toBe(5);
      expect(record.metrics.downloads.daily.slice(-2)).toEqual([1, 4]);
    });

    it('uses the time the server received an event, else its timestamp', () => {
      const late: AnalyticsEventRecord = { event: { ...download(ago(100)).event }, receivedAt: ago(0) };
      const bare = download(ago(3)).event;
      const record = recordOf([late, bare]);
      expect(record.metrics.downloads.lastWeek).toBe(2);
    });

    it('gives the registry stats the same count (downloadUsage)', () => {
      const events = [download(ago(0), { client: 'c1' }), download(ago(0, 1), { client: 'c1' }), download(ago(2), { client: 'c1' }), download(ago(40))];
      const usage = downloadUsage(events, { now: NOW });
      expect(usage.get('web-app@1.0.0')).toEqual({ downloads: 3, lastDownload: ago(0) });
      expect(usage.get('web-app@1.0.0')?.downloads).toBe(recordOf(events).metrics.downloads.total);
    });
  });

  describe('trends', () => {
    const weeks = (thisWeek: number, weekBefore: number): AnalyticsInput[] => [
      ...Array.from({ length: thisWeek }, () => download(ago(1))),
      ...Array.from({ length: weekBefore }, () => download(ago(8))),
    ];

    it('compares the last 7 days with the 7 before, stable within ±10 %', () => {
      expect(recordOf(weeks(0, 0)).trends).toMatchObject({ downloadTrend: 'stable', growthRate: 0 });
      expect(recordOf(weeks(11, 10)).trends).toMatchObject({ downloadTrend: 'stable', growthRate: 10 });
      expect(recordOf(weeks(9, 10)).trends).toMatchObject({ downloadTrend: 'stable', growthRate: -10 });
      expect(recordOf(weeks(12, 10)).trends).toMatchObject({ downloadTrend: 'increasing', growthRate: 20 });
      expect(recordOf(weeks(8, 10)).trends).toMatchObject({ downloadTrend: 'decreasing', growthRate: -20 });
      expect(recordOf(weeks(3, 0)).trends).toMatchObject({ downloadTrend: 'increasing', growthRate: 100 });
      expect(recordOf(weeks(0, 3)).trends).toMatchObject({ downloadTrend: 'decreasing', growthRate: -100 });
      expect(recordOf(weeks(1, 3)).trends.growthRate).toBe(-66.7);
    });

    it('ranks templates by their downloads (all versions), ties sharing a rank, and within their category', () => {
      const events = [
        ...Array.from({ length: 3 }, () => download(ago(1), { id: 'api', version: '2.0.0' })),
        download(ago(1)),
        download(ago(2), { version: '1.1.0' }),
        download(ago(1), { id: 'site' }),
        download(ago(1), { id: 'worker' }),
        download(ago(1), { id: 'worker' }),
      ];
      const ranks = Object.fromEntries(aggregateAnalytics(events, { now: NOW, registry }).map((r) => [`${r.templateId}@${r.version}`, [r.trends.popularityRank, r.trends.categoryRank]]));
      // api 3, web-app 2 (1 + 1), worker 2, site 1; frontend: web-app, site; backend: api, worker.
      expect(ranks).toEqual({ 'api@2.0.0': [1, 1], 'web-app@1.0.0': [2, 1], 'web-app@1.1.0': [2, 1], 'worker@1.0.0': [2, 2], 'site@1.0.0': [4, 2] });
    });
  });

  describe('usage and adoption', () => {
    it('counts generations, their average time (successful ones) and active projects (30 days)', () => {
      const record = recordOf([
        generation(ago(0), true, 100, 'u1'),
        generation(ago(1), true, 201, 'u1'),
        generation(ago(2), true, 300),
        generation(ago(29), true, 400, 'u2'),
        generation(ago(30), true, 500, 'u3'),
        generation(ago(3), false, 9000, 'u4'),
      ]);
      expect(record.metrics.usage).toEqual({ activeProjects: 3, successfulGenerations: 5, failedGenerations: 1, averageGenerationTime: 300.2 });
    });

    it('tells new users from returning ones, by user id or else client, and rates retention', () => {
      const record = recordOf([
        download(ago(60), { client: 'c-old' }),
        download(ago(1), { client: 'c-old' }), // returning
        download(ago(45), { userId: 'u-old' }),
        feedback(ago(2), 'u-old', 5), // returning
        download(ago(50), { client: 'c-gone' }), // earlier user, not back
        download(ago(10), { client: 'c-new' }), // new
        generation(ago(29), true, 1, 'u-new'), // new (29 days ago is within the 30 days)
        download(ago(5)), // anonymous: no user
      ]);
      expect(record.metrics.adoption).toEqual({ newUsers: 2, returningUsers: 2, retentionRate: 0.6667 });
    });
  });

  describe('feedback', () => {
    it('averages the latest rating of each user and lists the reviews newest first', () => {
      const record = recordOf([
        feedback(ago(5), 'u1', 1, 'Broken'),
        feedback(ago(1), 'u1', 4, 'Better now'),
        feedback(ago(3), 'u2', 5, 'Great', { helpful: 3 }),
        feedback(ago(2), 'u3', 2),
        feedback(ago(1), 'u4', 7, 'out of range'),
      ]);
      expect(record.feedback.totalRatings).toBe(3);
      expect(record.feedback.averageRating).toBe(3.67);
      expect(record.feedback.reviews.map((r) => [r.userId, r.rating, r.comment, r.helpful, r.version, r.createdAt])).toEqual([
        ['u1', 4, 'Better now', 0, '1.0.0', ago(1)],
        ['u2', 5, 'Great', 3, '1.0.0', ago(3)],
      ]);
      expect(new Set(record.feedback.reviews.map((r) => r.id)).size).toBe(2);
    });

    it('gives reviews external ids made from the event, never the storage\'s row id', () => {
      const event = feedback(ago(1), 'u1', 5, 'Nice') as AnalyticsEventRecord['event'];
      // The same event stored as row 42 in one store and row 7 in another (a store copy renumbers rows).
      const inOne = recordOf([{ id: '42', event, receivedAt: ago(1), client: 'c1' }]).feedback.reviews[0]?.id;
      const inOther = recordOf([{ id: '7', event, receivedAt: ago(1), client: 'c1' }]).feedback.reviews[0]?.id;
      expect(inOne).toMatch(/^review-[0-9a-f]{32}$/);
      expect(inOther).toBe(inOne);
      // Another event (another comment, another user) has another id.
      const other = recordOf([{ id: '42', event: feedback(ago(1), 'u1', 5, 'Nicer') as AnalyticsEventRecord['event'], receivedAt: ago(1), client: 'c1' }]).feedback.reviews[0]?.id;
      expect(other).not.toBe(inOne);
    });

    it('finds common issues (low ratings, trouble words) and feature requests, most frequent first', () => {
      const record = recordOf([
        feedback(ago(1), 'a', 1, 'Install fails on Windows'),
        feedback(ago(2), 'b', 2, 'install fails on windows.'),
        feedback(ago(3), 'c', 4, 'Small bug in the README'),
        feedback(ago(4), 'd', 2, 'Too slow'),
        feedback(ago(5), 'e', 5, 'Please add Docker support'),
        feedback(ago(6), 'f', 4, 'Would be nice to have a CI workflow'),
        feedback(ago(7), 'g', 5, 'Perfect'),
      ]);
      expect(record.feedback.commonIssues).toEqual(['Install fails on Windows', 'Small bug in the README', 'Too slow']);
      expect(record.feedback.featureRequests).toEqual(['Please add Docker support', 'Would be nice to have a CI workflow']);
    });
  });
});
