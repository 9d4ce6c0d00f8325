import { describe, expect, it } from 'vitest';

import { createAjv, schemas } from '../../src/core/schemas.js';

describe('the schemas of schemas/', () => {
  it('are each valid JSON Schema 2020-12 (the validators skip that check at run time)', () => {
    const ajv = createAjv();
    const invalid = Object.entries(schemas)
      .filter(([, schema]) => ajv.validateSchema(schema) !== true)
      .map(([name]) => `${name}: ${ajv.errorsText(ajv.errors)}`);
    expect(invalid).toEqual([]);
    expect(Object.keys(schemas).length).toBeGreaterThan(5);
  });
});
