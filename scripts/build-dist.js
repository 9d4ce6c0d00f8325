#!/usr/bin/env node
// Bundles the GitHub Actions of this repository into dist/ (committed; CI fails when it is stale).
import { build } from 'esbuild';

await build({
  entryPoints: { 'action/index': 'src/action/index.ts', 'registry-action/index': 'src/registry-action/index.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  banner: { js: 'import{createRequire}from"node:module";const require=createRequire(import.meta.url);' },
  legalComments: 'none',
  logLevel: 'warning',
});
