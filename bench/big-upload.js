#!/usr/bin/env node
// Big templates (issue 26 item 7): publishing a 100 MB template (random bytes: gzip cannot shrink
// them) beside an upload of the same archive bytes with `curl -T` to the same server's upload URL
// (`POST /files/upload-url`, then the PUT alone: the floor), on the embedded store and with S3
// (the embedded database, the bytes in an s3rver bucket). The publish is `publishTemplate`, the CLI's
// upload step (upload URL, PUT streamed from disk, confirm, POST /templates with the fileId; the
// server reads the staged file once, checking, scanning and unpacking it in that pass, lints and stores it before it answers); the whole
// `template-registry publish --skip-test` (validate, lint and pack of the folder included) is shown
// beside it. Targets: the publish within 1.5x the curl upload, and the server's peak RSS during
// either within 100 MB of its RSS when idle (sampled every 20 ms from /proc).
//
// Each server is `template-registry serve` in its own process. Prints one JSON document (title,
// setup, rows, notes). Needs `npm run build` (imports build/, runs bin/). BENCH_QUICK=1: 30 MB, one run each.
/* global fetch -- Node's own */
import { execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

import { ADMIN_TOKEN, harnesses, packTemplateAt, root, rssOf, serve, stop } from './fixtures/serve-process.js';

const QUICK = process.env.BENCH_QUICK === '1';
const MEGABYTES = Number(process.env.BIG_UPLOAD_MB ?? (QUICK ? 30 : 100));
const RUNS = Number(process.env.BIG_UPLOAD_RUNS ?? (QUICK ? 1 : 5));
const FILES = 4;
const TARGET = 1.5;
const RSS_TARGET_MB = 100;
const BUCKET = 'bench-big';

const { publishTemplate } = await import(pathToFileURL(path.join(root, 'build/src/publish/index.js')).href);
const { packTemplate } = await import(pathToFileURL(path.join(root, 'build/src/pack/index.js')).href);
const { openBlobStore } = await import(pathToFileURL(path.join(root, 'build/src/store/index.js')).href);
const run = promisify(execFile);

const round = (value, digits) => Number(value.toFixed(digits));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const MB = 1024 * 1024;

/** The template folder: the bench template plus `MEGABYTES` of random bytes in `FILES` binary files. */
async function bigTemplate(work, versions) {
  const { dir } = await packTemplateAt(work, 'big-template', '0.0.1', async (folder) => {
    await mkdir(path.join(folder, 'template', 'assets'), { recursive: true });
    for (let i = 0; i < FILES; i++) {
      const out = createWriteStream(path.join(folder, 'template', 'assets', `data-${i}.bin`));
      for (let written = 0; written < (MEGABYTES * MB) / FILES; written += MB) out.write(randomBytes(MB));
      await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
    }
  });
  // A section for every version published, so that the change log check passes for each.
  await appendFile(path.join(dir, 'CHANGELOG.md'), versions.map((version) => `\n## [${version}] - 2026-01-01\n\n- Release ${version}\n`).join(''));
  return dir;
}

/** Samples the RSS of `pid` every 20 ms until `stop()`, which returns the peak. */
function sampleRss(pid) {
  let peak = rssOf(pid) ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid) ?? 0);
  }, 20);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssOf(pid) ?? 0);
  };
}

/** Waits (at most 5 minutes) until the static copy in the bucket holds the archive of `pack`. */
async function staticCopy(blobs, pack) {
  const key = `public/archives/${pack.manifest.name}/${pack.manifest.version}.tgz`;
  const deadline = Date.now() + 300_000;
  while (!(await blobs.stat(key))) {
    if (Date.now() > deadline) throw new Error(`the static copy in the bucket has no ${key} 5 minutes after its publish`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `curl -T` of the archive to a fresh upload URL; the PUT alone is timed. */
async function curlUpload(url, archive) {
  const staged = await fetch(`${url}/files/upload-url`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ filename: 'template.tgz', contentType: 'application/gzip' }),
  });
  if (staged.status !== 201) throw new Error(`POST /files/upload-url answered ${staged.status}: ${await staged.text()}`);
  const { data } = await staged.json();
  const started = performance.now();
  const { stdout } = await run('curl', ['-sS', '--fail-with-body', '-T', archive, '-H', 'Content-Type: application/gzip', data.uploadUrl], { maxBuffer: 1024 * 1024 });
  const ms = performance.now() - started;
  if (!JSON.parse(stdout).data?.size) throw new Error(`curl -T: unexpected answer ${stdout}`);
  return ms;
}

async function publishUpload(url, pack) {
  const started = performance.now();
  // As the CLI does: the integrity from the pack, not read again.
  const result = await publishTemplate({ registryUrl: url, token: ADMIN_TOKEN, archive: pack.file, manifest: pack.manifest, integrity: pack.integrity, retries: 0 });
  const ms = performance.now() - started;
  if (result.status !== 201) throw new Error(`publish answered ${result.status}`);
  return ms;
}

async function cliPublish(url, dir, version) {
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(root, 'bin/template-registry.js'), 'publish', dir, '--registry', url, '--skip-test', '--version', version], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, TEMPLATE_REGISTRY_TOKEN: ADMIN_TOKEN },
  });
  let errors = '';
  child.stderr.on('data', (chunk) => (errors += chunk));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`template-registry publish exited with ${code}: ${errors}`);
  return performance.now() - started;
}

/** Interleaved runs of the curl upload and the publish on one server, with the server's RSS. */
async function measure(label, server, dir, packs, cliVersion, copied = async () => undefined) {
  // Warm-up: modules loaded, a first build done (not measured).
  await publishTemplate({ registryUrl: server.url, token: ADMIN_TOKEN, archive: packs.warmUp.file, manifest: packs.warmUp.manifest, retries: 0 });
  const idle = rssOf(server.child.pid);
  const curl = [];
  const publish = [];
  let peakCurl = 0;
  let peakPublish = 0;
  for (const pack of packs.measured) {
    let stopSampling = sampleRss(server.child.pid);
    curl.push(await curlUpload(server.url, pack.file));
    peakCurl = Math.max(peakCurl, stopSampling());
    stopSampling = sampleRss(server.child.pid);
    publish.push(await publishUpload(server.url, pack));
    // The server's work after its answer (the static copy in a bucket) counts for its RSS.
    await copied(pack);
    peakPublish = Math.max(peakPublish, stopSampling());
  }
  const stopSampling = sampleRss(server.child.pid);
  const cli = await cliPublish(server.url, dir, cliVersion);
  const peakCli = stopSampling();
  const result = { curl: median(curl), publish: median(publish), cli, idle, peakCurl, peakPublish: Math.max(peakPublish, peakCli) };
  console.error(
    `${label}: curl -T ${curl.map((ms) => ms.toFixed(0)).join(', ')} ms; publish ${publish.map((ms) => ms.toFixed(0)).join(', ')} ms; CLI publish ${cli.toFixed(0)} ms; RSS idle ${(idle / MB).toFixed(0)} MB, peak curl ${(peakCurl / MB).toFixed(0)} MB, peak publish ${(result.peakPublish / MB).toFixed(0)} MB`,
  );
  return result;
}

const work = await mkdtemp(path.join(os.tmpdir(), 'tr-bench-big-'));
const cleanups = [];
try {
  const setups = ['embedded store', 'S3'];
  const versions = setups.flatMap((_, s) => [`${s + 1}.0.0`, ...Array.from({ length: RUNS }, (__, r) => `${s + 1}.1.${r}`), `${s + 1}.2.0`]);
  const dir = await bigTemplate(work, versions);
  const packsOf = async (s) => {
    const pack = (version) => packTemplate(dir, { version, outDir: path.join(work, 'packs') });
    const warmUp = await pack(`${s + 1}.0.0`);
    const measured = [];
    for (let r = 0; r < RUNS; r++) measured.push(await pack(`${s + 1}.1.${r}`));
    return { warmUp, measured };
  };
  const serverArgs = ['--max-archive-bytes', String(2 * MEGABYTES * MB), '--max-staged-bytes', String(100 * MEGABYTES * MB), '--max-staged-files', '1000'];
  const results = [];
  {
    const packs = await packsOf(0);
    const server = await serve(path.join(work, 'embedded'), serverArgs);
    cleanups.push(() => stop(server));
    results.push(['embedded store', await measure('embedded store', server, dir, packs, '1.2.0')]);
    await stop(server);
    await Promise.all([packs.warmUp, ...packs.measured].map((pack) => rm(pack.file, { force: true })));
  }
  {
    const { startFakeS3 } = await harnesses();
    const s3 = await startFakeS3([BUCKET]);
    cleanups.push(() => s3.close());
    const packs = await packsOf(1);
    const server = await serve(path.join(work, 's3'), [...serverArgs, '--storage', `s3://${BUCKET}/big`, '--s3-endpoint', s3.endpoint, '--s3-force-path-style']);
    cleanups.push(() => stop(server));
    const blobs = openBlobStore(`s3://${BUCKET}/big`, { endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    results.push(['S3', await measure('S3', server, dir, packs, '2.2.0', (pack) => staticCopy(blobs, pack))]);
    await stop(server);
  }
  const rows = [];
  for (const [setup, r] of results) {
    const ratio = round(r.publish / r.curl, 2);
    rows.push({ name: `curl -T of the archive (PUT to the upload URL): ${setup}`, value: round(r.curl, 0), unit: 'ms', baseline: 'itself' });
    rows.push({ name: `publish (the CLI's upload: /files, confirm, POST /templates until 201): ${setup}`, value: round(r.publish, 0), unit: 'ms', baseline: 'curl -T', baselineValue: round(r.curl, 0), ratio, target: `<= ${TARGET}x`, met: ratio <= TARGET });
    rows.push({ name: `template-registry publish --skip-test (validate, lint, pack, upload): ${setup}`, value: round(r.cli, 0), unit: 'ms', baseline: 'curl -T', baselineValue: round(r.curl, 0), ratio: round(r.cli / r.curl, 2) });
    const above = (peak) => round((peak - r.idle) / MB, 1);
    rows.push({ name: `server RSS above idle during curl -T: ${setup}`, value: above(r.peakCurl), unit: 'MB', baseline: 'idle RSS', baselineValue: round(r.idle / MB, 0), target: `<= ${RSS_TARGET_MB} MB`, met: above(r.peakCurl) <= RSS_TARGET_MB });
    rows.push({ name: `server RSS above idle during publish: ${setup}`, value: above(r.peakPublish), unit: 'MB', baseline: 'idle RSS', baselineValue: round(r.idle / MB, 0), target: `<= ${RSS_TARGET_MB} MB`, met: above(r.peakPublish) <= RSS_TARGET_MB });
  }
  process.stdout.write(
    `${JSON.stringify({
      title: 'Big templates (`bench/big-upload.js`)',
      setup: `a template with ${MEGABYTES} MB of random bytes in ${FILES} binary files (archive about as large), median of ${RUNS} interleaved runs; serve processes on 127.0.0.1; S3: the embedded database with its bytes in an s3rver bucket`,
      rows,
      notes: [
        'curl -T is the floor: the server streams the PUT to a temp file with its digests, unpacks it as it arrives (archive/unpack.ts; a binary file only as its first 8 KiB, all the checks read of it; the decompression of 100 MB takes about 100 ms on this machine) and stores it as a staged file, keeping the folder it unpacked (server/staged-identities.ts, since 2026-11-28 19:15: the PUT takes about that much longer, for curl as well as for the client, and the publish as much less after its last byte). A publish does that too, then the server takes the staged file (a store folder: linked, and its SHA-256 recorded at the PUT trusted when the file is the one this server wrote, unchanged since by device, inode, size and mtime, else computed again; a bucket: the local copy of the bytes this server kept at the PUT, a second link to the file it uploaded, when it is unchanged since, else downloaded with its SHA-256) and the folder unpacked at its PUT (else, after a restart or for a file another instance received, it scans and unpacks its bytes in one pass), lints the unpacked template (binary files told by their head, never read whole), stores the archive (a folder: the linked file renamed in, fsynced; S3: CopyObject of the staged object within the bucket, nothing uploaded again) and rebuilds the registry, all before its 201. With S3 the copy is made by s3rver, which reads and writes the 100 MB and takes their MD5 (about 500 ms on this machine), after a HeadObject that checks the staged object is still the one uploaded.',
        'template-registry publish also validates, lints and packs the folder (gzip of the whole template) before its upload: shown beside the floor, without a target.',
        `The server's RSS is sampled every 20 ms from /proc/<pid>/statm; idle is its RSS after a first (warm-up) publish of the same template. With S3 the sampling of a publish goes on until the server's static copy in the bucket (for a CDN) holds the archive: it streams it as a multipart upload, one 8 MiB part at a time.`,
      ],
    })}\n`,
  );
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
}
