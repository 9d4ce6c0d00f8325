/**
 * Versions are strict SemVer here, but the spec's pattern (`^\d+\.\d+\.\d+$`) lets another registry
 * list `01.0.0`: such an entry is skipped and reported, and the rest of the document is read.
 */
import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { tempDir } from '../helpers/fixtures.js';
import { templateEntry } from '../helpers/builders.js';

const REGISTRY = 'https://other-registry.test/registry.json';

const entry = (id: string, version: string): TemplateEntry => templateEntry(id, { version, downloadUrl: `https://other-registry.test/${id}-${version}.tgz` });

function documentOf(templates: TemplateEntry[]): RegistryDocument {
  return { templates, categories: [], tags: [], lastUpdated: '2026-01-01T00:00:00.000Z' };
}

/** A fetch answering every request with `document`; counts the requests. */
function serving(document: unknown): { fetch: typeof globalThis.fetch; requests: () => number } {
  let requests = 0;
  return {
    fetch: () => {
      requests++;
      return Promise.resolve(new Response(JSON.stringify(document), { headers: { 'content-type': 'application/json' } }));
    },
    requests: () => requests,
  };
}

const RULE = 'must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits';

describe('a registry document listing a version the version rule cannot read', () => {
  const document = documentOf([entry('demo', '1.0.0'), entry('demo', '01.1.0'), entry('other', '2.0.0'), entry('other', '2.0.1234567890123456')]);

  it('is read without those entries, which are reported one by one', async () => {
    const client = new RegistryClient({ registryUrl: REGISTRY, fetch: serving(document).fetch });
    expect((await client.listTemplates()).map((e) => `${e.id}@${e.version}`)).toEqual(['demo@1.0.0', 'other@2.0.0']);
    expect(await client.getTemplate('demo', '01.1.0')).toBeNull();
    expect((await client.getTemplate('demo'))?.version).toBe('1.0.0');
    expect(client.status().skipped).toEqual([`/templates/1 (demo@01.1.0) is skipped: its version ${RULE}`, `/templates/3 (other@2.0.1234567890123456) is skipped: its version ${RULE}`]);
  });

  it('reports them again when the document is read back from the cache', async () => {
    const cacheDir = await tempDir('tr-unreadable-cache-');
    const first = new RegistryClient({ registryUrl: REGISTRY, cacheDir, fetch: serving(document).fetch });
    await first.listTemplates();
    const offline = serving(document);
    const second = new RegistryClient({ registryUrl: REGISTRY, cacheDir, fetch: offline.fetch });
    expect((await second.listTemplates()).map((e) => e.version)).toEqual(['1.0.0', '2.0.0']);
    expect(offline.requests()).toBe(0);
    expect(second.status()).toMatchObject({ source: 'cache', skipped: [expect.stringContaining('demo@01.1.0'), expect.stringContaining('other@2.0.1234567890123456')] });
  });

  it('reports nothing for a document whose versions are all readable', async () => {
    const client = new RegistryClient({ registryUrl: REGISTRY, fetch: serving(documentOf([entry('demo', '1.0.0')])).fetch });
    await client.listTemplates();
    expect(client.status()).not.toHaveProperty('skipped');
  });

  it('reads past a version that is not MAJOR.MINOR.PATCH at all as well: one odd entry never hides the others', async () => {
    const client = new RegistryClient({ registryUrl: REGISTRY, fetch: serving(documentOf([entry('demo', '1.0.0'), entry('demo', '1.0')])).fetch });
    expect((await client.listTemplates()).map((e) => e.version)).toEqual(['1.0.0']);
    expect(client.status().skipped).toEqual(['/templates/1 (demo@1.0) is skipped: its version "1.0" is not a version (MAJOR.MINOR.PATCH, a prerelease or build suffix allowed)']);
  });

  it('is read past in a sparse registry too: the template file is used without those entries', async () => {
    const files: Record<string, unknown> = {
      'https://other-registry.test/index.json': { formatVersion: 1, lastUpdated: '2026-01-01T00:00:00.000Z', templates: [{ id: 'demo', version: '1.0.0', stability: 'stable', category: 'backend', description: 'The demo template' }] },
      'https://other-registry.test/templates/demo.json': { versions: [entry('demo', '1.0.0'), entry('demo', '01.1.0')] },
    };
    const fetch: typeof globalThis.fetch = (input) => {
      const body = files[input instanceof Request ? input.url : input.toString()];
      return Promise.resolve(body === undefined ? new Response('not found', { status: 404 }) : new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } }));
    };
    const client = new RegistryClient({ registryUrl: REGISTRY, mode: 'sparse', fetch });
    expect((await client.getTemplate('demo'))?.version).toBe('1.0.0');
    expect(await client.getTemplate('demo', '01.1.0')).toBeNull();
    expect(client.status().skipped).toEqual([`file of template demo: /versions/1 (demo@01.1.0) is skipped: its version ${RULE}`]);
  });
});
