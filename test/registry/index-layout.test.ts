/**
 * index.json in its columns layout (formatVersion 2): what the generator writes, read back by the
 * client as the very lines of the document, and a quarter smaller compressed than the lines layout.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { columnsToLines, indexColumns, indexLines, IndexLayoutError, type IndexLines } from '../../src/core/registry-index.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { buildRegistry } from '../../src/registry/index.js';
import { buildSparseIndex } from '../../src/registry/document.js';
import { tempDir } from '../helpers/fixtures.js';
import { startStaticServer } from '../helpers/static-server.js';
import { memorySource, version } from './memory-source.js';

const NOW = () => new Date('2026-05-01T10:00:00.000Z');

describe('index.json', () => {
  it('is written in the columns layout, valid by the schema, and stands for exactly the lines of the registry', async () => {
    const outDir = await tempDir();
    const result = await buildRegistry(
      memorySource([
        version('alpha', '1.0.0', { keywords: ['api', 'node'], features: ['auth'] }),
        version('beta', '0.1.0', { stability: 'beta' }, { stats: { downloads: 7, stars: 0, forks: 0, issues: 0 } }),
      ]),
      { outDir, now: NOW, catalog: false },
    );
    const written = JSON.parse(await readFile(path.join(outDir, 'index.json'), 'utf8')) as Record<string, unknown>;
    expect(written.formatVersion).toBe(2);
    expect(written.templates).toBeUndefined();
    expect(schemaErrors('registry-index', written)).toEqual([]);
    expect(written.columns).toMatchObject({ id: ['alpha', 'beta'], tags: [['api', 'node'], null], downloads: [0, 7] });
    expect(indexLines(written)).toEqual(buildSparseIndex(result.document));
  });

  it('is read by the client (sparse mode) from either layout', async () => {
    const outDir = await tempDir();
    const result = await buildRegistry(memorySource([version('alpha', '1.0.0'), version('alpha', '1.1.0')]), { outDir, now: NOW, catalog: false });
    const host = await startStaticServer(outDir);
    try {
      const columns = new RegistryClient({ registryUrl: `${host.url}/registry.json`, mode: 'sparse' });
      expect(await columns.index()).toEqual(buildSparseIndex(result.document));
      expect((await columns.getTemplate('alpha'))?.version).toBe('1.1.0');
      // A registry built by an older release (or another implementation) publishes lines.
      await writeFile(path.join(outDir, 'index.json'), JSON.stringify(buildSparseIndex(result.document)));
      const lines = new RegistryClient({ registryUrl: `${host.url}/registry.json`, mode: 'sparse' });
      expect((await lines.getTemplate('alpha'))?.version).toBe('1.1.0');
    } finally {
      await host.close();
    }
  });

  it('of an empty registry is valid too', () => {
    const empty = indexColumns({ formatVersion: 1, lastUpdated: '2026-01-01T00:00:00.000Z', templates: [] });
    expect(schemaErrors('registry-index', empty)).toEqual([]);
    expect(indexLines(empty)).toEqual({ formatVersion: 1, lastUpdated: '2026-01-01T00:00:00.000Z', templates: [] });
  });

  it('refuses columns of different lengths naming the column, and never sets a prototype', () => {
    const index = indexColumns({ formatVersion: 1, lastUpdated: '2026-01-01T00:00:00.000Z', templates: [{ id: 'a', version: '1.0.0', stability: 'stable', category: 'backend', description: 'A' }] });
    const columns = index.columns as Record<string, unknown[]>;
    expect(() => indexLines({ ...index, columns: { ...columns, version: [] } })).toThrow(IndexLayoutError);
    expect(() => indexLines({ ...index, columns: { ...columns, version: [] } })).toThrow(/\/columns\/version has 0 items where \/columns\/id has 1/);
    expect(() => indexLines({ ...index, columns: [] })).toThrow(/\/columns must be an object of arrays/);
    const hostile = JSON.parse('{"id":["a"],"__proto__":[{"polluted":true}]}') as unknown;
    const lines = columnsToLines(hostile) as Record<string, unknown>[];
    expect(lines).toEqual([{ id: 'a' }]);
    expect(Object.getPrototypeOf(lines[0])).toBe(Object.prototype);
  });

  it('is at least a fifth smaller gzip than the lines layout for many templates of varied text', () => {
    const words = 'api service node react vue graphql rest docker kubernetes worker queue cli auth postgres redis kafka typescript python go rust testing lint static blog shop'.split(' ');
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = (): string => words[Math.floor(random() * words.length)] as string;
    const lines: IndexLines = {
      formatVersion: 1,
      lastUpdated: '2026-01-01T00:00:00.000Z',
      templates: Array.from({ length: 2000 }, (_, i) => ({
        id: `template-${i.toString(36)}-${pick()}`,
        version: `1.${i % 7}.0`,
        stability: random() < 0.7 ? 'stable' : 'beta',
        category: ['frontend', 'backend', 'fullstack'][i % 3] as string,
        description: `A ${pick()} ${pick()} template with ${pick()} and ${pick()} (${i}).`,
        tags: [pick(), pick(), pick()],
        downloads: 0,
        updatedAt: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
      })),
    };
    const gzipped = (value: unknown): number => gzipSync(JSON.stringify(value), { level: 9 }).length;
    expect(gzipped(indexColumns(lines))).toBeLessThan(0.8 * gzipped(lines));
  });
});
