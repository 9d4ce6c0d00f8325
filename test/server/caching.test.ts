/**
 * HTTP caching against a running server (src/server/caching.ts): ETag and Last-Modified on every
 * GET, 304 on If-None-Match / If-Modified-Since (If-None-Match winning), Cache-Control by class,
 * errors never cached, and 405 with Allow for a method a known path does not answer.
 */
import { describe, expect, it } from 'vitest';

import { PRIVATE_CACHE_CONTROL } from '../../src/server/caching.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

const ARCHIVE = 'public, max-age=31536000, immutable';
const REGISTRY_DATA = 'public, max-age=60';
const STATIC_FILE = 'public, max-age=60, stale-while-revalidate=600';

async function published(options: Parameters<typeof startRegistryServer>[0] = {}): Promise<TestServer> {
  const server = await startRegistryServer(options);
  await publishVersions(server, [{ version: '1.0.0', files: { 'template/README.md': '# {{ projectName }}\n' } }]);
  return server;
}

function get(server: TestServer, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Response> {
  return fetch(`${server.url}${path}`, { method, headers });
}

describe('validators and conditional requests', () => {
  it('JSON routes: a weak ETag from the data, Last-Modified from lastUpdated, 304 on either condition', async () => {
    const server = await published();
    const lastUpdated = new Date(server.context.registry().document.lastUpdated);
    for (const path of ['/templates', `/templates/${TEMPLATE}`, `/templates/${TEMPLATE}/versions`, `/templates/${TEMPLATE}/versions/1.0.0`, '/categories']) {
      const first = await get(server, path);
      expect(first.status, path).toBe(200);
      const etag = first.headers.get('etag');
      expect(etag, path).toMatch(/^W\/"[A-Za-z0-9_-]{43}"$/);
      expect(first.headers.get('last-modified'), path).toBe(lastUpdated.toUTCString());
      expect(first.headers.get('cache-control'), path).toBe(REGISTRY_DATA);
      // The same data, another answer (new timestamp and request id): the same tag.
      expect((await get(server, path)).headers.get('etag'), path).toBe(etag);

      const byTag = await get(server, path, { 'if-none-match': etag! });
      expect(byTag.status, path).toBe(304);
      expect(await byTag.text()).toBe('');
      expect(byTag.headers.get('etag')).toBe(etag);
      expect(byTag.headers.get('cache-control')).toBe(REGISTRY_DATA);
      expect(byTag.headers.get('content-type')).toBeNull();
      // Weak comparison (RFC 9110): the tag without its W/ matches too.
      expect((await get(server, path, { 'if-none-match': etag!.replace(/^W\//, '') })).status).toBe(304);
      expect((await get(server, path, { 'if-none-match': '"other", *' })).status).toBe(304);

      const byDate = await get(server, path, { 'if-modified-since': first.headers.get('last-modified')! });
      expect(byDate.status, path).toBe(304);
      expect(byDate.headers.get('etag')).toBe(etag);
      const before = new Date(lastUpdated.getTime() - 60_000).toUTCString();
      expect((await get(server, path, { 'if-modified-since': before })).status, path).toBe(200);
      // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
      expect((await get(server, path, { 'if-none-match': '"other"', 'if-modified-since': first.headers.get('last-modified')! })).status, path).toBe(200);
      expect((await get(server, path, { 'if-none-match': etag!, 'if-modified-since': before })).status, path).toBe(304);
    }
  });

  it('a different answer has a different tag; HEAD has the validators of GET', async () => {
    const server = await published();
    const all = await get(server, '/templates');
    const one = await get(server, '/templates?limit=1&fields=name');
    expect(one.headers.get('etag')).not.toBe(all.headers.get('etag'));
    const head = await get(server, '/templates', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(all.headers.get('etag'));
    expect(head.headers.get('last-modified')).toBe(all.headers.get('last-modified'));
  });

  it('static files (fast path and fastify): ETag, Last-Modified, 304 on either condition, their own Cache-Control', async () => {
    const server = await published();
    for (const path of ['/registry.json', '/index.json', `/templates/${TEMPLATE}.json`, '/registry.json?via=fastify']) {
      const first = await get(server, path);
      expect(first.status, path).toBe(200);
      expect(first.headers.get('cache-control'), path).toBe(STATIC_FILE);
      const etag = first.headers.get('etag')!;
      const lastModified = first.headers.get('last-modified')!;
      expect(etag).toMatch(/^"/);
      expect((await get(server, path, { 'if-none-match': etag })).status, path).toBe(304);
      expect((await get(server, path, { 'if-modified-since': lastModified })).status, path).toBe(304);
      expect((await get(server, path, { 'if-none-match': '"other"', 'if-modified-since': lastModified })).status, path).toBe(200);
    }
  });

  it('archives: immutable, ETag and Last-Modified, 304 on either condition without counting a download', async () => {
    const server = await published();
    const path = `/templates/${TEMPLATE}/versions/1.0.0/archive`;
    const first = await get(server, path);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    expect(first.headers.get('cache-control')).toBe(ARCHIVE);
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(Date.parse(lastModified)).not.toBeNaN();
    const byTag = await get(server, path, { 'if-none-match': etag });
    expect(byTag.status).toBe(304);
    const byDate = await get(server, path, { 'if-modified-since': lastModified });
    expect(byDate.status).toBe(304);
    expect(byDate.headers.get('etag')).toBe(etag);
    expect(byDate.headers.get('cache-control')).toBe(ARCHIVE);
    expect(await server.store.events.countEvents('download')).toBe(1);
  });

  it('openapi.json and healthz have validators too', async () => {
    const server = await startRegistryServer();
    const openapi = await get(server, '/openapi.json');
    expect(openapi.headers.get('last-modified')).not.toBeNull();
    expect((await get(server, '/openapi.json', { 'if-modified-since': openapi.headers.get('last-modified')! })).status).toBe(304);
    const health = await get(server, '/healthz');
    expect(health.headers.get('etag')).toMatch(/^W\/"/);
    expect(health.headers.get('last-modified')).not.toBeNull();
    expect(health.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
  });
});

describe('conditional HEAD and answers without a date of their own', () => {
  it('HEAD with If-None-Match or If-Modified-Since: 304 on every JSON route, with no body and no Content-Length', async () => {
    const server = await published();
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    const auth = { authorization: `Bearer ${token}` };
    for (const path of ['/templates', `/templates/${TEMPLATE}`, `/templates/${TEMPLATE}/versions`, '/categories', '/webhooks', `/templates/${TEMPLATE}/analytics`, '/healthz']) {
      const first = await get(server, path, auth);
      expect(first.status, path).toBe(200);
      const byTag = await get(server, path, { ...auth, 'if-none-match': first.headers.get('etag')! }, 'HEAD');
      expect(byTag.status, path).toBe(304);
      expect(byTag.headers.get('content-length'), path).toBeNull();
      const byDate = await get(server, path, { ...auth, 'if-modified-since': first.headers.get('last-modified')! }, 'HEAD');
      expect(byDate.status, path).toBe(304);
    }
  });

  it('per-token lists, analytics and health keep their Last-Modified while unchanged: If-Modified-Since gets 304, then 200 once they change', async () => {
    let offset = 0;
    const server = await published({ clock: () => new Date(Date.now() + offset) });
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    const auth = { authorization: `Bearer ${token}` };
    const paths = ['/webhooks', `/templates/${TEMPLATE}/analytics`, `/templates/${TEMPLATE}/owners`, '/healthz'];
    const firstDates = new Map<string, string>();
    for (const path of paths) firstDates.set(path, (await get(server, path, auth)).headers.get('last-modified')!);
    // Seconds later on the server's clock: an answer dated by its time would move on.
    offset += 5000;
    for (const path of paths) {
      const lastModified = firstDates.get(path)!;
      const again = await get(server, path, auth);
      expect(again.headers.get('last-modified'), path).toBe(lastModified);
      expect((await get(server, path, { ...auth, 'if-modified-since': lastModified })).status, path).toBe(304);
    }
    const before = await get(server, '/webhooks', auth);
    const registered = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com/hook', events: ['template.published'], secret: 'a-signing-secret', active: true }),
    });
    expect(registered.status).toBe(201);
    const changed = await get(server, '/webhooks', { ...auth, 'if-modified-since': before.headers.get('last-modified')! });
    expect(changed.status).toBe(200);
    expect(Date.parse(changed.headers.get('last-modified')!)).toBeGreaterThan(Date.parse(before.headers.get('last-modified')!));
  });
});

describe('Cache-Control by class', () => {
  it('answers that needed a token are not stored; errors are not cached', async () => {
    const server = await startRegistryServer();
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    const webhooks = await get(server, '/webhooks', { authorization: `Bearer ${token}` });
    expect(webhooks.status).toBe(200);
    expect(webhooks.headers.get('cache-control')).toBe(PRIVATE_CACHE_CONTROL);
    expect(webhooks.headers.get('etag')).toMatch(/^W\/"/);
    expect(webhooks.headers.get('last-modified')).not.toBeNull();
    const refused = await get(server, '/webhooks');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect(refused.headers.get('etag')).toBeNull();
    for (const path of ['/templates/nope', '/nowhere', '/templates?limit=0']) {
      const error = await get(server, path);
      expect(error.status, path).toBeGreaterThanOrEqual(400);
      expect(error.headers.get('cache-control'), path).toBe('no-store');
    }
  });
});

describe('answers that carry a credential or a capability URL', () => {
  const SENSITIVE = 'no-cache, no-store, must-revalidate';

  async function post(server: TestServer, path: string, body: unknown, token?: string): Promise<Response> {
    return fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  }

  it('are the spec\'s sensitive data: login, refresh, the session cookie, upload-url, a minted token, a new account', async () => {
    const oidc = await startFakeOidc();
    const server = await startRegistryServer({ oidcIssuers: [oidc.issuer] });
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const answers: [string, Response][] = [];
    const user = await post(server, '/users', { email: 'ada@example.com', password: 'a long enough password' }, admin);
    answers.push(['POST /users', user]);
    const login = await post(server, '/api/auth/login', { email: 'ada@example.com', password: 'a long enough password' });
    answers.push(['POST /api/auth/login', login]);
    const { refreshToken } = ((await login.clone().json()) as { data: { refreshToken: string } }).data;
    answers.push(['POST /api/auth/refresh', await post(server, '/api/auth/refresh', { refreshToken })]);
    answers.push(['POST /api/auth/session', await post(server, '/api/auth/session', { email: 'ada@example.com', password: 'a long enough password' })]);
    answers.push(['POST /files/upload-url', await post(server, '/files/upload-url', { filename: 'a.tgz', contentType: 'application/gzip' }, server.token)]);
    const trusted = await post(server, '/templates/fresh-app/trusted-publishers', { issuer: oidc.issuer, repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml' }, server.token);
    expect(trusted.status).toBe(201);
    const idToken = await oidc.sign(oidc.claims(`template-registry:${new URL(server.url).host}`, Math.floor(Date.now() / 1000)));
    answers.push(['POST /api/oidc/token', await post(server, '/api/oidc/token', { token: idToken })]);
    for (const [what, answer] of answers) {
      expect(answer.status, what).toBeLessThan(300);
      expect(answer.headers.get('cache-control'), what).toBe(SENSITIVE);
    }
  });
});

describe('405 Method Not Allowed', () => {
  it('a method a known path does not answer: 405, Allow and the error envelope; an unknown path stays 404', async () => {
    const server = await published();
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/templates', 'GET, HEAD, POST'],
      ['PUT', '/registry.json', 'GET, HEAD'],
      ['POST', '/registry.json', 'GET, HEAD'],
      ['PATCH', `/templates/${TEMPLATE}`, 'GET, HEAD'],
      ['DELETE', `/templates/${TEMPLATE}/versions/1.0.0/archive`, 'GET, HEAD'],
      ['GET', '/events', 'POST'],
      ['POST', '/webhooks/abc', 'GET, HEAD, PUT, PATCH, DELETE'],
      ['DELETE', '/v1/templates', 'GET, HEAD, POST'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await get(server, path, {}, method);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = (await res.json()) as { error: { code: string; message: string; requestId: string } };
      expect(body.error.code).toBe('METHOD_NOT_ALLOWED');
      expect(body.error.message).toContain(allow);
      expect(body.error.requestId).toBe(res.headers.get('x-request-id'));
    }
    const unknown = await get(server, '/nowhere', {}, 'DELETE');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('allow')).toBeNull();
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });
});
