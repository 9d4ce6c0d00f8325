import * as ssri from './ssri.js';

/** ssri, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadSsri = (): typeof ssri => ssri;
