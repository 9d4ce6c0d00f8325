/**
 * The version lifecycle. Published bytes never change: a version is deprecated
 * (PATCH) or yanked (DELETE) in the store's rows, and the rebuilt registry reflects it; a yanked
 * version stays downloadable by its exact version, is never the latest, is left out of default
 * listings (shown with include=yanked) and is never reusable.
 */
import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { publishVersions, TEMPLATE, templateVersion } from '../project/versions.js';

const VERSIONS = ['1.0.0', '1.1.0', '2.0.0'];

async function serverWithVersions(): Promise<TestServer> {
  const server = await startRegistryServer();
  await publishVersions(server, VERSIONS.map((version) => ({ version, files: { 'template/README.md': `# ${version}\n` } })));
  return server;
}

interface Answer {
  status: number;
  body: { data?: unknown; error?: { code: string; message: string; details?: unknown[] } } & Record<string, unknown>;
}

async function call(server: TestServer, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url}${path}`, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) };
}

const versionOf = (answer: Answer): unknown => (answer.body.data as { version?: string }).version;
const versionsIn = (answer: Answer): string[] => (answer.body.data as { version: string }[]).map((entry) => entry.version);

describe('PATCH /templates/{id}/versions/{version}', () => {
  it('lets the owner deprecate a version with a message; another publisher gets 403, no token 401', async () => {
    const server = await serverWithVersions();
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const path = `/templates/${TEMPLATE}/versions/1.0.0`;

    expect((await call(server, 'PATCH', path, { body: { stability: 'deprecated' } })).status).toBe(401);
    const refused = await call(server, 'PATCH', path, { token: other, body: { stability: 'deprecated' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error?.code).toBe('FORBIDDEN');

    const patched = await call(server, 'PATCH', path, { token: server.token, body: { stability: 'deprecated', deprecationMessage: 'use 2.x' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id: TEMPLATE, version: '1.0.0', stability: 'deprecated', deprecationMessage: 'use 2.x' });

    // The registry is rebuilt: registry.json and the version route show it; the bytes are the same.
    const document = (await (await fetch(`${server.url}/registry.json`)).json()) as { templates: Record<string, unknown>[] };
    expect(document.templates.find((e) => e.version === '1.0.0')).toMatchObject({ stability: 'deprecated', deprecationMessage: 'use 2.x' });
    expect((await call(server, 'GET', path)).body.data).toMatchObject({ stability: 'deprecated' });
    const manifest = await server.store.versions.readManifest(TEMPLATE, '1.0.0');
    expect(manifest.stability ?? 'stable').toBe('stable');

    // The client shows it too.
    const client = new RegistryClient({ registryUrl: `${server.url}/registry.json`, cacheDir: await tempDir() });
    expect(await client.getTemplate(TEMPLATE, '1.0.0')).toMatchObject({ stability: 'deprecated', deprecationMessage: 'use 2.x' });

    // Another stability undoes the deprecation and its message.
    const undone = await call(server, 'PATCH', path, { token: server.token, body: { stability: 'stable' } });
    expect(undone.body.data).toMatchObject({ stability: 'stable' });
    expect(undone.body.data).not.toHaveProperty('deprecationMessage');
  });

  it('refuses an unknown version (404), an empty change (400, nothing given) and a message with another stability (422)', async () => {
    const server = await serverWithVersions();
    expect((await call(server, 'PATCH', `/templates/${TEMPLATE}/versions/9.9.9`, { token: server.token, body: { stability: 'deprecated' } })).status).toBe(404);
    const empty = await call(server, 'PATCH', `/templates/${TEMPLATE}/versions/1.0.0`, { token: server.token, body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.error?.details).toEqual([expect.objectContaining({ field: 'stability', code: 'REQUIRED' })]);
    const mixed = await call(server, 'PATCH', `/templates/${TEMPLATE}/versions/1.0.0`, { token: server.token, body: { stability: 'beta', deprecationMessage: 'x' } });
    expect(mixed.status).toBe(422);
    const unknown = await call(server, 'PATCH', `/templates/${TEMPLATE}/versions/1.0.0`, { token: server.token, body: { stability: 'gone' } });
    expect(unknown.status).toBe(422);
  });

  it('lets an admin change any template', async () => {
    const server = await serverWithVersions();
    const admin = (await server.store.tokens.createToken({ role: 'admin', owner: 'ops' })).token;
    const patched = await call(server, 'PATCH', `/templates/${TEMPLATE}/versions/1.1.0`, { token: admin, body: { deprecationMessage: 'broken build' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ stability: 'deprecated', deprecationMessage: 'broken build' });
  });
});

describe('DELETE /templates/{id}/versions/{version} (yank)', () => {
  it('keeps the version downloadable by exact version, out of latest selection and default listings, and never reusable', async () => {
    const server = await serverWithVersions();
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const path = `/templates/${TEMPLATE}/versions/2.0.0`;
    expect((await call(server, 'DELETE', path)).status).toBe(401);
    expect((await call(server, 'DELETE', path, { token: other })).status).toBe(403);
    const archiveBefore = Buffer.from(await (await fetch(`${server.url}${path}/archive`)).arrayBuffer());

    const yanked = await call(server, 'DELETE', path, { token: server.token });
    expect(yanked.status).toBe(200);
    expect(yanked.body.data).toMatchObject({ version: '2.0.0', yanked: true });

    // Latest selection skips it.
    expect(versionOf(await call(server, 'GET', `/templates/${TEMPLATE}`))).toBe('1.1.0');
    // Exact version and archive still work, byte for byte.
    expect((await call(server, 'GET', path)).body.data).toMatchObject({ version: '2.0.0', yanked: true });
    const archive = await fetch(`${server.url}${path}/archive`);
    expect(archive.status).toBe(200);
    expect(Buffer.from(await archive.arrayBuffer()).equals(archiveBefore)).toBe(true);

    // Default listings leave it out; include=yanked shows it.
    expect(versionsIn(await call(server, 'GET', `/templates/${TEMPLATE}/versions`))).toEqual(['1.1.0', '1.0.0']);
    expect(versionsIn(await call(server, 'GET', `/templates/${TEMPLATE}/versions?include=yanked`))).toEqual(['2.0.0', '1.1.0', '1.0.0']);
    const listed = await call(server, 'GET', '/templates?include=versions');
    const item = (listed.body.data as { version: string; versions: { version: string }[] }[])[0];
    expect(item?.version).toBe('1.1.0');
    expect(item?.versions.map((v) => v.version)).toEqual(['1.1.0', '1.0.0']);

    // The client: exact version found, latest and lists skip it.
    const client = new RegistryClient({ registryUrl: `${server.url}/registry.json`, cacheDir: await tempDir() });
    expect(await client.getTemplate(TEMPLATE, '2.0.0')).toMatchObject({ yanked: true });
    expect((await client.getTemplate(TEMPLATE))?.version).toBe('1.1.0');
    expect((await client.listTemplates()).map((e) => e.version)).not.toContain('2.0.0');
    for (const mode of ['full', 'sparse'] as const) {
      const reader = new RegistryClient({ registryUrl: `${server.url}/registry.json`, cacheDir: await tempDir(), mode });
      expect((await reader.listVersions(TEMPLATE)).map((e) => e.version), mode).toEqual(['1.1.0', '1.0.0']);
      expect((await reader.listVersions(TEMPLATE, { includeYanked: true })).map((e) => `${e.version}${e.yanked === true ? ' yanked' : ''}`), mode).toEqual(['2.0.0 yanked', '1.1.0', '1.0.0']);
    }

    // Never reusable: a re-upload of the same version is a 409.
    const dir = await templateVersion({ version: '2.0.0', files: { 'template/README.md': '# other bytes\n' } }, ['1.0.0', '1.1.0']);
    const pack = await packTemplate(dir, { outDir: await tempDir(), version: '2.0.0' });
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(409);
    expect((error as Error).message).toMatch(/yanked/);
    // The same bytes again (a re-run of the release that published it) do not pass for a success either.
    const sameDir = await templateVersion({ version: '2.0.0', files: { 'template/README.md': '# 2.0.0\n' } }, ['1.0.0', '1.1.0']);
    const same = await packTemplate(sameDir, { outDir: await tempDir(), version: '2.0.0' });
    expect(same.integrity).toBe(((await call(server, 'GET', path)).body.data as { integrity: string }).integrity);
    const rerun = await publishTemplate({ registryUrl: server.url, token: server.token, archive: same.file, manifest: same.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(rerun).toBeInstanceOf(PublishError);
    expect((rerun as Error).message).toMatch(/2\.0\.0 was yanked: a yanked version is never published again/);

    // Yanking again changes nothing and still answers the entry.
    expect((await call(server, 'DELETE', path, { token: server.token })).status).toBe(200);
  });

  it('a template whose versions are all yanked is not listed, but shown with include=yanked', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    await call(server, 'DELETE', `/templates/${TEMPLATE}/versions/1.0.0`, { token: server.token });
    expect((await call(server, 'GET', `/templates/${TEMPLATE}`)).status).toBe(404);
    expect((await call(server, 'GET', '/templates')).body.data).toEqual([]);
    expect(versionsIn(await call(server, 'GET', '/templates?include=yanked'))).toEqual(['1.0.0']);
    // Still downloadable by its exact version, in both ways of reading the registry.
    for (const mode of ['full', 'sparse'] as const) {
      const client = new RegistryClient({ registryUrl: `${server.url}/registry.json`, cacheDir: await tempDir(), mode });
      expect(await client.getTemplate(TEMPLATE), mode).toBeNull();
      expect(await client.getTemplate(TEMPLATE, '1.0.0'), mode).toMatchObject({ version: '1.0.0', yanked: true });
      expect(await client.getTemplate(TEMPLATE, '9.9.9'), mode).toBeNull();
      expect(await client.getTemplate('no-such-template', '1.0.0'), mode).toBeNull();
      expect(await client.listVersions(TEMPLATE), mode).toEqual([]);
      expect((await client.listVersions(TEMPLATE, { includeYanked: true })).map((e) => e.version), mode).toEqual(['1.0.0']);
      expect(await client.listVersions('no-such-template', { includeYanked: true }), mode).toEqual([]);
    }
  });
});

describe('PATCH /templates/bulk', () => {
  it('deprecates every version a filter matches and answers the count', async () => {
    const server = await serverWithVersions();
    const answer = await call(server, 'PATCH', '/templates/bulk', {
      token: server.token,
      body: { filter: { id: TEMPLATE, version: { lt: '2.0.0' } }, update: { stability: 'deprecated', deprecationMessage: 'upgrade to 2.x' } },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toEqual({ changed: 2, versions: ['1.0.0', '1.1.0'] });
    const versions = (await call(server, 'GET', `/templates/${TEMPLATE}/versions`)).body.data as { version: string; stability: string }[];
    expect(versions.map((v) => `${v.version}:${v.stability}`)).toEqual(['2.0.0:stable', '1.1.0:deprecated', '1.0.0:deprecated']);
    // The same change again changes nothing; a semver range works too.
    const again = await call(server, 'PATCH', '/templates/bulk', {
      token: server.token,
      body: { filter: { id: TEMPLATE, version: '<2.0.0' }, update: { stability: 'deprecated', deprecationMessage: 'upgrade to 2.x' } },
    });
    expect(again.body.data).toEqual({ changed: 0, versions: [] });
  });

  it('refuses another publisher (403), an unknown template (404) and a bad filter (422)', async () => {
    const server = await serverWithVersions();
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const body = { filter: { id: TEMPLATE }, update: { stability: 'deprecated' } };
    expect((await call(server, 'PATCH', '/templates/bulk', { body })).status).toBe(401);
    expect((await call(server, 'PATCH', '/templates/bulk', { token: other, body })).status).toBe(403);
    expect((await call(server, 'PATCH', '/templates/bulk', { token: server.token, body: { ...body, filter: { id: 'nothing-here' } } })).status).toBe(404);
    expect((await call(server, 'PATCH', '/templates/bulk', { token: server.token, body: { ...body, filter: { id: TEMPLATE, version: 'not a range' } } })).status).toBe(422);
    expect((await call(server, 'PATCH', '/templates/bulk', { token: server.token, body: { filter: { id: TEMPLATE, colour: 'red' }, update: {} } })).status).toBe(422);
  });
});

describe('POST /templates/batch', () => {
  it('runs the operations in order with the caller credentials and answers each status and body', async () => {
    const server = await serverWithVersions();
    const answer = await call(server, 'POST', '/templates/batch', {
      token: server.token,
      body: {
        operations: [
          { method: 'PATCH', path: `/templates/${TEMPLATE}/versions/1.0.0`, body: { deprecationMessage: 'old' } },
          { method: 'DELETE', path: `/templates/${TEMPLATE}/versions/2.0.0` },
          { method: 'GET', path: `/templates/${TEMPLATE}` },
          { method: 'PATCH', path: `/templates/${TEMPLATE}/versions/9.9.9`, body: { stability: 'beta' } },
        ],
      },
    });
    expect(answer.status).toBe(200);
    const { results } = answer.body.data as { results: { status: number; body: { data?: Record<string, unknown> } }[] };
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 404]);
    expect(results[0]?.body.data).toMatchObject({ version: '1.0.0', stability: 'deprecated', deprecationMessage: 'old' });
    expect(results[1]?.body.data).toMatchObject({ version: '2.0.0', yanked: true });
    // In order: the read after the yank sees it.
    expect(results[2]?.body.data).toMatchObject({ version: '1.1.0' });
  });

  it('refuses unsupported operations before running any, too many operations, and a missing token', async () => {
    const server = await serverWithVersions();
    const refused = await call(server, 'POST', '/templates/batch', {
      token: server.token,
      body: {
        operations: [
          { method: 'DELETE', path: `/templates/${TEMPLATE}/versions/2.0.0` },
          { method: 'DELETE', path: '/webhooks/x' },
        ],
      },
    });
    expect(refused.status).toBe(422);
    expect(versionOf(await call(server, 'GET', `/templates/${TEMPLATE}`))).toBe('2.0.0');
    const many = Array.from({ length: 51 }, () => ({ method: 'GET', path: '/templates' }));
    expect((await call(server, 'POST', '/templates/batch', { token: server.token, body: { operations: many } })).status).toBe(422);
    expect((await call(server, 'POST', '/templates/batch', { body: { operations: [{ method: 'GET', path: '/templates' }] } })).status).toBe(401);
    // Without the caller's token, each write of a batch would be refused as well: operations use the caller's credentials.
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const forbidden = await call(server, 'POST', '/templates/batch', { token: other, body: { operations: [{ method: 'DELETE', path: `/templates/${TEMPLATE}/versions/2.0.0` }] } });
    expect((forbidden.body.data as { results: { status: number }[] }).results[0]?.status).toBe(403);
  });

  it('refuses paths the router would decode or resolve into another route (escapes, dot segments, backslashes, fragments)', async () => {
    const server = await serverWithVersions();
    const archive = `/templates/${TEMPLATE}/versions/1.0.0`;
    const hostile = [
      { method: 'GET', path: `${archive}/%61rchive` },
      { method: 'GET', path: `${archive}/archive#x` },
      { method: 'GET', path: `${archive}\\archive` },
      { method: 'DELETE', path: `/templates/${TEMPLATE}/versions/..\\owners\\someone` },
      { method: 'DELETE', path: `/templates/x/versions/../../../api/auth/session` },
      { method: 'GET', path: '/templates/../users' },
      { method: 'GET', path: '/templates/%2e%2e/%2e%2e/users' },
      { method: 'PATCH', path: `/templates/${TEMPLATE}/versions/1.0.0/` },
    ];
    for (const operation of hostile) {
      const refused = await call(server, 'POST', '/templates/batch', { token: server.token, body: { operations: [operation] } });
      expect(refused.status, operation.path).toBe(422);
      expect(refused.body.error?.details).toEqual([expect.objectContaining({ field: 'operations.0', code: 'UNSUPPORTED_OPERATION' })]);
    }
    // Nothing ran: no download was counted, the owners are as they were.
    const entry = (await call(server, 'GET', `/templates/${TEMPLATE}/versions/1.0.0`)).body.data as { stats: { downloads: number } };
    expect(entry.stats.downloads).toBe(0);
    // A query may still carry escapes: it selects no route.
    const searched = await call(server, 'POST', '/templates/batch', { token: server.token, body: { operations: [{ method: 'GET', path: '/templates?search=%61' }] } });
    expect((searched.body.data as { results: { status: number }[] }).results[0]?.status).toBe(200);
  });
});

describe('lifecycle webhooks', () => {
  it('sends template.deprecated and template.yanked with the entry after the change, each before the registry.updated of its rebuild', async () => {
    const server = await startRegistryServer();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const receiver = await startReceiver();
    const registered = await call(server, 'POST', '/webhooks', {
      token: admin,
      body: { url: receiver.url, events: ['template.published', 'template.deprecated', 'template.yanked', 'registry.updated'], secret: 'lifecycle-secret', active: true },
    });
    expect(registered.status).toBe(201);
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    const path = `/templates/${TEMPLATE}/versions/1.0.0`;
    expect((await call(server, 'PATCH', path, { token: server.token, body: { deprecationMessage: 'use 2.x' } })).status).toBe(200);
    expect((await call(server, 'DELETE', path, { token: server.token })).status).toBe(200);
    const last = await receiver.request(6);
    const bodies = receiver.requests.map((request) => JSON.parse(request.body.toString('utf8')) as { event: string; data: Record<string, unknown> });
    expect(bodies.map((body) => body.event)).toEqual(['template.published', 'registry.updated', 'template.deprecated', 'registry.updated', 'template.yanked', 'registry.updated']);
    expect(bodies[2]?.data).toMatchObject({ id: TEMPLATE, version: '1.0.0', stability: 'deprecated', deprecationMessage: 'use 2.x' });
    expect(bodies[2]?.data).not.toHaveProperty('yanked');
    expect(bodies[4]?.data).toMatchObject({ id: TEMPLATE, version: '1.0.0', stability: 'deprecated', deprecationMessage: 'use 2.x', yanked: true });
    expect(last.headers['x-webhook-event']).toBe('registry.updated');
  });
});
