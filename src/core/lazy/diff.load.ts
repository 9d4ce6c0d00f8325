import * as diff from './diff.js';

/** jsdiff, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadDiff = (): typeof diff => diff;
