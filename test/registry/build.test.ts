import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { buildDocument, buildRegistry, RegistryBuildError } from '../../src/registry/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { BUILD_STATE_FILE } from '../../src/registry/folder-output.js';
import { memorySource, version } from './memory-source.js';

const T1 = new Date('2026-05-01T10:00:00.000Z');
const T2 = new Date('2026-05-02T10:00:00.000Z');

async function readJson<T>(file: string): Promise<T> {
  return JSON.parse(await readFile(file, 'utf8')) as T;
}

/** Every file under `dir`, relative, sorted. */
/** The registry's files (not the build's own state file, which records what it wrote). */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name !== BUILD_STATE_FILE)
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

function fullVersion() {
  return version(
    'node-service',
    '1.2.0',
    {
      stability: 'beta',
      methodologyVersion: '>=2.0.0',
      author: { name: 'Ada', email: 'ada@example.com' },
      repository: { type: 'git', url: 'https://github.com/acme/node-service' },
      license: 'MIT',
      keywords: ['node', 'api'],
      features: ['auth', 'docker'],
      dependencies: { node: '>=20', npm: '>=10' },
      compatibility: { breaking: true, deprecated: ['old-flag'], removed: ['legacy'] },
    },
    {
      integrity: `sha512-${createHash('sha512').update('x').digest('base64')}`,
      sha256: createHash('sha256').update('x').digest('hex'),
      size: 1234,
      updatedAt: '2026-02-01T00:00:00.000Z',
      documentationUrl: 'https://docs.example.com/node-service',
      stats: { downloads: 42, stars: 7, forks: 2, issues: 1, lastDownload: '2026-04-30T00:00:00.000Z' },
    },
  );
}

describe('buildRegistry', () => {
  it('maps every source version to a valid template entry', async () => {
    const outDir = await tempDir();
    const minimal = version('tiny', '0.1.0', { category: 'frontend' });
    const { document } = await buildRegistry(memorySource([fullVersion(), minimal]), { outDir, now: () => T1 });

    for (const entry of document.templates) expect(schemaErrors('template-entry', entry)).toEqual([]);
    expect(schemaErrors('registry-document', document)).toEqual([]);

    const full = document.templates.find((t) => t.id === 'node-service');
    expect(full).toEqual({
      id: 'node-service',
      name: 'node-service',
      version: '1.2.0',
      description: 'The node-service template, version 1.2.0',
      category: 'backend',
      stability: 'beta',
      downloadUrl: 'https://registry.example.com/templates/node-service/versions/1.2.0/archive',
      documentationUrl: 'https://docs.example.com/node-service',
      repositoryUrl: 'https://github.com/acme/node-service',
      author: { name: 'Ada', email: 'ada@example.com' },
      license: 'MIT',
      tags: ['node', 'api'],
      features: ['auth', 'docker'],
      dependencies: { methodology: '>=2.0.0', node: '>=20', npm: '>=10' },
      compatibility: {
        methodologyVersions: ['>=2.0.0'],
        nodeVersions: ['>=20'],
        platforms: [],
        breaking: true,
        deprecated: ['old-flag'],
        removed: ['legacy'],
      },
      stats: { downloads: 42, stars: 7, forks: 2, issues: 1, lastDownload: '2026-04-30T00:00:00.000Z' },
      createdAt: '2026-01-02T03:04:05.000Z',
      updatedAt: '2026-02-01T00:00:00.000Z',
      integrity: fullVersion().integrity,
      sha256: fullVersion().sha256,
      size: 1234,
    });

    const tiny = document.templates.find((t) => t.id === 'tiny');
    expect(tiny).toMatchObject({
      stability: 'stable',
      documentationUrl: '',
      repositoryUrl: '',
      author: { name: 'unknown' },
      license: '',
      tags: [],
      features: [],
      dependencies: { methodology: '*' },
      compatibility: { methodologyVersions: ['*'], nodeVersions: [], platforms: [], breaking: false, deprecated: [], removed: [] },
      stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
      updatedAt: '2026-01-02T03:04:05.000Z',
    });
    expect(tiny).not.toHaveProperty('stats.lastDownload');
    expect(tiny).not.toHaveProperty('integrity');
    expect(tiny).not.toHaveProperty('sha256');
    expect(tiny).not.toHaveProperty('size');
  });

  it('takes the documentation link from the repository when the source has none', async () => {
    const outDir = await tempDir();
    const v = version('with-repo', '1.0.0', { repository: { url: 'https://git.example.com/with-repo' } });
    const { document } = await buildRegistry(memorySource([v]), { outDir, now: () => T1 });
    expect(document.templates[0]).toMatchObject({ repositoryUrl: 'https://git.example.com/with-repo', documentationUrl: 'https://git.example.com/with-repo' });
  });

  it('writes one entry per version, sorted by id then numeric version', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('zeta', '1.0.0'), version('alpha', '1.10.0'), version('alpha', '1.9.0'), version('alpha', '1.2.3')]);
    const { document } = await buildRegistry(source, { outDir, now: () => T1 });
    expect(document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['alpha@1.2.3', 'alpha@1.9.0', 'alpha@1.10.0', 'zeta@1.0.0']);

    const perTemplate = await readJson<{ id: string; versions: TemplateEntry[] }>(path.join(outDir, 'templates', 'alpha.json'));
    expect(perTemplate.id).toBe('alpha');
    expect(perTemplate.versions.map((v) => v.version)).toEqual(['1.2.3', '1.9.0', '1.10.0']);
    expect(perTemplate.versions[0]).toEqual(document.templates[0]);
  });

  it('lists the five categories with the ids of their templates, unique and sorted', async () => {
    const outDir = await tempDir();
    const source = memorySource([
      version('web-b', '1.0.0', { category: 'frontend' }),
      version('web-a', '1.0.0', { category: 'frontend' }),
      version('web-a', '2.0.0', { category: 'frontend' }),
      version('api', '1.0.0', { category: 'backend' }),
    ]);
    const { document } = await buildRegistry(source, { outDir, now: () => T1 });
    expect(document.categories.map((c) => c.id)).toEqual(['frontend', 'backend', 'fullstack', 'mobile', 'desktop']);
    for (const category of document.categories) {
      expect(category.name).toBeTruthy();
      expect(category.description).toBeTruthy();
      expect(category.icon).toBeTruthy();
      expect(schemaErrors('category', category)).toEqual([]);
    }
    expect(Object.fromEntries(document.categories.map((c) => [c.id, c.templates]))).toEqual({
      frontend: ['web-a', 'web-b'],
      backend: ['api'],
      fullstack: [],
      mobile: [],
      desktop: [],
    });
  });

  it('uses the given category definitions and recomputes their template lists', async () => {
    const outDir = await tempDir();
    const { document } = await buildRegistry(memorySource([version('api', '1.0.0')]), {
      outDir,
      now: () => T1,
      categories: [{ id: 'backend', name: 'Servers', description: 'Ours', icon: 'cloud', templates: ['stale'] }],
    });
    expect(document.categories).toEqual([{ id: 'backend', name: 'Servers', description: 'Ours', icon: 'cloud', templates: ['api'] }]);
  });

  it('publishes the sorted union of all tags', async () => {
    const outDir = await tempDir();
    const source = memorySource([
      version('a', '1.0.0', { keywords: ['node', 'api'] }),
      version('a', '1.1.0', { keywords: ['node', 'rest'] }),
      version('b', '1.0.0', { keywords: ['React', 'api'] }),
      version('c', '1.0.0'),
    ]);
    const { document } = await buildRegistry(source, { outDir, now: () => T1 });
    expect(document.tags).toEqual(['React', 'api', 'node', 'rest']);
  });

  it('is deterministic: a second build with the same versions rewrites nothing and keeps lastUpdated', async () => {
    const outDir = await tempDir();
    const source = memorySource([fullVersion(), version('tiny', '0.1.0')]);
    const first = await buildRegistry(source, { outDir, now: () => T1 });
    expect(first.changed).toBe(true);
    expect(first.document.lastUpdated).toBe(T1.toISOString());
    const files = await listFiles(outDir);
    const bytes = await Promise.all(files.map((f) => readFile(path.join(outDir, f))));
    // Every file dated back to a fixed moment: a rewrite, however quick, would date it now.
    const past = new Date('2020-01-01T00:00:00.000Z');
    await Promise.all(files.map((f) => utimes(path.join(outDir, f), past, past)));
    const mtimes = await Promise.all(files.map(async (f) => (await stat(path.join(outDir, f))).mtimeMs));
    expect(new Set(mtimes)).toEqual(new Set([past.getTime()]));

    const second = await buildRegistry(source, { outDir, now: () => T2 });
    expect(second.changed).toBe(false);
    expect(second.written).toEqual([]);
    expect(second.document.lastUpdated).toBe(T1.toISOString());
    expect(second.etag).toBe(first.etag);
    expect(await listFiles(outDir)).toEqual(files);
    expect(await Promise.all(files.map((f) => readFile(path.join(outDir, f))))).toEqual(bytes);
    expect(await Promise.all(files.map(async (f) => (await stat(path.join(outDir, f))).mtimeMs))).toEqual(mtimes);

    // The same versions in another order give the same bytes.
    const elsewhere = await tempDir();
    await buildRegistry(memorySource([...source.list].reverse()), { outDir: elsewhere, now: () => T1 });
    expect(await readFile(path.join(elsewhere, 'registry.json'))).toEqual(await readFile(path.join(outDir, 'registry.json')));
  });

  it('moves lastUpdated and the etag when a version changes', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('a', '1.0.0')]);
    const first = await buildRegistry(source, { outDir, now: () => T1 });
    source.list = [version('a', '1.0.0', {}, { stats: { downloads: 5, stars: 0, forks: 0, issues: 0 } })];
    const second = await buildRegistry(source, { outDir, now: () => T2 });
    expect(second.changed).toBe(true);
    expect(second.document.lastUpdated).toBe(T2.toISOString());
    expect(second.etag).not.toBe(first.etag);
    expect(second.written).toContain('registry.json');
    const onDisk = await readJson<RegistryDocument>(path.join(outDir, 'registry.json'));
    expect(onDisk.lastUpdated).toBe(T2.toISOString());
    expect(onDisk.templates[0]?.stats?.downloads).toBe(5);
  });

  it('writes stable compact JSON and a strong etag of the registry.json bytes', async () => {
    const outDir = await tempDir();
    const result = await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir, now: () => T1 });
    const bytes = await readFile(path.join(outDir, 'registry.json'));
    expect(bytes.toString('utf8')).toBe(`${JSON.stringify(result.document)}\n`);
    expect(result.etag).toBe(`"${createHash('sha256').update(bytes).digest('base64url')}"`);
    expect(result.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
  });

  it('writes .gz and .br beside registry.json, index.json and index.html, decompressing to the same bytes', async () => {
    const outDir = await tempDir();
    const result = await buildRegistry(memorySource([fullVersion(), version('tiny', '0.1.0')]), { outDir, now: () => T1 });
    const files = await listFiles(outDir);
    const plain = files.filter((f) => f.endsWith('.json') || f.endsWith('.html'));
    expect(plain.sort()).toEqual(['index.html', 'index.json', 'registry.json', 'templates/node-service.json', 'templates/tiny.json']);
    // Template files are small: hosts and CDNs compress them on the fly.
    const entryPoints = ['index.html', 'index.json', 'registry.json'];
    expect(files).toEqual(['_headers', ...entryPoints.flatMap((f) => [f, `${f}.br`, `${f}.gz`]), 'templates/node-service.json', 'templates/tiny.json'].sort());
    expect([...result.files].sort()).toEqual(files);
    for (const file of entryPoints) {
      const original = await readFile(path.join(outDir, file));
      expect(gunzipSync(await readFile(path.join(outDir, `${file}.gz`)))).toEqual(original);
      expect(brotliDecompressSync(await readFile(path.join(outDir, `${file}.br`)))).toEqual(original);
    }
    // registry.json and its variants come last.
    expect(result.files.slice(-3)).toEqual(['registry.json', 'registry.json.gz', 'registry.json.br']);
  });

  it('leaves the catalog out when asked', async () => {
    const outDir = await tempDir();
    await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir, now: () => T1, catalog: false });
    expect((await listFiles(outDir)).some((f) => f.startsWith('index.html'))).toBe(false);
  });

  it('leaves out a version whose entry is invalid, reports it, and publishes the others', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('a', '1.0.0'), version('b', '1.0', { description: 'changed' }), version('c', '1.0.0')]);
    const result = await buildRegistry(source, { outDir, now: () => T1 });
    expect(result.document.templates.map((e) => `${e.id}@${e.version}`)).toEqual(['a@1.0.0', 'c@1.0.0']);
    expect(result.skipped).toEqual([{ id: 'b', version: '1.0', violations: [expect.objectContaining({ pointer: '/version', code: 'PATTERN' })] }]);
    const onDisk = JSON.parse(await readFile(path.join(outDir, 'registry.json'), 'utf8')) as { templates: { id: string }[] };
    expect(onDisk.templates.map((e) => e.id)).toEqual(['a', 'c']);
  });

  it('buildDocument without onSkipped refuses an invalid entry with a RegistryBuildError naming the version', () => {
    const error = (() => {
      try {
        return buildDocument([version('a', '1.0.0'), version('b', '1.0')], { lastUpdated: T1.toISOString() });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(RegistryBuildError);
    expect((error as RegistryBuildError).violations).toContainEqual(expect.objectContaining({ pointer: '/templates/1/version', code: 'PATTERN' }));
    expect((error as Error).message).toMatch(/\/templates\/1\/version: must be MAJOR\.MINOR\.PATCH.*\[b@1\.0\]/);
  });

  it('leaves out ids that cannot be file names, and refuses duplicate versions without writing anything', async () => {
    const outDir = await tempDir();
    const bad = version('x', '1.0.0');
    bad.manifest.name = '../escape';
    const result = await buildRegistry(memorySource([bad, version('a', '1.0.0')]), { outDir, now: () => T1 });
    expect(result.skipped.map((s) => s.id)).toEqual(['../escape']);
    expect(result.document.templates.map((e) => e.id)).toEqual(['a']);
    const otherOut = await tempDir();
    await expect(buildRegistry(memorySource([version('a', '1.0.0'), version('a', '1.0.0')]), { outDir: otherOut, now: () => T1 })).rejects.toThrow(
      /a@1\.0\.0 appears more than once/,
    );
    expect(await listFiles(otherOut)).toEqual([]);
  });

  it('refuses to drop every template of an existing registry.json unless allowEmpty', async () => {
    const outDir = await tempDir();
    await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir, now: () => T1 });
    const before = await readFile(path.join(outDir, 'registry.json'));
    await expect(buildRegistry(memorySource([]), { outDir, now: () => T2, allowEmpty: false })).rejects.toThrow(/would drop all 1 entries/);
    expect(await readFile(path.join(outDir, 'registry.json'))).toEqual(before);
    const emptied = await buildRegistry(memorySource([]), { outDir, now: () => T2, allowEmpty: true });
    expect(emptied.document.templates).toEqual([]);
  });

  it('removes the files of templates that are gone, and only those', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('keep', '1.0.0'), version('gone', '1.0.0')]);
    await buildRegistry(source, { outDir, now: () => T1 });
    await writeFile(path.join(outDir, 'templates', 'README.txt'), 'not ours\n');
    // Variants of template files, as an older release wrote them: stale once the file changes.
    await writeFile(path.join(outDir, 'templates', 'keep.json.gz'), 'old');
    await writeFile(path.join(outDir, 'templates', 'keep.json.br'), 'old');
    expect(await listFiles(path.join(outDir, 'templates'))).toContain('gone.json');

    source.list = [version('keep', '1.0.0')];
    const result = await buildRegistry(source, { outDir, now: () => T2 });
    expect(result.removed.sort()).toEqual(['templates/gone.json', 'templates/keep.json.br', 'templates/keep.json.gz']);
    expect(await listFiles(path.join(outDir, 'templates'))).toEqual(['README.txt', 'keep.json']);
  });

  it('recreates missing files of an unchanged registry without moving lastUpdated', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('a', '1.0.0')]);
    await buildRegistry(source, { outDir, now: () => T1 });
    const registry = await readFile(path.join(outDir, 'registry.json'));
    // As a Pages workflow does: start from the deployed registry.json only.
    const fresh = await tempDir();
    await mkdir(fresh, { recursive: true });
    await writeFile(path.join(fresh, 'registry.json'), registry);
    const result = await buildRegistry(source, { outDir: fresh, now: () => T2 });
    expect(result.changed).toBe(false);
    expect(result.document.lastUpdated).toBe(T1.toISOString());
    expect(await listFiles(fresh)).toEqual(await listFiles(outDir));
    expect(result.written).not.toContain('registry.json');
  });

  it('removes temp files a crashed build left behind, but not recent ones', async () => {
    const outDir = await tempDir();
    await mkdir(path.join(outDir, 'templates'));
    const old = path.join(outDir, 'templates', '.a.json.4242.0123456789ab.tmp');
    const recent = path.join(outDir, '.registry.json.4242.ba9876543210.tmp');
    await writeFile(old, 'half');
    await writeFile(recent, 'in progress');
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(old, hourAgo, hourAgo);
    await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir, now: () => T1 });
    const files = await listFiles(outDir);
    expect(files).not.toContain('templates/.a.json.4242.0123456789ab.tmp');
    expect(files).toContain('.registry.json.4242.ba9876543210.tmp');
    expect(files.filter((f) => f.endsWith('.tmp'))).toHaveLength(1);
  });

  it('replaces an unreadable registry.json as changed', async () => {
    const outDir = await tempDir();
    await writeFile(path.join(outDir, 'registry.json'), '{ not json');
    const result = await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir, now: () => T1 });
    expect(result.changed).toBe(true);
    expect((await readJson<RegistryDocument>(path.join(outDir, 'registry.json'))).lastUpdated).toBe(T1.toISOString());
  });

  it('builds an empty but valid registry from an empty source', async () => {
    const outDir = await tempDir();
    const { document } = await buildRegistry(memorySource([]), { outDir, now: () => T1 });
    expect(document).toMatchObject({ templates: [], tags: [], lastUpdated: T1.toISOString() });
    expect(document.categories).toHaveLength(5);
    expect(await listFiles(outDir)).toContain('index.html');
  });
});
