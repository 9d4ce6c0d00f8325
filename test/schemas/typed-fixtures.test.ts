import { describe, expect, expectTypeOf, it } from 'vitest';

import type {
  AnalyticsEvent,
  AnalyticsRecord,
  Category,
  CompatibilityEnvironment,
  CompatibilityMatrix,
  CompatibilityResult,
  CursorPaginatedResponse,
  DownloadEvent,
  ErrorEnvelope,
  FeedbackEvent,
  FileChange,
  GenerationEvent,
  MigrationContext,
  MigrationResult,
  MigrationStep,
  OffsetPaginatedResponse,
  RegistryDocument,
  SchemaTypes,
  SuccessEnvelope,
  TemplateEntry,
  TemplateManifest,
  TemplatePrompts,
  TemplateVariables,
  WebhookRegistration,
  SparseIndex,
} from '../../src/core/schema-types.js';
import { schemaErrors, type SchemaName } from '../../src/core/schemas.js';

const manifest: TemplateManifest = {
  name: 'react-app',
  version: '1.0.0',
  description: 'A React single-page application.',
  category: 'frontend',
  stability: 'beta',
  methodologyVersion: '^2.0.0',
  author: { name: 'Ada', email: 'ada@example.com' },
  dependencies: { node: '>=20' },
  migration: { from: ['^0.9.0'], guide: 'MIGRATION.md' },
  customization: { variables: 'template.vars.json', prompts: 'template.prompts.json' },
  files: [{ path: 'docker/**', when: "features contains 'docker'" }],
};

const variables: TemplateVariables = {
  variables: {
    projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' },
    description: { type: 'string', default: 'A new project' },
    features: { type: 'array', items: { type: 'string', enum: ['api', 'testing'] }, default: ['api', 'testing'] },
    database: { type: 'string', enum: ['postgresql', 'sqlite'], default: 'postgresql', condition: "features contains 'database'" },
  },
  computed: { packageName: 'projectName | downcase' },
};

const prompts: TemplatePrompts = {
  prompts: [
    { name: 'projectName', message: 'Name?', type: 'input', validate: '^[a-z][a-z0-9-]*$', invalidMessage: 'lower-case' },
    { name: 'database', message: 'Database?', type: 'select', choices: [{ name: 'SQLite', value: 'sqlite' }], when: 'x' },
  ],
};

const entry: TemplateEntry = {
  id: 'react-app',
  name: 'React App',
  version: '1.0.0',
  description: 'A React single-page application.',
  category: 'frontend',
  stability: 'stable',
  downloadUrl: 'https://registry.example.com/react-app-1.0.0.tgz',
  author: { name: 'Ada' },
  dependencies: { methodology: '^2.0.0', node: '>=20' },
  compatibility: { nodeVersions: ['>=20'], platforms: [{ name: 'linux', supported: true }] },
  stats: { downloads: 10 },
  sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  size: 1024,
};

const category: Category = { id: 'frontend', name: 'Frontend', templates: ['react-app'] };

const registry: RegistryDocument = { templates: [entry], categories: [category], tags: ['react'], lastUpdated: '2024-05-01T10:00:00Z' };

const matrix: CompatibilityMatrix = {
  methodologyVersions: [{ min: '2', supported: true }],
  nodeVersions: [{ min: '20.0.0', max: '22', supported: true, notes: 'LTS' }],
  npmVersions: [],
  platforms: [{ name: 'linux', supported: true }],
  frameworks: [{ name: 'react', versions: [{ min: '18', supported: true }], optional: false }],
};

const environment: CompatibilityEnvironment = {
  methodologyVersion: '2.1.0',
  nodeVersion: 'v20.11.1',
  npmVersion: '10.2.4',
  platform: 'linux',
};

const compatibility: CompatibilityResult = { compatible: false, issues: ['platform win32 is not supported'], warnings: [] };

const rename: FileChange = { type: 'rename', path: 'a.js', newPath: 'a.ts', backup: true };

const step: MigrationStep = {
  id: 'to-2',
  description: 'Move to TypeScript',
  fromVersion: '1.0.0',
  toVersion: '2.0.0',
  breaking: true,
  automatic: false,
  changes: [rename],
};

const context: MigrationContext = {
  projectPath: '/tmp/app',
  currentVersion: '1.0.0',
  targetVersion: '2.0.0',
  templateId: 'react-app',
  config: { anything: ['goes'] },
  dryRun: true,
};

const migration: MigrationResult = { success: true, changes: [rename], warnings: [], errors: [] };

const download: DownloadEvent = {
  type: 'download',
  templateId: 'react-app',
  version: '1.0.0',
  timestamp: '2024-05-01T10:00:00Z',
  userAgent: 'cli',
  platform: 'linux',
};

const generation: GenerationEvent = {
  type: 'generation',
  templateId: 'react-app',
  version: '1.0.0',
  success: true,
  duration: 1200,
  userId: 'u-1',
  timestamp: '2024-05-01T10:00:00Z',
};

const feedback: FeedbackEvent = {
  type: 'feedback',
  templateId: 'react-app',
  version: '1.0.0',
  rating: 5,
  comment: 'Great',
  userId: 'u-1',
};

const event: AnalyticsEvent = feedback;

const record: AnalyticsRecord = {
  templateId: 'react-app',
  version: '1.0.0',
  metrics: {
    downloads: { total: 10, lastMonth: 10, lastWeek: 2, daily: [1, 1] },
    usage: { activeProjects: 3, successfulGenerations: 4, failedGenerations: 0, averageGenerationTime: 900 },
    adoption: { newUsers: 3, returningUsers: 0, retentionRate: 0 },
  },
  trends: { downloadTrend: 'stable', popularityRank: 1, categoryRank: 1, growthRate: 0 },
  feedback: { averageRating: 0, totalRatings: 0, reviews: [], commonIssues: [], featureRequests: [] },
};

const success: SuccessEnvelope = {
  data: [entry],
  meta: { timestamp: '2024-05-01T10:00:00Z', requestId: 'req-1', version: '1.0' },
};

const failure: ErrorEnvelope = {
  error: {
    code: 'RATE_LIMIT_EXCEEDED',
    message: 'Too many requests',
    requestId: 'req-2',
    timestamp: '2024-05-01T10:00:00Z',
    retryAfter: 30,
  },
};

const offsetPage: OffsetPaginatedResponse = {
  data: [entry],
  pagination: { page: 1, limit: 20, total: 1, totalPages: 1, hasNext: false, hasPrevious: false },
};

const cursorPage: CursorPaginatedResponse = {
  data: [],
  pagination: { limit: 20, hasNext: false, nextCursor: null, prevCursor: null },
};

const webhook: WebhookRegistration = {
  url: 'https://hooks.example.com/x',
  events: ['template.published'],
  secret: 's3cret',
  active: true,
};

const sparseIndex: SparseIndex = {
  formatVersion: 1,
  lastUpdated: '2026-01-01T00:00:00.000Z',
  templates: [{ id: 'node-service', version: '1.1.0', stability: 'stable', category: 'backend', description: 'A service', tags: ['node'], features: ['api'], downloads: 3, updatedAt: '2026-01-01T00:00:00.000Z' }],
};

/** One typed fixture per schema: the mapped type makes a missing or mistyped one a compile error. */
const fixtures: { [N in SchemaName]: SchemaTypes[N] } = {
  'template-manifest': manifest,
  'template-variables': variables,
  'template-prompts': prompts,
  'registry-document': registry,
  'template-entry': entry,
  category,
  'compatibility-matrix': matrix,
  'compatibility-environment': environment,
  'compatibility-result': compatibility,
  'migration-step': step,
  'migration-context': context,
  'migration-result': migration,
  'file-change': rename,
  'analytics-download-event': download,
  'analytics-generation-event': generation,
  'analytics-feedback-event': feedback,
  'analytics-event': event,
  'analytics-event-submission': download,
  'registry-index': sparseIndex,
  'analytics-record': record,
  'success-envelope': success,
  'error-envelope': failure,
  'offset-pagination': offsetPage,
  'cursor-pagination': cursorPage,
  'webhook-registration': webhook,
};

describe('generated schema types', () => {
  it('name exactly the registered schemas', () => {
    expectTypeOf<keyof SchemaTypes>().toEqualTypeOf<SchemaName>();
  });

  it.each(Object.entries(fixtures))('a typed %s fixture validates against its schema', (name, fixture) => {
    expect(schemaErrors(name as SchemaName, fixture)).toEqual([]);
  });

  it('reject values the schemas reject (checked by tsc)', () => {
    // @ts-expect-error category is one of the five listed values
    const badCategory: TemplateManifest = { ...manifest, category: 'cli' };
    // @ts-expect-error stability is required in an entry
    const noStability: TemplateEntry = { id: 'x', name: 'x', version: '1.0.0', description: '', category: 'x', downloadUrl: 'x' };
    // @ts-expect-error the change type is one of create, update, delete, rename
    const badChange: FileChange = { type: 'move', path: 'x' };
    // @ts-expect-error a cursor is a string or null
    const badCursor: CursorPaginatedResponse = { data: [], pagination: { limit: 1, hasNext: false, nextCursor: 1, prevCursor: null } };
    // @ts-expect-error the matrix has no unknown fields
    const extraMatrix: CompatibilityMatrix = { ...matrix, browsers: [] };
    for (const value of [badCategory, noStability, badChange, badCursor, extraMatrix]) expect(value).toBeDefined();
  });

  it('narrow an analytics event by its type', () => {
    const describeEvent = (e: AnalyticsEvent): string => {
      switch (e.type) {
        case 'download':
          return e.userAgent;
        case 'generation':
          return String(e.duration);
        case 'feedback':
          return String(e.rating);
      }
    };
    expect(describeEvent(download)).toBe('cli');
    expect(describeEvent(generation)).toBe('1200');
  });
});
