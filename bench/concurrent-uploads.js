#!/usr/bin/env node
// Many publishers at once (issue 26 item 5): into a registry of 10,000 versions, the time of one
// upload (POST /templates until GET /templates/{id} lists it), then 50 uploads of distinct templates
// at once until every one is listed; target: the 50 within 5x the one (the server's rebuilds
// coalesce: a build in progress and one more serve every upload that arrived meanwhile), none lost.
// On the embedded store and on PostgreSQL + S3 (a throwaway PostgreSQL from the Debian package,
// s3rver for the bucket).
//
// The 10,000 versions are seeded straight into the store (SQLite rows; PostgreSQL rows and the
// archives put into the bucket, which the static copy for a CDN publishes), not uploaded one by one.
// Each server is `template-registry serve` in its own process. Prints one JSON document (title,
// setup, rows, notes). Needs `npm run build` (imports build/). BENCH_QUICK=1: 1,000 versions, 20 uploads.
/* global fetch -- Node's own */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';

import pg from 'pg';

import { archiveBytes, createSyntheticStore, digests, manifestOf } from './fixtures/synthetic-store.js';
import { prng } from './fixtures/prng.js';
import { ADMIN_TOKEN, harnesses, packTemplateAt, root, S3_CREDENTIALS, serve, stop } from './fixtures/serve-process.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SEEDED = Number(process.env.CONCURRENT_SEEDED ?? (QUICK ? 1_000 : 10_000));
const PER_TEMPLATE = 10;
const CONCURRENT = Number(process.env.CONCURRENT_UPLOADS ?? (QUICK ? 20 : 50));
const SINGLE_RUNS = 3;
const TARGET = 5;
const BUCKET = 'bench-concurrent';

const { publishTemplate } = await import(pathToFileURL(path.join(root, 'build/src/publish/index.js')).href);
const { openStorage, openBlobStore } = await import(pathToFileURL(path.join(root, 'build/src/store/index.js')).href);

const round = (value, digits) => Number(value.toFixed(digits));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Every seeded version (as the synthetic store makes them), in order. */
function* seededVersions() {
  const random = prng(42);
  const base = Date.UTC(2025, 0, 1);
  for (let t = 0; t < SEEDED / PER_TEMPLATE; t++) {
    const name = `seeded-${t.toString(36)}`;
    for (let v = 0; v < PER_TEMPLATE; v++) {
      const version = `${1 + Math.floor(v / 5)}.${v % 5}.0`;
      const bytes = archiveBytes(name, version);
      yield { name, version, bytes, ...digests(bytes), createdAt: new Date(base + (t * PER_TEMPLATE + v) * 60_000).toISOString(), manifest: manifestOf(random, name, version, t) };
    }
  }
}

/** PostgreSQL rows in batches of one INSERT each, and every archive put into the bucket, 32 at a time. */
async function seedPostgres(databaseUrl, blobs) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const all = [...seededVersions()];
    for (let start = 0; start < all.length; start += 500) {
      const batch = all.slice(start, start + 500);
      const values = [];
      const rows = batch.map((v, i) => {
        values.push(v.name, v.version, v.integrity, v.sha256, v.size, v.createdAt, JSON.stringify(v.manifest));
        const at = i * 7;
        return `($${at + 1}, $${at + 2}, 'complete', $${at + 3}, $${at + 4}, $${at + 5}, 'bench', $${at + 6}, $${at + 7})`;
      });
      await client.query(`INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at, manifest) VALUES ${rows.join(', ')}`, values);
    }
    let next = 0;
    const worker = async () => {
      for (let index = next++; index < all.length; index = next++) {
        const v = all[index];
        await blobs.putBytes(`archives/${v.name}/${v.version}.tgz`, v.bytes, { contentType: 'application/gzip' });
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
  } finally {
    await client.end();
  }
}

/** Publishes `pack` and waits until GET /templates/{id} lists its version; resolves to its status. */
async function publishListed(url, pack) {
  const result = await publishTemplate({ registryUrl: url, token: ADMIN_TOKEN, archive: pack.file, manifest: pack.manifest });
  const { name, version } = pack.manifest;
  for (;;) {
    const answer = await fetch(`${url}/templates/${name}`);
    const body = answer.ok ? await answer.json() : undefined;
    if (body?.data?.version === version || body?.data?.versions?.some?.((entry) => (entry.version ?? entry) === version)) return result;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Waits until the static copy in the bucket has its registry.json (written after the archives: the
 * first copy after a start publishes every seeded archive; measured uploads should not race with it).
 */
async function staticCopyDone(blobs) {
  while (!(await blobs.stat('public/registry.json').catch(() => undefined))) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** One upload at a time (`SINGLE_RUNS`), then `CONCURRENT` at once; every one must be listed. */
async function measure(label, url, { warmUp, singles, concurrent }, settled = async () => undefined) {
  // The first upload after a start is not measured (modules loaded, first static copy of the bucket).
  await publishListed(url, warmUp);
  await settled();
  const singleMs = [];
  for (const pack of singles) {
    const started = performance.now();
    await publishListed(url, pack);
    singleMs.push(performance.now() - started);
  }
  const started = performance.now();
  const outcomes = await Promise.allSettled(concurrent.map((pack) => publishListed(url, pack)));
  const allMs = performance.now() - started;
  const failed = outcomes.filter((outcome) => outcome.status === 'rejected');
  if (failed.length > 0) throw new Error(`${label}: ${failed.length} of ${concurrent.length} uploads failed: ${failed[0].reason?.message ?? failed[0].reason}`);
  const registry = await (await fetch(`${url}/registry.json`)).json();
  const listed = new Set(registry.templates.map((entry) => `${entry.id}@${entry.version}`));
  const lost = concurrent.filter((pack) => !listed.has(`${pack.manifest.name}@${pack.manifest.version}`));
  if (lost.length > 0) throw new Error(`${label}: ${lost.length} uploads are not in registry.json`);
  const single = median(singleMs);
  console.error(`${label}: one upload ${single.toFixed(0)} ms (${singleMs.map((ms) => ms.toFixed(0)).join(', ')}), ${concurrent.length} at once ${allMs.toFixed(0)} ms, ${(allMs / single).toFixed(2)}x`);
  return { single, all: allMs, listedTotal: registry.templates.length };
}

async function packs(work, prefix) {
  const warmUp = await packTemplateAt(work, `${prefix}-warm-up`, '1.0.0');
  const singles = [];
  for (let i = 0; i < SINGLE_RUNS; i++) singles.push(await packTemplateAt(work, `${prefix}-single-${i}`, '1.0.0'));
  const concurrent = [];
  for (let i = 0; i < CONCURRENT; i++) concurrent.push(await packTemplateAt(work, `${prefix}-many-${i}`, '1.0.0'));
  return { warmUp, singles, concurrent };
}

const work = await mkdtemp(path.join(os.tmpdir(), 'tr-bench-concurrent-'));
const cleanups = [];
try {
  const results = [];
  // The embedded store.
  {
    const store = path.join(work, 'embedded');
    await createSyntheticStore(store, { templates: SEEDED / PER_TEMPLATE, perTemplate: PER_TEMPLATE });
    const uploads = await packs(work, 'embedded');
    const server = await serve(store);
    cleanups.push(() => stop(server));
    results.push(['embedded store', await measure('embedded store', server.url, uploads)]);
    await stop(server);
  }
  // PostgreSQL + S3.
  const { startPostgres, startFakeS3, postgresBinDir } = await harnesses();
  const postgres = await startPostgres();
  cleanups.push(() => postgres.stop());
  const s3 = await startFakeS3([BUCKET]);
  cleanups.push(() => s3.close());
  {
    const database = await postgres.createDatabase();
    const storeDir = path.join(work, 'postgres');
    Object.assign(process.env, S3_CREDENTIALS);
    const s3Settings = { endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1' };
    const storage = await openStorage({ store: storeDir, database, storage: `s3://${BUCKET}/bench`, s3: s3Settings });
    await storage.close();
    const seeding = performance.now();
    const blobs = openBlobStore(`s3://${BUCKET}/bench`, s3Settings);
    await seedPostgres(database, blobs);
    console.error(`PostgreSQL + S3: seeded ${SEEDED} versions in ${((performance.now() - seeding) / 1000).toFixed(1)} s`);
    const uploads = await packs(work, 'postgres');
    const server = await serve(storeDir, ['--database', database, '--storage', `s3://${BUCKET}/bench`, '--s3-endpoint', s3.endpoint, '--s3-force-path-style']);
    cleanups.push(() => stop(server));
    results.push(['PostgreSQL + S3', await measure('PostgreSQL + S3', server.url, uploads, () => staticCopyDone(blobs))]);
    await stop(server);
  }
  const rows = [];
  for (const [setup, result] of results) {
    rows.push({ name: `one upload until listed: ${setup}`, value: round(result.single, 0), unit: 'ms', baseline: 'itself' });
    const ratio = round(result.all / result.single, 2);
    rows.push({
      name: `${CONCURRENT} uploads at once until all listed: ${setup}`,
      value: round(result.all, 0),
      unit: 'ms',
      baseline: 'one upload',
      baselineValue: round(result.single, 0),
      ratio,
      target: `<= ${TARGET}x, none lost`,
      met: ratio <= TARGET,
    });
  }
  process.stdout.write(
    `${JSON.stringify({
      title: 'Many publishers at once (`bench/concurrent-uploads.js`)',
      setup: `${SEEDED.toLocaleString('en')} seeded versions (${PER_TEMPLATE} per template); ${CONCURRENT} distinct small templates published with publishTemplate at once, each until GET /templates/{id} lists it; one upload = median of ${SINGLE_RUNS}; serve processes on 127.0.0.1; PostgreSQL ${path.basename(path.dirname(postgresBinDir))} from the Debian package, s3rver for the bucket`,
      rows,
      notes: [
        'Every upload answered 201 and is listed in registry.json (the script fails otherwise): none is lost.',
        'The server rebuilds after each upload, and uploads that arrive while a build runs share the next one (coalesced in src/server/app.ts): an upload waits for the build in progress and at most one more, so 50 uploads cost a few builds, not 50.',
        'On PostgreSQL + S3 each build is followed by the static copy in the bucket (for a CDN), which does not hold up the answers but shares the 2 cores.',
      ],
    })}\n`,
  );
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
}
