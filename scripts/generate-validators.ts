/**
 * Generates `src/registry/precompiled-validators.ts`: the validators of the registry's entry and
 * document schemas as Ajv's standalone code, compiled from `schemas/` with the project's one Ajv
 * (`createAjv`, the options `getValidator` uses), so that a process that builds a registry does not
 * load Ajv and compile them at start (about 50 ms of every fresh rebuild).
 *
 * The code is what Ajv would compile at run time, errors included (verbose: each error carries its
 * schema, so the `x-messages` wording reads the same). What Ajv leaves as `require()` of its runtime
 * helpers becomes an import, and the formats it does not inline come from the same modules
 * `createAjv` takes them from (ajv-formats' full formats, `semver-range` from core/versions.ts).
 *
 * Used by test/registry/precompiled-validators.test.ts, which compares the output with the committed
 * file and rewrites it when UPDATE_VALIDATORS=1 (`npm run gen:validators`).
 */
import { createRequire } from 'node:module';

import { _ } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';

import { createAjv, schemas, type SchemaName } from '../src/core/schemas.js';

export const PRECOMPILED_VALIDATORS_PATH = 'src/registry/precompiled-validators.ts';

/** The schemas precompiled, by the name of the export that validates each. */
export const PRECOMPILED: Readonly<Record<string, SchemaName>> = { templateEntry: 'template-entry', registryDocument: 'registry-document' };

const BANNER = `/* eslint-disable */
// Generated from schemas/template-entry.schema.json and schemas/registry-document.schema.json by
// scripts/generate-validators.ts (Ajv's standalone code): do not edit. After changing a schema: npm run gen:validators
// @ts-nocheck`;

const require = createRequire(import.meta.url);
const standaloneCode = (require('ajv/dist/standalone') as { default: (ajv: Ajv2020, refs: Record<string, string>) => string }).default;

export function generateValidators(): string {
  const ajv = createAjv({ validateSchema: false, code: { source: true, esm: true, formats: _`formats` } });
  const refs = Object.fromEntries(Object.entries(PRECOMPILED).map(([exported, name]) => [exported, schemas[name].$id]));
  let code = standaloneCode(ajv, refs).replace(/^"use strict";/, '');
  // Ajv's runtime helpers, required by the code: imported instead (the same modules).
  const helpers = new Map<string, string>();
  code = code.replace(/require\("([^"]+)"\)/g, (_match, specifier: string) => {
    let binding = helpers.get(specifier);
    if (binding === undefined) {
      binding = `ajvRuntime${helpers.size}`;
      helpers.set(specifier, binding);
    }
    return binding;
  });
  // A helper module is CommonJS with `exports.default`: Node gives module.exports as the default
  // import, a bundler that honours __esModule gives exports.default; either way the code reads `.default`.
  const imports = [...helpers].flatMap(([specifier, binding]) => [
    `import * as ${binding}Module from ${JSON.stringify(specifier.endsWith('.js') ? specifier : `${specifier}.js`)};`,
    `const ${binding} = { default: ${binding}Module.default?.default ?? ${binding}Module.default };`,
  ]);
  return [
    BANNER,
    ...imports,
    "import { fullFormats } from 'ajv-formats/dist/formats.js';",
    "import { withPlainUtcDateTime } from '../core/date-time-format.js';",
    "import { isValidRange } from '../core/versions.js';",
    // The formats createAjv adds (core/schemas.ts).
    "const formats = { ...fullFormats, 'date-time': withPlainUtcDateTime(fullFormats['date-time']), 'semver-range': { type: 'string', validate: isValidRange } };",
    code,
    // By schema name, as core/schemas.ts's usePrecompiledValidators takes them.
    `export const bySchema = { ${Object.entries(PRECOMPILED).map(([exported, name]) => `${JSON.stringify(name)}: ${exported}`).join(', ')} };`,
    '',
  ].join('\n');
}
