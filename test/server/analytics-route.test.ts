import { describe, expect, it } from 'vitest';

import type { AnalyticsRecord, RegistryDocument } from '../../src/core/schema-types.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

async function published(statsRefreshMs?: number): Promise<TestServer> {
  const server = await startRegistryServer({ trustProxy: true, ...(statsRefreshMs !== undefined ? { statsRefreshMs } : {}) });
  await publishVersions(server, [
    { version: '1.0.0', files: {} },
    { version: '1.1.0', files: {} },
  ]);
  return server;
}

async function downloadArchive(server: TestServer, version: string, client: string): Promise<void> {
  const response = await fetch(`${server.url}/templates/${TEMPLATE}/versions/${version}/archive`, { headers: { 'x-forwarded-for': client, 'x-platform': 'linux' } });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

async function postEvent(server: TestServer, event: object): Promise<void> {
  const response = await fetch(`${server.url}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) });
  expect(response.status).toBe(202);
}

async function analytics(server: TestServer, query = ''): Promise<{ status: number; body: { data: AnalyticsRecord; meta: object; error?: { code: string } }; cacheControl: string | null }> {
  const response = await fetch(`${server.url}/templates/${TEMPLATE}/analytics${query}`);
  return { status: response.status, body: (await response.json()) as never, cacheControl: response.headers.get('cache-control') };
}

async function statsDownloads(server: TestServer, version: string): Promise<number | undefined> {
  const document = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
  return document.templates.find((e) => e.id === TEMPLATE && e.version === version)?.stats?.downloads;
}

describe('GET /templates/{id}/analytics', () => {
  it('serves the record of a version, from downloads, generations and feedback', async () => {
    const server = await published();
    await downloadArchive(server, '1.0.0', '10.0.1.1');
    await downloadArchive(server, '1.0.0', '10.0.1.1'); // the same client the same day: counted once
    await downloadArchive(server, '1.0.0', '10.0.2.1'); // another network (clients are counted by /24)
    await downloadArchive(server, '1.1.0', '10.0.3.1');
    const now = new Date().toISOString();
    await postEvent(server, { type: 'generation', templateId: TEMPLATE, version: '1.0.0', success: true, duration: 120, timestamp: now, userId: 'u1' });
    await postEvent(server, { type: 'generation', templateId: TEMPLATE, version: '1.0.0', success: false, duration: 30, timestamp: now });
    await postEvent(server, { type: 'feedback', templateId: TEMPLATE, version: '1.0.0', rating: 4, comment: 'Please add Docker support', userId: 'u1' });

    const { status, body, cacheControl } = await analytics(server, '?version=1.0.0');
    expect(status).toBe(200);
    expect(cacheControl).toMatch(/^public/);
    expect(body.meta).toMatchObject({ requestId: expect.any(String) as unknown });
    expect(schemaErrors('analytics-record', body.data)).toEqual([]);
    expect(schemaErrors('success-envelope', body)).toEqual([]);
    const record = body.data;
    expect(record).toMatchObject({ templateId: TEMPLATE, version: '1.0.0' });
    expect(record.metrics.downloads).toMatchObject({ total: 2, lastWeek: 2, lastMonth: 2 });
    expect(record.metrics.downloads.daily).toHaveLength(30);
    expect(record.metrics.downloads.daily[29]).toBe(2);
    expect(record.metrics.usage).toEqual({ activeProjects: 1, successfulGenerations: 1, failedGenerations: 1, averageGenerationTime: 120 });
    expect(record.trends).toMatchObject({ downloadTrend: 'increasing', popularityRank: 1, categoryRank: 1 });
    expect(record.feedback).toMatchObject({ averageRating: 4, totalRatings: 1, featureRequests: ['Please add Docker support'] });
    expect(record.feedback.reviews).toMatchObject([{ userId: 'u1', rating: 4, helpful: 0, version: '1.0.0' }]);
    // An external id, not the events table's row id.
    const [stored] = await server.store.events.listEvents({ type: 'feedback' });
    expect(record.feedback.reviews[0]?.id).toMatch(/^review-[0-9a-f]{32}$/);
    // (Not a substring test: the 32 hex digits may well begin with the row id's digits.)
    expect(record.feedback.reviews[0]?.id).not.toBe(`review-${stored!.id}`);

    // Without ?version=: the latest version, as GET /templates/{id} selects it.
    const latest = await analytics(server);
    expect(latest.status).toBe(200);
    expect(latest.body.data).toMatchObject({ version: '1.1.0', metrics: { downloads: { total: 1 } } });
  });

  it('answers 404 for an unknown template or version and 400 for a malformed version', async () => {
    const server = await published();
    const unknown = await fetch(`${server.url}/templates/no-such-template/analytics`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('cache-control')).toBe('no-store');
    const missing = await analytics(server, '?version=9.9.9');
    expect(missing.status).toBe(404);
    expect(missing.body.error?.code).toBe('NOT_FOUND');
    const malformed = await analytics(server, '?version=1.0');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error?.code).toBe('VALIDATION_ERROR');
  });

  it('refreshes the registry stats from the same count on a timer, without a new publish', async () => {
    const server = await published(100);
    expect(await statsDownloads(server, '1.0.0')).toBe(0);
    await downloadArchive(server, '1.0.0', '10.0.1.1');
    await downloadArchive(server, '1.0.0', '10.0.1.1');
    await downloadArchive(server, '1.0.0', '10.0.2.1');
    await expect.poll(() => statsDownloads(server, '1.0.0'), { timeout: 5000, interval: 50 }).toBe(2);
    expect((await analytics(server, '?version=1.0.0')).body.data.metrics.downloads.total).toBe(2);
  });

  it('with the defaults, shows a download in the registry stats a few seconds later, without a publish or a timer tick', async () => {
    const server = await published();
    await downloadArchive(server, '1.0.0', '10.0.0.1');
    // Not at once: the server waits (DEFAULT_STATS_SETTLE_MS) for more downloads to join the rebuild.
    expect(await statsDownloads(server, '1.0.0')).toBe(0);
    expect((await analytics(server, '?version=1.0.0')).body.data.metrics.downloads.total).toBe(1);
    await expect.poll(() => statsDownloads(server, '1.0.0'), { timeout: 8000, interval: 100 }).toBe(1);
  }, 30_000);

  it('a download sent as an event brings the same refresh', async () => {
    const server = await startRegistryServer({ statsSettleMs: 50, statsMinGapMs: 200 });
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    await postEvent(server, { type: 'download', templateId: TEMPLATE, version: '1.0.0', timestamp: new Date().toISOString(), userAgent: 'test', platform: 'linux' });
    await expect.poll(() => statsDownloads(server, '1.0.0'), { timeout: 5000, interval: 50 }).toBe(1);
  });
});
