import * as tar from './tar.js';

/** tar and node:zlib, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadTar = (): typeof tar => tar;
