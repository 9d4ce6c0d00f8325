/**
 * After each change the server purges exactly the changed URLs at the CDN
 * (`serve --purge`), from a durable outbox: a failed purge is logged, retried with backoff, and
 * resumed after a restart, never lost. The CDN here is a local fake taking HTTP PURGE.
 */
import { describe, expect, it, vi } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { createPurgeTarget, parsePurgeSpec } from '../../src/registry/purge/index.js';
import { openSqliteStorage, openStorage } from '../../src/store/index.js';
import { startFakeApi, type FakeApi } from '../helpers/fake-cdn.js';
import { purgesMatch } from '../helpers/outbox.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startServerOn, type StorageTestServer } from '../helpers/registry-server.js';
import { S3RVER_CREDENTIALS, startFakeS3 } from '../helpers/s3-server.js';

const CDN_URL = 'https://registry.example';

async function publish(server: StorageTestServer, name: string, version: string): Promise<void> {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version } });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  expect(await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ status: 201 });
}

/** A server on `storeDir` purging at `cache`, its log lines collected. */
async function serverPurging(storeDir: string, cache: FakeApi, purge: { retryDelaysMs?: number[]; now?: () => Date } = {}) {
  const logs: Record<string, unknown>[] = [];
  const server = await startServerOn(await openSqliteStorage(storeDir), {
    logger: { level: 'info', stream: { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) } },
    purge: { targets: [createPurgeTarget(parsePurgeSpec(cache.url))], publicUrl: CDN_URL, retryDelaysMs: [10], ...purge },
  });
  return { server, logs };
}

const purged = (cache: FakeApi): string[] => cache.requests.map(({ method, path, headers }) => `${method} ${String(headers.host)}${path}`);

describe('purging the CDN after a change', () => {
  it('purges exactly the URLs the publish changed, at the CDN URL, and nothing at start-up', async () => {
    const cache = await startFakeApi(() => ({ status: 200, body: 'Purged' }));
    const { server } = await serverPurging(await tempDir('tr-store-'), cache);
    expect(await server.store.purges.listPurges()).toEqual([]);
    expect(cache.requests).toEqual([]);

    await publish(server, 'purged-one', '1.0.0');
    await purgesMatch(server.store.purges, [{ state: 'done' }]);
    // The catalog page draws its first page at build time: a new template changes it (at / too).
    expect(purged(cache).sort()).toEqual([
      'PURGE registry.example/',
      'PURGE registry.example/index.html',
      'PURGE registry.example/index.json',
      'PURGE registry.example/registry.json',
      'PURGE registry.example/templates/purged-one.json',
    ]);

    // A second template: its file and the entry points; the first template's file is untouched.
    cache.requests.length = 0;
    await publish(server, 'purged-two', '1.0.0');
    await purgesMatch(server.store.purges, [{ state: 'done' }, { state: 'done' }]);
    expect(purged(cache)).toContain('PURGE registry.example/templates/purged-two.json');
    expect(purged(cache)).not.toContain('PURGE registry.example/templates/purged-one.json');
    expect((await server.store.purges.listPurges()).map((job) => job.state)).toEqual(['done', 'done']);
  });

  it('logs a failed purge, retries it with backoff, and after a restart resumes the one still pending', async () => {
    let answer = 503;
    const cache = await startFakeApi(() => ({ status: answer, body: 'Service Unavailable' }));
    const storeDir = await tempDir('tr-store-');
    // The first server's retry is an hour away: it is closed before then.
    const first = await serverPurging(storeDir, cache, { retryDelaysMs: [3_600_000] });
    await publish(first.server, 'stale-once', '1.0.0');
    await purgesMatch(first.server.store.purges, [{ state: 'pending', attempts: 1 }]);
    const warning = first.logs.find((line) => typeof line.msg === 'string' && line.msg.startsWith(`the purge at ${cache.url} failed (attempt 1 of 2)`));
    expect(warning).toMatchObject({ level: 40, target: cache.url, attempt: 1, retryInMs: 3_600_000 });
    expect(String(warning?.msg)).toContain('was refused (HTTP 503)');
    const [pending] = await first.server.store.purges.listPurges();
    expect(pending).toMatchObject({ state: 'pending', attempts: 1 });
    await first.server.app.close();

    // The CDN is back; a server started an hour later sends the pending purge again.
    answer = 200;
    cache.requests.length = 0;
    const later = new Date(Date.now() + 3_600_000 + 60_000);
    const second = await serverPurging(storeDir, cache, { retryDelaysMs: [3_600_000], now: () => later });
    await purgesMatch(second.server.store.purges, [{ state: 'done' }]);
    expect(purged(cache)).toContain('PURGE registry.example/templates/stale-once.json');
    expect((await second.server.store.purges.listPurges())[0]).toMatchObject({ id: pending?.id, state: 'done', attempts: 2 });
  });

  it('gives a purge up after its last attempt with an error naming the URLs left stale', async () => {
    const cache = await startFakeApi(() => ({ status: 403, body: 'Forbidden' }));
    const { server, logs } = await serverPurging(await tempDir('tr-store-'), cache, { retryDelaysMs: [5] });
    await publish(server, 'given-up', '1.0.0');
    await purgesMatch(server.store.purges, [{ state: 'failed' }]);
    const error = logs.find((line) => line.level === 50 && typeof line.msg === 'string' && line.msg.includes('failed 2 times and is given up'));
    expect(error?.stale).toContain(`${CDN_URL}/templates/given-up.json`);
    expect((await server.store.purges.listPurges())[0]).toMatchObject({ state: 'failed', attempts: 2 });
  });

  it("with a bucket's static copy, purges what the copy changed (its archive included) once the copy is written", async () => {
    const s3 = await startFakeS3(['purged-copy']);
    try {
      const storage = await openStorage({
        store: await tempDir('tr-store-'),
        storage: 's3://purged-copy/site',
        s3: { endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
      });
      // What the bucket's registry.json lists when each PURGE arrives.
      const listed: string[] = [];
      const cache = await startFakeApi(() => ({ status: 200 }));
      const server = await startServerOn(storage, { purge: { targets: [createPurgeTarget(parsePurgeSpec(cache.url))], publicUrl: `${CDN_URL}/site` } });
      await publish(server, 'copied', '1.0.0');
      await vi.waitFor(() => expect(purged(cache)).toContain('PURGE registry.example/site/registry.json'), { timeout: 15_000, interval: 50 });
      await vi.waitFor(async () => expect((await storage.purges.listPurges()).every((job) => job.state === 'done')).toBe(true), { timeout: 15_000, interval: 10 });
      const document = (await (await fetch(`${s3.endpoint}/purged-copy/site/public/registry.json`)).json()) as { templates: { id: string }[] };
      listed.push(...document.templates.map((entry) => entry.id));
      expect(listed).toEqual(['copied']);
      expect(purged(cache)).toEqual(
        expect.arrayContaining([
          'PURGE registry.example/site/archives/copied/1.0.0.tgz',
          'PURGE registry.example/site/templates/copied.json',
          'PURGE registry.example/site/index.json',
          'PURGE registry.example/site/registry.json',
        ]),
      );
      await server.app.close();
    } finally {
      await s3.close();
    }
  }, 60_000);
});
