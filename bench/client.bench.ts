/**
 * RegistryClient on a generated 100,000-entry registry: index build, first load, and the reader
 * operations after the first load (all from memory, no request). The same registry and the same
 * fake fetch as bench/client-speed.js, which compares the figures with their floors.
 *
 * Run: npx vitest bench --run bench/client.bench.ts
 */
import { bench, describe } from 'vitest';

import { RegistryClient } from '../src/client/index.js';
import { buildIndex } from '../src/client/registry-client.js';

import { chunkedFetch, ENTRIES, generateRegistry, REGISTRY_URL } from './fixtures/registry-100k.js';

const document = generateRegistry(ENTRIES);
const bytes = Buffer.from(JSON.stringify(document));
const registryUrl = REGISTRY_URL;
const serve = chunkedFetch(bytes);

const client = new RegistryClient({ registryUrl, fetch: serve });
await client.refresh();
const someId = document.templates[31_337]!.id;
const someVersion = document.templates[31_337]!.version;

describe(`index (${ENTRIES.toLocaleString('en')} entries, ${(bytes.length / 1024 / 1024).toFixed(0)} MiB of JSON)`, () => {
  bench('every index (listing order, id map, filter lists, token index), built on first use otherwise', () => {
    buildIndex(document).buildAll();
  }, { iterations: 5, time: 0 });

  bench('first load: fetch + decode + JSON.parse + schema validation', async () => {
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
