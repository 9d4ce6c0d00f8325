import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';

import { afterEach, describe, expect, it } from 'vitest';

import { createServer, type RegistryServer } from '../../src/server/app.js';
import { openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { ifNoneMatchMatches, negotiateEncoding, notModifiedSince } from '../../src/server/static-files.js';
import { tempDir } from '../helpers/fixtures.js';

// ---- a store with published versions (seeded through the store's API, then built by createServer)

interface Seed {
  name: string;
  version: string;
  stability?: 'stable' | 'beta' | 'experimental' | 'deprecated';
  category?: string;
  keywords?: string[];
  features?: string[];
  author?: string;
  description?: string;
  downloads?: number;
  createdAt: string;
}

const SEEDS: Seed[] = [
  { name: 'node-service', version: '1.0.0', createdAt: '2024-01-10T00:00:00.000Z', keywords: ['node'], features: ['api'] },
  { name: 'node-service', version: '1.1.0', createdAt: '2024-03-01T00:00:00.000Z', keywords: ['node', 'service'], features: ['api', 'testing'], downloads: 5 },
  { name: 'node-service', version: '2.0.0', stability: 'beta', createdAt: '2024-05-01T00:00:00.000Z', keywords: ['node'], features: ['api'] },
  { name: 'react-app', version: '0.1.0', stability: 'experimental', category: 'frontend', createdAt: '2024-02-01T00:00:00.000Z' },
  { name: 'react-app', version: '0.2.0', stability: 'beta', category: 'frontend', createdAt: '2024-02-15T00:00:00.000Z', keywords: ['react', 'spa'], downloads: 2, author: 'Ada' },
  { name: 'old-api', version: '1.0.0', stability: 'deprecated', createdAt: '2023-06-01T00:00:00.000Z', downloads: 50, description: 'A legacy REST API server template' },
  { name: 'go-worker', version: '1.0.0', createdAt: '2024-04-01T00:00:00.000Z', keywords: ['go', 'worker'], features: ['api', 'docker'], downloads: 5, author: 'Grace' },
  { name: 'mobile-kit', version: '3.0.0', category: 'mobile', createdAt: '2024-06-01T00:00:00.000Z', keywords: ['mobile'] },
];

/** The default listing order of SEEDS' selected entries. */
const DEFAULT_ORDER = ['go-worker', 'node-service', 'mobile-kit', 'react-app', 'old-api'];

function archiveBytes(seed: Pick<Seed, 'name' | 'version'>): Buffer {
  return gzipSync(Buffer.from(`archive of ${seed.name}@${seed.version}\n`));
}

async function seedStore(dir: string, seeds: Seed[]): Promise<SqliteStorage> {
  const store = await openSqliteStorage(dir);
  const { record } = await store.tokens.createToken({ role: 'admin' });
  for (const seed of seeds) {
    const bytes = archiveBytes(seed);
    const temp = store.versions.uploadTempPath('.tgz');
    await writeFile(temp, bytes);
    const reserved = await store.versions.reserveVersion(
      {
        name: seed.name,
        version: seed.version,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        owner: record.owner,
        createdAt: seed.createdAt,
      },
      record,
    );
    expect(reserved).toEqual({ reserved: true });
    await store.versions.commitVersion(seed.name, seed.version, temp, {
      name: seed.name,
      version: seed.version,
      description: seed.description ?? `The ${seed.name} template for tests`,
      category: (seed.category ?? 'backend') as 'backend',
      stability: seed.stability ?? 'stable',
      author: { name: seed.author ?? 'Test Author' },
      keywords: seed.keywords ?? [],
      features: seed.features ?? [],
    });
    for (let i = 0; i < (seed.downloads ?? 0); i++) {
      await store.events.recordEvent({ type: 'download', templateId: seed.name, version: seed.version, timestamp: seed.createdAt, userAgent: 'seed', platform: 'test' });
    }
  }
  return store;
}

const servers: RegistryServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.app.close()));
});

async function start(seeds: Seed[] = SEEDS): Promise<RegistryServer & { store: SqliteStorage }> {
  const store = await seedStore(await tempDir('tr-read-'), seeds);
  const server = await createServer({ store, publicUrl: 'http://registry.test' });
  servers.push(server);
  return { ...server, store };
}

const ids = (body: { data: Array<{ id: string }> }): string[] => body.data.map((e) => e.id);

// ---------------------------------------------------------------------------------------------

describe('GET /registry.json and /', () => {
  it('serves the bytes of registry.json with its validators and caching headers', async () => {
    const { app, context, store } = await start();
    const bytes = await readFile(path.join(store.publicDir, 'registry.json'));
    for (const url of ['/registry.json', '/']) {
      const res = await app.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(bytes)).toBe(true);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['content-length']).toBe(String(bytes.length));
      expect(res.headers.etag).toBe(context.registry().etag);
      expect(res.headers['last-modified']).toBe(context.registry().lastModified.toUTCString());
      expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=600');
      expect(res.headers.vary).toBe('Accept-Encoding');
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.headers['content-encoding']).toBeUndefined();
    }
  });

  it('answers If-None-Match (exact, list, *, weak) with 304 and no body', async () => {
    const { app, context } = await start();
    const etag = context.registry().etag;
    for (const value of [etag, `"nope", ${etag}`, '*', `W/${etag}`]) {
      const res = await app.inject({ url: '/registry.json', headers: { 'if-none-match': value } });
      expect(res.statusCode, value).toBe(304);
      expect(res.payload).toBe('');
      expect(res.headers.etag).toBe(etag);
      expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=600');
    }
    const other = await app.inject({ url: '/registry.json', headers: { 'if-none-match': '"something-else"' } });
    expect(other.statusCode).toBe(200);
  });

  it('answers If-Modified-Since, unless If-None-Match is given', async () => {
    const { app, context } = await start();
    const lastModified = context.registry().lastModified;
    const later = new Date(lastModified.getTime() + 60_000).toUTCString();
    const earlier = new Date(lastModified.getTime() - 60_000).toUTCString();
    expect((await app.inject({ url: '/registry.json', headers: { 'if-modified-since': lastModified.toUTCString() } })).statusCode).toBe(304);
    expect((await app.inject({ url: '/registry.json', headers: { 'if-modified-since': later } })).statusCode).toBe(304);
    expect((await app.inject({ url: '/registry.json', headers: { 'if-modified-since': earlier } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/registry.json', headers: { 'if-modified-since': 'not a date' } })).statusCode).toBe(200);
    const both = await app.inject({ url: '/registry.json', headers: { 'if-modified-since': later, 'if-none-match': '"other"' } });
    expect(both.statusCode).toBe(200);
  });

  it('serves the precompressed variants by Accept-Encoding', async () => {
    const { app, store, context } = await start();
    const identity = await readFile(path.join(store.publicDir, 'registry.json'));
    const br = await app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['content-length']).toBe(String(br.rawPayload.length));
    expect(br.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(brotliDecompressSync(br.rawPayload).equals(identity)).toBe(true);
    expect(br.headers.etag).not.toBe(context.registry().etag);

    const gzip = await app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'br;q=0, gzip' } });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.rawPayload).equals(identity)).toBe(true);
    expect((await readFile(path.join(store.publicDir, 'registry.json.gz'))).equals(gzip.rawPayload)).toBe(true);

    const none = await app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'br;q=0, gzip;q=0' } });
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(none.rawPayload.equals(identity)).toBe(true);

    // Any variant's tag matches, whichever coding the revalidation asks for.
    const revalidate = await app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'br', 'if-none-match': context.registry().etag } });
    expect(revalidate.statusCode).toBe(304);
    const revalidateBr = await app.inject({ url: '/registry.json', headers: { 'if-none-match': String(br.headers.etag) } });
    expect(revalidateBr.statusCode).toBe(304);
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const { app, store } = await start();
    const bytes = await readFile(path.join(store.publicDir, 'registry.json'));
    const res = await app.inject({ method: 'HEAD', url: '/registry.json' });
    expect(res.statusCode).toBe(200);
    expect(res.payload).toBe('');
    expect(res.headers['content-length']).toBe(String(bytes.length));
  });
});

describe('GET /index.html and /catalog', () => {
  it('serves the catalog page with validators', async () => {
    const { app, store } = await start();
    const html = await readFile(path.join(store.publicDir, 'index.html'));
    for (const url of ['/index.html', '/catalog']) {
      const res = await app.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.rawPayload.equals(html)).toBe(true);
      expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      expect(res.headers['last-modified']).toBeTruthy();
      expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=600');
      const again = await app.inject({ url, headers: { 'if-none-match': String(res.headers.etag) } });
      expect(again.statusCode).toBe(304);
      expect(again.payload).toBe('');
    }
  });
});

describe('GET /templates', () => {
  it('lists one entry per template id, in the spec listing order, with offset pagination', async () => {
    const { app } = await start();
    const res = await app.inject({ url: '/templates' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    const body = res.json();
    expect(ids(body)).toEqual(DEFAULT_ORDER);
    expect(body.data.find((e: { id: string }) => e.id === 'node-service').version).toBe('1.1.0');
    expect(body.data.find((e: { id: string }) => e.id === 'react-app').version).toBe('0.2.0');
    expect(body.pagination).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1, hasNext: false, hasPrevious: false });
    expect(body.meta).toMatchObject({ requestId: res.headers['x-request-id'], version: '1.0' });
  });

  it('pages with page and limit', async () => {
    const { app } = await start();
    const second = (await app.inject({ url: '/templates?limit=2&page=2' })).json();
    expect(ids(second)).toEqual(DEFAULT_ORDER.slice(2, 4));
    expect(second.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: true });
    const last = (await app.inject({ url: '/templates?limit=2&page=3' })).json();
    expect(last.pagination).toMatchObject({ hasNext: false, hasPrevious: true });
    const beyond = (await app.inject({ url: '/templates?limit=2&page=9' })).json();
    expect(beyond.data).toEqual([]);
  });

  it('refuses invalid page and limit with VALIDATION_ERROR details', async () => {
    const { app } = await start();
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['page=0', 'page'],
      ['page=1.5', 'page'],
      ['order=up', 'order'],
    ]) {
      const res = await app.inject({ url: `/templates?${query}` });
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['cache-control']).toBe('no-store');
      const { error } = res.json();
      expect(error).toMatchObject({ code: 'VALIDATION_ERROR', requestId: res.headers['x-request-id'] });
      expect(error.timestamp).toBeTruthy();
      expect(error.details[0]).toMatchObject({ field });
      expect(error.details[0].message).toBeTruthy();
      expect(error.details[0].code).toMatch(/^[A-Z_]+$/);
    }
  });

  it('pages with cursors that are tied to their query', async () => {
    const { app } = await start();
    const seen: string[] = [];
    let url = '/templates?limit=2&cursor=';
    let pages = 0;
    let previous: string | null | undefined;
    for (;;) {
      const body = (await app.inject({ url })).json();
      pages++;
      seen.push(...ids(body));
      expect(Object.keys(body.pagination).sort()).toEqual(['hasNext', 'limit', 'nextCursor', 'prevCursor']);
      expect(body.pagination.prevCursor === null).toBe(pages === 1);
      previous = body.pagination.prevCursor;
      if (!body.pagination.hasNext) {
        expect(body.pagination.nextCursor).toBeNull();
        break;
      }
      url = `/templates?limit=2&cursor=${body.pagination.nextCursor}`;
    }
    expect(seen).toEqual(DEFAULT_ORDER);
    expect(pages).toBe(3);
    const back = (await app.inject({ url: `/templates?limit=2&cursor=${previous}` })).json();
    expect(ids(back)).toEqual(DEFAULT_ORDER.slice(2, 4));

    const first = (await app.inject({ url: '/templates?limit=2&cursor=' })).json();
    const foreign = await app.inject({ url: `/templates?limit=2&sort=name&cursor=${first.pagination.nextCursor}` });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.details[0]).toMatchObject({ field: 'cursor', code: 'INVALID_CURSOR' });
    const garbage = await app.inject({ url: '/templates?cursor=not-a-cursor' });
    expect(garbage.statusCode).toBe(400);
  });

  it('filters by category, stability, tags, features and author', async () => {
    const { app } = await start();
    const get = async (query: string) => ids((await app.inject({ url: `/templates?${query}` })).json());
    expect(await get('category=backend')).toEqual(['go-worker', 'node-service', 'old-api']);
    expect(await get('category=frontend,mobile')).toEqual(['mobile-kit', 'react-app']);
    expect(await get('stability=beta')).toEqual(['react-app']);
    expect(await get('stability=beta,deprecated')).toEqual(['react-app', 'old-api']);
    expect(await get('tags=go,worker')).toEqual(['go-worker']);
    expect(await get('tags=go,node')).toEqual([]);
    expect(await get('features=api')).toEqual(['go-worker', 'node-service']);
    expect(await get('features=api,testing')).toEqual(['node-service']);
    expect(await get('author=Ada')).toEqual(['react-app']);
    expect(await get('author=ada')).toEqual([]);
    const invalid = await app.inject({ url: '/templates?stability=stabel' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error.details[0].field).toBe('stability');
  });

  it('searches with q and search (every term, case-insensitive)', async () => {
    const { app } = await start();
    const get = async (query: string) => ids((await app.inject({ url: `/templates?${query}` })).json());
    expect(await get('q=REST%20legacy')).toEqual(['old-api']);
    expect(await get('search=docker')).toEqual(['go-worker']);
    expect(await get('q=frontend')).toEqual(['react-app']);
    expect(await get('q=node%20nothing')).toEqual([]);
  });

  it('filters by downloads ranges and creation dates', async () => {
    const { app } = await start();
    const get = async (query: string) => ids((await app.inject({ url: `/templates?${query}` })).json());
    expect(await get('stats.downloads[gte]=5')).toEqual(['go-worker', 'node-service', 'old-api']);
    expect(await get('downloads[gte]=5&stats.downloads[lte]=10')).toEqual(['go-worker', 'node-service']);
    expect(await get('createdAfter=2024-03-01')).toEqual(['go-worker', 'node-service', 'mobile-kit']);
    expect(await get('createdBefore=2024-03-01T00:00:00Z')).toEqual(['react-app', 'old-api']);
    const bad = await app.inject({ url: '/templates?createdAfter=yesterday' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details[0].field).toBe('createdAfter');
    expect((await app.inject({ url: '/templates?downloads[gte]=-1' })).statusCode).toBe(400);
  });

  it('sorts by fields, with - for descending or order=', async () => {
    const { app } = await start();
    const get = async (query: string) => ids((await app.inject({ url: `/templates?${query}` })).json());
    expect(await get('sort=name')).toEqual(['go-worker', 'mobile-kit', 'node-service', 'old-api', 'react-app']);
    expect(await get('sort=-name')).toEqual(['react-app', 'old-api', 'node-service', 'mobile-kit', 'go-worker']);
    expect(await get('sort=name&order=desc')).toEqual(['react-app', 'old-api', 'node-service', 'mobile-kit', 'go-worker']);
    expect(await get('sort=-downloads,name')).toEqual(['old-api', 'go-worker', 'node-service', 'react-app', 'mobile-kit']);
    expect(await get('sort=-version')).toEqual(['mobile-kit', 'node-service', 'go-worker', 'old-api', 'react-app']);
    expect(await get('sort=createdAt')).toEqual(['old-api', 'react-app', 'node-service', 'go-worker', 'mobile-kit']);
    expect(await get('sort=-stability')).toEqual(['old-api', 'react-app', 'go-worker', 'node-service', 'mobile-kit']);
    const unknown = await app.inject({ url: '/templates?sort=popularity' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.details[0]).toMatchObject({ field: 'sort' });
  });

  it('returns sparse fieldsets, always with id', async () => {
    const { app } = await start();
    const body = (await app.inject({ url: '/templates?fields=name,version&limit=1' })).json();
    expect(body.data).toEqual([{ id: 'go-worker', name: 'go-worker', version: '1.0.0' }]);
    const unknown = await app.inject({ url: '/templates?fields=name,secret' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.details[0].field).toBe('fields');
  });
});

describe('GET /templates/{id} and versions', () => {
  it('returns the entry the selection rule picks', async () => {
    const { app } = await start();
    const res = await app.inject({ url: '/templates/node-service' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.json().data).toMatchObject({ id: 'node-service', version: '1.1.0', stability: 'stable' });
    expect((await app.inject({ url: '/templates/react-app' })).json().data.version).toBe('0.2.0');
  });

  it('answers an unknown id with 404 NOT_FOUND in the error envelope', async () => {
    const { app } = await start();
    for (const url of ['/templates/nope', '/templates/nope/versions', '/templates/node-service/versions/9.9.9', '/templates/nope/versions/1.0.0/archive']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.json().error).toMatchObject({ code: 'NOT_FOUND', requestId: res.headers['x-request-id'] });
    }
  });

  it('lists every version, highest first, and fetches one exactly', async () => {
    const { app } = await start();
    const versions = (await app.inject({ url: '/templates/node-service/versions' })).json().data;
    expect(versions.map((e: { version: string }) => e.version)).toEqual(['2.0.0', '1.1.0', '1.0.0']);
    const one = (await app.inject({ url: '/templates/node-service/versions/2.0.0' })).json().data;
    expect(one).toMatchObject({ id: 'node-service', version: '2.0.0', stability: 'beta' });
  });
});

describe('GET /templates/{id}/versions/{version}/archive', () => {
  it('streams the archive with download headers and records a download event', async () => {
    const { app, store, context } = await start();
    const entry = context.registry().document.templates.find((e) => e.id === 'go-worker')!;
    const before = await store.events.countEvents('download');
    const res = await app.inject({ url: '/templates/go-worker/versions/1.0.0/archive', headers: { 'user-agent': 'tests', 'x-platform': 'linux' } });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(archiveBytes({ name: 'go-worker', version: '1.0.0' }))).toBe(true);
    expect(res.headers['content-type']).toBe('application/gzip');
    expect(res.headers['content-length']).toBe(String(res.rawPayload.length));
    expect(res.headers['content-disposition']).toBe('attachment; filename="go-worker-1.0.0.tgz"');
    expect(res.headers.etag).toBe(`"${entry.sha256}"`);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(await store.events.countEvents('download')).toBe(before + 1);
    expect((await store.events.usage()).get('go-worker@1.0.0')?.downloads).toBe(6);
  });

  it('records nothing for a 304 or a HEAD', async () => {
    const { app, store, context } = await start();
    const entry = context.registry().document.templates.find((e) => e.id === 'go-worker')!;
    const before = await store.events.countEvents('download');
    const notModified = await app.inject({ url: '/templates/go-worker/versions/1.0.0/archive', headers: { 'if-none-match': `"${entry.sha256}"` } });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.payload).toBe('');
    const head = await app.inject({ method: 'HEAD', url: '/templates/go-worker/versions/1.0.0/archive' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(archiveBytes({ name: 'go-worker', version: '1.0.0' }).length));
    expect(head.payload).toBe('');
    expect(await store.events.countEvents('download')).toBe(before);
  });

  it('answers 404 when the version is unknown or its file is missing', async () => {
    const { app, store } = await start();
    expect((await app.inject({ url: '/templates/go-worker/versions/2.0.0/archive' })).statusCode).toBe(404);
    await rm(store.archivePath('go-worker', '1.0.0'));
    const missing = await app.inject({ url: '/templates/go-worker/versions/1.0.0/archive' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('NOT_FOUND');
  });
});

describe('GET /categories and /healthz', () => {
  it('returns the categories of the document', async () => {
    const { app, context } = await start();
    const res = await app.inject({ url: '/categories' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.json().data).toEqual(context.registry().document.categories);
  });

  it('reports health without caching', async () => {
    const { app, context } = await start();
    const res = await app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    expect(res.json().data).toEqual({ status: 'ok', templates: 5, lastUpdated: context.registry().document.lastUpdated });
    expect(res.json().meta.requestId).toBe(res.headers['x-request-id']);
  });
});

describe('conditional request helpers', () => {
  it('matches If-None-Match lists, weak tags and *', () => {
    expect(ifNoneMatchMatches('"a"', ['"a"'])).toBe(true);
    expect(ifNoneMatchMatches('W/"a"', ['"a"'])).toBe(true);
    expect(ifNoneMatchMatches('"x", W/"a" , "y"', ['"a"'])).toBe(true);
    expect(ifNoneMatchMatches('"a,b"', ['"a,b"'])).toBe(true);
    expect(ifNoneMatchMatches('*', ['"a"'])).toBe(true);
    expect(ifNoneMatchMatches('"b"', ['"a"'])).toBe(false);
    expect(ifNoneMatchMatches(undefined, ['"a"'])).toBe(false);
  });

  it('compares If-Modified-Since in whole seconds', () => {
    const modified = new Date('2024-05-01T10:00:00.700Z');
    expect(notModifiedSince('Wed, 01 May 2024 10:00:00 GMT', modified)).toBe(true);
    expect(notModifiedSince('Wed, 01 May 2024 09:59:59 GMT', modified)).toBe(false);
    expect(notModifiedSince('garbage', modified)).toBe(false);
  });

  it('negotiates br before gzip, honouring q-values', () => {
    expect(negotiateEncoding(undefined)).toEqual(['identity']);
    expect(negotiateEncoding('gzip, br')).toEqual(['br', 'gzip', 'identity']);
    expect(negotiateEncoding('br;q=0, gzip')).toEqual(['gzip', 'identity']);
    expect(negotiateEncoding('gzip;q=1, br;q=0.5')).toEqual(['gzip', 'br', 'identity']);
    expect(negotiateEncoding('*')).toEqual(['br', 'gzip', 'identity']);
    expect(negotiateEncoding('*;q=0, gzip')).toEqual(['gzip', 'identity']);
    expect(negotiateEncoding('identity')).toEqual(['identity']);
  });
});
