import { describe, it } from 'vitest';

import { clone, expectInvalid, expectValid, without } from './helpers.js';

const download = {
  type: 'download',
  templateId: 'react-app',
  version: '2.1.0',
  userId: 'u-1',
  timestamp: '2024-05-01T10:00:00Z',
  userAgent: 'template-registry/0.1.0 node/20.11.1',
  platform: 'linux',
};
const generation = {
  type: 'generation',
  templateId: 'react-app',
  version: '2.1.0',
  success: true,
  duration: 1532,
  timestamp: '2024-05-01T10:00:05Z',
};
const feedback = {
  type: 'feedback',
  templateId: 'react-app',
  version: '2.1.0',
  rating: 4,
  comment: 'Works well',
  userId: 'u-1',
  timestamp: '2024-05-02T08:00:00Z',
};

/** The checks every event shares: templateId, version, userId, timestamp. */
function commonEventRules(S: 'analytics-download-event' | 'analytics-generation-event' | 'analytics-feedback-event', event: object) {
  it('rejects an empty templateId', () => {
    expectInvalid(S, { ...event, templateId: '' }, { keyword: 'minLength', instancePath: '/templateId' });
  });

  it('rejects a version that is not MAJOR.MINOR.PATCH', () => {
    expectInvalid(S, { ...event, version: '2.1' }, { keyword: 'pattern', instancePath: '/version' });
  });

  it('rejects a timestamp that is not an ISO 8601 date-time', () => {
    expectInvalid(S, { ...event, timestamp: 'May 1st' }, {
      keyword: 'format',
      instancePath: '/timestamp',
      params: { format: 'date-time' },
    });
  });

  it('rejects an empty userId', () => {
    expectInvalid(S, { ...event, userId: '' }, { keyword: 'minLength', instancePath: '/userId' });
  });
}

describe('analytics-download-event schema', () => {
  const S = 'analytics-download-event';

  it('accepts a download event, with or without userId', () => {
    expectValid(S, download);
    expectValid(S, without(download, 'userId'));
  });

  it.each(['type', 'templateId', 'version', 'timestamp', 'userAgent', 'platform'] as const)('rejects an event without %s', (field) => {
    expectInvalid(S, without(download, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects another type', () => {
    expectInvalid(S, { ...download, type: 'generation' }, { keyword: 'const', instancePath: '/type' });
  });

  it('rejects a userAgent that is not a string, and an empty platform', () => {
    expectInvalid(S, { ...download, userAgent: 1 }, { keyword: 'type', instancePath: '/userAgent' });
    expectInvalid(S, { ...download, platform: '' }, { keyword: 'minLength', instancePath: '/platform' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...download, ip: '127.0.0.1' }, { keyword: 'additionalProperties', instancePath: '' });
  });

  commonEventRules(S, download);
});

describe('analytics-generation-event schema', () => {
  const S = 'analytics-generation-event';

  it('accepts a generation event, with or without userId', () => {
    expectValid(S, generation);
    expectValid(S, { ...generation, success: false, userId: 'u-2', duration: 0 });
  });

  it.each(['type', 'templateId', 'version', 'success', 'duration', 'timestamp'] as const)('rejects an event without %s', (field) => {
    expectInvalid(S, without(generation, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects another type', () => {
    expectInvalid(S, { ...generation, type: 'download' }, { keyword: 'const', instancePath: '/type' });
  });

  it('rejects success that is not a boolean', () => {
    expectInvalid(S, { ...generation, success: 'ok' }, { keyword: 'type', instancePath: '/success' });
  });

  it('rejects a negative or non-numeric duration', () => {
    expectInvalid(S, { ...generation, duration: -1 }, { keyword: 'minimum', instancePath: '/duration' });
    expectInvalid(S, { ...generation, duration: '1s' }, { keyword: 'type', instancePath: '/duration' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...generation, answers: {} }, { keyword: 'additionalProperties', instancePath: '' });
  });

  commonEventRules(S, generation);
});

describe('analytics-feedback-event schema', () => {
  const S = 'analytics-feedback-event';

  it('accepts a feedback event, with or without timestamp', () => {
    expectValid(S, feedback);
    expectValid(S, without(feedback, 'timestamp'));
  });

  it('accepts fields the spec leaves open', () => {
    expectValid(S, { ...feedback, source: 'cli' });
  });

  it.each(['type', 'templateId', 'version', 'rating', 'comment', 'userId'] as const)('rejects an event without %s', (field) => {
    expectInvalid(S, without(feedback, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects another type', () => {
    expectInvalid(S, { ...feedback, type: 'review' }, { keyword: 'const', instancePath: '/type' });
  });

  it.each([1, 2.5, 5])('accepts rating %d', (rating) => {
    expectValid(S, { ...feedback, rating });
  });

  it('rejects a rating below 1', () => {
    expectInvalid(S, { ...feedback, rating: 0 }, { keyword: 'minimum', instancePath: '/rating', params: { limit: 1 } });
  });

  it('rejects a rating above 5', () => {
    expectInvalid(S, { ...feedback, rating: 5.5 }, { keyword: 'maximum', instancePath: '/rating', params: { limit: 5 } });
  });

  it('rejects a rating that is not a number, and a comment that is not a string', () => {
    expectInvalid(S, { ...feedback, rating: '4' }, { keyword: 'type', instancePath: '/rating' });
    expectInvalid(S, { ...feedback, comment: null }, { keyword: 'type', instancePath: '/comment' });
  });

  commonEventRules(S, feedback);
});

describe('analytics-event schema', () => {
  const S = 'analytics-event';

  it.each([
    ['download', download],
    ['generation', generation],
    ['feedback', feedback],
  ])('accepts a %s event', (_type, event) => {
    expectValid(S, event);
  });

  it('rejects an event of an unknown type', () => {
    expectInvalid(S, { ...download, type: 'install' }, { keyword: 'oneOf', instancePath: '' });
  });

  it('rejects a download event that breaks the download rules', () => {
    expectInvalid(S, without(download, 'userAgent'), { keyword: 'oneOf', instancePath: '' });
    expectInvalid(S, without(download, 'userAgent'), {
      keyword: 'required',
      instancePath: '',
      params: { missingProperty: 'userAgent' },
    });
  });
});

describe('analytics-record schema', () => {
  const S = 'analytics-record';
  const record = {
    templateId: 'react-app',
    version: '2.1.0',
    metrics: {
      downloads: { total: 1200, lastMonth: 300, lastWeek: 80, daily: [10, 12, 9] },
      usage: { activeProjects: 150, successfulGenerations: 1100, failedGenerations: 12, averageGenerationTime: 1432.5 },
      adoption: { newUsers: 40, returningUsers: 110, retentionRate: 0.73 },
    },
    trends: { downloadTrend: 'increasing', popularityRank: 3, categoryRank: 1, growthRate: 0.12 },
    feedback: {
      averageRating: 4.5,
      totalRatings: 2,
      reviews: [
        {
          id: 'r-1',
          userId: 'u-1',
          rating: 5,
          comment: 'Great',
          helpful: 3,
          version: '2.1.0',
          createdAt: '2024-05-02T08:00:00Z',
        },
      ],
      commonIssues: ['slow install'],
      featureRequests: ['vite'],
    },
  };
  type Record_ = typeof record;
  const edit = (change: (r: Record_) => void): Record_ => {
    const copy = clone(record);
    change(copy);
    return copy;
  };

  it('accepts a record', () => {
    expectValid(S, record);
  });

  it('accepts a record of a template nobody rated yet, with a shrinking trend', () => {
    expectValid(
      S,
      edit((r) => {
        r.feedback = { averageRating: 0, totalRatings: 0, reviews: [], commonIssues: [], featureRequests: [] };
        r.trends.downloadTrend = 'decreasing';
        r.trends.growthRate = -0.4;
      }),
    );
  });

  it.each(['templateId', 'version', 'metrics', 'trends', 'feedback'] as const)('rejects a record without %s', (field) => {
    expectInvalid(S, without(record, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects a version that is not MAJOR.MINOR.PATCH, and an empty templateId', () => {
    expectInvalid(S, { ...record, version: 'latest' }, { keyword: 'pattern', instancePath: '/version' });
    expectInvalid(S, { ...record, templateId: '' }, { keyword: 'minLength', instancePath: '/templateId' });
  });

  it.each([
    ['metrics', 'downloads'],
    ['metrics', 'usage'],
    ['metrics', 'adoption'],
    ['metrics/downloads', 'total'],
    ['metrics/downloads', 'lastMonth'],
    ['metrics/downloads', 'lastWeek'],
    ['metrics/downloads', 'daily'],
    ['metrics/usage', 'activeProjects'],
    ['metrics/usage', 'successfulGenerations'],
    ['metrics/usage', 'failedGenerations'],
    ['metrics/usage', 'averageGenerationTime'],
    ['metrics/adoption', 'newUsers'],
    ['metrics/adoption', 'returningUsers'],
    ['metrics/adoption', 'retentionRate'],
    ['trends', 'downloadTrend'],
    ['trends', 'popularityRank'],
    ['trends', 'categoryRank'],
    ['trends', 'growthRate'],
    ['feedback', 'averageRating'],
    ['feedback', 'totalRatings'],
    ['feedback', 'reviews'],
    ['feedback', 'commonIssues'],
    ['feedback', 'featureRequests'],
    ['feedback/reviews/0', 'id'],
    ['feedback/reviews/0', 'userId'],
    ['feedback/reviews/0', 'rating'],
    ['feedback/reviews/0', 'comment'],
    ['feedback/reviews/0', 'helpful'],
    ['feedback/reviews/0', 'version'],
    ['feedback/reviews/0', 'createdAt'],
  ])('rejects %s without %s', (parent, field) => {
    const data = clone(record) as unknown as Record<string, unknown>;
    let node: unknown = data;
    for (const segment of parent.split('/')) node = (node as Record<string, unknown>)[segment];
    delete (node as Record<string, unknown>)[field];
    expectInvalid(S, data, { keyword: 'required', instancePath: `/${parent}`, params: { missingProperty: field } });
  });

  it.each(['metrics', 'metrics/downloads', 'metrics/usage', 'metrics/adoption', 'trends', 'feedback', 'feedback/reviews/0'])(
    'rejects an unknown field in %s',
    (parent) => {
    const data = clone(record) as unknown as Record<string, unknown>;
    let node: unknown = data;
    for (const segment of parent.split('/')) node = (node as Record<string, unknown>)[segment];
    (node as Record<string, unknown>).extra = 1;
    expectInvalid(S, data, { keyword: 'additionalProperties', instancePath: `/${parent}` });
    },
  );

  it('rejects an unknown top-level field', () => {
    expectInvalid(S, { ...record, extra: 1 }, { keyword: 'additionalProperties', instancePath: '' });
  });

  it('rejects negative or fractional counts', () => {
    expectInvalid(S, edit((r) => (r.metrics.downloads.total = -1)), { keyword: 'minimum', instancePath: '/metrics/downloads/total' });
    expectInvalid(S, edit((r) => (r.metrics.downloads.daily = [1, 2.5])), {
      keyword: 'type',
      instancePath: '/metrics/downloads/daily/1',
    });
    expectInvalid(S, edit((r) => (r.metrics.usage.failedGenerations = -3)), {
      keyword: 'minimum',
      instancePath: '/metrics/usage/failedGenerations',
    });
    expectInvalid(S, edit((r) => (r.metrics.adoption.newUsers = 0.5)), { keyword: 'type', instancePath: '/metrics/adoption/newUsers' });
    expectInvalid(S, edit((r) => (r.feedback.totalRatings = -1)), { keyword: 'minimum', instancePath: '/feedback/totalRatings' });
    expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.helpful = -1)), {
      keyword: 'minimum',
      instancePath: '/feedback/reviews/0/helpful',
    });
  });

  it('rejects a negative average generation time or retention rate', () => {
    expectInvalid(S, edit((r) => (r.metrics.usage.averageGenerationTime = -1)), {
      keyword: 'minimum',
      instancePath: '/metrics/usage/averageGenerationTime',
    });
    expectInvalid(S, edit((r) => (r.metrics.adoption.retentionRate = -0.1)), {
      keyword: 'minimum',
      instancePath: '/metrics/adoption/retentionRate',
    });
  });

  it('rejects a download trend other than increasing, decreasing, stable', () => {
    expectInvalid(S, edit((r) => (r.trends.downloadTrend = 'flat')), { keyword: 'enum', instancePath: '/trends/downloadTrend' });
  });

  it('rejects ranks below 1', () => {
    expectInvalid(S, edit((r) => (r.trends.popularityRank = 0)), { keyword: 'minimum', instancePath: '/trends/popularityRank' });
    expectInvalid(S, edit((r) => (r.trends.categoryRank = 0)), { keyword: 'minimum', instancePath: '/trends/categoryRank' });
  });

  it('rejects a growth rate that is not a number', () => {
    expectInvalid(S, edit((r) => ((r.trends as Record<string, unknown>).growthRate = '12%')), {
      keyword: 'type',
      instancePath: '/trends/growthRate',
    });
  });

  it('rejects an average rating outside 0..5', () => {
    expectInvalid(S, edit((r) => (r.feedback.averageRating = 5.1)), { keyword: 'maximum', instancePath: '/feedback/averageRating' });
    expectInvalid(S, edit((r) => (r.feedback.averageRating = -1)), { keyword: 'minimum', instancePath: '/feedback/averageRating' });
  });

  it('rejects issues and feature requests that are not strings', () => {
    expectInvalid(S, edit((r) => ((r.feedback as Record<string, unknown>).commonIssues = [1])), {
      keyword: 'type',
      instancePath: '/feedback/commonIssues/0',
    });
    expectInvalid(S, edit((r) => ((r.feedback as Record<string, unknown>).featureRequests = [{}])), {
      keyword: 'type',
      instancePath: '/feedback/featureRequests/0',
    });
  });

  describe('review', () => {
    it('rejects a review rating outside 1..5', () => {
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.rating = 0)), { keyword: 'minimum', instancePath: '/feedback/reviews/0/rating' });
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.rating = 6)), { keyword: 'maximum', instancePath: '/feedback/reviews/0/rating' });
    });

    it('rejects a review createdAt that is not a date-time, and a version that is not MAJOR.MINOR.PATCH', () => {
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.createdAt = '2024-05-02')), {
        keyword: 'format',
        instancePath: '/feedback/reviews/0/createdAt',
      });
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.version = '2')), {
        keyword: 'pattern',
        instancePath: '/feedback/reviews/0/version',
      });
    });

    it('rejects empty id and userId, and a comment that is not a string', () => {
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.id = '')), { keyword: 'minLength', instancePath: '/feedback/reviews/0/id' });
      expectInvalid(S, edit((r) => (r.feedback.reviews[0]!.userId = '')), {
        keyword: 'minLength',
        instancePath: '/feedback/reviews/0/userId',
      });
      expectInvalid(S, edit((r) => ((r.feedback.reviews[0] as Record<string, unknown>).comment = 5)), {
        keyword: 'type',
        instancePath: '/feedback/reviews/0/comment',
      });
    });
  });
});
