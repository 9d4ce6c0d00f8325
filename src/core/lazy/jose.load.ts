import * as jose from './jose.js';

/** jose, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadJose = (): typeof jose => jose;
