// Version ranges (semver): loaded on first use through ./semver.load.ts.
export { coerce, satisfies, valid, validRange } from 'semver';
