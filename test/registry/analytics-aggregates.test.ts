/**
 * Records made from aggregates equal the records the release before made from every event at
 * once (the oracle, analytics-oracle.ts), for the same events: every metric, rank, review and
 * topic, for hundreds of random histories; and the registry's download stats too.
 */
import { describe, expect, it } from 'vitest';

import { aggregateAnalytics, AnalyticsAccumulator, analyticsRecords, downloadUsage } from '../../src/registry/analytics.js';
import * as oracle from './analytics-oracle.js';
import { history, HISTORY_NOW, historyRegistry } from './analytics-events.js';

describe('analytics records from aggregates', () => {
  it('equal the records made from every event, history after history', () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 300; seed++) {
      const events = history(seed, 1 + (seed % 7) * 40);
      const expected = oracle.aggregateAnalytics(events, { now: HISTORY_NOW, registry: historyRegistry });
      for (const record of expected) {
        const { metrics, trends, feedback } = record;
        if (metrics.downloads.lastWeek > 0) seen.add('lastWeek');
        if (metrics.usage.activeProjects > 0) seen.add('activeProjects');
        if (metrics.usage.averageGenerationTime > 0) seen.add('averageGenerationTime');
        if (metrics.adoption.returningUsers > 0) seen.add('returningUsers');
        if (metrics.adoption.retentionRate > 0 && metrics.adoption.retentionRate < 1) seen.add('retentionRate');
        if (trends.downloadTrend !== 'stable') seen.add('trend');
        if (trends.popularityRank > 1) seen.add('rank');
        if (feedback.reviews.length > 1) seen.add('reviews');
        if (feedback.commonIssues.length > 0 && feedback.featureRequests.length > 0) seen.add('topics');
        if (feedback.averageRating % 1 !== 0) seen.add('averageRating');
      }
      expect(aggregateAnalytics(events, { now: HISTORY_NOW, registry: historyRegistry }), `seed ${seed}`).toEqual(expected);
      expect(downloadUsage(events), `seed ${seed}`).toEqual(oracle.downloadUsage(events));
      expect(downloadUsage(events, { now: HISTORY_NOW }), `seed ${seed}`).toEqual(oracle.downloadUsage(events, { now: HISTORY_NOW }));
    }
    // The histories reach every part of a record, or the comparison proved little.
    expect([...seen].sort()).toEqual(['activeProjects', 'averageGenerationTime', 'averageRating', 'lastWeek', 'rank', 'retentionRate', 'returningUsers', 'reviews', 'topics', 'trend']);
  });

  it('are the same whether the aggregates were kept as events came or made at once', () => {
    const events = history(4242, 600).filter((e) => Date.parse(e.receivedAt ?? e.event.timestamp ?? '') <= HISTORY_NOW.getTime());
    const kept = new AnalyticsAccumulator();
    for (const event of events) kept.add(event, Number(event.id));
    const options = { now: HISTORY_NOW, registry: historyRegistry, templateId: 'web-app', version: '1.0.0' };
    expect(analyticsRecords(kept, options)).toEqual(oracle.aggregateAnalytics(events, options));
  });
});
