import * as picomatch from './picomatch.js';

/** picomatch, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadPicomatch = (): typeof picomatch => picomatch;
