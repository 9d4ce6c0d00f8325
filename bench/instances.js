#!/usr/bin/env node
// Upload and read throughput of the registry server on PostgreSQL + S3, with one and with two
// instances, beside the embedded store (SQLite + files) measured in the same run.
//
// Every server is `template-registry serve` in its own process (as operators run it), its limits
// raised so that nothing is refused. PostgreSQL is a throwaway server from the machine's Debian
// package (test/helpers/postgres-server.ts, bundled here with esbuild), the bucket an s3rver in
// this process (test/helpers/s3-server.ts). Rows:
// - uploads per second: the same N packed versions (distinct versions of a small template)
//   published by `publishTemplate` with a few uploads in flight, spread round-robin over the
//   instances; the embedded store is the baseline;
// - reads per second (autocannon, on 127.0.0.1, bounded in time): `GET /templates/{id}` (answered
//   from the built registry in memory) and an archive download (answered from the blob store: the
//   store folder, or the bucket); with two instances, one autocannon per instance at once, summed.
//
// On this 2-core machine PostgreSQL, s3rver, the servers and the load generator share the cores, so
// a second instance brings no CPU: the two-instance rows show what coordination costs, not scaling.
// Prints one JSON document (title, setup, rows, notes). Needs `npm run build` (imports build/).
// BENCH_QUICK=1: fewer uploads, shorter reads.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

import autocannon from 'autocannon';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = process.env.BENCH_QUICK === '1';
const UPLOADS = Number(process.env.INSTANCES_UPLOADS ?? (QUICK ? 12 : 40));
const IN_FLIGHT = 4;
const READ_SECONDS = Number(process.env.INSTANCES_READ_SECONDS ?? (QUICK ? 2 : 5));
const CONNECTIONS = 10;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const BUCKET = 'bench-registry';
const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

const { packTemplate } = await import(pathToFileURL(path.join(root, 'build/src/pack/index.js')).href);
const { publishTemplate } = await import(pathToFileURL(path.join(root, 'build/src/publish/index.js')).href);

/**
 * The test harnesses (TypeScript, free of vitest) as a module this script can import; written below
 * node_modules/.cache so that its bare imports (pg, s3rver) resolve from the project.
 */
async function harnesses() {
  const outfile = path.join(root, 'node_modules', '.cache', 'template-registry-bench', `harness-${process.pid}.mjs`);
  await build({
    stdin: {
      contents: "export * from './test/helpers/postgres-server.ts'; export * from './test/helpers/s3-server.ts';",
      resolveDir: root,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile,
    logLevel: 'silent',
  });
  try {
    return await import(pathToFileURL(outfile).href);
  } finally {
    await rm(outfile, { force: true });
  }
}

/** A small template packed at `version` (its changelog has the version's section, as publishing wants). */
async function packVersion(work, version) {
  const dir = path.join(work, 'templates', version);
  await mkdir(path.join(dir, 'template', 'src'), { recursive: true });
  const manifest = { name: 'bench-template', version, description: 'A template published by the instances benchmark', category: 'backend', changelog: 'CHANGELOG.md' };
  await writeFile(path.join(dir, 'template.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await writeFile(path.join(dir, 'CHANGELOG.md'), `# Changelog\n\n## [${version}] - 2026-01-01\n\n- Release ${version}\n`);
  await writeFile(path.join(dir, 'README.md'), '# Bench template\n');
  const variables = { variables: { projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' } } };
  await writeFile(path.join(dir, 'template.vars.json'), `${JSON.stringify(variables, null, 2)}\n`);
  const prompts = { prompts: [{ name: 'projectName', message: 'Project name?', type: 'input', validate: '^[a-z][a-z0-9-]*$' }] };
  await writeFile(path.join(dir, 'template.prompts.json'), `${JSON.stringify(prompts, null, 2)}\n`);
  await writeFile(path.join(dir, 'template', 'README.md'), '# {{ projectName }}\n');
  await writeFile(path.join(dir, 'template', 'src', 'index.js'), `export const version = '${version}';\n`.repeat(200));
  return packTemplate(dir, { outDir: path.join(work, 'packs') });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** `serve` in its own process; resolves once it is serving. */
async function serve(store, backendArgs) {
  const port = await freePort();
  const args = [path.join(root, 'bin/template-registry.js'), 'serve', '--store', store, '--port', String(port), '--read-limit', '10000000', '--upload-limit', '1000000', ...backendArgs];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...S3_CREDENTIALS, REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN } });
  await new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${output}`)), 60_000);
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (output.includes('serving')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${output}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function stop(server) {
  if (server.child.exitCode !== null) return;
  const gone = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await gone;
}

/** Publishes every pack, `IN_FLIGHT` at a time, round-robin over `urls`; returns uploads per second. */
async function uploadRate(urls, packs) {
  let next = 0;
  const started = process.hrtime.bigint();
  const worker = async () => {
    for (let index = next++; index < packs.length; index = next++) {
      const pack = packs[index];
      await publishTemplate({ registryUrl: urls[index % urls.length], token: ADMIN_TOKEN, archive: pack.file, manifest: pack.manifest });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return packs.length / seconds;
}

/** Requests per second of GET `pathname` on every url at once (one autocannon each), summed. */
async function readRate(urls, pathname) {
  const results = await Promise.all(urls.map((url) => autocannon({ url: `${url}${pathname}`, connections: CONNECTIONS, duration: READ_SECONDS })));
  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${pathname}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  }
  return results.reduce((sum, result) => sum + result.requests.average, 0);
}

async function measure(name, urls, packs) {
  const uploads = await uploadRate(urls, packs);
  const id = packs[0].manifest.name;
  const version = packs[0].manifest.version;
  await readRate(urls, `/templates/${id}`); // warm-up
  const entry = await readRate(urls, `/templates/${id}`);
  const archive = await readRate(urls, `/templates/${id}/versions/${version}/archive`);
  console.error(`${name}: ${uploads.toFixed(1)} uploads/s, ${entry.toFixed(0)} entry reads/s, ${archive.toFixed(0)} archive reads/s`);
  return { uploads, entry, archive };
}

const round = (value, digits) => Number(value.toFixed(digits));

const work = await mkdtemp(path.join(os.tmpdir(), 'tr-bench-instances-'));
const cleanups = [];
try {
  const { startPostgres, startFakeS3, postgresBinDir } = await harnesses();
  const packs = [];
  for (let i = 0; i < UPLOADS; i++) packs.push(await packVersion(work, `1.0.${i}`));

  const embeddedServer = await serve(path.join(work, 'embedded'), []);
  cleanups.push(() => stop(embeddedServer));
  const embedded = await measure('embedded', [embeddedServer.url], packs);
  await stop(embeddedServer);

  const postgres = await startPostgres();
  cleanups.push(() => postgres.stop());
  const s3 = await startFakeS3([BUCKET]);
  cleanups.push(() => s3.close());
  const backend = (database, prefix) => ['--database', database, '--storage', `s3://${BUCKET}/${prefix}`, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'];

  const oneDatabase = await postgres.createDatabase();
  const one = await serve(path.join(work, 'one'), backend(oneDatabase, 'one'));
  cleanups.push(() => stop(one));
  const single = await measure('PostgreSQL + S3, one instance', [one.url], packs);
  await stop(one);

  const twoDatabase = await postgres.createDatabase();
  const first = await serve(path.join(work, 'two-a'), backend(twoDatabase, 'two'));
  cleanups.push(() => stop(first));
  const second = await serve(path.join(work, 'two-b'), backend(twoDatabase, 'two'));
  cleanups.push(() => stop(second));
  const pair = await measure('PostgreSQL + S3, two instances', [first.url, second.url], packs);

  const rows = [];
  for (const [kind, label, unit, digits] of [
    ['uploads', `uploads (${UPLOADS} versions, ${IN_FLIGHT} in flight)`, 'uploads/s', 2],
    ['entry', 'GET /templates/{id} (from memory)', 'req/s', 0],
    ['archive', 'archive download (from the blob store)', 'req/s', 0],
  ]) {
    rows.push({ name: `${label}: embedded store`, value: round(embedded[kind], digits), unit, baseline: 'itself' });
    for (const [setup, result] of [
      ['PostgreSQL + S3, one instance', single],
      ['PostgreSQL + S3, two instances', pair],
    ]) {
      rows.push({ name: `${label}: ${setup}`, value: round(result[kind], digits), unit, baseline: 'embedded store', baselineValue: round(embedded[kind], digits), ratio: round(result[kind] / embedded[kind], 2) });
    }
  }
  process.stdout.write(
    `${JSON.stringify({
      title: 'Instances: PostgreSQL + S3 beside the embedded store (`bench/instances.js`)',
      setup: `serve processes on 127.0.0.1; PostgreSQL ${path.basename(path.dirname(postgresBinDir))} from the Debian package (fsync off), s3rver for the bucket; ${UPLOADS} uploads ${IN_FLIGHT} in flight; reads: autocannon, ${CONNECTIONS} connections, ${READ_SECONDS} s per instance`,
      rows,
      notes: [
        'Every process (PostgreSQL, s3rver, the servers, autocannon) shares the same 2 cores: a second instance brings no new CPU, so the two-instance rows show what coordination costs and how reads spread over two processes, not how several machines scale.',
        's3rver keeps objects as local files behind an HTTP API written in JavaScript; a real bucket answers from the network, slower per request and without this CPU cost on the machine.',
        'With two instances every publish is rebuilt by both (each serves its own copy of the registry, rebuilt on the change notification), so on shared cores uploads slow down while reads of the built registry spread over two processes.',
        'Archive downloads on PostgreSQL + S3 stream every byte from the bucket through the server; behind a CDN (docs/scaling.md) archives are immutable and cached at the edge.',
      ],
    })}\n`,
  );
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
}
