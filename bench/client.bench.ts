/**
 * RegistryClient on a generated 100,000-entry registry: index build, first load, and the reader
 * operations after the first load (all from memory, no request).
 *
 * Run: npx vitest bench --run bench/client.bench.ts
 */
import { bench, describe } from 'vitest';

import { RegistryClient } from '../src/client/index.js';
import { buildIndex } from '../src/client/registry-client.js';
import type { RegistryDocument, TemplateEntry } from '../src/core/schema-types.js';

const ENTRIES = 100_000;
const VERSIONS_PER_TEMPLATE = 5;
const CATEGORIES = ['frontend', 'backend', 'fullstack', 'mobile', 'desktop'] as const;
const STABILITIES = ['stable', 'beta', 'experimental', 'deprecated'] as const;
const FEATURES = ['auth', 'database', 'api', 'testing', 'docker'] as const;
const WORDS = ['react', 'node', 'rust', 'service', 'static', 'graphql', 'rest', 'worker', 'cli', 'desktop', 'mobile', 'server', 'edge', 'queue', 'stream'];

/** Deterministic pseudo-random numbers (mulberry32), so every run measures the same registry. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generate(count: number): RegistryDocument {
  const next = random(42);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const templates: TemplateEntry[] = [];
  for (let i = 0; templates.length < count; i++) {
    const id = `tpl-${i.toString(36)}-${pick(WORDS)}`;
    const category = pick(CATEGORIES);
    const tags = [...new Set([pick(WORDS), pick(WORDS), `tag-${Math.floor(next() * 200)}`])];
    const features = FEATURES.filter(() => next() < 0.4);
    const author = { name: `author-${Math.floor(next() * 1000)}` };
    for (let v = 0; v < VERSIONS_PER_TEMPLATE && templates.length < count; v++) {
      templates.push({
        id,
        name: id,
        version: `1.${v * 3}.${Math.floor(next() * 12)}`,
        description: `A ${pick(WORDS)} ${category} template with ${features.join(' and ') || 'nothing'} for ${pick(WORDS)} projects`,
        category,
        stability: pick(STABILITIES),
        downloadUrl: `https://registry.example.test/templates/${id}/${v}.tgz`,
        author,
        tags,
        features,
        stats: { downloads: Math.floor(next() * 100_000), stars: 0, forks: 0, issues: 0 },
      });
    }
  }
  return {
    templates,
    categories: CATEGORIES.map((id) => ({ id, name: id, description: id, icon: 'folder', templates: [] })),
    tags: [...new Set(templates.flatMap((t) => t.tags ?? []))],
    lastUpdated: '2026-01-01T00:00:00.000Z',
  };
}

const document = generate(ENTRIES);
const body = JSON.stringify(document);
const registryUrl = 'https://registry.example.test/registry.json';
const serve: typeof globalThis.fetch = () => Promise.resolve(new Response(body, { headers: { etag: '"bench"' } }));

const client = new RegistryClient({ registryUrl, fetch: serve });
await client.refresh();
const someId = document.templates[31_337]!.id;
const someVersion = document.templates[31_337]!.version;

describe(`index (${ENTRIES.toLocaleString('en')} entries, ${(body.length / 1024 / 1024).toFixed(0)} MiB of JSON)`, () => {
  bench('buildIndex (sort + all indexes + search text)', () => {
    buildIndex(document);
  }, { iterations: 5, time: 0 });

  bench('first load: fetch + JSON.parse + schema validation + buildIndex', async () => {
    await new RegistryClient({ registryUrl, fetch: serve }).refresh();
  }, { iterations: 5, time: 0 });
});

describe('reader operations after the first load', () => {
  bench('listTemplates() (all 100k, listing order)', async () => {
    await client.listTemplates();
  });
  bench('listTemplates({ category })', async () => {
    await client.listTemplates({ category: 'backend' });
  });
  bench('listTemplates({ category, stability, tags: [2], features: [1] })', async () => {
    await client.listTemplates({ category: 'backend', stability: 'stable', tags: ['node', 'tag-7'], features: ['api'] });
  });
  bench('listTemplates({ author })', async () => {
    await client.listTemplates({ author: 'author-123' });
  });
  bench('getTemplate(id)', async () => {
    await client.getTemplate(someId);
  });
  bench('getTemplate(id, version)', async () => {
    await client.getTemplate(someId, someVersion);
  });
  bench('search("graphql") (one term)', async () => {
    await client.search('graphql');
  });
  bench('search("Node API docker") (three terms)', async () => {
    await client.search('Node API docker');
  });
  bench('search("no-such-term") (no match)', async () => {
    await client.search('no-such-term');
  });
});
