/**
 * The files of the static registry answered by the server from memory: registry.json, the sparse
 * index.json and templates/<id>.json, the catalog page; each coding byte for byte as the build
 * wrote it, conditional requests, the swap after a rebuild, the shared read budget, the fast path
 * before fastify (over real HTTP: `inject` goes straight to fastify's routes), and the loader that
 * keeps what a build did not rewrite.
 */
import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import { createServer, installValidators, type RegistryServer } from '../../src/server/app.js';
import type { ServerContext } from '../../src/server/context.js';
import { DEFAULT_LIMITS } from '../../src/server/context.js';
import { installEnvelope } from '../../src/server/envelope.js';
import { rateLimitPlugin } from '../../src/server/rate-limit.js';
import { readRoutes } from '../../src/server/routes/read.js';
import { loadStaticFiles } from '../../src/server/static-files.js';
import { openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

// ---- a store with published versions

async function publish(store: SqliteStorage, name: string, version: string, description = `The ${name} template for tests`): Promise<void> {
  const admin = (await store.tokens.createToken({ role: 'admin' })).record;
  const bytes = gzipSync(Buffer.from(`archive of ${name}@${version}\n`));
  const temp = store.versions.uploadTempPath('.tgz');
  await writeFile(temp, bytes);
  const reserved = await store.versions.reserveVersion(
    {
      name,
      version,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      owner: admin.owner,
      createdAt: '2024-05-01T00:00:00.000Z',
    },
    admin,
  );
  expect(reserved).toEqual({ reserved: true });
  await store.versions.commitVersion(name, version, temp, {
    name,
    version,
    description,
    category: 'backend',
    stability: 'stable',
    author: { name: 'Test Author' },
    keywords: ['demo'],
    features: ['api'],
  });
}

const servers: RegistryServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.app.close()));
});

async function start(readPerMinute = 1000): Promise<RegistryServer & { store: SqliteStorage }> {
  const store = await openSqliteStorage(await tempDir('tr-static-'));
  await publish(store, 'node-service', '1.0.0');
  await publish(store, 'node-service', '1.1.0');
  await publish(store, 'go-worker', '2.0.0');
  const server = await createServer({ store, publicUrl: 'http://registry.test', limits: { readPerMinute } });
  servers.push(server);
  return { ...server, store };
}

const FILES: Array<{ url: string; file: string; type: string }> = [
  { url: '/registry.json', file: 'registry.json', type: 'application/json; charset=utf-8' },
  { url: '/', file: 'registry.json', type: 'application/json; charset=utf-8' },
  { url: '/index.json', file: 'index.json', type: 'application/json; charset=utf-8' },
  { url: '/index.html', file: 'index.html', type: 'text/html; charset=utf-8' },
  { url: '/catalog', file: 'index.html', type: 'text/html; charset=utf-8' },
  { url: '/templates/node-service.json', file: 'templates/node-service.json', type: 'application/json; charset=utf-8' },
  { url: '/templates/go-worker.json', file: 'templates/go-worker.json', type: 'application/json; charset=utf-8' },
];

const CODINGS = [
  { coding: 'br', suffix: '.br', acceptEncoding: 'br, gzip' },
  { coding: 'gzip', suffix: '.gz', acceptEncoding: 'gzip' },
  { coding: undefined, suffix: '', acceptEncoding: undefined },
] as const;

async function readIfThere(file: string): Promise<Buffer | undefined> {
  return readFile(file).catch(() => undefined);
}

const sha256Tag = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('base64url');

// ---------------------------------------------------------------------------------------------

describe('the static files, answered from memory', () => {
  it('answers every coding the build wrote with its bytes, length, type and tag', async () => {
    const { app, store, context } = await start();
    for (const { url, file, type } of FILES) {
      const onDisk = path.join(store.publicDir, ...file.split('/'));
      const identity = await readFile(onDisk);
      const tag = file === 'registry.json' ? context.registry().etag.slice(1, -1) : sha256Tag(identity);
      for (const { coding, suffix, acceptEncoding } of CODINGS) {
        const variant = await readIfThere(onDisk + suffix);
        const res = await app.inject({ url, headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
        const label = `${url} (${acceptEncoding ?? 'no Accept-Encoding'})`;
        expect(res.statusCode, label).toBe(200);
        // A coding the build did not write (the template files have none) falls back to identity.
        const expected = variant ?? identity;
        expect(res.rawPayload.equals(expected), label).toBe(true);
        expect(res.headers['content-encoding'], label).toBe(variant && coding ? coding : undefined);
        expect(res.headers['content-length'], label).toBe(String(expected.length));
        expect(res.headers['content-type'], label).toBe(type);
        expect(res.headers.etag, label).toBe(variant && coding ? `"${tag}-${coding}"` : `"${tag}"`);
        expect(res.headers.vary, label).toBe('Accept-Encoding');
        expect(res.headers['cache-control'], label).toBe('public, max-age=60, stale-while-revalidate=600');
        expect(res.headers['x-request-id'], label).toBeTruthy();
        expect(res.headers['x-ratelimit-limit'], label).toBe('1000');
        expect(res.headers['x-ratelimit-window'], label).toBe('60');
        const lastModified = file === 'registry.json' ? context.registry().lastModified : (await stat(onDisk)).mtime;
        expect(res.headers['last-modified'], label).toBe(lastModified.toUTCString());
      }
    }
    // registry.json and the index have both variants; they are what the build wrote.
    expect(await readIfThere(path.join(store.publicDir, 'registry.json.br'))).toBeDefined();
    expect(await readIfThere(path.join(store.publicDir, 'index.json.gz'))).toBeDefined();
  });

  it('answers 304 to any tag of the file (weak comparison) and to If-Modified-Since, with the tag of the coding it would send', async () => {
    const { app } = await start();
    for (const { url } of FILES) {
      const identity = await app.inject({ url });
      const br = await app.inject({ url, headers: { 'accept-encoding': 'br' } });
      for (const [ifNoneMatch, acceptEncoding] of [
        [String(identity.headers.etag), 'br'],
        [String(br.headers.etag), undefined],
        [`W/${String(identity.headers.etag)}`, 'br'],
        [`"other", ${String(br.headers.etag)}`, 'br'],
        ['*', undefined],
      ] as const) {
        const res = await app.inject({ url, headers: { 'if-none-match': ifNoneMatch, ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}) } });
        expect(res.statusCode, `${url} If-None-Match: ${ifNoneMatch}`).toBe(304);
        expect(res.payload).toBe('');
        expect(res.headers.etag).toBe(acceptEncoding ? br.headers.etag : identity.headers.etag);
        expect(res.headers['cache-control']).toBe('public, max-age=60, stale-while-revalidate=600');
        expect(res.headers.vary).toBe('Accept-Encoding');
        expect(res.headers['content-encoding']).toBeUndefined();
      }
      expect((await app.inject({ url, headers: { 'if-none-match': '"other"' } })).statusCode).toBe(200);
      const lastModified = String(identity.headers['last-modified']);
      expect((await app.inject({ url, headers: { 'if-modified-since': lastModified } })).statusCode).toBe(304);
      const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
      expect((await app.inject({ url, headers: { 'if-modified-since': earlier } })).statusCode).toBe(200);
      // If-None-Match decides when both are given.
      expect((await app.inject({ url, headers: { 'if-modified-since': lastModified, 'if-none-match': '"other"' } })).statusCode).toBe(200);
    }
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const { app } = await start();
    for (const { url } of FILES) {
      const get = await app.inject({ url, headers: { 'accept-encoding': 'gzip' } });
      const head = await app.inject({ method: 'HEAD', url, headers: { 'accept-encoding': 'gzip' } });
      expect(head.statusCode, url).toBe(200);
      expect(head.payload).toBe('');
      for (const header of ['content-length', 'content-type', 'content-encoding', 'etag', 'last-modified', 'cache-control', 'vary']) {
        expect(head.headers[header], `${url} ${header}`).toBe(get.headers[header]);
      }
    }
  });

  it('swaps to the files of a rebuild: a client with the old tag gets 200 and the new bytes', async () => {
    const { app, store, context } = await start();
    const before = context.registry();
    const oldBytes = await readFile(path.join(store.publicDir, 'registry.json'));
    const oldTemplate = await app.inject({ url: '/templates/node-service.json' });
    const oldIndex = await app.inject({ url: '/index.json', headers: { 'accept-encoding': 'gzip' } });

    await publish(store, 'node-service', '1.2.0');
    await publish(store, 'react-app', '0.1.0');
    await context.rebuild();

    const after = context.registry();
    expect(after.etag).not.toBe(before.etag);
    const newBytes = await readFile(path.join(store.publicDir, 'registry.json'));
    const res = await app.inject({ url: '/registry.json', headers: { 'if-none-match': before.etag } });
    expect(res.statusCode).toBe(200);
    expect(res.headers.etag).toBe(after.etag);
    expect(res.rawPayload.equals(newBytes)).toBe(true);
    expect(res.json().templates.map((e: { version: string }) => e.version)).toContain('1.2.0');
    expect((await app.inject({ url: '/registry.json', headers: { 'if-none-match': after.etag } })).statusCode).toBe(304);

    // The template file that changed, the index, and the new template's file.
    const template = await app.inject({ url: '/templates/node-service.json', headers: { 'if-none-match': String(oldTemplate.headers.etag) } });
    expect(template.statusCode).toBe(200);
    expect(template.json().versions.map((e: { version: string }) => e.version)).toEqual(['1.0.0', '1.1.0', '1.2.0']);
    expect(template.rawPayload.equals(await readFile(path.join(store.publicDir, 'templates', 'node-service.json')))).toBe(true);
    const index = await app.inject({ url: '/index.json', headers: { 'accept-encoding': 'gzip', 'if-none-match': String(oldIndex.headers.etag) } });
    expect(index.statusCode).toBe(200);
    expect(index.rawPayload.equals(await readFile(path.join(store.publicDir, 'index.json.gz')))).toBe(true);
    expect((await app.inject({ url: '/templates/react-app.json' })).statusCode).toBe(200);
    // A file the rebuild did not change keeps its tag.
    const unchanged = await app.inject({ url: '/templates/go-worker.json' });
    expect((await app.inject({ url: '/templates/go-worker.json', headers: { 'if-none-match': String(unchanged.headers.etag) } })).statusCode).toBe(304);

    // The state of the first build is one object, left whole: never half of each build.
    expect(before.files.get('registry.json')?.identity.bytes.equals(oldBytes)).toBe(true);
    expect(before.files.get('registry.json')?.identity.etag).toBe(before.etag);
    expect(after.files.get('registry.json')?.identity.etag).toBe(after.etag);
  });
});

describe('GET /templates/{id}.json', () => {
  it('is the sparse file of the template, beside the API route /templates/{id}', async () => {
    const { app, store } = await start();
    const file = await app.inject({ url: '/templates/node-service.json' });
    expect(file.statusCode).toBe(200);
    expect(file.json()).toMatchObject({ id: 'node-service', versions: [{ version: '1.0.0' }, { version: '1.1.0' }] });
    expect(file.rawPayload.equals(await readFile(path.join(store.publicDir, 'templates', 'node-service.json')))).toBe(true);
    const api = await app.inject({ url: '/templates/node-service' });
    expect(api.statusCode).toBe(200);
    expect(api.headers['cache-control']).toBe('public, max-age=60');
    expect(api.json().data).toMatchObject({ id: 'node-service', version: '1.1.0' });
  });

  it('answers 404 for an unknown id and for any name outside the id pattern, without reaching the disk', async () => {
    const { app, store } = await start();
    // Files a traversal would reach if a name were ever joined to a path.
    await writeFile(path.join(store.publicDir, '..', 'secret.json'), '{"secret":true}');
    await writeFile(path.join(store.publicDir, 'templates', 'Upper.json'), '{"planted":true}');
    for (const url of [
      '/templates/nope.json',
      '/templates/..%2f..%2fetc.json',
      '/templates/..%2fsecret.json',
      '/templates/..%2F..%2Fsecret.json',
      '/templates/%2e%2e%2fregistry.json',
      '/templates/..%5csecret.json',
      '/templates/Upper.json',
      '/templates/a.b.json',
      '/templates/.json',
      '/templates/node-service.json%00',
    ]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['cache-control'], url).toBe('no-store');
      expect(res.json().error, url).toMatchObject({ code: 'NOT_FOUND', requestId: res.headers['x-request-id'] });
      // The envelope names what was asked for, never what a file outside the registry holds.
      expect(Object.keys(res.json())).toEqual(['error']);
      expect(res.payload).not.toContain('true}');
    }
    // Only the build's files are answered: one put in the folder since is not, even with a valid id.
    await writeFile(path.join(store.publicDir, 'templates', 'planted.json'), '{"planted":true}');
    expect((await app.inject({ url: '/templates/planted.json' })).statusCode).toBe(404);
  });
});

describe('the catalog page at /catalog and /index.html', () => {
  it('is the same page at both paths, and the relative URLs it uses resolve to files the server answers', async () => {
    const server = await startRegistryServer();
    await publish(server.store, 'node-service', '1.0.0');
    await server.context.rebuild();
    const base = server.url;
    const pages = await Promise.all(['/catalog', '/index.html'].map(async (page) => ({ page, res: await fetch(`${base}${page}`) })));
    const [catalog, index] = await Promise.all(pages.map(async ({ res }) => Buffer.from(await res.arrayBuffer())));
    expect(catalog?.equals(index as Buffer)).toBe(true);
    const html = (catalog as Buffer).toString('utf8');
    // What the page links to relative to itself (its markup, not its script's text)...
    const markup = html.replace(/<script[\s\S]*?<\/script>/g, '');
    const links = [...markup.matchAll(/(?:href|src)="([^"#:?]+)(?:[#?][^"]*)?"/g)].map((m) => m[1] as string).filter((u) => !u.startsWith('/'));
    for (const { page } of pages) {
      const pageUrl = `${base}${page}`;
      // ...and what its script fetches: index.json beside the page, each template's file beside the index.
      const indexUrl = new URL('index.json', pageUrl);
      const indexRes = await fetch(indexUrl);
      expect(indexRes.status, `index.json from ${page}`).toBe(200);
      const templatePath = ((await indexRes.json()) as { templatePath?: string }).templatePath ?? 'templates/{id}.json';
      const resolved = [
        indexUrl,
        new URL(templatePath.split('{id}').join('node-service'), indexUrl),
        new URL('registry.json', pageUrl),
        ...links.map((link) => new URL(link, pageUrl)),
      ];
      for (const url of resolved) {
        expect(url.pathname.startsWith('/catalog/'), `${url.pathname} from ${page}`).toBe(false);
        const res = await fetch(url);
        expect(res.status, `${url.pathname} from ${page}`).toBe(200);
        const onDisk = await readFile(path.join(server.store.publicDir, ...url.pathname.slice(1).split('/')));
        expect(Buffer.from(await res.arrayBuffer()).equals(onDisk), `${url.pathname} from ${page}`).toBe(true);
      }
    }
  });
});

describe('the read budget', () => {
  it('counts the static files and the API in one budget per client, with the same headers and 429', async () => {
    const { app } = await start(4);
    const first = await app.inject({ url: '/registry.json' });
    expect(first.headers['x-ratelimit-remaining']).toBe('3');
    const reset = Number(first.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
    expect((await app.inject({ url: '/categories' })).headers['x-ratelimit-remaining']).toBe('2');
    expect((await app.inject({ url: '/templates/go-worker.json' })).headers['x-ratelimit-remaining']).toBe('1');
    expect((await app.inject({ url: '/index.json', remoteAddress: '10.0.0.9' })).headers['x-ratelimit-remaining']).toBe('3');
    expect((await app.inject({ url: '/index.html' })).headers['x-ratelimit-remaining']).toBe('0');
    for (const url of ['/registry.json', '/templates', '/templates/go-worker.json']) {
      const limited = await app.inject({ url });
      expect(limited.statusCode, url).toBe(429);
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect(limited.headers['cache-control']).toBe('no-store');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.json().error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', requestId: limited.headers['x-request-id'] });
    }
  });
});

describe('before the first build', () => {
  it('answers 503 with Retry-After and no-store', async () => {
    const app = Fastify();
    installEnvelope(app);
    installValidators(app);
    const context = {
      limits: DEFAULT_LIMITS,
      registry: () => {
        throw new Error('the registry has not been built yet');
      },
    } as unknown as ServerContext;
    await app.register(rateLimitPlugin, { context });
    await app.register(readRoutes, { context });
    try {
      for (const url of ['/registry.json', '/', '/index.json', '/index.html', '/catalog', '/templates/node-service.json']) {
        const res = await app.inject({ url });
        expect(res.statusCode, url).toBe(503);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.json().error.code).toBe('SERVICE_UNAVAILABLE');
      }
    } finally {
      await app.close();
    }
  });
});

describe('loadStaticFiles', () => {
  it('keeps what a build did not write, reads what it wrote, and drops what it no longer lists', async () => {
    const dir = await tempDir('tr-static-load-');
    const write = async (name: string, text: string): Promise<void> => {
      await writeFile(path.join(dir, name), text);
    };
    await write('registry.json', '{"v":1}');
    await write('registry.json.gz', 'gz1');
    await write('index.json', '{"i":1}');
    const first = await loadStaticFiles(dir, { files: ['registry.json', 'registry.json.gz', 'index.json', 'archives/a/1.0.0.tgz'], written: [] }, { known: { 'registry.json': { etag: '"build-1"', lastModified: new Date('2024-01-01T00:00:00Z') } } });
    expect(first.names()).toEqual(['index.json', 'registry.json']);
    const registry = first.get('registry.json');
    expect(registry?.identity.etag).toBe('"build-1"');
    expect(registry?.gzip?.etag).toBe('"build-1-gzip"');
    expect(registry?.gzip?.bytes.toString()).toBe('gz1');
    expect(registry?.br).toBeUndefined();
    expect(registry?.lastModifiedText).toBe('Mon, 01 Jan 2024 00:00:00 GMT');
    expect(first.get('index.json')?.identity.etag).toBe(`"${sha256Tag(Buffer.from('{"i":1}'))}"`);
    expect(first.bytes).toBe('{"v":1}'.length + 3 + '{"i":1}'.length);

    // Bytes changed on disk that the build says it did not write are not read again...
    await write('index.json', '{"i":2}');
    await write('registry.json.gz', 'gz2');
    const second = await loadStaticFiles(dir, { files: ['registry.json', 'registry.json.gz', 'index.json'], written: [] }, { previous: first, known: { 'registry.json': { etag: '"build-1"', lastModified: new Date('2024-01-01T00:00:00Z') } } });
    expect(second.get('index.json')).toBe(first.get('index.json'));
    expect(second.get('registry.json')).toBe(registry);
    // ...those it wrote are (a variant is enough), as is a file whose given validators changed.
    const third = await loadStaticFiles(dir, { files: ['registry.json', 'registry.json.gz', 'index.json'], written: ['index.json'] }, { previous: second, known: { 'registry.json': { etag: '"build-2"', lastModified: new Date('2024-01-02T00:00:00Z') } } });
    expect(third.get('index.json')?.identity.bytes.toString()).toBe('{"i":2}');
    expect(third.get('registry.json')?.gzip?.bytes.toString()).toBe('gz2');
    expect(third.get('registry.json')?.identity.etag).toBe('"build-2"');
    const fourth = await loadStaticFiles(dir, { files: ['registry.json', 'registry.json.gz'], written: ['registry.json.gz'] }, { previous: third, known: { 'registry.json': { etag: '"build-2"', lastModified: new Date('2024-01-02T00:00:00Z') } } });
    expect(fourth.get('registry.json')).not.toBe(third.get('registry.json'));
    expect(fourth.get('index.json')).toBeUndefined();
    // The previous snapshot is left as it was.
    expect(third.get('index.json')?.identity.bytes.toString()).toBe('{"i":2}');
  });
});

// ---- the fast path before fastify (real HTTP)

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One request over HTTP, its body as sent (no decompression, unlike fetch). */
function request(base: string, pathAndQuery: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const headers = { ...options.headers, ...(options.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(options.body)) }) };
    const sent = http.request({ hostname, port, path: pathAndQuery, method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}

/** Headers that differ from one answer to the next, or that node:http adds itself. */
const PER_ANSWER = new Set(['x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'date', 'connection', 'keep-alive', 'transfer-encoding']);
const stable = (headers: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(headers).filter(([name]) => !PER_ANSWER.has(name)).sort(([a], [b]) => a.localeCompare(b)));

describe('over HTTP', () => {
  it('answers the same bytes and headers as the fastify routes, for every file, coding and condition', async () => {
    const server = await startRegistryServer({ limits: { readPerMinute: 1000 } });
    await publish(server.store, 'node-service', '1.0.0');
    await server.context.rebuild();
    const etag = server.context.registry().etag;
    const ids = new Set<string>();
    for (const url of ['/registry.json', '/', '/index.json', '/index.html', '/catalog', '/templates/node-service.json']) {
      const conditions: Array<Record<string, string>> = [{}, { 'accept-encoding': 'br, gzip' }, { 'accept-encoding': 'gzip' }, { 'if-none-match': etag }, { 'accept-encoding': 'br', 'if-none-match': '*' }, { 'if-modified-since': new Date(Date.now() + 60_000).toUTCString() }];
      for (const headers of conditions) {
        for (const method of ['GET', 'HEAD'] as const) {
          const label = `${method} ${url} ${JSON.stringify(headers)}`;
          const wire = await request(server.url, url, { method, headers });
          const routed = await server.app.inject({ method, url, headers });
          expect(wire.status, label).toBe(routed.statusCode);
          expect(wire.body.equals(routed.rawPayload), label).toBe(true);
          const routedHeaders = { ...routed.headers };
          if (wire.status === 304) {
            // RFC 9110 8.6: a 304 carries no Content-Length unless it is the 200's; fastify sends 0 to a HEAD.
            expect(wire.headers['content-length'], label).toBeUndefined();
            delete routedHeaders['content-length'];
          }
          expect(stable(wire.headers), label).toEqual(stable(routedHeaders));
          expect(wire.headers['x-request-id'], label).toMatch(/^[0-9a-f-]{36}$/);
          ids.add(String(wire.headers['x-request-id']));
          expect(Number(wire.headers['x-ratelimit-reset']), label).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
        }
      }
    }
    expect(ids.size).toBe(6 * 6 * 2);
  });

  it('leaves to fastify what is not a plain read within budget: the 429 envelope, query strings, other methods', async () => {
    const server = await startRegistryServer({ limits: { readPerMinute: 3 } });
    const first = await request(server.url, '/registry.json');
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    // One budget for the fast path and fastify's routes.
    expect((await request(server.url, '/categories')).headers['x-ratelimit-remaining']).toBe('1');
    const withQuery = await request(server.url, '/index.json?v=1');
    expect(withQuery.status).toBe(200);
    expect(withQuery.headers['x-ratelimit-remaining']).toBe('0');
    expect(withQuery.body.equals(await readFile(path.join(server.store.publicDir, 'index.json')))).toBe(true);
    for (const url of ['/registry.json', '/templates/nope.json', '/categories']) {
      const limited = await request(server.url, url);
      expect(limited.status, url).toBe(429);
      expect(limited.headers['cache-control']).toBe('no-store');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(limited.body.toString('utf8')).error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', requestId: limited.headers['x-request-id'] });
    }
    const post = await request(server.url, '/registry.json', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(post.status).toBe(429); // every request counts, whatever answers it
  });

  it('goes through fastify for servers that log requests or trust proxies', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logged = await startRegistryServer({ logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } } });
    expect((await request(logged.url, '/registry.json')).status).toBe(200);
    expect(lines.some((line) => (line.req as { url?: string } | undefined)?.url === '/registry.json')).toBe(true);

    const proxied = await startRegistryServer({ trustProxy: true, limits: { readPerMinute: 1 } });
    expect((await request(proxied.url, '/registry.json', { headers: { 'x-forwarded-for': '203.0.113.1' } })).status).toBe(200);
    expect((await request(proxied.url, '/registry.json', { headers: { 'x-forwarded-for': '203.0.113.2' } })).status).toBe(200);
    expect((await request(proxied.url, '/registry.json', { headers: { 'x-forwarded-for': '203.0.113.1' } })).status).toBe(429);
  });
});

describe('one pipeline', () => {
  const servers: RegistryServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.app.close()));
  });

  /** A server started with `options`, every answer fastify completes recorded as `METHOD route status`. */
  async function serverSeeing(options: { trustProxy?: number; logger?: { level: string; stream: { write(line: string): void } } }): Promise<{ base: string; seen: string[] }> {
    const server = await createServer({ store: await tempDir('tr-pipeline-'), publicUrl: 'http://registry.test', ...options });
    servers.push(server);
    const seen: string[] = [];
    server.app.addHook('onResponse', (req, reply, done) => {
      seen.push(`${req.method} ${req.routeOptions.url ?? '?'} ${reply.statusCode}`);
      done();
    });
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    return { base: `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`, seen };
  }

  it("answers the static files through fastify's routes and hooks on every server (plain, behind a proxy, logging), with the same headers", async () => {
    const logged: string[] = [];
    const ways = {
      plain: await serverSeeing({}),
      proxied: await serverSeeing({ trustProxy: 1 }),
      logging: await serverSeeing({ logger: { level: 'info', stream: { write: (line: string) => logged.push(line) } } }),
    };
    const answers: Record<string, Record<string, unknown>[]> = {};
    for (const [way, { base, seen }] of Object.entries(ways)) {
      const first = await request(base, '/registry.json', { headers: { 'accept-encoding': 'br, gzip' } });
      const etag = String(first.headers.etag);
      const revalidated = await request(base, '/registry.json', { headers: { 'accept-encoding': 'br, gzip', 'if-none-match': etag } });
      const head = await request(base, '/v1/index.json', { method: 'HEAD' });
      const catalog = await request(base, '/catalog');
      expect([first.status, revalidated.status, head.status, catalog.status], way).toEqual([200, 304, 200, 200]);
      for (const answer of [first, revalidated, head, catalog]) {
        expect(answer.headers['x-request-id'], way).toMatch(/^[0-9a-f-]{36}$/);
        expect(answer.headers['x-ratelimit-window'], way).toBe('60');
      }
      expect(first.headers['content-encoding']).toBe('br');
      expect(head.body.length).toBe(0);
      // Every read went through fastify's routing and hooks.
      expect(seen, way).toEqual(['GET /registry.json 200', 'GET /registry.json 304', 'HEAD /index.json 200', 'GET /catalog 200']);
      const varying = new Set(['date', 'x-request-id', 'x-ratelimit-reset', 'connection', 'keep-alive']);
      answers[way] = [first, revalidated, head, catalog].map((answer) => Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !varying.has(name) && !['etag', 'last-modified', 'content-length'].includes(name))));
    }
    expect(answers.proxied).toEqual(answers.plain);
    expect(answers.logging).toEqual(answers.plain);
    // The logging server logged them as any other request.
    expect(logged.filter((line) => line.includes('"msg":"request completed"'))).toHaveLength(4);
  });
});

describe('a plain read of a static file', () => {
  const started: RegistryServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((server) => server.app.close()));
  });

  it('ends at its route, counted and with its request id, before the later hooks; a query string, a version to refuse or a missing file takes the whole way', async () => {
    const server = await createServer({ store: await tempDir('tr-plain-read-'), publicUrl: 'http://registry.test', limits: { readPerMinute: 100 } });
    started.push(server);
    // Hooks of a plugin registered app-wide, like any other: what reached the body and handler stages.
    const parsed: string[] = [];
    const handled: string[] = [];
    server.app.addHook('preParsing', (request, _reply, payload, done) => {
      parsed.push(`${request.method} ${request.url}`);
      done(null, payload);
    });
    server.app.addHook('preHandler', (request, _reply, done) => {
      handled.push(`${request.method} ${request.url}`);
      done();
    });
    const first = await server.app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'br' } });
    expect(first.statusCode).toBe(200);
    const etag = String(first.headers.etag);
    const plain = [
      await server.app.inject({ url: '/registry.json', headers: { 'accept-encoding': 'br', 'if-none-match': etag } }),
      await server.app.inject({ method: 'HEAD', url: '/v1/index.json' }),
      await server.app.inject({ url: '/catalog', headers: { 'api-version': '1' } }),
    ];
    expect(plain.map((answer) => answer.statusCode)).toEqual([304, 200, 200]);
    expect(plain.map((answer) => answer.headers['x-ratelimit-remaining'])).toEqual(['98', '97', '96']);
    for (const answer of [first, ...plain]) expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(parsed).toEqual([]);
    expect(handled).toEqual([]);

    const withQuery = await server.app.inject({ url: '/registry.json?from=catalog' });
    expect(withQuery.statusCode).toBe(200);
    expect(withQuery.rawPayload.equals((await server.app.inject({ url: '/registry.json' })).rawPayload)).toBe(true);
    const refused = await server.app.inject({ url: '/registry.json', headers: { 'api-version': '9' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.code).toBe('VALIDATION_ERROR');
    const nul = await server.app.inject({ url: '/index.json?q=%00' });
    expect(nul.statusCode).toBe(400);
    const missing = await server.app.inject({ url: '/templates/nope.json' });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['cache-control']).toBe('no-store');
    // The version was refused by the api-version hook (before this plugin's), the NUL by json-input's preHandler.
    expect(parsed).toEqual(['GET /registry.json?from=catalog', 'GET /index.json?q=%00', 'GET /templates/nope.json']);
    expect(handled).toEqual(['GET /registry.json?from=catalog', 'GET /templates/nope.json']);
  });
});
