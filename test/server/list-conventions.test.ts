/**
 * The list conventions of every list route, against a running server: page/limit, cursor, both
 * sort forms and sparse fieldsets everywhere; on /templates also include, the filter expression,
 * the field filters with [gte]/[lte], createdAfter/createdBefore and search/searchFields. Anything
 * unknown is a 400 VALIDATION_ERROR naming it. The published envelope and pagination schemas accept
 * every answer.
 */
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { schemaErrors, type SchemaName } from '../../src/core/schemas.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { TEMPLATE_FIELDS } from '../../src/server/query.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';
import { finishAttempt } from '../helpers/webhook-attempts.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field
type Json = any;

/** A template of its own name (one version), published to `server`. */
async function publishAs(server: TestServer, manifest: Record<string, unknown> & { name: string; version: string }): Promise<void> {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, ...manifest } });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version: manifest.version });
  const result = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  expect(result.status).toBe(201);
}

async function get(server: TestServer, route: string, query: Record<string, string> = {}, token?: string): Promise<{ status: number; body: Json }> {
  const search = new URLSearchParams(query).toString();
  const response = await fetch(`${server.url}${route}${search ? `?${search}` : ''}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: response.status, body: (await response.json()) as Json };
}

function expectSchema(name: SchemaName, body: unknown): void {
  expect(schemaErrors(name, body), `${name}: ${JSON.stringify(body)}`).toEqual([]);
}

/** A 200 page: the success envelope and the pagination schema of its kind accept it. */
async function page(server: TestServer, route: string, query: Record<string, string> = {}, token?: string): Promise<Json> {
  const { status, body } = await get(server, route, query, token);
  expect(status, `${route} ${JSON.stringify(query)}: ${JSON.stringify(body)}`).toBe(200);
  expectSchema('success-envelope', body);
  expectSchema('cursor' in query ? 'cursor-pagination' : 'offset-pagination', body);
  return body;
}

const ids = (body: Json): string[] => (body.data as Array<{ id: string }>).map((e) => e.id);

/** The 400 of a refused query: the error envelope, one detail naming `field`. */
async function refused(server: TestServer, route: string, query: Record<string, string>, field: string, token?: string): Promise<Json> {
  const { status, body } = await get(server, route, query, token);
  expect(status, `${route} ${JSON.stringify(query)}`).toBe(400);
  expectSchema('error-envelope', body);
  expect(body.error.code).toBe('VALIDATION_ERROR');
  const detail = body.error.details.find((d: { field: string }) => d.field === field);
  expect(detail, JSON.stringify(body.error.details)).toBeDefined();
  return detail;
}

/** demo-template 1.2.0, 1.9.0, 1.10.0 (stable, backend); go-api 2.0.0 (stable, backend); react-kit 0.1.0 (beta, frontend, by Ada). */
async function registry(): Promise<{ server: TestServer; before: string; between: string }> {
  // Published on the server's clock: the first three at one time, the others two seconds later.
  let at = Date.now();
  const server = await startRegistryServer({ clock: () => new Date(at) });
  const before = new Date(at - 1000).toISOString();
  await publishVersions(server, [
    { version: '1.2.0', files: {} },
    { version: '1.9.0', files: {} },
    { version: '1.10.0', files: {} },
  ]);
  const between = new Date(at + 1000).toISOString();
  at += 2000;
  await publishAs(server, { name: 'go-api', version: '2.0.0', description: 'A Go API service template' });
  await publishAs(server, { name: 'react-kit', version: '0.1.0', category: 'frontend', stability: 'beta', description: 'A React single page app', author: { name: 'Ada' } });
  return { server, before, between };
}

describe('GET /templates list conventions', () => {
  it('pages, sorts (both forms), picks fields, includes versions, filters and searches', async () => {
    const { server, before, between } = await registry();

    // Default: the spec's listing order; offset pagination.
    const all = await page(server, '/templates');
    expect(ids(all)).toEqual(['demo-template', 'go-api', 'react-kit']);
    expect(all.data[0].version).toBe('1.10.0');
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1, hasNext: false, hasPrevious: false });

    // page / limit
    const second = await page(server, '/templates', { page: '2', limit: '1' });
    expect(ids(second)).toEqual(['go-api']);
    expect(second.pagination).toEqual({ page: 2, limit: 1, total: 3, totalPages: 3, hasNext: true, hasPrevious: true });

    // cursor, forwards to the end
    const first = await page(server, '/templates', { cursor: '', limit: '2', sort: 'name' });
    expect(ids(first)).toEqual(['demo-template', 'go-api']);
    expect(first.pagination).toMatchObject({ limit: 2, hasNext: true, prevCursor: null });
    const rest = await page(server, '/templates', { cursor: first.pagination.nextCursor, limit: '2', sort: 'name' });
    expect(ids(rest)).toEqual(['react-kit']);
    expect(rest.pagination).toMatchObject({ hasNext: false, nextCursor: null, prevCursor: expect.any(String) });
    // A cursor of another sort is refused.
    await refused(server, '/templates', { cursor: first.pagination.nextCursor, sort: '-name' }, 'cursor');

    // sort: `-` prefix and sort + order give the same order
    expect(ids(await page(server, '/templates', { sort: '-name' }))).toEqual(['react-kit', 'go-api', 'demo-template']);
    expect(ids(await page(server, '/templates', { sort: 'name', order: 'desc' }))).toEqual(['react-kit', 'go-api', 'demo-template']);
    expect(ids(await page(server, '/templates', { sort: 'category,-version' }))).toEqual(['go-api', 'demo-template', 'react-kit']);
    expect(ids(await page(server, '/templates', { sort: '-downloads,name' }))).toEqual(['demo-template', 'go-api', 'react-kit']);

    // fields (id always kept)
    const sparse = await page(server, '/templates', { fields: 'name,version', limit: '1' });
    expect(sparse.data).toEqual([{ id: 'demo-template', name: 'demo-template', version: '1.10.0' }]);

    // include=versions: every version, highest first
    const included = await page(server, '/templates', { include: 'versions', fields: 'version' });
    expect(included.data[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.10.0', '1.9.0', '1.2.0']);
    expect(included.data[1].versions.map((v: { version: string }) => v.version)).toEqual(['2.0.0']);
    expect(Object.keys(included.data[0]).sort()).toEqual(['id', 'version', 'versions']);

    // the filter expression (values may be comma lists: any of)
    expect(ids(await page(server, '/templates', { filter: 'category:backend AND stability:stable' }))).toEqual(['demo-template', 'go-api']);
    expect(ids(await page(server, '/templates', { filter: 'name:go-api,react-kit AND features:api' }))).toEqual(['go-api', 'react-kit']);
    expect(ids(await page(server, '/templates', { filter: 'name:go-api,react-kit AND stability:beta' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { filter: 'version[gte]:1.9.1' }))).toEqual(['demo-template', 'go-api']);

    // <field>= filters on scalar fields, author by name, stats.downloads; comma values: any of
    expect(ids(await page(server, '/templates', { id: 'react-kit,go-api' }))).toEqual(['go-api', 'react-kit']);
    expect(ids(await page(server, '/templates', { name: 'go-api' }))).toEqual(['go-api']);
    expect(ids(await page(server, '/templates', { version: '1.10.0' }))).toEqual(['demo-template']);
    expect(ids(await page(server, '/templates', { description: 'A React single page app' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { category: 'frontend' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { stability: 'beta,deprecated' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { downloadUrl: all.data[1].downloadUrl }))).toEqual(['go-api']);
    expect(ids(await page(server, '/templates', { author: 'Ada,Nobody' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { 'stats.downloads': '0' }))).toHaveLength(3);
    expect(ids(await page(server, '/templates', { features: 'api,testing' }))).toHaveLength(3);
    expect(ids(await page(server, '/templates', { features: 'api,docker' }))).toEqual([]);
    expect(ids(await page(server, '/templates', { size: String(all.data[2].size) }))).toContain('react-kit');

    // [gte] / [lte]: versions numerically (1.10.0 > 1.9.0), dates, numbers
    expect(ids(await page(server, '/templates', { 'version[gte]': '1.9.0' }))).toEqual(['demo-template', 'go-api']);
    expect(ids(await page(server, '/templates', { 'version[gte]': '1.10.0', 'version[lte]': '1.10.0' }))).toEqual(['demo-template']);
    expect(ids(await page(server, '/templates', { 'version[lte]': '1.9.9' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { 'createdAt[gte]': between }))).toEqual(['go-api', 'react-kit']);
    expect(ids(await page(server, '/templates', { 'createdAt[lte]': between }))).toEqual(['demo-template']);
    expect(ids(await page(server, '/templates', { 'stats.downloads[gte]': '1' }))).toEqual([]);
    expect(ids(await page(server, '/templates', { 'size[gte]': '1' }))).toHaveLength(3);

    // createdAfter (inclusive) / createdBefore (exclusive)
    expect(ids(await page(server, '/templates', { createdAfter: between }))).toEqual(['go-api', 'react-kit']);
    expect(ids(await page(server, '/templates', { createdAfter: before, createdBefore: between }))).toEqual(['demo-template']);

    // search / searchFields
    expect(ids(await page(server, '/templates', { search: 'react' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { search: 'Template' }))).toEqual(['demo-template', 'go-api']);
    expect(ids(await page(server, '/templates', { search: 'template', searchFields: 'name,category' }))).toEqual(['demo-template']);
    expect(ids(await page(server, '/templates', { q: 'go service' }))).toEqual(['go-api']);

    // The API version selector is not a filter.
    expect(ids(await page(server, '/templates', { 'api-version': '1', name: 'go-api' }))).toEqual(['go-api']);
  }, 60_000);

  it('refuses an unknown parameter, field or operator with a 400 naming it', async () => {
    const server = await startRegistryServer();
    expect((await refused(server, '/templates', { categroy: 'backend' }, 'categroy')).code).toBe('UNKNOWN_PARAMETER');
    const filter = await refused(server, '/templates', { filter: 'categroy:backend AND stability:stable' }, 'filter');
    expect(filter.message).toContain('categroy');
    expect(filter.code).toBe('UNKNOWN_FIELD');
    expect((await refused(server, '/templates', { filter: 'category' }, 'filter')).code).toBe('FORMAT');
    expect((await refused(server, '/templates', { include: 'unknown' }, 'include')).message).toContain('unknown');
    expect((await refused(server, '/templates', { include: 'versions,owners' }, 'include')).message).toContain('owners');
    expect((await refused(server, '/templates', { 'createdAt[foo]': '2024-01-01' }, 'createdAt[foo]')).code).toBe('UNKNOWN_OPERATOR');
    expect((await refused(server, '/templates', { 'category[gte]': 'a' }, 'category[gte]')).code).toBe('UNSUPPORTED_OPERATOR');
    expect((await refused(server, '/templates', { 'tags[lte]': 'a' }, 'tags[lte]')).code).toBe('UNSUPPORTED_OPERATOR');
    expect((await refused(server, '/templates', { 'version[gte]': 'latest' }, 'version[gte]')).code).toBe('FORMAT');
    expect((await refused(server, '/templates', { 'createdAt[gte]': 'yesterday' }, 'createdAt[gte]')).code).toBe('FORMAT');
    expect((await refused(server, '/templates', { 'stats.nope': '1' }, 'stats.nope')).code).toBe('UNKNOWN_PARAMETER');
    expect((await refused(server, '/templates', { fields: 'name,nope' }, 'fields')).message).toContain('nope');
    expect((await refused(server, '/templates', { sort: '-nope' }, 'sort')).message).toContain('nope');
    expect((await refused(server, '/templates', { search: 'x', searchFields: 'license' }, 'searchFields')).message).toContain('license');
    expect((await refused(server, '/templates', { filter: 'version[between]:1.0.0' }, 'filter')).code).toBe('UNKNOWN_OPERATOR');
    // Every problem is reported at once.
    const { body } = await get(server, '/templates', { categroy: 'x', include: 'nope', limit: '0' });
    expect(body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['categroy', 'include', 'limit']);
  });

  it('refuses what a filter expression, a date, a page or a cursor cannot mean, instead of answering an empty or shifted list', async () => {
    const { server } = await registry();
    // Dangling AND, other connectives, an operator written as field:op:value, a version that is not one.
    for (const filter of ['category:backend AND', 'AND category:backend', 'category:backend and stability:stable', 'category:backend OR stability:stable', 'version:gte:1.0.0', 'version:latest']) {
      const detail = await refused(server, '/templates', { filter }, 'filter');
      expect(['FORMAT', 'UNKNOWN_OPERATOR'], filter).toContain(detail.code);
    }
    // A value may still hold spaces and colons.
    expect(ids(await page(server, '/templates', { filter: 'description:A React single page app AND stability:beta' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { filter: `createdAt[gte]:2000-01-01T00:00:00Z AND author:Ada` }))).toEqual(['react-kit']);
    // Impossible calendar dates, wherever a date is read.
    for (const [name, value] of [['createdAfter', '2026-02-30'], ['createdBefore', '2026-02-31T00:00:00Z'], ['createdAt[gte]', '2025-02-29'], ['updatedAt', '2026-04-31'], ['createdAfter', '2026-01-01T24:00:00Z']] as const) {
      expect((await refused(server, '/templates', { [name]: value }, name)).code, `${name}=${value}`).toBe('FORMAT');
    }
    expect(ids(await page(server, '/templates', { createdAfter: '2024-02-29' }))).toHaveLength(3);
    // Pages beyond what a number holds exactly.
    expect((await refused(server, '/templates', { page: '99999999999999999999' }, 'page')).code).toBe('MAXIMUM');
    expect((await refused(server, '/templates', { page: '9007199254740993' }, 'page')).code).toBe('MAXIMUM');
    // A cursor works only on the list that issued it.
    const first = await page(server, '/templates', { cursor: '', limit: '1' });
    const { token } = await server.store.tokens.createToken({ role: 'admin' });
    await refused(server, '/webhooks', { cursor: first.pagination.nextCursor, limit: '1' }, 'cursor', token);
    const versions = await page(server, `/templates/${TEMPLATE}/versions`, { cursor: '', limit: '1' });
    await refused(server, '/templates/go-api/versions', { cursor: versions.pagination.nextCursor, limit: '1' }, 'cursor');
  }, 60_000);

  it('filters by nested scalar fields, accepts an included resource in fields, and lists a fully yanked template only with include=yanked', async () => {
    const { server } = await registry();
    await publishAs(server, { name: 'mailer', version: '1.0.0', description: 'A mailer service template', author: { name: 'Grace', email: 'grace@example.com' } });
    expect(ids(await page(server, '/templates', { 'author.email': 'grace@example.com' }))).toEqual(['mailer']);
    expect(ids(await page(server, '/templates', { 'author.name': 'Ada' }))).toEqual(['react-kit']);
    expect(ids(await page(server, '/templates', { 'compatibility.breaking': 'true' }))).toEqual([]);
    await refused(server, '/templates', { 'compatibility.breaking': 'maybe' }, 'compatibility.breaking');
    expect(ids(await page(server, '/templates', { 'stats.lastDownload[gte]': '2000-01-01' }))).toEqual([]);

    const withVersions = await page(server, '/templates', { fields: 'id,versions', include: 'versions', id: 'go-api' });
    expect(withVersions.data).toEqual([{ id: 'go-api', versions: [expect.objectContaining({ version: '2.0.0' })] }]);

    // demo-template's highest version yanked: the latest stays 1.9.0, with or without include=yanked.
    const yank = async (id: string, version: string) =>
      expect((await fetch(`${server.url}/templates/${id}/versions/${version}`, { method: 'DELETE', headers: { authorization: `Bearer ${server.token}` } })).status).toBe(200);
    await yank(TEMPLATE, '1.10.0');
    await yank('mailer', '1.0.0');
    const listed = await page(server, '/templates', { fields: 'version' });
    expect(listed.data.map((e: { id: string; version: string }) => `${e.id}@${e.version}`)).toEqual(['demo-template@1.9.0', 'go-api@2.0.0', 'react-kit@0.1.0']);
    const withYanked = await page(server, '/templates', { fields: 'version,yanked', include: 'yanked' });
    expect(withYanked.data.map((e: { id: string; version: string }) => `${e.id}@${e.version}`)).toEqual(['demo-template@1.9.0', 'go-api@2.0.0', 'mailer@1.0.0', 'react-kit@0.1.0']);
    expect(withYanked.data.find((e: { id: string }) => e.id === 'mailer').yanked).toBe(true);
  }, 60_000);
});

describe('the other list routes', () => {
  it('page, cursor, sort and fields on /templates/{id}/versions and /categories', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [
      { version: '1.2.0', files: {} },
      { version: '1.9.0', files: {} },
      { version: '1.10.0', files: {} },
    ]);
    const route = `/templates/${TEMPLATE}/versions`;
    const versions = (body: Json): string[] => (body.data as Array<{ version: string }>).map((e) => e.version);

    const all = await page(server, route);
    expect(versions(all)).toEqual(['1.10.0', '1.9.0', '1.2.0']);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1, hasNext: false, hasPrevious: false });
    const second = await page(server, route, { limit: '2', page: '2' });
    expect(versions(second)).toEqual(['1.2.0']);
    expect(second.pagination).toMatchObject({ page: 2, total: 3, totalPages: 2, hasNext: false, hasPrevious: true });

    const first = await page(server, route, { cursor: '', limit: '2', sort: 'version' });
    expect(versions(first)).toEqual(['1.2.0', '1.9.0']);
    const next = await page(server, route, { cursor: first.pagination.nextCursor, limit: '2', sort: 'version' });
    expect(versions(next)).toEqual(['1.10.0']);
    expect(next.pagination).toMatchObject({ hasNext: false, nextCursor: null });
    const back = await page(server, route, { cursor: next.pagination.prevCursor, limit: '2', sort: 'version' });
    expect(versions(back)).toEqual(['1.2.0', '1.9.0']);

    expect(versions(await page(server, route, { sort: 'version', order: 'desc' }))).toEqual(['1.10.0', '1.9.0', '1.2.0']);
    // order alone turns the default order (highest first) around, or keeps it.
    expect(versions(await page(server, route, { order: 'asc' }))).toEqual(['1.2.0', '1.9.0', '1.10.0']);
    expect(versions(await page(server, route, { order: 'desc' }))).toEqual(['1.10.0', '1.9.0', '1.2.0']);
    expect((await page(server, route, { fields: 'stability', limit: '1' })).data).toEqual([{ version: '1.10.0', stability: 'stable' }]);

    // The /templates-only conventions are unknown parameters here.
    expect((await refused(server, route, { filter: 'version:1.2.0' }, 'filter')).code).toBe('UNKNOWN_PARAMETER');
    await refused(server, route, { include: 'versions' }, 'include');
    await refused(server, route, { fields: 'nope' }, 'fields');

    const categories = await page(server, '/categories', { fields: 'name', sort: '-id', limit: '2' });
    expect(categories.data.length).toBeLessThanOrEqual(2);
    for (const category of categories.data) expect(Object.keys(category).sort()).toEqual(['id', 'name']);
    await refused(server, '/categories', { categroy: 'x' }, 'categroy');
    await refused(server, '/categories', { sort: 'templates' }, 'sort');
  }, 60_000);

  it('page, cursor, sort and fields on /webhooks and /webhooks/{id}/deliveries', async () => {
    const server = await startRegistryServer();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const created: string[] = [];
    for (const host of ['one', 'two', 'three']) {
      const response = await fetch(`${server.url}/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `https://${host}.example.com/hook`, events: ['template.published'], secret: 's3cret', active: host !== 'two' }),
      });
      expect(response.status).toBe(201);
      created.push(((await response.json()) as Json).data.id);
    }

    const all = await page(server, '/webhooks', {}, admin);
    expect(ids(all)).toEqual(created);
    expect(all.pagination).toMatchObject({ page: 1, total: 3 });
    const second = await page(server, '/webhooks', { limit: '2', page: '2' }, admin);
    expect(ids(second)).toEqual([created[2]]);
    const first = await page(server, '/webhooks', { cursor: '', limit: '2' }, admin);
    expect(ids(first)).toEqual(created.slice(0, 2));
    expect(ids(await page(server, '/webhooks', { cursor: first.pagination.nextCursor, limit: '2' }, admin))).toEqual([created[2]]);
    expect((await page(server, '/webhooks', { sort: '-url', fields: 'url' }, admin)).data.map((w: { url: string }) => w.url)).toEqual([
      'https://two.example.com/hook',
      'https://three.example.com/hook',
      'https://one.example.com/hook',
    ]);
    expect(ids(await page(server, '/webhooks', { sort: 'active,createdAt' }, admin))).toEqual([created[1], created[0], created[2]]);
    await refused(server, '/webhooks', { active: 'true' }, 'active', admin);
    await refused(server, '/webhooks', { fields: 'secret' }, 'fields', admin);
    // Authentication comes first.
    expect((await get(server, '/webhooks', { nope: '1' })).status).toBe(401);

    const webhook = created[0]!;
    const attempts: string[] = [];
    for (const [i, event] of ['template.published', 'template.published', 'registry.updated'].entries()) {
      const id = await server.store.webhooks.startDelivery(webhook, event, new Date(Date.UTC(2026, 0, 1 + i)));
      await finishAttempt(server.store.webhooks, id, 200 + i, null);
      attempts.push(id);
    }
    const deliveries = `/webhooks/${webhook}/deliveries`;
    const newest = await page(server, deliveries, {}, admin);
    expect(ids(newest)).toEqual([...attempts].reverse());
    const firstTwo = await page(server, deliveries, { cursor: '', limit: '2' }, admin);
    expect(ids(firstTwo)).toEqual([attempts[2], attempts[1]]);
    expect(ids(await page(server, deliveries, { cursor: firstTwo.pagination.nextCursor, limit: '2' }, admin))).toEqual([attempts[0]]);
    expect(ids(await page(server, deliveries, { page: '2', limit: '2' }, admin))).toEqual([attempts[0]]);
    expect((await page(server, deliveries, { sort: 'attemptedAt', fields: 'status' }, admin)).data).toEqual(
      attempts.map((id, i) => ({ id, status: 200 + i })),
    );
    await refused(server, deliveries, { event: 'registry.updated' }, 'event', admin);
    await refused(server, deliveries, { limit: '0' }, 'limit', admin);
  }, 60_000);

  it('page, cursor, sort and fields on /users; anything else refused', async () => {
    const server = await startRegistryServer();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const created: string[] = [];
    for (const [i, email] of ['carol@example.com', 'alice@example.com', 'bob@example.com'].entries()) {
      const user = await server.store.accounts.createUser({ email, passwordHash: 'x', role: i === 1 ? 'admin' : 'publisher', owner: email, now: new Date(Date.UTC(2026, 0, 1 + i)) });
      if (!user.created) throw new Error(`${email} exists`);
      created.push(user.user.id);
    }
    const all = await page(server, '/users', {}, admin);
    expect(ids(all)).toEqual(created);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1, hasNext: false, hasPrevious: false });
    expect(ids(await page(server, '/users', { page: '2', limit: '2' }, admin))).toEqual([created[2]]);
    const first = await page(server, '/users', { cursor: '', limit: '2' }, admin);
    expect(ids(first)).toEqual(created.slice(0, 2));
    expect(ids(await page(server, '/users', { cursor: first.pagination.nextCursor, limit: '2' }, admin))).toEqual([created[2]]);
    expect((await page(server, '/users', { sort: 'email', fields: 'email' }, admin)).data).toEqual([
      { id: created[1], email: 'alice@example.com' },
      { id: created[2], email: 'bob@example.com' },
      { id: created[0], email: 'carol@example.com' },
    ]);
    expect(ids(await page(server, '/users', { sort: 'role', order: 'desc' }, admin))).toEqual([created[0], created[2], created[1]]);
    expect(ids(await page(server, '/users', { order: 'desc' }, admin))).toEqual([...created].reverse());
    await refused(server, '/users', { role: 'admin' }, 'role', admin);
    await refused(server, '/users', { fields: 'passwordHash' }, 'fields', admin);
    await refused(server, '/users', { limit: '101' }, 'limit', admin);
    await refused(server, '/users', { sort: 'password' }, 'sort', admin);
  }, 60_000);
});

describe('the documentation of the list parameters', () => {
  it('openapi.json documents a /templates parameter for every field filter and range', () => {
    const document: Json = JSON.parse(readFileSync('openapi/openapi.json', 'utf8'));
    const parameters = (document.paths['/templates'].get.parameters as Json[]).map((p): string =>
      String(p.$ref ? document.components.parameters[String(p.$ref).split('/').pop()!].name : p.name),
    );
    for (const [name, field] of Object.entries(TEMPLATE_FIELDS)) {
      expect(parameters, name).toContain(name);
      if (['number', 'version', 'date'].includes(field.kind)) for (const op of ['gte', 'lte']) expect(parameters).toContain(`${name}[${op}]`);
    }
    for (const name of ['page', 'limit', 'cursor', 'sort', 'order', 'fields', 'include', 'filter', 'search', 'searchFields', 'createdAfter', 'createdBefore']) {
      expect(parameters).toContain(name);
    }
  });
});
