import * as ajv from './ajv.js';

/** Ajv and its formats, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadAjv = (): typeof ajv => ajv;
