import Fastify, { type InjectOptions, type LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { createServer, type RegistryServer } from '../../src/server/app.js';
import { cachingPlugin } from '../../src/server/caching.js';
import { DEFAULT_LIMITS, type ServerContext } from '../../src/server/context.js';
import { rateLimitPlugin, READS, UPLOADS } from '../../src/server/rate-limit.js';
import { tempDir } from '../helpers/fixtures.js';

const servers: RegistryServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(servers.splice(0).map((s) => s.app.close()));
});

async function start(readPerMinute = 3, uploadPerMinute = 2): Promise<RegistryServer> {
  const server = await createServer({ store: await tempDir('tr-rate-'), publicUrl: 'http://registry.test', limits: { readPerMinute, uploadPerMinute } });
  servers.push(server);
  return server;
}

function expectRateHeaders(res: LightMyRequestResponse, limit: number, remaining: number): void {
  expect(res.headers['x-ratelimit-limit']).toBe(String(limit));
  expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
  expect(res.headers['x-ratelimit-window']).toBe('60');
  const reset = Number(res.headers['x-ratelimit-reset']);
  const now = Date.now() / 1000;
  // A Unix timestamp (seconds) at most one window away, not a number of seconds.
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 61);
}

describe('rate limits', () => {
  it('sends the X-RateLimit-* headers and answers the request past the limit with 429', async () => {
    const { app } = await start(3);
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ url: '/healthz' });
      expect(res.statusCode).toBe(200);
      expectRateHeaders(res, 3, 2 - i);
    }
    const limited = await app.inject({ url: '/templates' });
    expect(limited.statusCode).toBe(429);
    expectRateHeaders(limited, 3, 0);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers['x-request-id']).toBeTruthy();
    expect(limited.headers['cache-control']).toBe('no-store');
    expect(limited.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = limited.json();
    expect(schemaErrors('error-envelope', body)).toEqual([]);
    expect(body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: [], requestId: limited.headers['x-request-id'], retryAfter });
    expect(body.error.message).toMatch(/rate limit/i);
  });

  it('counts reads and uploads separately', async () => {
    const { app } = await start(3, 2);
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/categories' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/categories' })).statusCode).toBe(429);

    // Uploads still have their own budget: the (unauthenticated) upload gets its 401.
    const first = await app.inject({ method: 'POST', url: '/templates' });
    expect(first.statusCode).toBe(401);
    expectRateHeaders(first, 2, 1);
    expect((await app.inject({ method: 'POST', url: '/templates' })).statusCode).toBe(401);
    const limited = await app.inject({ method: 'POST', url: '/templates' });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMIT_EXCEEDED');
    expectRateHeaders(limited, 2, 0);
  });

  it('counts each client address separately', async () => {
    const { app } = await start(1);
    expect((await app.inject({ url: '/healthz', remoteAddress: '10.0.0.1' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/healthz', remoteAddress: '10.0.0.1' })).statusCode).toBe(429);
    expect((await app.inject({ url: '/healthz', remoteAddress: '10.0.0.2' })).statusCode).toBe(200);
  });

  it('limits and labels requests no route matches', async () => {
    const { app } = await start(2);
    const missing = await app.inject({ url: '/no/such/route' });
    expect(missing.statusCode).toBe(404);
    expectRateHeaders(missing, 2, 1);
    expect(missing.headers['cache-control']).toBe('no-store');
    expect((await app.inject({ url: '/registry.json' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/no/such/route' })).statusCode).toBe(429);
  });

  it('puts the headers on 304 and HEAD answers too', async () => {
    const { app, context } = await start(5);
    const res = await app.inject({ url: '/registry.json', headers: { 'if-none-match': context.registry().etag } });
    expect(res.statusCode).toBe(304);
    expectRateHeaders(res, 5, 4);
    const head = await app.inject({ method: 'HEAD', url: '/registry.json' });
    expectRateHeaders(head, 5, 3);
  });
});

describe('where a request is counted', () => {
  it("counts every request once, before the route's own onRequest hooks: GET and the HEAD fastify adds, a route with hooks of its own, a request no route matches", async () => {
    const context = { limits: { ...DEFAULT_LIMITS, readPerMinute: 10, uploadPerMinute: 3 } } as unknown as ServerContext;
    const app = Fastify();
    await app.register(rateLimitPlugin, { context });
    /** What the route's own onRequest hooks saw of the count. */
    const seenByRoute: Array<string | undefined> = [];
    const own = (request: { rateLimit: { remaining: number } | null }, _reply: unknown, done: () => void): void => {
      seenByRoute.push(request.rateLimit === null ? undefined : String(request.rateLimit.remaining));
      done();
    };
    app.get('/hooked', { onRequest: [own, own], config: { rateLimit: READS, cache: 'dynamic' } }, () => ({}));
    app.post('/upload', { onRequest: own, config: { rateLimit: UPLOADS, cache: 'dynamic' } }, () => ({}));
    const remaining = async (options: InjectOptions): Promise<[number, string | undefined]> => {
      const res = await app.inject(options);
      return [res.statusCode, res.headers['x-ratelimit-remaining'] as string | undefined];
    };
    expect(await remaining({ url: '/hooked' })).toEqual([200, '9']);
    expect(await remaining({ method: 'HEAD', url: '/hooked' })).toEqual([200, '8']);
    expect(await remaining({ url: '/nowhere' })).toEqual([404, '7']);
    expect(await remaining({ method: 'DELETE', url: '/hooked' })).toEqual([404, '6']);
    expect(await remaining({ method: 'POST', url: '/upload' })).toEqual([200, '2']);
    expect(await remaining({ url: '/hooked' })).toEqual([200, '5']);
    // Each of the route's own hooks ran after the count of its request (GET, HEAD, the upload, GET).
    expect(seenByRoute).toEqual(['9', '9', '8', '8', '2', '5', '5']);
    await app.close();
  });
});

describe('X-RateLimit-Reset', () => {
  // A window opened 300 ms into a second: its answers straddle second boundaries.
  const opened = Date.UTC(2030, 0, 1, 12, 0, 0, 300);
  const windowEnd = String(Math.ceil((opened + 60_000) / 1000));

  it('is one Unix timestamp, the end of the window, for every answer within one window of a client (routes, static files, 304, 429)', async () => {
    const server = await start(4, 2);
    vi.useFakeTimers({ toFake: ['Date'] });
    const resets: string[] = [];
    const at = async (ms: number, request: InjectOptions): Promise<LightMyRequestResponse> => {
      vi.setSystemTime(opened + ms);
      const res = await server.app.inject(request);
      resets.push(String(res.headers['x-ratelimit-reset']));
      return res;
    };
    await at(0, { url: '/healthz' });
    await at(900, { url: '/registry.json' });
    await at(1_800, { url: '/templates' });
    await at(30_950, { url: '/registry.json', headers: { 'if-none-match': server.context.registry().etag } });
    expect((await at(59_999, { url: '/categories' })).statusCode).toBe(429);
    expect(resets).toEqual([windowEnd, windowEnd, windowEnd, windowEnd, windowEnd]);
    // Uploads are counted in their own window: it opens at their first request.
    await at(10_000, { method: 'POST', url: '/templates' });
    await at(10_900, { method: 'POST', url: '/templates' });
    expect(resets.slice(5)).toEqual([String(Math.ceil((opened + 70_000) / 1000)), String(Math.ceil((opened + 70_000) / 1000))]);
    // The next window has its own.
    await at(60_100, { url: '/healthz' });
    expect(resets.at(-1)).toBe(String(Math.ceil((opened + 120_100) / 1000)));
  });

});

describe('per-route configuration', () => {
  it("counts each route in the group its own config names, whatever its path; the upload routes are the ones that take archive bytes", async () => {
    const { app } = await start(5, 2);
    const limitOf = async (method: InjectOptions['method'], url: string): Promise<string | undefined> =>
      (await app.inject({ method, url, remoteAddress: `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` })).headers['x-ratelimit-limit'] as string | undefined;
    expect(await limitOf('POST', '/templates')).toBe('2');
    expect(await limitOf('POST', '/files')).toBe('2');
    expect(await limitOf('PUT', '/files/f_1/content?sig=x')).toBe('2');
    expect(await limitOf('POST', '/v1/templates')).toBe('2');
    for (const [method, url] of [
      ['GET', '/templates'],
      ['GET', '/registry.json'],
      ['POST', '/files/upload-url'],
      ['POST', '/templates/x'],
      ['DELETE', '/templates'],
      ['POST', '/events'],
      ['GET', '/no/such/route'],
    ] as const) {
      expect(await limitOf(method, url), `${method} ${url}`).toBe('5');
    }
  });

  it('takes the group and cache class from the route: a renamed upload route keeps its budget, and a route declaring none is refused at registration', async () => {
    const context = { limits: { ...DEFAULT_LIMITS, readPerMinute: 5, uploadPerMinute: 1 } } as unknown as ServerContext;
    const app = Fastify();
    await app.register(rateLimitPlugin, { context });
    await app.register(cachingPlugin, { context });
    app.post('/renamed/uploads', { config: { rateLimit: UPLOADS, cache: 'dynamic' } }, () => ({}));
    app.post('/templates', { config: { rateLimit: READS, cache: 'dynamic' } }, () => ({}));
    expect(() => app.get('/undeclared', () => ({}))).toThrow(/GET \/undeclared declares no rate-limit group/);
    expect(() => app.get('/no-cache-class', { config: { rateLimit: READS } }, () => ({}))).toThrow(/GET \/no-cache-class declares no cache class/);
    expect((await app.inject({ method: 'POST', url: '/renamed/uploads' })).headers['x-ratelimit-limit']).toBe('1');
    expect((await app.inject({ method: 'POST', url: '/renamed/uploads' })).statusCode).toBe(429);
    // The path /templates says nothing: this route's config makes it a read.
    const read = await app.inject({ method: 'POST', url: '/templates' });
    expect(read.statusCode).toBe(200);
    expect(read.headers['x-ratelimit-limit']).toBe('5');
    await app.close();
  });
});
