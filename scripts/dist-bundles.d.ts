import type { BuildOptions } from 'esbuild';

/** The bundles: output name (under the out folder) -> entry module. */
export declare const DIST_ENTRY_POINTS: Readonly<Record<'action/index' | 'registry-action/index' | 'sync-action/index', string>>;
/** esbuild options that bundle `entryPoints` (default every action) into `outdir`. */
export declare function distBuildOptions(outdir: string, entryPoints?: Readonly<Record<string, string>>): BuildOptions;
