import type { Metafile } from 'esbuild';

/** Packages only the server commands use: never in the consumer bundle. */
export declare const SERVER_ONLY_PACKAGES: readonly RegExp[];
/** The consumer package's entries: output name (under build/lib) -> module. */
export declare const CONSUMER_ENTRIES: Readonly<Record<string, string>>;
/** The server package's entries (under packages/server/lib). */
export declare const SERVER_ENTRIES: Readonly<Record<string, string>>;
/** The faces of src/core/lazy/ (packages loaded on first use): name -> the npm packages it imports. */
export declare function lazyPackageModules(): Promise<Record<string, string[]>>;
/** Builds the consumer bundle into `outdir` (default build/lib); resolves to its metafile. */
export declare function buildConsumer(outdir?: string): Promise<Metafile>;
/** Builds the server bundle into `outdir` (default packages/server/lib). */
export declare function buildServer(outdir?: string): Promise<Metafile>;
