import * as liquidjs from './liquidjs.js';

/** liquidjs, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadLiquidjs = (): typeof liquidjs => liquidjs;
