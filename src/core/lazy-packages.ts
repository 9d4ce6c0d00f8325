/**
 * The npm packages that cost most to load (parse and evaluate), reached through one accessor each,
 * called where a package is used, never at import: `lazyPackages.liquidjs().Tokenizer`.
 *
 * Here (the sources, the server package, the actions) each is imported with this module. The
 * consumer package (scripts/package-bundles.js) puts another module in this one's place, which
 * loads each on first call, synchronously, from a CommonJS file of its own beside the bundle
 * (`vendor-<name>.cjs`, built from `lazy/<name>.ts`): `import('template-registry')` then neither
 * parses nor evaluates them, and the sync API stays sync. A package listed here is imported
 * nowhere else (the consumer build refuses it), so the bundle holds one copy of it.
 */
import * as ajv from './lazy/ajv.js';
import * as liquidjs from './lazy/liquidjs.js';
import * as re2js from './lazy/re2js.js';
import * as tar from './lazy/tar.js';

export const lazyPackages = {
  ajv: (): typeof ajv => ajv,
  liquidjs: (): typeof liquidjs => liquidjs,
  re2js: (): typeof re2js => re2js,
  tar: (): typeof tar => tar,
};
