import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { RegistryClient, RegistryUnavailableError } from '../../src/client/index.js';
import { cacheFileFor } from '../../src/client/registry-client.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { templateEntry } from '../helpers/builders.js';

const URL_ = 'https://registry.example.test/registry.json';
const TTL = 3_600_000;

const entry = (fields: Partial<TemplateEntry> & { id: string }): TemplateEntry => templateEntry(fields.id, { downloadUrl: `https://registry.example.test/${fields.id}.tgz`, ...fields });

function doc(templates: TemplateEntry[], extra: Partial<RegistryDocument> = {}): RegistryDocument {
  return {
    templates,
    categories: [{ id: 'backend', name: 'Backend', description: 'Servers', icon: 'server', templates: [...new Set(templates.map((t) => t.id))] }],
    tags: [...new Set(templates.flatMap((t) => t.tags ?? []))],
    lastUpdated: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

type Answer = { status: number; body?: unknown; headers?: Record<string, string>; wait?: Promise<void> } | Error;

interface FakeFetch {
  fetch: typeof globalThis.fetch;
  calls: { url: string; headers: Headers }[];
  answers: Answer[];
}

/** A fetch answering from `answers` in order (an Error is thrown), recording every call. */
function fakeFetch(...answers: Answer[]): FakeFetch {
  const fake: FakeFetch = {
    calls: [],
    answers,
    fetch: async (input, init) => {
      fake.calls.push({ url: typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, headers: new Headers(init?.headers) });
      const answer = fake.answers.shift();
      if (!answer) throw new Error('unexpected request');
      if (answer instanceof Error) throw answer;
      if (answer.wait) await answer.wait;
      const body = answer.body === undefined ? null : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      return new Response(answer.status === 304 ? null : body, { status: answer.status, headers: answer.headers ?? {} });
    },
  };
  return fake;
}

const ok = (document: unknown, headers: Record<string, string> = {}): Answer => ({ status: 200, body: document, headers: { 'content-type': 'application/json', ...headers } });

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

const first = doc([entry({ id: 'alpha' })]);
const second = doc([entry({ id: 'alpha' }), entry({ id: 'beta-one' })]);
const ids = (entries: readonly TemplateEntry[]): string[] => entries.map((e) => `${e.id}@${e.version}`);

describe('RegistryClient cache', () => {
  it('makes no second request while the cache is younger than the TTL (default 3,600,000 ms)', async () => {
    const fake = fakeFetch(ok(first, { etag: '"v1"' }));
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    expect(client.cacheTtlMs).toBe(TTL);
    expect(client.status()).toEqual({ stale: false, source: 'none' });

    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
    time.advance(TTL - 1);
    await client.getTemplate('alpha');
    await client.search('alpha');
    await client.listCategories();
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]!.url).toBe(URL_);
    expect(fake.calls[0]!.headers.get('if-none-match')).toBeNull();
    expect(client.status()).toEqual({ fetchedAt: 1_000_000, stale: false, source: 'network', etag: '"v1"' });
  });

  it('revalidates after expiry with If-None-Match and If-Modified-Since; a 304 renews the cache time', async () => {
    const lastModified = 'Wed, 01 Jan 2026 00:00:00 GMT';
    const fake = fakeFetch(ok(first, { etag: '"v1"', 'last-modified': lastModified }), { status: 304 });
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    await client.listTemplates();
    time.advance(TTL);
    expect(client.status().stale).toBe(true);

    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.headers.get('if-none-match')).toBe('"v1"');
    expect(fake.calls[1]!.headers.get('if-modified-since')).toBe(lastModified);
    expect(client.status()).toEqual({ fetchedAt: 1_000_000 + TTL, stale: false, source: 'network', etag: '"v1"', lastModified });

    time.advance(TTL - 1); // counted from the 304, not from the first fetch
    await client.listTemplates();
    expect(fake.calls).toHaveLength(2);
  });

  it('replaces the registry on a 200 after expiry', async () => {
    const fake = fakeFetch(ok(first, { etag: '"v1"' }), ok(second, { etag: '"v2"' }));
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    await client.listTemplates();
    time.advance(TTL);
    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0', 'beta-one@1.0.0']);
    expect(client.status().etag).toBe('"v2"');
  });

  it('keeps the old registry on a 500 after expiry, marks it stale, and backs off before retrying', async () => {
    const fake = fakeFetch(ok(first), { status: 500, body: 'boom' }, ok(second));
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    await client.listTemplates();
    time.advance(TTL);

    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
    expect(fake.calls).toHaveLength(2);
    const status = client.status();
    expect(status).toMatchObject({ stale: true, source: 'network', fetchedAt: 1_000_000 });
    expect(status.lastError).toMatch(/HTTP 500/);

    // Within the backoff window: the stale registry, no request.
    time.advance(29_999);
    expect(ids(await client.getTemplate('alpha').then((e) => (e ? [e] : [])))).toEqual(['alpha@1.0.0']);
    expect(fake.calls).toHaveLength(2);

    // After it: a new attempt, which succeeds and clears the error.
    time.advance(1);
    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0', 'beta-one@1.0.0']);
    expect(fake.calls).toHaveLength(3);
    expect(client.status()).toMatchObject({ stale: false, source: 'network', fetchedAt: 1_000_000 + TTL + 30_000 });
    expect(client.status().lastError).toBeUndefined();
  });

  it('refresh() fetches whatever the cache age and reports a failure without throwing when a registry is cached', async () => {
    const fake = fakeFetch(ok(first, { etag: '"v1"' }), { status: 304 }, { status: 503 });
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    await client.listTemplates();
    time.advance(10);
    expect(await client.refresh()).toMatchObject({ fetchedAt: 1_000_010, stale: false });
    expect(fake.calls[1]!.headers.get('if-none-match')).toBe('"v1"');
    const status = await client.refresh();
    expect(status).toMatchObject({ stale: true, fetchedAt: 1_000_010 });
    expect(status.lastError).toMatch(/HTTP 503/);
    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
  });

  it('rejects invalid JSON as a failed fetch, keeping the old registry', async () => {
    const fake = fakeFetch(ok(first), { status: 200, body: '{"templates": [' });
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });
    await client.listTemplates();
    time.advance(TTL);
    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
    expect(client.status().stale).toBe(true);
    expect(client.status().lastError).toMatch(/^invalid JSON/);
  });

  it('reads the rest of a document with one unreadable entry, and says which one was left out', async () => {
    const bad = doc([entry({ id: 'alpha', version: '2.0.0' }), entry({ id: 'gamma', version: 'not-a-version' }), entry({ id: 'delta' })]);
    const fake = fakeFetch(ok(first), ok(bad));
    const time = clock();
    const skipped: string[] = [];
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now, onSkipped: (notice) => skipped.push(notice.message) });
    await client.listTemplates();
    time.advance(TTL);
    expect(ids(await client.listTemplates())).toEqual(['alpha@2.0.0', 'delta@1.0.0']);
    expect(await client.getTemplate('gamma')).toBeNull();
    expect(client.status().lastError).toBeUndefined();
    expect(skipped).toEqual([expect.stringMatching(/#1 gamma@not-a-version \(its version "not-a-version" is not a version/)]);
  });

  it('rejects a document that is not a registry document at all', async () => {
    const fake = fakeFetch(ok({ hello: 'world' }));
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch });
    await expect(client.listTemplates()).rejects.toThrow(/has no "templates" list/);
  });

  it('rejects, naming the URL and the cause, when the first fetch fails; the next call tries again', async () => {
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) });
    const fake = fakeFetch({ status: 500 }, refused, ok(first));
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });

    const error = await client.listTemplates().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryUnavailableError);
    expect((error as Error).message).toBe(`cannot load the registry from ${URL_}: HTTP 500`);
    expect((error as RegistryUnavailableError).url).toBe(URL_);
    expect(client.status()).toEqual({ stale: false, source: 'none', lastError: 'HTTP 500' });

    await expect(client.getTemplate('alpha')).rejects.toThrow(/registry\.example\.test.*network error: fetch failed \(ECONNREFUSED: connect ECONNREFUSED/);
    await expect(client.refresh()).resolves.toMatchObject({ source: 'network', stale: false });
    expect(fake.calls).toHaveLength(3);
  });

  it('concurrent callers share one in-flight request, first load and revalidation alike', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let releaseSecond!: () => void;
    const secondGate = new Promise<void>((resolve) => (releaseSecond = resolve));
    const fake = fakeFetch({ ...(ok(first) as object), status: 200, wait: gate }, { status: 500, wait: secondGate });
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now });

    const calls = [client.listTemplates(), client.getTemplate('alpha'), client.search('alpha'), client.listCategories(), client.refresh()];
    release();
    const [list, one] = await Promise.all(calls);
    expect(ids(list as TemplateEntry[])).toEqual(['alpha@1.0.0']);
    expect((one as TemplateEntry).id).toBe('alpha');
    expect(fake.calls).toHaveLength(1);

    time.advance(TTL);
    const again = Promise.all([client.listTemplates(), client.listTemplates(), client.getTemplate('alpha')]);
    releaseSecond();
    const [a, b] = await again;
    expect(ids(a)).toEqual(['alpha@1.0.0']);
    expect(ids(b)).toEqual(['alpha@1.0.0']);
    expect(fake.calls).toHaveLength(2);
  });

  it('passes cacheTtlMs through', async () => {
    const fake = fakeFetch(ok(first), { status: 304 });
    const time = clock();
    const client = new RegistryClient({ registryUrl: URL_, fetch: fake.fetch, now: time.now, cacheTtlMs: 1000 });
    await client.listTemplates();
    time.advance(999);
    await client.listTemplates();
    expect(fake.calls).toHaveLength(1);
    time.advance(1);
    await client.listTemplates();
    expect(fake.calls).toHaveLength(2);
  });
});

describe('RegistryClient cacheDir', () => {
  it('keeps the cache across instances: a new client within the TTL makes no request, then revalidates with the stored ETag', async () => {
    const cacheDir = await tempDir('tr-client-cache-');
    const time = clock();
    const lastModified = 'Wed, 01 Jan 2026 00:00:00 GMT';
    const fake1 = fakeFetch(ok(second, { etag: '"v2"', 'last-modified': lastModified }));
    const client1 = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake1.fetch, now: time.now });
    await client1.listTemplates();
    const names = await readdir(cacheDir);
    expect(names).toEqual([path.basename(cacheFileFor(cacheDir, URL_))]);
    expect(names[0]).toMatch(/^registry-[0-9a-f]{64}\.json$/);

    time.advance(TTL - 1);
    const fake2 = fakeFetch({ status: 304 });
    const client2 = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake2.fetch, now: time.now });
    expect(ids(await client2.listTemplates())).toEqual(['alpha@1.0.0', 'beta-one@1.0.0']);
    expect(fake2.calls).toHaveLength(0);
    expect(client2.status()).toEqual({ fetchedAt: 1_000_000, stale: false, source: 'cache', etag: '"v2"', lastModified });

    time.advance(1);
    await client2.listTemplates();
    expect(fake2.calls).toHaveLength(1);
    expect(fake2.calls[0]!.headers.get('if-none-match')).toBe('"v2"');
    expect(fake2.calls[0]!.headers.get('if-modified-since')).toBe(lastModified);
    expect(client2.status()).toMatchObject({ fetchedAt: 1_000_000 + TTL, source: 'network', stale: false });

    // The 304 renewed the file too.
    const fake3 = fakeFetch();
    const client3 = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake3.fetch, now: time.now });
    await client3.listTemplates();
    expect(client3.status()).toMatchObject({ fetchedAt: 1_000_000 + TTL, source: 'cache' });
  });

  it('serves an expired cache file when the registry is down, and keeps one file per URL', async () => {
    const cacheDir = await tempDir('tr-client-cache-');
    const time = clock();
    await new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fakeFetch(ok(first)).fetch, now: time.now }).listTemplates();
    time.advance(TTL * 5);
    const down = fakeFetch(new TypeError('fetch failed'));
    const client = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: down.fetch, now: time.now });
    expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0']);
    expect(client.status()).toMatchObject({ stale: true, source: 'cache' });

    const other = `${URL_}?other`;
    await new RegistryClient({ registryUrl: other, cacheDir, fetch: fakeFetch(ok(second)).fetch, now: time.now }).listTemplates();
    expect(await readdir(cacheDir)).toHaveLength(2);
  });

  it('ignores a corrupt or mismatched cache file', async () => {
    const cacheDir = await tempDir('tr-client-cache-');
    const file = cacheFileFor(cacheDir, URL_);
    for (const content of ['{not json', JSON.stringify({ url: 'https://elsewhere/', fetchedAt: 1_000_000, document: first }), JSON.stringify({ url: URL_, fetchedAt: 1_000_000, document: { templates: 'no' } })]) {
      await writeFile(file, content);
      const fake = fakeFetch(ok(second));
      const client = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake.fetch, now: () => 1_000_001 });
      expect(ids(await client.listTemplates())).toEqual(['alpha@1.0.0', 'beta-one@1.0.0']);
      expect(fake.calls).toHaveLength(1);
    }
  });
});

describe('RegistryClient reader rules', () => {
  const templates = [
    entry({ id: 'web-a', name: 'web-a', category: 'frontend', stability: 'beta', tags: ['react', 'spa'], features: ['auth', 'testing'], author: { name: 'Ada' }, stats: { downloads: 50 } }),
    entry({ id: 'api-b', name: 'api-b', category: 'backend', stability: 'stable', tags: ['node'], features: ['api', 'database'], author: { name: 'Bob' }, stats: { downloads: 10 } }),
    entry({ id: 'api-b', name: 'api-b', version: '2.0.0', category: 'backend', stability: 'stable', tags: ['node', 'rest'], features: ['api', 'database', 'auth'], author: { name: 'Bob' }, stats: { downloads: 10 } }),
    entry({ id: 'cli-c', name: 'cli-c', category: 'desktop', stability: 'deprecated', tags: ['node'], features: [], author: { name: 'Ada Lovelace' }, stats: { downloads: 999 } }),
    entry({ id: 'exp-d', name: 'exp-d', category: 'backend', stability: 'experimental', tags: ['rust'], features: ['api'], author: { name: 'Ada' }, stats: { downloads: 1 } }),
    entry({ id: 'aaa-e', name: 'aaa-e', category: 'backend', stability: 'stable', tags: ['node'], features: ['api'], author: { name: 'Ada' }, stats: { downloads: 10 } }),
    entry({ id: 'big-f', name: 'big-f', category: 'fullstack', stability: 'stable', tags: ['react', 'node'], features: ['auth'], author: { name: 'Cy' }, stats: { downloads: 500 } }),
    entry({ id: 'zero-g', name: 'zero-g', category: 'mobile', stability: 'beta', tags: [], features: [], author: undefined, stats: undefined }),
  ];
  const client = (): RegistryClient => new RegistryClient({ registryUrl: URL_, fetch: fakeFetch(ok(doc(templates))).fetch });

  it('lists every entry (every version) in stability order, then downloads descending, then name ascending', async () => {
    expect(ids(await client().listTemplates())).toEqual([
      'big-f@1.0.0', // stable 500
      'aaa-e@1.0.0', // stable 10, name aaa < api
      'api-b@1.0.0', // stable 10 (both versions of api-b, document order for the exact tie)
      'api-b@2.0.0',
      'web-a@1.0.0', // beta 50
      'zero-g@1.0.0', // beta, no stats = 0
      'exp-d@1.0.0', // experimental
      'cli-c@1.0.0', // deprecated, whatever its downloads
    ]);
  });

  it('filters by category and stability (exact)', async () => {
    const c = client();
    expect(ids(await c.listTemplates({ category: 'backend' }))).toEqual(['aaa-e@1.0.0', 'api-b@1.0.0', 'api-b@2.0.0', 'exp-d@1.0.0']);
    expect(ids(await c.listTemplates({ category: 'Backend' }))).toEqual([]);
    expect(ids(await c.listTemplates({ stability: 'beta' }))).toEqual(['web-a@1.0.0', 'zero-g@1.0.0']);
    expect(ids(await c.listTemplates({ category: 'backend', stability: 'experimental' }))).toEqual(['exp-d@1.0.0']);
    expect(ids(await c.listTemplates({ stability: 'unknown' }))).toEqual([]);
  });

  it('filters by tags and features (all must be present), on every version', async () => {
    const c = client();
    expect(ids(await c.listTemplates({ tags: ['node'] }))).toEqual(['big-f@1.0.0', 'aaa-e@1.0.0', 'api-b@1.0.0', 'api-b@2.0.0', 'cli-c@1.0.0']);
    expect(ids(await c.listTemplates({ tags: ['node', 'rest'] }))).toEqual(['api-b@2.0.0']);
    expect(ids(await c.listTemplates({ tags: ['react', 'node'] }))).toEqual(['big-f@1.0.0']);
    expect(ids(await c.listTemplates({ tags: ['node', 'missing'] }))).toEqual([]);
    expect(ids(await c.listTemplates({ features: ['auth'] }))).toEqual(['big-f@1.0.0', 'api-b@2.0.0', 'web-a@1.0.0']);
    expect(ids(await c.listTemplates({ features: ['api', 'database'] }))).toEqual(['api-b@1.0.0', 'api-b@2.0.0']);
    expect(ids(await c.listTemplates({ tags: [], features: [] }))).toHaveLength(templates.length);
    expect(ids(await c.listTemplates({ tags: ['node'], features: ['auth'], category: 'backend' }))).toEqual(['api-b@2.0.0']);
  });

  it('filters by author name, exactly', async () => {
    const c = client();
    expect(ids(await c.listTemplates({ author: 'Ada' }))).toEqual(['aaa-e@1.0.0', 'web-a@1.0.0', 'exp-d@1.0.0']);
    expect(ids(await c.listTemplates({ author: 'ada' }))).toEqual([]);
    expect(ids(await c.listTemplates({ author: 'Ada Lovelace' }))).toEqual(['cli-c@1.0.0']);
  });

  it('getTemplate: exact version or null; else highest stable, else highest; numeric comparison; null for unknown ids', async () => {
    const versions = [
      entry({ id: 'one', version: '1.9.0' }),
      entry({ id: 'one', version: '1.10.0' }),
      entry({ id: 'one', version: '2.0.0', stability: 'beta' }),
      entry({ id: 'one', version: '1.2.0' }),
      entry({ id: 'two', version: '0.9.0', stability: 'beta' }),
      entry({ id: 'two', version: '0.10.0', stability: 'experimental' }),
      entry({ id: 'two', version: '0.2.0', stability: 'deprecated' }),
    ];
    const c = new RegistryClient({ registryUrl: URL_, fetch: fakeFetch(ok(doc(versions))).fetch });
    expect((await c.getTemplate('one'))?.version).toBe('1.10.0');
    expect((await c.getTemplate('two'))?.version).toBe('0.10.0');
    expect((await c.getTemplate('one', '2.0.0'))?.stability).toBe('beta');
    expect((await c.getTemplate('one', '1.9.0'))?.version).toBe('1.9.0');
    expect(await c.getTemplate('one', '3.0.0')).toBeNull();
    expect(await c.getTemplate('one', '1.10')).toBeNull();
    expect(await c.getTemplate('three')).toBeNull();
    expect(await c.getTemplate('three', '1.0.0')).toBeNull();
  });

  it('search: lower-cased terms split on spaces, every term in name, description, tags, features or category; listing order', async () => {
    const c = client();
    expect(ids(await c.search('REACT'))).toEqual(['big-f@1.0.0', 'web-a@1.0.0']);
    expect(ids(await c.search('react  auth '))).toEqual(['big-f@1.0.0', 'web-a@1.0.0']);
    expect(ids(await c.search('react testing'))).toEqual(['web-a@1.0.0']); // a feature
    expect(ids(await c.search('fullstack'))).toEqual(['big-f@1.0.0']); // the category
    expect(ids(await c.search('rest database'))).toEqual(['api-b@2.0.0']); // tag + feature
    expect(ids(await c.search('the api-b template'))).toEqual(['api-b@1.0.0', 'api-b@2.0.0']); // description
    expect(ids(await c.search('ap'))).toEqual(['aaa-e@1.0.0', 'api-b@1.0.0', 'api-b@2.0.0', 'exp-d@1.0.0']); // substrings
    expect(ids(await c.search('react nothing'))).toEqual([]);
    expect(ids(await c.search('Ada'))).toEqual([]); // the author is not searched
    expect(ids(await c.search('reactspa'))).toEqual([]); // no match across two fields
    expect(await c.search('   ')).toHaveLength(templates.length);
  });

  it('listCategories returns the categories array', async () => {
    const categories = [
      { id: 'backend', name: 'Backend', description: 'Servers', icon: 'server', templates: ['api-b'] },
      { id: 'frontend', name: 'Frontend', description: 'UIs', icon: 'layout', templates: ['web-a'] },
    ];
    const c = new RegistryClient({ registryUrl: URL_, fetch: fakeFetch(ok(doc(templates, { categories }))).fetch });
    expect(await c.listCategories()).toEqual(categories);
  });
});

describe('RegistryClient against a real registry server', () => {
  it('loads registry.json, then revalidates it with its ETag after expiry and gets a 304', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir('tr-pack-') });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });

    const statuses: number[] = [];
    const sent: Headers[] = [];
    const counting: typeof globalThis.fetch = async (input, init) => {
      sent.push(new Headers(init?.headers));
      const response = await fetch(input, init);
      statuses.push(response.status);
      return response;
    };
    const time = clock(Date.now());
    const client = new RegistryClient({ registryUrl: `${server.url}/registry.json`, fetch: counting, now: time.now });

    const latest = await client.getTemplate('node-service');
    expect(latest).toMatchObject({ id: 'node-service', version: '1.1.0', integrity: pack.integrity });
    expect(ids(await client.search('node service'))).toEqual(['node-service@1.1.0']);
    const etag = client.status().etag;
    expect(etag).toMatch(/^"/);
    expect(client.status().lastModified).toBeDefined();
    expect(statuses).toEqual([200]);

    time.advance(TTL);
    expect(ids(await client.listTemplates({ category: 'backend' }))).toEqual(['node-service@1.1.0']);
    expect(statuses).toEqual([200, 304]);
    expect(sent[1]!.get('if-none-match')).toBe(etag);
    expect(client.status()).toMatchObject({ stale: false, source: 'network', fetchedAt: time.now() });
  });
});

describe('relative URLs of a static registry', () => {
  it('are resolved against the URL of the document, from the network and from the disk cache', async () => {
    const relative = doc([entry({ id: 'alpha', downloadUrl: 'archives/alpha/1.0.0.tgz', documentationUrl: 'index.html#t-alpha' })]);
    const registryUrl = 'https://cdn.example.test/mirrors/acme/registry.json';
    const cacheDir = await tempDir('tr-rel-cache-');
    const first = new RegistryClient({ registryUrl, cacheDir, fetch: () => Promise.resolve(new Response(JSON.stringify(relative))) });
    expect(await first.getTemplate('alpha')).toMatchObject({
      downloadUrl: 'https://cdn.example.test/mirrors/acme/archives/alpha/1.0.0.tgz',
      documentationUrl: 'https://cdn.example.test/mirrors/acme/index.html#t-alpha',
    });
    await first.refresh();
    const offline = new RegistryClient({ registryUrl, cacheDir, fetch: () => Promise.reject(new Error('offline')) });
    expect((await offline.getTemplate('alpha'))?.downloadUrl).toBe('https://cdn.example.test/mirrors/acme/archives/alpha/1.0.0.tgz');
  });
});
