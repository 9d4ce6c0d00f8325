import * as jsonc from './jsonc.js';

/** jsonc-parser, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadJsonc = (): typeof jsonc => jsonc;
