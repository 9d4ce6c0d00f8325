/**
 * Analytics stay cheap whatever the number of events: the analytics route and the registry build
 * (its download stats) read the store's aggregates, never the events; a server removes the raw
 * events older than its retention window at start, and the numbers stay the same.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { AnalyticsRecord, RegistryDocument } from '../../src/core/schema-types.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, startServerOn, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

const DAY = 24 * 60 * 60 * 1000;

afterEach(() => {
  vi.restoreAllMocks();
});

async function record(server: Pick<TestServer, 'url'>, version: string): Promise<AnalyticsRecord> {
  const response = await fetch(`${server.url}/templates/${TEMPLATE}/analytics?version=${version}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: AnalyticsRecord }).data;
}

async function stats(server: Pick<TestServer, 'url'>): Promise<Record<string, unknown>> {
  const document = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
  return Object.fromEntries(document.templates.map((entry) => [`${entry.id}@${entry.version}`, entry.stats]));
}

/** Downloads, generations and feedback of TEMPLATE@1.0.0 over the last `days` days, a few per day. */
async function history(events: TestServer['store']['events'], days: number, now: number): Promise<void> {
  for (let back = days; back >= 0; back--) {
    const receivedAt = new Date(now - back * DAY);
    const timestamp = receivedAt.toISOString();
    const base = { templateId: TEMPLATE, version: '1.0.0', timestamp };
    await events.recordEvent({ type: 'download', ...base, userAgent: 'test', platform: 'linux' }, { client: `c${back % 5}`, receivedAt });
    await events.recordEvent({ type: 'download', ...base, userAgent: 'test', platform: 'linux' }, { client: `c${back % 5}`, receivedAt });
    if (back % 3 === 0) await events.recordEvent({ type: 'generation', ...base, success: true, duration: back, userId: `u${back % 7}` }, { receivedAt });
    if (back % 11 === 0) await events.recordEvent({ type: 'feedback', ...base, rating: 1 + (back % 5), comment: `note ${back % 4}`, userId: `u${back % 7}` }, { receivedAt });
  }
}

describe('analytics cost', () => {
  it('answers the analytics route and rebuilds the registry without reading a single event', async () => {
    const server = await startRegistryServer({ statsRefreshMs: 0 });
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    await history(server.store.events, 60, Date.now());
    const listEvents = vi.spyOn(server.store.events, 'listEvents');
    const countEvents = vi.spyOn(server.store.events, 'countEvents');

    const answered = await record(server, '1.0.0');
    await server.context.rebuild();
    expect(listEvents).not.toHaveBeenCalled();
    expect(countEvents).not.toHaveBeenCalled();
    // And what they answer is what the events say: 61 days of two downloads by one client a day.
    expect(answered.metrics.downloads).toMatchObject({ total: 61, lastWeek: 7, lastMonth: 30 });
    expect((await stats(server))[`${TEMPLATE}@1.0.0`]).toMatchObject({ downloads: 61 });
  });

  it('removes at start the raw events older than the retention window; the analytics and stats stay the same', async () => {
    const dir = await tempDir('tr-retention-');
    const now = Date.now();
    const first = await startRegistryServer({ storeDir: dir, statsRefreshMs: 0, eventRetentionDays: 0 });
    await publishVersions(first, [{ version: '1.0.0', files: {} }]);
    await history(first.store.events, 500, now);
    await first.context.rebuild();
    const before = { record: await record(first, '1.0.0'), stats: await stats(first), events: await first.store.events.countEvents() };
    await first.app.close();

    const server = await startServerOn(await openSqliteStorage(dir), { statsRefreshMs: 0, eventRetentionDays: 400 });
    await vi.waitFor(async () => expect(await server.store.events.countEvents()).toBeLessThan(before.events), { timeout: 10_000, interval: 20 });
    const kept = await server.store.events.listEvents();
    expect(Math.min(...kept.map((e) => Date.parse(e.receivedAt ?? '')))).toBeGreaterThanOrEqual(now - 400 * DAY - 60_000);
    expect(kept.length).toBeGreaterThan(0);
    expect(await record(server, '1.0.0')).toEqual(before.record);
    expect(await stats(server)).toEqual(before.stats);
    expect((await stats(server))[`${TEMPLATE}@1.0.0`]).toMatchObject({ downloads: 501 });
  });
});
