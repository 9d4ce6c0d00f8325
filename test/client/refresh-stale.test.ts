/**
 * Fresh data on demand (`refresh`, the CLI's --refresh) and a word when a cached copy answers
 * because the registry cannot be read (`onStale`).
 */
import { readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import { RegistryClient, type StaleNotice } from '../../src/client/index.js';
import { cacheFileFor } from '../../src/client/registry-client.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { tempDir } from '../helpers/fixtures.js';
import { templateEntry } from '../helpers/builders.js';

const URL_ = 'https://registry.example.test/registry.json';
const TTL = 3_600_000;

const entry = (id: string): TemplateEntry => templateEntry(id, { downloadUrl: `https://registry.example.test/${id}.tgz` });

const doc = (...ids: string[]): RegistryDocument => ({ templates: ids.map(entry), categories: [], tags: [], lastUpdated: '2026-01-01T00:00:00.000Z' });

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | Error;

/** A fetch answering from `answers` in order (an Error is thrown), recording the requests. */
function fakeFetch(...answers: Answer[]): { fetch: typeof globalThis.fetch; calls: Headers[] } {
  const calls: Headers[] = [];
  return {
    calls,
    fetch: (_input, init) => {
      calls.push(new Headers(init?.headers));
      const answer = answers.shift();
      if (!answer) return Promise.reject(new Error('unexpected request'));
      if (answer instanceof Error) return Promise.reject(answer);
      return Promise.resolve(new Response(answer.status === 304 || answer.body === undefined ? null : JSON.stringify(answer.body), { status: answer.status, headers: answer.headers ?? {} }));
    },
  };
}

const ids = (entries: readonly TemplateEntry[]): string[] => entries.map((e) => e.id);

/** A cache folder holding `document`, fetched at `fetchedAt` with ETag "v1". */
async function cachedAt(fetchedAt: number, document: RegistryDocument = doc('alpha')): Promise<string> {
  const cacheDir = await tempDir('tr-refresh-');
  const seed = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fakeFetch({ status: 200, body: document, headers: { etag: '"v1"' } }).fetch, now: () => fetchedAt });
  await seed.listTemplates();
  return cacheDir;
}

describe('refresh', () => {
  it('revalidates a cached copy younger than the TTL on first use, once, and renews the cache file', async () => {
    const start = 1_000_000;
    const cacheDir = await cachedAt(start);
    const later = start + 60_000;
    const fake = fakeFetch({ status: 304, headers: { etag: '"v1"' } });
    const client = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake.fetch, now: () => later, refresh: true });
    expect(ids(await client.listTemplates())).toEqual(['alpha']);
    expect(ids(await client.search('alpha'))).toEqual(['alpha']);
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]?.get('if-none-match')).toBe('"v1"');
    const file = JSON.parse(await readFile(cacheFileFor(cacheDir, URL_), 'utf8')) as { fetchedAt: number };
    expect(file.fetchedAt).toBe(later);
  });

  it('gets the registry as it is now, and keeps it for the next process', async () => {
    const cacheDir = await cachedAt(1_000_000);
    const fake = fakeFetch({ status: 200, body: doc('alpha', 'beta') });
    const refreshed = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake.fetch, now: () => 1_000_001, refresh: true });
    expect(ids(await refreshed.listTemplates())).toEqual(['alpha', 'beta']);
    const next = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fakeFetch().fetch, now: () => 1_000_002 });
    expect(ids(await next.listTemplates())).toEqual(['alpha', 'beta']);
  });

  it('without it, a copy younger than the TTL answers without a request', async () => {
    const cacheDir = await cachedAt(1_000_000);
    const fake = fakeFetch();
    const client = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fake.fetch, now: () => 1_000_000 + TTL - 1 });
    expect(ids(await client.listTemplates())).toEqual(['alpha']);
    expect(fake.calls).toHaveLength(0);
  });
});

describe('onStale', () => {
  it('is told once, with the age and the reason, when an expired copy answers because the registry is down', async () => {
    const cacheDir = await cachedAt(1_000_000);
    const notices: StaleNotice[] = [];
    const now = 1_000_000 + 3 * TTL;
    const client = new RegistryClient({
      registryUrl: URL_,
      cacheDir,
      fetch: fakeFetch(new TypeError('fetch failed')).fetch,
      now: () => now,
      onStale: (notice) => notices.push(notice),
    });
    expect(ids(await client.listTemplates())).toEqual(['alpha']);
    expect(ids(await client.listTemplates())).toEqual(['alpha']);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ url: URL_, what: 'registry document', fetchedAt: 1_000_000, ageMs: 3 * TTL, expired: true });
    expect(notices[0]?.reason).toMatch(/fetch failed/);
  });

  it('is told when --refresh cannot get a newer copy, even of a young one', async () => {
    const cacheDir = await cachedAt(1_000_000);
    const notices: StaleNotice[] = [];
    const client = new RegistryClient({
      registryUrl: URL_,
      cacheDir,
      fetch: fakeFetch({ status: 503 }).fetch,
      now: () => 1_000_000 + 5 * 60_000,
      refresh: true,
      onStale: (notice) => notices.push(notice),
    });
    expect(ids(await client.listTemplates())).toEqual(['alpha']);
    expect(notices).toEqual([expect.objectContaining({ ageMs: 5 * 60_000, expired: false, reason: 'HTTP 503' })]);
  });

  it('is not told when the copy answers because it is young, or when a revalidation succeeds', async () => {
    const cacheDir = await cachedAt(1_000_000);
    const notices: StaleNotice[] = [];
    const young = new RegistryClient({ registryUrl: URL_, cacheDir, fetch: fakeFetch().fetch, now: () => 1_000_000 + 1000, onStale: (n) => notices.push(n) });
    await young.listTemplates();
    const revalidated = new RegistryClient({
      registryUrl: URL_,
      cacheDir,
      fetch: fakeFetch({ status: 304 }).fetch,
      now: () => 1_000_000 + 2 * TTL,
      onStale: (n) => notices.push(n),
    });
    await revalidated.listTemplates();
    expect(notices).toEqual([]);
  });

  it('is not told when there is no copy at all: the call rejects instead', async () => {
    const notices: StaleNotice[] = [];
    const client = new RegistryClient({ registryUrl: URL_, fetch: fakeFetch(new TypeError('fetch failed')).fetch, onStale: (n) => notices.push(n) });
    await expect(client.listTemplates()).rejects.toThrow(/cannot load the registry/);
    expect(notices).toEqual([]);
  });
});
