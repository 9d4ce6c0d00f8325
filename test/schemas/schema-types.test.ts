import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { SCHEMA_TYPES_PATH, generateSchemaTypes } from '../../scripts/generate-types.js';

const typesFile = fileURLToPath(new URL(`../../${SCHEMA_TYPES_PATH}`, import.meta.url));

describe('src/core/schema-types.ts', () => {
  it('is exactly what scripts/generate-types.ts generates from the schemas', async () => {
    const generated = await generateSchemaTypes();
    if (process.env.UPDATE_SCHEMA_TYPES === '1') {
      await writeFile(typesFile, generated);
      return;
    }
    const committed = await readFile(typesFile, 'utf8').catch(() => '');
    // The message comes first in the report; the diff below it shows what changed.
    expect(committed, `${SCHEMA_TYPES_PATH} is out of date with schemas/: run \`npm run gen:types\``).toBe(generated);
  });

  it('generates the same text twice (no timestamps or other unstable parts)', async () => {
    expect(await generateSchemaTypes()).toBe(await generateSchemaTypes());
  });
});
