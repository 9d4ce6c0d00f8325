/**
 * Rebuilds write only what changed: one new version rewrites that template's file and the entry
 * points, nothing else; files changed or lost behind the generator's back are found and repaired.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { buildRegistry, RegistryBuilder } from '../../src/registry/index.js';
import { knownRevision, type ChangesSince, type KnownTemplate, type RegistrySource, type SourceVersion } from '../../src/registry/source.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from './memory-source.js';

const T1 = new Date('2026-05-01T10:00:00.000Z');
const T2 = new Date('2026-05-02T10:00:00.000Z');
const ENTRY_POINTS = ['index.json', 'index.json.gz', 'index.json.br', 'registry.json', 'registry.json.gz', 'registry.json.br'];

function manyVersions(): SourceVersion[] {
  return ['alpha', 'beta', 'gamma', 'delta'].flatMap((id) => ['1.0.0', '1.1.0', '2.0.0'].map((v) => version(id, v, { keywords: [id] })));
}

describe('a rebuild after one new version', () => {
  it('rewrites only that template file and the entry points, by a fresh builder as by a kept one', async () => {
    for (const kept of [false, true]) {
      const outDir = await tempDir();
      const source = memorySource(manyVersions());
      const builder = new RegistryBuilder(source, { outDir, now: () => T1, catalog: false });
      await builder.build();
      source.list = [...source.list, version('beta', '2.1.0', { keywords: ['beta'] })];
      const second = kept ? await builder.build() : await buildRegistry(source, { outDir, now: () => T2, catalog: false });
      expect([...second.written].sort()).toEqual(['templates/beta.json', ...ENTRY_POINTS].sort());
      expect(second.changed).toBe(true);
      const beta = JSON.parse(await readFile(path.join(outDir, 'templates/beta.json'), 'utf8')) as { versions: { version: string }[] };
      expect(beta.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0', '2.0.0', '2.1.0']);
    }
  });

  it('gives a kept builder the same bytes as a fresh build of the same versions', async () => {
    const kept = await tempDir();
    const fresh = await tempDir();
    const source = memorySource(manyVersions());
    const builder = new RegistryBuilder(source, { outDir: kept, now: () => T1 });
    await builder.build();
    source.list = [...source.list.slice(1), version('gamma', '3.0.0', {}, { stats: { downloads: 7, stars: 0, forks: 0, issues: 0 } })];
    await builder.build();
    await buildRegistry(source, { outDir: fresh, now: () => T1 });
    for (const file of ['registry.json', 'index.json', 'templates/alpha.json', 'templates/gamma.json', 'index.html']) {
      expect(await readFile(path.join(kept, file), 'utf8'), file).toBe(await readFile(path.join(fresh, file), 'utf8'));
    }
  });
});

describe('files changed behind the generator', () => {
  it('are found and rewritten: a template file edited by hand, a lost variant, a lost template file', async () => {
    const outDir = await tempDir();
    const source = memorySource(manyVersions());
    await buildRegistry(source, { outDir, now: () => T1 });
    const alpha = path.join(outDir, 'templates/alpha.json');
    const original = await readFile(alpha, 'utf8');
    // The same size, other bytes: only a comparison of the content finds it.
    await writeFile(alpha, original.replace('alpha', 'ALPHA'));
    await rm(path.join(outDir, 'registry.json.br'));
    await rm(path.join(outDir, 'templates/delta.json'));

    const repaired = await buildRegistry(source, { outDir, now: () => T2 });
    expect([...repaired.written].sort()).toEqual(['registry.json.br', 'registry.json.gz', 'templates/alpha.json', 'templates/delta.json']);
    expect(repaired.changed).toBe(false);
    expect(await readFile(alpha, 'utf8')).toBe(original);
    expect((await stat(path.join(outDir, 'templates/delta.json'))).isFile()).toBe(true);
  });

  it('without the build state file, are compared by content and left alone when right', async () => {
    const outDir = await tempDir();
    const source = memorySource(manyVersions());
    await buildRegistry(source, { outDir, now: () => T1 });
    await rm(path.join(outDir, '.template-registry-build.json'));
    const again = await buildRegistry(source, { outDir, now: () => T2 });
    expect(again.written).toEqual([]);
    expect(again.changed).toBe(false);
    expect(again.document.lastUpdated).toBe(T1.toISOString());
  });
});

/**
 * A source that says what changed since a build (`templatesSince`), as the store does: a version's
 * `revision` stands for what its entry is made of besides the manifest. Records which templates it read.
 */
function changingSource(versions: SourceVersion[]): RegistrySource & { list: SourceVersion[]; reads: string[][]; whole: number } {
  const copy = (list: SourceVersion[]): SourceVersion[] => list.map((v) => ({ ...structuredClone(v), revision: v.revision ?? '' }));
  const source = {
    list: versions,
    reads: [] as string[][],
    whole: 0,
    versions: () => {
      source.whole += 1;
      return Promise.resolve(copy(source.list));
    },
    templatesSince: (known: ReadonlyMap<string, KnownTemplate>): Promise<ChangesSince> => {
      const byId = new Map<string, SourceVersion[]>();
      for (const v of source.list) byId.set(v.manifest.name, [...(byId.get(v.manifest.name) ?? []), v]);
      const unchanged = new Set<string>();
      const changed: string[] = [];
      for (const [id, list] of byId) {
        const recorded = known.get(id);
        const same =
          recorded?.versions.length === list.length &&
          recorded.versions.every((listed, index) => list.some((v) => v.manifest.version === listed && (v.revision ?? '') === knownRevision(recorded, index)));
        if (same) unchanged.add(id);
        else changed.push(id);
      }
      source.reads.push(changed.sort());
      return Promise.resolve({ unchanged, versions: copy(source.list.filter((v) => changed.includes(v.manifest.name))) });
    },
  };
  return source;
}

describe("the server's builder (one that keeps what it made)", () => {
  it('reads again only the templates that changed since its last build, and writes what a fresh build writes', async () => {
    const kept = await tempDir();
    const source = changingSource(manyVersions());
    const builder = new RegistryBuilder(source, { outDir: kept, now: () => T1 });
    await builder.build();
    expect(source.whole).toBe(1);

    // A new version of beta, new usage numbers for one version of gamma, delta gone.
    source.list = [
      ...source.list.filter((v) => v.manifest.name !== 'delta').map((v) => (v.manifest.name === 'gamma' && v.manifest.version === '1.1.0' ? { ...v, stats: { ...v.stats, downloads: 9 }, revision: '9' } : v)),
      version('beta', '2.1.0', { keywords: ['beta'] }),
    ];
    const second = await builder.build();
    expect(source.whole).toBe(1);
    expect(source.reads.at(-1)).toEqual(['beta', 'gamma']);
    expect([...second.written].sort()).toEqual(['templates/beta.json', 'templates/gamma.json', 'index.html', 'index.html.gz', 'index.html.br', ...ENTRY_POINTS].sort());
    expect(second.removed).toEqual(['templates/delta.json']);

    const fresh = await tempDir();
    await buildRegistry(source, { outDir: fresh, now: () => T1 });
    for (const file of ['registry.json', 'index.json', 'templates/alpha.json', 'templates/beta.json', 'templates/gamma.json', 'index.html']) {
      expect(await readFile(path.join(kept, file), 'utf8'), file).toBe(await readFile(path.join(fresh, file), 'utf8'));
    }
    const gamma = JSON.parse(await readFile(path.join(kept, 'templates/gamma.json'), 'utf8')) as { versions: { version: string; stats: { downloads: number } }[] };
    expect(gamma.versions.find((v) => v.version === '1.1.0')?.stats.downloads).toBe(9);

    // Nothing changed: nothing read, nothing written.
    const third = await builder.build();
    expect(source.reads.at(-1)).toEqual([]);
    expect(third.written).toEqual([]);
    expect(third.changed).toBe(false);
  });

  it('reports a version whose entry breaks the rules at every build, reading its template again each time', async () => {
    const source = changingSource([...manyVersions(), version('beta', '3.0')]);
    const builder = new RegistryBuilder(source, { outDir: await tempDir(), now: () => T1, catalog: false });
    for (let build = 0; build < 3; build++) {
      const result = await builder.build();
      expect(result.skipped.map((s) => `${s.id}@${s.version}`)).toEqual(['beta@3.0']);
    }
    // The first build lists everything; each later one reads beta again.
    expect(source.reads).toEqual([['beta'], ['beta']]);
  });
});
