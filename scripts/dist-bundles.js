// How the GitHub Actions of this repository are bundled: scripts/build-dist.js builds dist/ with
// these options, and the bundle end-to-end tests build a fresh copy with the same ones.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { catalogScriptPlugin } from './build-catalog.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The bundles: output name (under the out folder) -> entry module. */
export const DIST_ENTRY_POINTS = {
  'action/index': path.join(root, 'src/action/index.ts'),
  'registry-action/index': path.join(root, 'src/registry-action/index.ts'),
  'sync-action/index': path.join(root, 'src/sync-action/index.ts'),
};

/** esbuild options that bundle `entryPoints` (default every action) into `outdir`. */
export function distBuildOptions(outdir, entryPoints = DIST_ENTRY_POINTS) {
  return {
    entryPoints,
    outdir,
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: 'import{createRequire}from"node:module";const require=createRequire(import.meta.url);' },
    // jsonc-parser's `main` is a UMD build whose requires esbuild cannot follow (they go through the
    // factory's own `require` parameter): bundle its ES module build instead.
    alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
    legalComments: 'none',
    // The registry action builds catalogs: the page's script is bundled from its browser entry.
    plugins: [catalogScriptPlugin()],
    logLevel: 'warning',
  };
}
