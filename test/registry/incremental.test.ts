/**
 * Rebuilds write only what changed: one new version rewrites that template's file and the entry
 * points, nothing else; files changed or lost behind the generator's back are found and repaired.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { buildRegistry, RegistryBuilder } from '../../src/registry/index.js';
import type { SourceVersion } from '../../src/registry/source.js';
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
