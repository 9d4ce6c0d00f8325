#!/usr/bin/env node
// Bundles the GitHub Actions of this repository into dist/ (committed; CI fails when it is stale).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { distBuildOptions } from './dist-bundles.js';

await build(distBuildOptions(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist')));
