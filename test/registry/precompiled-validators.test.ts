import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { generateValidators, PRECOMPILED, PRECOMPILED_VALIDATORS_PATH } from '../../scripts/generate-validators.js';
import { createAjv, schemas } from '../../src/core/schemas.js';
import * as precompiled from '../../src/registry/precompiled-validators.js';

const moduleFile = fileURLToPath(new URL(`../../${PRECOMPILED_VALIDATORS_PATH}`, import.meta.url));

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null };

const entry = {
  id: 'svc',
  name: 'svc',
  version: '1.2.3',
  description: 'A service',
  category: 'backend',
  stability: 'stable',
  downloadUrl: 'https://example.test/svc-1.2.3.tgz',
  createdAt: '2026-01-02T03:04:05Z',
};

/** Entries and documents that break different rules: types, patterns, formats (date-time, semver-range), enums, lengths, required fields. */
const entryCases: unknown[] = [
  entry,
  { ...entry, version: '01.2.3' },
  { ...entry, stability: 'gold', id: '' },
  { ...entry, createdAt: 'yesterday' },
  { ...entry, methodologyVersion: 'not a range ~~' },
  { ...entry, name: 'x'.repeat(215), downloadUrl: 42 },
  { id: 'only-an-id' },
  'not an object',
];
const documentCases: unknown[] = [
  { templates: [entry], categories: [{ id: 'backend', name: 'Backend' }], lastUpdated: '2026-01-02T03:04:05Z' },
  { templates: [{ ...entry, version: 'v1' }], categories: 'none', lastUpdated: 'soon' },
  { templates: 'none' },
];

describe('src/registry/precompiled-validators.ts', () => {
  it('is exactly the standalone code Ajv makes of the schemas now', async () => {
    const generated = generateValidators();
    if (process.env.UPDATE_VALIDATORS === '1') {
      await writeFile(moduleFile, generated);
      return;
    }
    const committed = await readFile(moduleFile, 'utf8').catch(() => '');
    expect(committed === generated, `${PRECOMPILED_VALIDATORS_PATH} is out of date with schemas/: run \`npm run gen:validators\``).toBe(true);
  });

  it('gives the same verdict and the same errors as the validators compiled at run time', () => {
    const ajv = createAjv({ validateSchema: false });
    for (const [exported, name] of Object.entries(PRECOMPILED)) {
      const compiled = ajv.getSchema(schemas[name].$id) as Validate;
      const built = (precompiled.bySchema as Record<string, Validate>)[name] as Validate;
      expect(typeof built, exported).toBe('function');
      const cases = name === 'template-entry' ? entryCases : documentCases;
      for (const data of cases) {
        const verdict = compiled(data);
        expect(built(data), `${name}: ${JSON.stringify(data).slice(0, 80)}`).toBe(verdict);
        expect(built.errors ?? null).toEqual(compiled.errors ?? null);
      }
    }
  });
});
