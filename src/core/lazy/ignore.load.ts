import * as ignore from './ignore.js';

/** ignore (.gitignore rules), on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadIgnore = (): typeof ignore => ignore;
