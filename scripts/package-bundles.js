#!/usr/bin/env node
// The two npm packages of this repository (see ARCHITECTURE.md, "Package faces"), bundled by esbuild:
//
// - template-registry (the consumer package): build/lib/, one self-contained ES module bundle with its
//   npm dependencies inside (no dependency to install: no native module, no install script), split
//   into chunks so that each command still loads only what it uses (the CLI, cli.js, is bundled on
//   its own: see buildConsumer). src/cli/server-groups.ts is
//   replaced by server-groups-elsewhere.ts: the server commands are not in it, and the build fails
//   if anything in it reaches a server-only package. The npm packages that cost most to load are
//   not in it either (see "Loaded on first use" below).
// - template-registry-server: packages/server/lib/, the full CLI (`cli.js`) and the server's library
//   (`index.js`). The server-only packages (the web server, the database drivers, the AWS SDK,
//   Octokit) stay its dependencies (packages/server/package.json lists each; the build fails when one
//   is missing there); the packages it shares with the consumer are bundled, as in the consumer's.
//
// `npm run build` runs this after tsc; `node scripts/package-bundles.js` alone rebuilds both.
import { cp, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { catalogScriptPlugin } from './build-catalog.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Packages only the server commands use: never in the consumer bundle. */
export const SERVER_ONLY_PACKAGES = [/^fastify$/, /^fastify-plugin$/, /^@fastify\//, /^better-sqlite3$/, /^pg$/, /^@aws-sdk\//, /^@octokit\//, /^@actions\//];

/** SERVER_ONLY_PACKAGES as esbuild's `external` patterns. */
const SERVER_ONLY_EXTERNAL = ['fastify', 'fastify-plugin', '@fastify/*', 'better-sqlite3', 'pg', '@aws-sdk/*', '@octokit/*', '@actions/*'];

/** The consumer package's entries: output name (under build/lib) -> module. */
export const CONSUMER_ENTRIES = {
  index: 'src/index.ts',
  client: 'src/client/index.ts',
  template: 'src/template/index.ts',
  migrate: 'src/migrate/index.ts',
  cli: 'src/cli/index.ts',
};

/** The server package's entries (under packages/server/lib). */
export const SERVER_ENTRIES = {
  index: 'src/server-package.ts',
  cli: 'src/cli/program.ts',
  // The builder's brotli thread runs it from beside the chunk that starts it (registry/brotli-thread.ts).
  'brotli-worker': 'src/registry/brotli-worker.ts',
  // Its file writer thread's, likewise (registry/file-writer-thread.ts).
  'file-writer-worker': 'src/registry/file-writer-worker.ts',
  // The server's build thread's, likewise (server/build-thread.ts).
  'build-worker': 'src/server/build-worker.ts',
};

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  splitting: true,
  chunkNames: 'chunk-[hash]',
  // CommonJS packages inside an ES module bundle call require() for Node's own modules.
  banner: { js: 'import{createRequire as __trCreateRequire}from"node:module";const require=__trCreateRequire(import.meta.url);' },
  // jsonc-parser's `main` is a UMD build esbuild cannot follow (as in scripts/dist-bundles.js).
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
  legalComments: 'none',
  // The ES module build of a package where it has one (liquidjs, ...): no CommonJS wrapper to run at start, and unused parts left out.
  mainFields: ['module', 'main'],
  // Minified (names kept: error classes are told apart by name): parsing is most of what starting costs.
  minify: true,
  keepNames: true,
  metafile: true,
  logLevel: 'warning',
};

// Loaded on first use: the npm packages that cost most to load (parse and run) are reached only
// through src/core/lazy/<name>.load.ts, whose `load<Name>()` is called where the package is used,
// never at import. In the sources (and the server package, the actions) that module simply imports
// the package's face, src/core/lazy/<name>.ts. In the consumer package it is replaced by one that
// require()s `vendor-<name>.cjs` (that face as a CommonJS file of its own, beside the chunks) at the
// first call: `import('template-registry')` neither parses nor runs those packages, and the sync API
// stays sync on every supported Node (require() of CommonJS is synchronous). A package with a face is
// imported nowhere else (the build refuses it), so the bundle holds one copy of it.
const LAZY_DIR = path.join(root, 'src/core/lazy');

/** The faces of src/core/lazy/: name (`<name>.ts`, loaded by `<name>.load.ts`, bundled as `vendor-<name>.cjs`) -> the npm packages it imports. */
export async function lazyPackageModules() {
  const modules = {};
  for (const file of (await readdir(LAZY_DIR)).filter((name) => name.endsWith('.ts') && !name.endsWith('.load.ts')).sort()) {
    const text = await readFile(path.join(LAZY_DIR, file), 'utf8');
    const packages = [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gm)].map((match) => match[1]).filter((specifier) => !specifier.startsWith('node:') && !specifier.startsWith('.'));
    modules[path.basename(file, '.ts')] = [...new Set(packages.map(packageOf))];
  }
  return modules;
}

/** The consumer bundle's src/core/lazy/<name>.load.ts: `load<Name>()` requires the face's own CommonJS file (beside every chunk) on its first call. */
function loaderModule(name) {
  const loader = `load${name[0].toUpperCase()}${name.slice(1)}`;
  return `let loaded;\nexport const ${loader} = () => (loaded ??= require(${JSON.stringify(`./vendor-${name}.cjs`)}));\n`;
}

/**
 * Puts server-groups-elsewhere.ts in server-groups.ts's place, and refuses every server-only package;
 * puts a loader on first use in each src/core/lazy/<name>.load.ts's place, and refuses an import of a
 * package with a face anywhere else (the bundle would hold a second copy, loaded at import).
 */
function consumerFace(lazyModules) {
  const lazyOwner = new Map(Object.entries(lazyModules).flatMap(([name, packages]) => packages.map((pkg) => [pkg, name])));
  return {
    name: 'consumer-face',
    setup(bundler) {
      bundler.onResolve({ filter: /\/server-groups\.js$/ }, (args) => ({ path: path.join(args.resolveDir, 'server-groups-elsewhere.ts') }));
      bundler.onResolve({ filter: /\/lazy\/[a-z0-9]+\.load\.js$/ }, (args) => {
        const name = path.basename(args.path, '.load.js');
        if (!(name in lazyModules)) return { errors: [{ text: `${args.path}: src/core/lazy/ has no face ${name}.ts` }] };
        return { path: name, namespace: 'lazy-loader' };
      });
      bundler.onLoad({ filter: /.*/, namespace: 'lazy-loader' }, (args) => ({ contents: loaderModule(args.path), loader: 'js' }));
      bundler.onResolve({ filter: /^\.\/vendor-[a-z0-9]+\.cjs$/, namespace: 'lazy-loader' }, (args) => ({ path: args.path, external: true }));
      bundler.onResolve({ filter: /^[^./]/ }, (args) => {
        const owner = lazyOwner.get(packageOf(args.path));
        if (owner !== undefined && args.importer.startsWith(path.join(root, 'src'))) {
          return { errors: [{ text: `${args.path} is loaded on first use, imported by ${path.relative(root, args.importer)}: reach it through load${owner[0].toUpperCase()}${owner.slice(1)}() (src/core/lazy/${owner}.load.ts), or the package root loads it at import` }] };
        }
        if (!SERVER_ONLY_PACKAGES.some((pattern) => pattern.test(args.path))) return undefined;
        return { errors: [{ text: `${args.path} is a server-only package, imported by ${path.relative(root, args.importer)}: the consumer package must not hold it (load it in a server command, or lazily where only the server reaches it)` }] };
      });
    },
  };
}

/** The root's import of the CLI (src/cli/index.ts) as an import of the CLI's own bundle, cli.js beside it. */
function cliElsewhere(cliEntry) {
  const cliModule = path.join(root, cliEntry);
  return {
    name: 'cli-elsewhere',
    setup(bundler) {
      bundler.onResolve({ filter: /\/cli\/index\.js$/ }, (args) => (path.join(args.resolveDir, args.path).replace(/\.js$/, '.ts') === cliModule ? { path: './cli.js', external: true } : undefined));
    },
  };
}

/** The npm package a bare import names (`@scope/name` or `name`). */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Builds the consumer bundle into `outdir` (default build/lib); resolves to its metafile. */
export async function buildConsumer(outdir = path.join(root, 'build/lib')) {
  await rm(outdir, { recursive: true, force: true });
  const lazyModules = await lazyPackageModules();
  // The CLI is bundled on its own (its chunks `cli-chunk-*`), and the root's runCli is its cli.js: were its
  // command modules, each loaded on demand, split points of the library's bundle too, the modules the
  // root loads would be cut into as many chunks as there are mixes of commands using them (30 instead of
  // 8), each one more file to resolve, read and link at import. The price: the library code the
  // commands use is in the package twice (runCli's arguments and result are plain values, so no object
  // of one copy meets the other's classes).
  const { cli: cliEntry, ...libraryEntries } = CONSUMER_ENTRIES;
  const library = await build({ ...common, entryPoints: libraryEntries, outdir, plugins: [consumerFace(lazyModules), cliElsewhere(cliEntry)] });
  const cli = await build({ ...common, entryPoints: { cli: cliEntry }, outdir, chunkNames: 'cli-chunk-[hash]', plugins: [consumerFace(lazyModules)] });
  const result = { metafile: { inputs: { ...library.metafile.inputs, ...cli.metafile.inputs }, outputs: { ...library.metafile.outputs, ...cli.metafile.outputs } } };
  // One self-contained CommonJS file per lazily loaded module (require() of it stays synchronous on every supported Node).
  const { splitting: _splitting, chunkNames: _chunkNames, banner: _banner, ...single } = common;
  const vendors = await build({
    ...single,
    format: 'cjs',
    entryPoints: Object.fromEntries(Object.keys(lazyModules).map((name) => [`vendor-${name}`, path.join(LAZY_DIR, `${name}.ts`)])),
    outdir,
    outExtension: { '.js': '.cjs' },
    // Their CommonJS builds: a require()d file gets no import.meta.
    mainFields: ['main', 'module'],
  });
  return { ...result.metafile, outputs: { ...result.metafile.outputs, ...vendors.metafile.outputs }, inputs: { ...result.metafile.inputs, ...vendors.metafile.inputs } };
}

/** Builds the server bundle into `outdir` (default packages/server/lib); the server-only packages stay external and must be dependencies of the server package. */
export async function buildServer(outdir = path.join(root, 'packages/server/lib')) {
  await rm(outdir, { recursive: true, force: true });
  const result = await build({ ...common, entryPoints: SERVER_ENTRIES, outdir, external: SERVER_ONLY_EXTERNAL, plugins: [catalogScriptPlugin()] });
  const serverPackage = JSON.parse(await readFile(path.join(root, 'packages/server/package.json'), 'utf8'));
  const declared = new Set(Object.keys(serverPackage.dependencies ?? {}));
  const imported = new Set();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const { path: specifier, external } of output.imports) if (external && !specifier.startsWith('node:') && !specifier.startsWith('.')) imported.add(packageOf(specifier));
  }
  const missing = [...imported].filter((name) => !declared.has(name) && !isBuiltin(name));
  if (missing.length > 0) throw new Error(`packages/server/package.json does not list ${missing.join(', ')}, which the server bundle imports`);
  // The server's own files beside its code: the OpenAPI description it serves and documents.
  await mkdir(path.join(root, 'packages/server/openapi'), { recursive: true });
  await cp(path.join(root, 'openapi'), path.join(root, 'packages/server/openapi'), { recursive: true });
  return result.metafile;
}

const BUILTINS = new Set((await import('node:module')).builtinModules);
function isBuiltin(name) {
  return BUILTINS.has(name);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const which = process.argv[2];
  if (which !== 'server') await buildConsumer();
  if (which !== 'consumer') await buildServer();
}
