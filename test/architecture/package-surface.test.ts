import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { groupsFor } from '../../src/cli/program.js';

/**
 * The CommonJS packages a fresh Node process has loaded after running `script` (an ES module),
 * from the require cache: fastify, better-sqlite3 and the prompts are CommonJS, so importing
 * them, even from ESM, leaves them there. Runs against build/ (npm test builds first).
 */
function loadedAfter(script: string): string[] {
  const probe = `${script}
const { createRequire } = await import('node:module');
const names = Object.keys(createRequire(import.meta.url).cache)
  .map((file) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file)?.[1])
  .filter(Boolean);
console.log(JSON.stringify([...new Set(names)]));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
}

const HEAVY = ['fastify', 'better-sqlite3', '@inquirer/core', '@octokit/core'];

/**
 * For the package root and its client: the output files of the consumer bundle each loads at import time
 * (static imports, transitively; not those it loads on demand) and the sources those files hold.
 */
async function loadedAtImport(): Promise<{ entry: string; files: Set<string>; sources: string[] }[]> {
  const { buildConsumer } = await import('../../scripts/package-bundles.js');
  const outdir = await mkdtemp(path.join(tmpdir(), 'consumer-bundle-'));
  try {
    const { outputs } = await buildConsumer(outdir);
    return ['src/index.ts', 'src/client/index.ts'].map((entry) => {
      const start = Object.keys(outputs).find((file) => outputs[file]?.entryPoint === entry);
      expect(start, entry).toBeDefined();
      const files = new Set<string>();
      const pending = [start!];
      while (pending.length > 0) {
        const file = pending.pop()!;
        if (files.has(file)) continue;
        files.add(file);
        for (const imported of outputs[file]?.imports ?? []) if (imported.kind === 'import-statement' && outputs[imported.path]) pending.push(imported.path);
      }
      return { entry, files, sources: [...files].flatMap((file) => Object.keys(outputs[file]?.inputs ?? {})) };
    });
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

describe('the package surface', () => {
  it("imports template-registry/client without loading fastify or better-sqlite3", () => {
    const loaded = loadedAfter("const client = await import('template-registry/client'); if (typeof client.RegistryClient !== 'function') process.exit(3);");
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
  });

  it('exports each documented sub-path of the consumer package, and leaves the server to the server package', () => {
    const run = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const names = {};
for (const sub of ['client', 'template', 'migrate']) names[sub] = Object.keys(await import('template-registry/' + sub)).sort();
for (const sub of ['server', 'registry']) names[sub] = await import('template-registry/' + sub).then(() => 'exported', (error) => error.code);
console.log(JSON.stringify(names));`,
      ],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const names = JSON.parse(run.stdout) as Record<string, string[] | string>;
    expect(names.client).toEqual(expect.arrayContaining(['RegistryClient', 'downloadTemplate']));
    expect(names.template).toEqual(expect.arrayContaining(['validateTemplate', 'generateProject', 'lintTemplate']));
    expect(names.migrate).toEqual(expect.arrayContaining(['runMigrations', 'loadDeclarativeSteps']));
    expect(names.server).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(names.registry).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('bundles the consumer package without any server-only package (web server, database drivers, AWS SDK, Octokit)', async () => {
    const { buildConsumer } = await import('../../scripts/package-bundles.js');
    const outdir = await mkdtemp(path.join(tmpdir(), 'consumer-bundle-'));
    try {
      const metafile = await buildConsumer(outdir);
      const packages = new Set(Object.keys(metafile.inputs).map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1]).filter((name) => name !== undefined));
      expect([...packages].filter((name) => /^(fastify|@fastify\/|better-sqlite3|pg$|@aws-sdk\/|@octokit\/|@actions\/)/.test(name))).toEqual([]);
      expect(Object.keys(metafile.inputs).filter((file) => /^src\/(server|store|registry|github)\//.test(file))).toEqual([]);
    } finally {
      await rm(outdir, { recursive: true, force: true });
    }
  });

  it('loads Sigstore only at the first verification: neither the package root nor its client statically imports it', async () => {
    for (const { entry, sources } of await loadedAtImport()) {
      expect(sources.filter((source) => /node_modules\/@sigstore\/(verify|bundle|protobuf-specs|sign)\//.test(source)), entry).toEqual([]);
    }
  });

  it('answers template-registry --version without loading the command parser or any command', () => {
    const loaded = loadedAfter(
      "const { runCli } = await import('./build/src/cli/index.js'); let out = ''; const code = await runCli(['--version'], { stdout: (t) => (out += t), stderr: () => {} }); if (code !== 0 || !/^\\d+\\.\\d+\\.\\d+\\n$/.test(out)) process.exit(3);",
    );
    expect(loaded).toEqual([]);
  });

  it('answers template-registry --help without loading the command parser or any command', () => {
    const loaded = loadedAfter(
      "const { runCli } = await import('./build/src/cli/index.js'); let out = ''; const code = await runCli(['--help'], { stdout: (t) => (out += t), stderr: () => {} }); if (code !== 0 || !out.includes('check-update')) process.exit(3);",
    );
    expect(loaded).toEqual([]);
  });

  it('loads the commands of one group for a command, and every group for help or an unknown command', () => {
    expect(groupsFor(['--version'])).toHaveLength(0);
    expect(groupsFor(['list', '--json']).map((g) => g.commands)).toEqual([['list', 'search', 'info', 'create']]);
    expect(groupsFor(['migrate', '--help']).map((g) => g.commands)).toEqual([['migrate']]);
    expect(groupsFor(['validate', '.']).map((g) => g.commands)).toEqual([['validate']]);
    const all = groupsFor(['--help']).length;
    expect(all).toBeGreaterThan(5);
    expect(groupsFor(['nosuch'])).toHaveLength(all);
    expect(groupsFor([])).toHaveLength(all);
  });

  it('loads the costly packages only at first use: neither the package root nor its client bundles them in what it imports, and it imports few files', async () => {
    const heavy = /node_modules\/(ajv|ajv-formats|fast-uri|liquidjs|re2js|tar|minipass|semver|jose|ssri|picomatch|ignore|jsonc-parser|diff)\//;
    for (const { entry, files, sources } of await loadedAtImport()) {
      expect(sources.filter((source) => heavy.test(source)), entry).toEqual([]);
      // Each file is resolved, read and linked at import: the CLI's commands, bundled with the library, made the root 30.
      expect(files.size, entry).toBeLessThanOrEqual(12);
    }
  });

  it('imports template-registry without loading or compiling a schema validator, and its sync API loads what it needs at the first call', () => {
    const probe = `const api = await import('template-registry');
const { createRequire } = await import('node:module');
const loaded = () => Object.keys(createRequire(import.meta.url).cache).map((file) => file.split('/').pop()).sort();
const atImport = loaded();
const manifestErrors = api.schemaErrors('template-manifest', { name: 'x' }).length;
const inRange = api.satisfiesRange('1.4.0', '^1.2.0');
console.log(JSON.stringify({ atImport, manifestErrors, inRange, afterUse: loaded() }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { atImport: string[]; manifestErrors: number; inRange: boolean; afterUse: string[] };
    expect(result.atImport.filter((file) => /ajv|semver/.test(file))).toEqual([]);
    expect(result.manifestErrors).toBeGreaterThan(0);
    expect(result.inRange).toBe(true);
    expect(result.afterUse).toEqual(expect.arrayContaining(['vendor-ajv.cjs', 'vendor-semver.cjs']));
  });
});

