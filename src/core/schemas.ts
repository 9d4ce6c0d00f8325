// Draft 2020-12 needs Ajv's 2020 build; the default `ajv` export only knows draft-07.
import type { Ajv2020, AnySchema, ErrorObject, Options, ValidateFunction } from 'ajv/dist/2020.js';
import templateManifest from '../../schemas/template-manifest.schema.json' with { type: 'json' };
import templateVariables from '../../schemas/template-variables.schema.json' with { type: 'json' };
import templatePrompts from '../../schemas/template-prompts.schema.json' with { type: 'json' };
import { loadAjv } from './lazy/ajv.load.js';
import { extraSchemas } from './schema-registry.js';
import { withPlainUtcDateTime } from './date-time-format.js';
import { isValidRange } from './versions.js';

export const SCHEMA_BASE = 'https://template-registry.dev/schemas/';

const allSchemas = {
  'template-manifest': templateManifest,
  'template-variables': templateVariables,
  'template-prompts': templatePrompts,
  ...extraSchemas,
};

/** Short name of a schema in `schemas/`: its file name without `.schema.json`. */
export type SchemaName = keyof typeof allSchemas;

/** Every schema in `schemas/`, by its short name (the file name without `.schema.json`). */
export const schemas: Readonly<Record<SchemaName, AnySchema & { $id: string }>> = allSchemas;

/**
 * An Ajv with this project's formats, keywords and every schema of `schemas/` added (by `$id`):
 * the one validator of the project. `options` adds to the defaults (e.g. `coerceTypes` for query
 * strings, which arrive as text).
 */
export function createAjv(options: Options = {}): Ajv2020 {
  const { Ajv2020, addFormats, fullFormats } = loadAjv();
  // Ajv's optimizing pass over the code it generates costs a quarter of a schema's compile time (the
  // four schemas `validate` and a rebuild need: about 100 ms in a fresh process, 75 without it), and
  // the validators it leaves run no slower here (10,000 registry entries checked in the same time).
  const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true, allowUnionTypes: true, ...options, code: { optimize: false, ...options.code } });
  addFormats(ajv);
  ajv.addFormat('date-time', withPlainUtcDateTime(fullFormats['date-time']));
  ajv.addFormat('semver-range', { type: 'string', validate: isValidRange });
  // Human wording for a schema rule lives next to the rule, as `x-messages: { <keyword>: <text> }`.
  ajv.addKeyword({ keyword: 'x-messages', schemaType: 'object' });
  // Added, not compiled: each schema is compiled on first use. Cross-schema `$ref`s use the absolute `$id`s.
  for (const schema of Object.values(schemas)) ajv.addSchema(schema);
  return ajv;
}

let sharedAjv: Ajv2020 | undefined;
const validators = new Map<SchemaName, ValidateFunction>();

/** The compiled validator of one schema; compiled once per process, on first use. */
export function getValidator(name: SchemaName): ValidateFunction {
  let validate = validators.get(name);
  if (!validate) {
    // Only this project's schemas: test/schemas/meta-schema.test.ts checks them against the 2020-12
    // meta-schema, so no process compiles that meta-schema again just to check them (it was a third of validate's start-up).
    sharedAjv ??= createAjv({ validateSchema: false });
    const schema = schemas[name] as (AnySchema & { $id: string }) | undefined;
    if (!schema) throw new Error(`unknown schema "${name}"`);
    validate = sharedAjv.getSchema(schema.$id);
    if (!validate) throw new Error(`schema "${name}" did not compile`);
    validators.set(name, validate);
  }
  return validate;
}

/** What checking a value needs of a validator: its verdict, and its errors when it says no. */
export type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** Validators compiled at build time (see usePrecompiledValidators), by schema. */
const precompiledValidators = new Map<SchemaName, Validator>();

/**
 * Validators compiled at build time from these schemas with these options (Ajv's standalone code,
 * src/registry/precompiled-validators.ts): `schemaErrors` uses them instead of compiling the schemas
 * in this process (`getValidator` still compiles, for callers that want Ajv's own function).
 */
export function usePrecompiledValidators(precompiled: Partial<Record<SchemaName, Validator>>): void {
  for (const [name, validate] of Object.entries(precompiled)) if (validate) precompiledValidators.set(name as SchemaName, validate);
}

/** Validates `data` against a schema; returns ajv's raw errors (all of them), empty when valid. */
export function schemaErrors(name: SchemaName, data: unknown): ErrorObject[] {
  const validate = precompiledValidators.get(name) ?? getValidator(name);
  return validate(data) ? [] : [...(validate.errors ?? [])];
}
