import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { SCHEMA_BASE, getValidator, isValidRange, schemaErrors, schemas, type SchemaName } from '../../src/core/index.js';

const schemaDir = fileURLToPath(new URL('../../schemas/', import.meta.url));
const files = readdirSync(schemaDir)
  .filter((file) => file.endsWith('.schema.json'))
  .sort();
const names = Object.keys(schemas) as SchemaName[];

/** Every `$ref` value in a schema. */
function refsOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsOf(item, found);
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else refsOf(value, found);
    }
  }
  return found;
}

describe('schema registry', () => {
  it('registers every file of schemas/ under its short name, and nothing else', () => {
    expect(names.map((name) => `${name}.schema.json`).sort()).toEqual(files);
  });

  it.each(names)('%s has the stable $id, draft 2020-12, a title and a description', (name) => {
    const schema = schemas[name] as Record<string, unknown>;
    expect(schema.$id).toBe(`${SCHEMA_BASE}${name}.schema.json`);
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toMatch(/^[A-Z][A-Za-z]+$/);
    expect(schema.description).toEqual(expect.any(String));
  });

  it.each(names)('%s compiles in strict mode, with every $ref resolved offline', (name) => {
    expect(() => getValidator(name)).not.toThrow();
  });

  it.each(names)('%s refers to other schemas only by their absolute $id', (name) => {
    for (const ref of refsOf(schemas[name])) {
      if (ref.startsWith('#')) continue;
      const [base = ''] = ref.split('#');
      expect(base.startsWith(SCHEMA_BASE), ref).toBe(true);
      expect(files, ref).toContain(base.slice(SCHEMA_BASE.length));
    }
  });

  it('compiles each validator once', () => {
    expect(getValidator('template-entry')).toBe(getValidator('template-entry'));
  });

  it('throws for an unknown schema name', () => {
    expect(() => getValidator('no-such-schema' as SchemaName)).toThrow('unknown schema "no-such-schema"');
  });

  it('returns no errors for valid data and all errors (not just the first) for invalid data', () => {
    expect(schemaErrors('category', { id: 'a', name: 'A' })).toEqual([]);
    const errors = schemaErrors('category', { id: '', name: '' });
    expect(errors.map((e) => e.instancePath).sort()).toEqual(['/id', '/name']);
  });
});

describe('isValidRange (the semver-range format)', () => {
  it.each(['1.2.3', '^20', '>=1.0.0 <2', '1.x', '*', '~1.2', '>=18 || >=20.1', '20 - 22'])('accepts %s', (range) => {
    expect(isValidRange(range)).toBe(true);
  });

  it.each(['', '   ', 'latest', 'not a range', '>>1', '1.2.3.4', '^^1'])('rejects "%s"', (range) => {
    expect(isValidRange(range)).toBe(false);
  });
});
