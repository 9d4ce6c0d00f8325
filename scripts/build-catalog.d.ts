import type { BuildOptions, Plugin } from 'esbuild';

/** The browser entry of the catalog page. */
export declare const CATALOG_ENTRY: string;
/** The module the page's script is imported from (generated, committed). */
export declare const CATALOG_SCRIPT_MODULE: string;
/** Where `npm run build` writes that module. */
export declare const BUILT_CATALOG_SCRIPT_MODULE: string;
/** esbuild options of the page's script. */
export declare function catalogBundleOptions(): BuildOptions;
/** The bundled script, and the source files it was made of (relative to the repository). */
export declare function bundleCatalogScript(): Promise<{ text: string; inputs: string[] }>;
/** The module src/registry/catalog-script.ts (`typescript`) or its compiled form. */
export declare function catalogScriptModule(typescript?: boolean): Promise<string>;
/** Writes src/registry/catalog-script.ts from the sources. */
export declare function writeCatalogScriptSource(): Promise<void>;
/** esbuild plugin (the action bundles): the page's script in place of its stand-in. */
export declare function catalogScriptPlugin(): Plugin;
/** Vite plugin (vitest runs the sources): the page's script in place of its stand-in. */
export declare function catalogScriptVitePlugin(): { name: string; enforce: 'pre'; load(id: string): Promise<string | undefined> };
/** Writes the module of the page's script into build/. */
export declare function writeBuiltCatalogScript(): Promise<void>;
