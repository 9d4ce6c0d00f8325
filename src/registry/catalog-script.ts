/**
 * The catalog page's script: src/catalog/browser/main.ts and what it imports (core's listing order
 * and search, the catalog's views), bundled by esbuild into one minified script at build time
 * (scripts/build-catalog.js). This file stands in for it in the sources: `npm run build` writes the
 * bundle's module in its place under build/, the action bundles and the tests (vitest.config.ts)
 * load that module instead of this one. Run from the sources any other way, it says so.
 */
export const CATALOG_SCRIPT: string = notBundled();

function notBundled(): string {
  throw new Error('the catalog page script is bundled at build time: run `npm run build` (scripts/build-catalog.js) and use build/, or run the tests through vitest');
}
