import * as re2js from './re2js.js';

/** re2js, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadRe2js = (): typeof re2js => re2js;
