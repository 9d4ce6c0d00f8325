import { describe, expect, it } from 'vitest';

import { latestEntries, matchesSearch, type TemplateEntry } from '../../src/core/index.js';
import {
  CATEGORY_LIST,
  decodeCursor,
  DELIVERY_LIST,
  encodeCursor,
  parseList,
  runList,
  runListQuery,
  VERSION_LIST,
  WEBHOOK_LIST,
  type ListQuery,
} from '../../src/server/query.js';
import { templateEntry } from '../helpers/builders.js';
import { LIST_PARAMETERS, orderEntries, parseListQuery, pickFields } from '../helpers/list-query.js';

const entry = (id: string, version: string, extra: Partial<TemplateEntry> = {}): TemplateEntry => templateEntry(id, { version, author: { name: 'Someone' }, ...extra });

const ENTRIES: TemplateEntry[] = [
  entry('alpha', '1.0.0', { stats: { downloads: 10 }, tags: ['web', 'node'], createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-05T00:00:00.000Z' }),
  entry('alpha', '1.2.0', { stats: { downloads: 10 }, tags: ['web', 'node'], features: ['api'], createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' }),
  entry('alpha', '2.0.0-rc', { stability: 'beta' }),
  entry('beta-kit', '0.3.0', { stability: 'beta', category: 'frontend', stats: { downloads: 99 }, createdAt: '2024-03-01T00:00:00.000Z' }),
  entry('beta-kit', '0.10.0', { stability: 'experimental', category: 'frontend', stats: { downloads: 1 }, createdAt: '2024-04-01T00:00:00.000Z' }),
  entry('zeta', '1.0.0', { stats: { downloads: 10 }, author: { name: 'Zed' }, features: ['api', 'docker'], description: 'Docker ready Zeta service', createdAt: '2024-05-01T00:00:00.000Z' }),
  entry('old', '3.0.0', { stability: 'deprecated', stats: { downloads: 500 }, createdAt: '2023-01-01T00:00:00.000Z' }),
  entry('mid', '1.0.0', { stats: { downloads: 30 }, tags: ['node'] }),
];

function parsed(raw: Record<string, unknown>): ListQuery {
  const result = parseListQuery(raw);
  if (!result.ok) throw new Error(`unexpected errors: ${JSON.stringify(result.details)}`);
  return result.query;
}

function errors(raw: Record<string, unknown>) {
  const result = parseListQuery(raw);
  if (result.ok) throw new Error('expected errors');
  return result.details;
}

const list = (raw: Record<string, unknown>) => runListQuery({ templates: ENTRIES }, parsed(raw));
const listIds = (raw: Record<string, unknown>) => list(raw).data.map((e) => e.id);

describe('parseListQuery', () => {
  it('has the conventional defaults', () => {
    const query = parsed({});
    expect(query.paging).toEqual({ mode: 'offset', page: 1, limit: 20 });
    expect(query.sort).toEqual([]);
    expect(query.conditions).toEqual([]);
    expect(query.include).toBeUndefined();
    expect(query.fields).toBeUndefined();
  });

  it('accepts numbers as strings or as coerced numbers', () => {
    expect(parsed({ page: '3', limit: '7' }).paging).toEqual({ mode: 'offset', page: 3, limit: 7 });
    expect(parsed({ page: 2, limit: 100 }).paging).toEqual({ mode: 'offset', page: 2, limit: 100 });
  });

  it('reports every invalid value with field, message and code', () => {
    const details = errors({ page: '0', limit: '500', sort: 'name,bogus', stability: 'rock', fields: 'nope', createdAfter: '01/02/2024', 'downloads[gte]': 'many', order: 'sideways' });
    const fields = details.map((d) => d.field).sort();
    expect(fields).toEqual(['createdAfter', 'downloads[gte]', 'fields', 'limit', 'order', 'page', 'sort', 'stability']);
    for (const detail of details) {
      expect(detail.message.length).toBeGreaterThan(0);
      expect(detail.code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
    }
    expect(details.find((d) => d.field === 'page')?.code).toBe('MINIMUM');
    expect(details.find((d) => d.field === 'limit')?.code).toBe('MAXIMUM');
  });

  it('refuses repeated single-valued parameters, non-integers and an empty list', () => {
    expect(errors({ page: ['1', '2'] })[0]).toMatchObject({ field: 'page', code: 'DUPLICATE' });
    expect(errors({ limit: '2.5' })[0]).toMatchObject({ field: 'limit', code: 'TYPE' });
    expect(errors({ tags: ',' })[0]).toMatchObject({ field: 'tags' });
    expect(errors({ sort: 'name,-name' })[0]).toMatchObject({ field: 'sort', code: 'DUPLICATE' });
  });

  it('parses sort keys, prefixes and order', () => {
    expect(parsed({ sort: '-downloads,name' }).sort).toEqual([
      { field: 'stats.downloads', descending: true },
      { field: 'name', descending: false },
    ]);
    expect(parsed({ sort: 'stats.downloads' }).sort).toEqual([{ field: 'stats.downloads', descending: false }]);
    expect(parsed({ sort: 'downloads,license' }).sort).toEqual([
      { field: 'stats.downloads', descending: false },
      { field: 'license', descending: false },
    ]);
    expect(parsed({ sort: 'name', order: 'desc' }).sort).toEqual([{ field: 'name', descending: true }]);
    expect(parsed({ sort: '-name', order: 'asc' }).sort).toEqual([{ field: 'name', descending: true }]);
    expect(parsed({ order: 'desc' }).reverseDefault).toBe(true);
  });

  it('normalizes dates, keeps id in fields, and lower-cases search terms', () => {
    const query = parsed({ createdAfter: '2024-03-01', createdBefore: '2024-03-02T12:00:00+02:00', fields: 'name', q: 'Web  NODE' });
    expect(query.conditions).toEqual([
      { field: 'createdAt', op: 'gte', values: ['2024-03-01T00:00:00.000Z'] },
      { field: 'createdAt', op: 'lt', values: ['2024-03-02T10:00:00.000Z'] },
    ]);
    expect(query.fields).toEqual(['id', 'name']);
    expect(query.terms).toEqual(['web', 'node']);
  });

  it('handles cursors: empty starts, foreign and garbage are refused, page conflicts', () => {
    expect(parsed({ cursor: '' }).paging).toEqual({ mode: 'cursor', offset: 0, limit: 20 });
    const query = parsed({ sort: 'name', cursor: '' });
    const cursor = encodeCursor(4, query.fingerprint);
    expect(parsed({ sort: 'name', cursor, limit: '2' }).paging).toEqual({ mode: 'cursor', offset: 4, limit: 2 });
    // fields and limit do not change which entries come in which order: the cursor stays valid.
    expect(parsed({ sort: 'name', cursor, fields: 'name' }).paging).toMatchObject({ offset: 4 });
    expect(errors({ sort: '-name', cursor })[0]).toMatchObject({ field: 'cursor', code: 'INVALID_CURSOR' });
    expect(errors({ cursor: 'Zm9v' })[0]).toMatchObject({ field: 'cursor', code: 'INVALID_CURSOR' });
    expect(errors({ cursor: '***' })[0]).toMatchObject({ field: 'cursor', code: 'INVALID_CURSOR' });
    expect(errors({ cursor: '', page: '2' })[0]).toMatchObject({ field: 'page', code: 'CONFLICT' });
  });

  it('round-trips cursors', () => {
    const cursor = encodeCursor(40, 'abc');
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, 'abc')).toEqual({ offset: 40 });
    expect(decodeCursor(cursor, 'abd')).toHaveProperty('error');
    expect(decodeCursor(Buffer.from(JSON.stringify({ v: 1, o: -1, q: 'abc' })).toString('base64url'), 'abc')).toHaveProperty('error');
  });
});

describe('runListQuery', () => {
  it('keeps one entry per id, chosen by the spec rule', () => {
    const latest = latestEntries(ENTRIES);
    expect(latest.map((e) => `${e.id}@${e.version}`).sort()).toEqual(['alpha@1.2.0', 'beta-kit@0.10.0', 'mid@1.0.0', 'old@3.0.0', 'zeta@1.0.0']);
  });

  it('orders by stability, downloads desc, then name by default', () => {
    expect(listIds({})).toEqual(['mid', 'alpha', 'zeta', 'beta-kit', 'old']);
    expect(listIds({ order: 'desc' })).toEqual(['old', 'beta-kit', 'zeta', 'alpha', 'mid']);
  });

  it('filters', () => {
    expect(listIds({ category: 'frontend' })).toEqual(['beta-kit']);
    expect(listIds({ stability: 'experimental,deprecated' })).toEqual(['beta-kit', 'old']);
    expect(listIds({ tags: 'node' })).toEqual(['mid', 'alpha']);
    expect(listIds({ tags: 'node,web' })).toEqual(['alpha']);
    expect(listIds({ features: 'api' })).toEqual(['alpha', 'zeta']);
    expect(listIds({ features: 'api,docker' })).toEqual(['zeta']);
    expect(listIds({ author: 'Zed' })).toEqual(['zeta']);
    expect(listIds({ 'stats.downloads[gte]': '10', 'stats.downloads[lte]': '30' })).toEqual(['mid', 'alpha', 'zeta']);
    expect(listIds({ 'downloads[lte]': '1' })).toEqual(['beta-kit']);
    expect(listIds({ createdAfter: '2024-02-01', createdBefore: '2024-05-01' })).toEqual(['alpha', 'beta-kit']);
  });

  it('searches every term in name, description, tags, features and category', () => {
    expect(listIds({ q: 'docker zeta' })).toEqual(['zeta']);
    expect(listIds({ q: 'DOCKER' })).toEqual(['zeta']);
    expect(listIds({ search: 'frontend' })).toEqual(['beta-kit']);
    expect(listIds({ q: 'web api' })).toEqual(['alpha']);
    expect(listIds({ q: 'docker', searchFields: 'name' })).toEqual([]);
    expect(matchesSearch(ENTRIES[0]!, ['alpha', 'node'])).toBe(true);
    expect(matchesSearch(ENTRIES[0]!, ['alpha', 'python'])).toBe(false);
  });

  it('sorts by the requested keys, ties in listing order', () => {
    expect(listIds({ sort: 'name' })).toEqual(['alpha', 'beta-kit', 'mid', 'old', 'zeta']);
    expect(listIds({ sort: '-downloads' })).toEqual(['old', 'mid', 'alpha', 'zeta', 'beta-kit']);
    expect(listIds({ sort: 'version' })).toEqual(['beta-kit', 'mid', 'zeta', 'alpha', 'old']);
    expect(listIds({ sort: '-createdAt' })).toEqual(['zeta', 'beta-kit', 'alpha', 'old', 'mid']);
    expect(listIds({ sort: 'createdAt' })).toEqual(['old', 'alpha', 'beta-kit', 'zeta', 'mid']);
    expect(listIds({ sort: 'stability,-name' })).toEqual(['zeta', 'mid', 'alpha', 'beta-kit', 'old']);
    expect(orderEntries([], [{ field: 'name', descending: false }])).toEqual([]);
  });

  it('paginates by offset', () => {
    const page = list({ page: '2', limit: '2' });
    expect(page.data.map((e) => e.id)).toEqual(['zeta', 'beta-kit']);
    expect(page.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: true });
    expect(list({ limit: '5' }).pagination).toEqual({ page: 1, limit: 5, total: 5, totalPages: 1, hasNext: false, hasPrevious: false });
    expect(list({ category: 'none' }).pagination).toEqual({ page: 1, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false });
  });

  it('paginates by cursor, forwards and back', () => {
    const first = list({ cursor: '', limit: '2' });
    expect(first.data.map((e) => e.id)).toEqual(['mid', 'alpha']);
    expect(first.pagination).toMatchObject({ limit: 2, hasNext: true, prevCursor: null });
    const next = (first.pagination as { nextCursor: string }).nextCursor;
    const second = list({ cursor: next, limit: '2' });
    expect(second.data.map((e) => e.id)).toEqual(['zeta', 'beta-kit']);
    const third = list({ cursor: (second.pagination as { nextCursor: string }).nextCursor, limit: '2' });
    expect(third.data.map((e) => e.id)).toEqual(['old']);
    expect(third.pagination).toMatchObject({ hasNext: false, nextCursor: null });
    const back = list({ cursor: (third.pagination as { prevCursor: string }).prevCursor, limit: '2' });
    expect(back.data.map((e) => e.id)).toEqual(['zeta', 'beta-kit']);
  });

  it('returns sparse fieldsets', () => {
    expect(list({ fields: 'version,stats', limit: '1' }).data).toEqual([{ id: 'mid', version: '1.0.0', stats: { downloads: 30 } }]);
    expect(pickFields(ENTRIES[0]!, ['id', 'license'])).toEqual({ id: 'alpha' });
    expect(pickFields(ENTRIES[0]!, undefined)).toBe(ENTRIES[0]);
  });
});

describe('the list conventions beyond the spec reader filters', () => {
  const VERSIONED: TemplateEntry[] = [
    entry('kit', '1.2.0', { createdAt: '2024-01-01T00:00:00.000Z', license: 'MIT', size: 10 }),
    entry('kit', '1.9.0', { createdAt: '2024-02-01T00:00:00.000Z', license: 'MIT', size: 20 }),
    entry('kit', '1.10.0', { createdAt: '2024-03-01T00:00:00.000Z', license: 'MIT', size: 30 }),
    entry('app', '0.9.0', { category: 'frontend', license: 'Apache-2.0', size: 5, stats: { downloads: 7 } }),
  ];
  const ids = (raw: Record<string, unknown>) => runListQuery({ templates: VERSIONED }, parsed(raw)).data.map((e) => `${e.id}@${e.version}`);

  it('filters every scalar field, comma values any of', () => {
    expect(ids({ license: 'MIT' })).toEqual(['kit@1.10.0']);
    expect(ids({ license: 'Apache-2.0,GPL-3.0' })).toEqual(['app@0.9.0']);
    expect(ids({ version: '0.9.0,1.10.0' })).toEqual(['app@0.9.0', 'kit@1.10.0']);
    expect(ids({ size: '30' })).toEqual(['kit@1.10.0']);
    expect(ids({ 'stats.downloads': '7' })).toEqual(['app@0.9.0']);
    expect(ids({ downloads: '7' })).toEqual(['app@0.9.0']);
    expect(ids({ author: 'Someone,Nobody' })).toHaveLength(2);
  });

  it('compares versions numerically, dates as instants, numbers as numbers', () => {
    expect(ids({ 'version[gte]': '1.9.0' })).toEqual(['kit@1.10.0']);
    expect(ids({ 'version[lte]': '1.9' })).toEqual(['app@0.9.0']);
    expect(ids({ 'size[gte]': '6', 'size[lte]': '30' })).toEqual(['kit@1.10.0']);
    expect(ids({ 'createdAt[gte]': '2024-03-01T01:00:00+01:00' })).toEqual(['kit@1.10.0']);
    expect(ids({ 'createdAt[lte]': '2024-02-28' })).toEqual([]);
    expect(ids({ sort: '-version' })).toEqual(['kit@1.10.0', 'app@0.9.0']);
  });

  it('reads the filter expression: field:value terms joined with AND', () => {
    expect(parsed({ filter: 'category:backend AND version[gte]:1.0.0' }).conditions).toEqual([
      { field: 'category', op: 'in', values: ['backend'] },
      { field: 'version', op: 'gte', values: ['1.0.0'] },
    ]);
    expect(ids({ filter: 'license:MIT,Apache-2.0 AND category:frontend' })).toEqual(['app@0.9.0']);
    expect(errors({ filter: 'categroy:backend' })[0]).toMatchObject({ field: 'filter', code: 'UNKNOWN_FIELD' });
    expect(errors({ filter: 'category' })[0]).toMatchObject({ field: 'filter', code: 'FORMAT' });
    expect(errors({ filter: ' ' })[0]).toMatchObject({ field: 'filter', code: 'MIN_LENGTH' });
    expect(errors({ filter: 'stability:gold' })[0]).toMatchObject({ field: 'filter', code: 'ENUM' });
  });

  it('includes versions, highest first, next to the sparse fields', () => {
    const result = runListQuery({ templates: VERSIONED }, parsed({ include: 'versions', fields: 'name' }));
    expect(result.data[0]).toMatchObject({ id: 'app', name: 'app' });
    expect((result.data[1] as { versions: TemplateEntry[] }).versions.map((e) => e.version)).toEqual(['1.10.0', '1.9.0', '1.2.0']);
    expect(errors({ include: 'versions,owners' })[0]).toMatchObject({ field: 'include', code: 'ENUM' });
  });

  it('refuses unknown parameters and operators, naming them, and ignores api-version', () => {
    expect(errors({ categroy: 'backend' })[0]).toMatchObject({ field: 'categroy', code: 'UNKNOWN_PARAMETER' });
    expect(errors({ 'createdAt[foo]': '2024-01-01' })[0]).toMatchObject({ field: 'createdAt[foo]', code: 'UNKNOWN_OPERATOR' });
    expect(errors({ 'license[gte]': 'MIT' })[0]).toMatchObject({ field: 'license[gte]', code: 'UNSUPPORTED_OPERATOR' });
    expect(errors({ 'size[gte]': ['1', '2'] })[0]).toMatchObject({ field: 'size[gte]', code: 'DUPLICATE' });
    expect(errors({ 'size[gte]': '-1' })[0]).toMatchObject({ field: 'size[gte]', code: 'TYPE' });
    expect(errors(JSON.parse('{"__proto__":"x","constructor":"y"}') as Record<string, unknown>).map((d) => d.field)).toEqual(['__proto__', 'constructor']);
    expect(parsed({ 'api-version': '1' }).conditions).toEqual([]);
    expect(LIST_PARAMETERS).toEqual(expect.arrayContaining(['include', 'filter', 'search', 'searchFields', 'createdAfter', 'createdBefore']));
  });

  it('serves the other lists with their own fields', () => {
    const versions = parseList(VERSION_LIST, { sort: 'version', fields: 'size', limit: '2' });
    if (!versions.ok) throw new Error('unexpected errors');
    const kit = VERSIONED.filter((e) => e.id === 'kit');
    expect(runList(VERSION_LIST, kit, versions.query).data).toEqual([{ version: '1.2.0', size: 10 }, { version: '1.9.0', size: 20 }]);
    expect(parseList(VERSION_LIST, { filter: 'version:1.2.0' })).toMatchObject({ ok: false, details: [{ field: 'filter', code: 'UNKNOWN_PARAMETER' }] });

    const categories = [{ id: 'b', name: 'Backend' }, { id: 'a', name: 'Apps', icon: 'x' }];
    const query = parseList(CATEGORY_LIST, { sort: 'id', fields: 'icon' });
    if (!query.ok) throw new Error('unexpected errors');
    expect(runList(CATEGORY_LIST, categories, query.query).data).toEqual([{ id: 'a', icon: 'x' }, { id: 'b' }]);

    const webhooks = [true, false].map((active, i) => ({ id: `wh_${i}`, url: `https://h${i}.test/`, events: ['*'], active, createdAt: `2026-01-0${i + 1}T00:00:00.000Z` }));
    const byActive = parseList(WEBHOOK_LIST, { sort: 'active', fields: 'active' });
    if (!byActive.ok) throw new Error('unexpected errors');
    expect(runList(WEBHOOK_LIST, webhooks, byActive.query).data).toEqual([{ id: 'wh_1', active: false }, { id: 'wh_0', active: true }]);
    expect(parseList(WEBHOOK_LIST, { fields: 'secret' })).toMatchObject({ ok: false, details: [{ field: 'fields' }] });
    expect(parseList(DELIVERY_LIST, { status: '200' })).toMatchObject({ ok: false, details: [{ field: 'status', code: 'UNKNOWN_PARAMETER' }] });
  });
});
