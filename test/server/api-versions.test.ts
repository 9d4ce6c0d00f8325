/**
 * Interface versions against a running server (src/server/api-version.ts): every route under
 * /v1/, the API-Version header, the version parameter of Accept and the api-version query
 * parameter select version 1; an unsupported version is a 400 naming the supported one;
 * meta.version reports the version used.
 */
import { describe, expect, it } from 'vitest';

import { rewriteVersionedUrl } from '../../src/server/api-version.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

async function published(): Promise<TestServer> {
  const server = await startRegistryServer();
  await publishVersions(server, [
    { version: '1.0.0', files: { 'template/README.md': '# {{ projectName }}\n' } },
    { version: '1.1.0', files: { 'template/README.md': '# {{ projectName }} 1.1\n' } },
  ]);
  return server;
}

function get(server: TestServer, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers });
}

interface Envelope {
  data: unknown;
  meta: { version: string };
}

interface ErrorEnvelope {
  error: { code: string; message: string; details: { field: string; code: string; message: string }[] };
}

describe('/v1/ prefix', () => {
  it('answers every route under /v1/ as without it', async () => {
    const server = await published();
    for (const path of ['/templates', `/templates/${TEMPLATE}`, `/templates/${TEMPLATE}/versions`, `/templates/${TEMPLATE}/versions/1.0.0`, '/categories', '/templates?limit=1&sort=-version']) {
      const plain = await get(server, path);
      const versioned = await get(server, `/v1${path}`);
      expect(versioned.status, path).toBe(200);
      const [a, b] = [(await plain.json()) as Envelope, (await versioned.json()) as Envelope];
      expect(b.data, path).toEqual(a.data);
      expect(b.meta.version).toBe('1.0');
      expect(versioned.headers.get('etag'), path).toBe(plain.headers.get('etag'));
    }
    const archive = await get(server, `/v1/templates/${TEMPLATE}/versions/1.0.0/archive`);
    expect(archive.status).toBe(200);
    expect(Buffer.from(await archive.arrayBuffer())).toEqual(Buffer.from(await (await get(server, `/templates/${TEMPLATE}/versions/1.0.0/archive`)).arrayBuffer()));
    expect((await get(server, '/v1/healthz')).status).toBe(200);
    expect((await get(server, '/v1/openapi.json')).status).toBe(200);
    expect((await get(server, '/v1/nowhere')).status).toBe(404);
  });

  it('serves the static files under /v1/ (fast path and fastify) with the same bytes and validators', async () => {
    const server = await published();
    for (const path of ['/registry.json', '/index.json', `/templates/${TEMPLATE}.json`, '/index.html', '/registry.json?x=1']) {
      const plain = await get(server, path);
      const versioned = await get(server, `/v1${path}`);
      expect(versioned.status, path).toBe(200);
      expect(await versioned.text(), path).toBe(await plain.text());
      expect(versioned.headers.get('etag'), path).toBe(plain.headers.get('etag'));
      expect((await get(server, `/v1${path}`, { 'if-none-match': plain.headers.get('etag')! })).status, path).toBe(304);
    }
    const root = await get(server, '/v1');
    expect(root.status).toBe(200);
    expect(await root.text()).toBe(await (await get(server, '/registry.json')).text());
  });

});

describe('selectors', () => {
  it('API-Version, Accept version and api-version select version 1; meta.version reports it', async () => {
    const server = await published();
    const selections: Array<[string, Record<string, string>]> = [
      ['/templates', {}],
      ['/templates', { 'api-version': '1.0' }],
      ['/templates', { 'api-version': '1' }],
      ['/templates', { accept: 'application/vnd.api+json;version=1' }],
      ['/templates', { accept: 'application/vnd.api+json; version="1.0", application/json;q=0.5' }],
      ['/templates?api-version=1', {}],
      ['/templates?api-version=1.0&limit=1', {}],
      ['/v1/templates?api-version=1', { 'api-version': '1.0', accept: 'application/vnd.api+json;version=1' }],
    ];
    for (const [path, headers] of selections) {
      const res = await get(server, path, headers);
      expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(200);
      expect(((await res.json()) as Envelope).meta.version).toBe('1.0');
    }
    for (const path of ['/registry.json', '/v1/registry.json']) {
      expect((await get(server, path, { 'api-version': '1.0' })).status, path).toBe(200);
      expect((await get(server, `${path}?api-version=1`)).status, path).toBe(200);
    }
  });

  it('api-version is not the version field filter, and list validation never sees it', async () => {
    const server = await published();
    const filtered = (await (await get(server, '/templates?api-version=1&limit=1')).json()) as Envelope & { pagination: { limit: number } };
    expect(filtered.pagination.limit).toBe(1);
    const versions = (await (await get(server, `/templates/${TEMPLATE}/versions?api-version=1`)).json()) as { data: { version: string }[] };
    expect(versions.data.map((e) => e.version).sort()).toEqual(['1.0.0', '1.1.0']);
  });

  it('an unsupported version, by path prefix, header, Accept or parameter, is a 400 naming version 1', async () => {
    const server = await published();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['/v2/templates', {}, 'path'],
      ['/v2/registry.json', {}, 'path'],
      ['/v2', {}, 'path'],
      ['/templates', { 'api-version': '2.0' }, 'API-Version'],
      ['/templates', { 'api-version': '1.1' }, 'API-Version'],
      ['/registry.json', { 'api-version': '2.0' }, 'API-Version'],
      ['/v1/registry.json', { accept: 'application/vnd.api+json;version=3' }, 'Accept'],
      ['/templates', { accept: 'application/vnd.api+json;version=2' }, 'Accept'],
      ['/templates?api-version=2', {}, 'api-version'],
      ['/registry.json?api-version=abc', {}, 'api-version'],
      ['/v1/templates?api-version=2', {}, 'api-version'],
    ];
    for (const [path, headers, field] of cases) {
      const label = `${path} ${JSON.stringify(headers)}`;
      const res = await get(server, path, headers);
      expect(res.status, label).toBe(400);
      expect(res.headers.get('cache-control'), label).toBe('no-store');
      const body = (await res.json()) as ErrorEnvelope;
      expect(body.error.code, label).toBe('VALIDATION_ERROR');
      expect(body.error.message, label).toMatch(/supports version 1 \(1\.0\)/);
      expect(body.error.details, label).toContainEqual(expect.objectContaining({ field, code: 'UNSUPPORTED_API_VERSION' }));
      expect(body.error.details[0]?.message, label).toContain('supported: 1');
    }
  });
});

describe("the spec's ?version=<major.minor> selector", () => {
  it('selects version 1 on every route, answering as without it (never a field filter that empties a list)', async () => {
    const server = await published();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const routes: [string, Record<string, string>][] = [
      ['/templates', {}],
      ['/templates?limit=1&sort=-name', {}],
      [`/templates/${TEMPLATE}`, {}],
      [`/templates/${TEMPLATE}/versions`, {}],
      [`/templates/${TEMPLATE}/versions/1.0.0`, {}],
      ['/categories', {}],
      ['/healthz', {}],
      ['/webhooks', { authorization: `Bearer ${admin}` }],
      ['/users', { authorization: `Bearer ${admin}` }],
    ];
    for (const [route, headers] of routes) {
      const plain = (await (await get(server, route, headers)).json()) as Envelope;
      for (const value of ['1.0', '1', 'v1']) {
        const path = `${route}${route.includes('?') ? '&' : '?'}version=${value}`;
        const res = await get(server, path, headers);
        expect(res.status, path).toBe(200);
        const body = (await res.json()) as Envelope;
        expect(body.meta.version, path).toBe('1.0');
        if (route !== '/healthz') expect(body.data, path).toEqual(plain.data);
      }
    }
    // The list is not emptied: the template's latest entry is there.
    expect(((await (await get(server, '/templates?version=1.0')).json()) as { data: unknown[] }).data).toHaveLength(1);
    for (const path of ['/registry.json?version=1.0', '/v1/registry.json?version=1', `/templates/${TEMPLATE}.json?version=1.0`, '/openapi.json?version=1.0']) {
      expect((await get(server, path)).status, path).toBe(200);
    }
  });

  it('refuses a version the server does not have with the 400 of every selector, on every route', async () => {
    const server = await published();
    for (const path of ['/templates?version=2.0', '/templates?version=1.1', `/templates/${TEMPLATE}?version=1.0.0`, `/templates/${TEMPLATE}/versions?version=3`, '/categories?version=2.0', '/registry.json?version=2.0', '/healthz?version=x']) {
      const res = await get(server, path);
      expect(res.status, path).toBe(400);
      const body = (await res.json()) as ErrorEnvelope;
      expect(body.error.code, path).toBe('VALIDATION_ERROR');
      expect(body.error.details, path).toContainEqual(expect.objectContaining({ field: 'version', code: 'UNSUPPORTED_API_VERSION' }));
    }
  });

  it('leaves version to the routes whose own parameter it is: the /templates filter (MAJOR.MINOR.PATCH) and analytics', async () => {
    const server = await published();
    const filtered = (await (await get(server, '/templates?version=1.1.0')).json()) as { data: { version: string }[]; meta: { version: string } };
    expect(filtered.data.map((e) => e.version)).toEqual(['1.1.0']);
    const none = (await (await get(server, '/templates?version=1.0.0,9.9.9')).json()) as { data: { version: string }[] };
    expect(none.data).toEqual([]);
    // A partial version in the filter expression could match nothing: refused, not an empty list.
    const partial = await get(server, '/templates?filter=version:1.0');
    expect(partial.status).toBe(400);
    expect(((await partial.json()) as ErrorEnvelope).error.details).toContainEqual(expect.objectContaining({ field: 'filter', code: 'FORMAT' }));
    // Analytics: `version` is the template version only.
    const analytics = await get(server, `/templates/${TEMPLATE}/analytics?version=1.0.0`);
    expect(analytics.status).toBe(200);
    expect(((await analytics.json()) as { data: { version: string } }).data.version).toBe('1.0.0');
    const shortVersion = await get(server, `/templates/${TEMPLATE}/analytics?version=1.0`);
    expect(shortVersion.status).toBe(400);
    expect(((await shortVersion.json()) as ErrorEnvelope).error.details).toContainEqual(expect.objectContaining({ field: 'version', code: 'PATTERN' }));
  });
});

describe('rewriteVersionedUrl', () => {
  const rewrite = (url: string): string => rewriteVersionedUrl({ url } as Parameters<typeof rewriteVersionedUrl>[0]);
  it('counts requests naming an unsupported version against the rate limit like any other', async () => {
    const server = await startRegistryServer({ limits: { readPerMinute: 3 } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(server, '/templates', { 'api-version': '9' })).status);
    expect(statuses).toEqual([400, 400, 400, 429]);
  });

  it('takes off the prefix and the api-version parameter, and keeps everything else byte for byte', () => {
    expect(rewrite('/templates?q=a%20b&api-version=1&tags=x,y')).toBe('/templates?q=a%20b&tags=x,y');
    expect(rewrite('/v1/templates/x/versions/1.0.0')).toBe('/templates/x/versions/1.0.0');
    expect(rewrite('/v1')).toBe('/');
    expect(rewrite('/v1?api-version=1')).toBe('/');
    expect(rewrite('/v1?x=1')).toBe('/?x=1');
    expect(rewrite('/v10x/templates')).toBe('/v10x/templates');
    expect(rewrite('/templates?version=1.0.0')).toBe('/templates?version=1.0.0');
    expect(rewrite('/registry.json')).toBe('/registry.json');
  });
});
