import * as semver from './semver.js';

/** semver, on first use in the consumer package: see scripts/package-bundles.js (here, imported with this module). */
export const loadSemver = (): typeof semver => semver;
