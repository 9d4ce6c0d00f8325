#!/usr/bin/env node
// The embedded server's static reads against a bare `node:http` server answering the same bytes.
//
// GET /registry.json of a registry built by the server at its start from a store of 1,000 versions
// (filled beforehand by another process; the server's builds run on its build thread) (200 and
// 304 on If-None-Match), each beside the floor measured in the same run: a bare node:http server
// in its own process that answers the bytes the embedded server sent, with the same headers
// (X-Request-Id and X-RateLimit-* included, as fixed strings), and 304 when If-None-Match equals
// its ETag. Each server runs in its own child process; the load generator (autocannon) runs in
// this process, so it never shares an event loop with a server. Cases are interleaved (a warm-up
// second, then rounds of 3 s per case and server) so that a slow moment of this shared machine
// hits all alike, and in several sets of fresh server processes (one process of the same code can
// run 15-20% slower than another for its whole life here). Besides requests per second, each
// server's CPU time per request; and, with no kernel and no load generator, the 304's cost in
// JavaScript alone: both servers in one process fed through in-memory sockets (measureInProcess).
//
// The embedded server answers every request through one pipeline, fastify's (the static files'
// routes in src/server/routes/read.ts, a plain read answered by the route's onRequest hook after the
// request id and the rate limit, with precomputed headers and buffers), its read limit raised
// so that the load is never refused (the check itself still runs on every request). It runs three
// ways: as `serve` runs it by default (no logger, no proxy trusted), trusting one proxy hop
// (`--trust-proxy 1`: the client address from X-Forwarded-For), and logging every request (JSON
// lines to its stdout, discarded).
//
// Prints one JSON document (title, setup, rows, notes). Needs `npm run build` (imports build/).
// About 4 minutes; BENCH_QUICK=1: 200 versions, 2 s per case, 2 rounds.
import { Buffer } from 'node:buffer';
import { execFileSync, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '..');
const QUICK = process.env.BENCH_QUICK === '1';
const VERSIONS = Number(process.env.SERVER_READ_VERSIONS ?? (QUICK ? 200 : 1000));
const SECONDS = Number(process.env.SERVER_READ_SECONDS ?? (QUICK ? 2 : 3));
const ROUNDS = Number(process.env.SERVER_READ_ROUNDS ?? 2);
/** Fresh server processes, each set measured in its own rounds (see orchestrate). */
const PROCESS_SETS = Number(process.env.SERVER_READ_SETS ?? (QUICK ? 1 : 3));
const CONNECTIONS = 10;
const TARGET = 0.7;
const ACCEPT_ENCODING = 'br, gzip';

/** Answers the message `cpu` with the CPU time (user + system, microseconds) the process used so far. */
function reportCpuOnRequest() {
  process.on('message', (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send({ cpu: user + system });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Child: the embedded server on a seeded store
// ---------------------------------------------------------------------------------------------

const CATEGORIES = ['frontend', 'backend', 'fullstack', 'mobile', 'desktop'];
const WORDS = ['react', 'node', 'rust', 'service', 'static', 'graphql', 'rest', 'worker', 'cli', 'edge', 'queue', 'stream'];
const FEATURES = ['auth', 'database', 'api', 'testing', 'docker'];

/** Publishes `count` versions (5 per template) into `store` through its API, as uploads do. */
async function seed(store, count) {
  const { record } = await store.tokens.createToken({ role: 'admin' });
  for (let i = 0; i < count; i++) {
    const t = Math.floor(i / 5);
    const name = `tpl-${t}-${WORDS[t % WORDS.length]}`;
    const version = `1.${i % 5}.${t % 7}`;
    const bytes = gzipSync(Buffer.from(`archive of ${name}@${version}\n`));
    const temp = store.versions.uploadTempPath('.tgz');
    await writeFile(temp, bytes);
    const createdAt = new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString();
    const reserved = await store.versions.reserveVersion(
      {
        name,
        version,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        owner: record.owner,
        createdAt,
      },
      record,
    );
    if (!reserved.reserved) throw new Error(`could not reserve ${name}@${version}`);
    await store.versions.commitVersion(name, version, temp, {
      name,
      version,
      description: `A ${WORDS[(t * 7) % WORDS.length]} ${CATEGORIES[t % 5]} template with ${FEATURES[t % 5]} for ${WORDS[(t * 3) % WORDS.length]} projects`,
      category: CATEGORIES[t % 5],
      stability: i % 5 === 4 ? 'beta' : 'stable',
      author: { name: `author-${t % 40}` },
      keywords: [WORDS[t % WORDS.length], WORDS[(t + 5) % WORDS.length], `tag-${t % 50}`],
      features: [FEATURES[t % 5], FEATURES[(t + 2) % 5]],
      repository: { type: 'git', url: `https://git.example.test/team/${name}` },
    });
  }
}

/** `way`: `plain` (serve's defaults), `proxied` (trusts one proxy hop) or `logging` (logs every request). */
async function serveEmbedded(way) {
  const { openSqliteStorage } = await import(path.join(root, 'build/src/store/index.js'));
  const { createServer } = await import(path.join(root, 'build/src/server/index.js'));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tr-bench-read-'));
  // Filled by another process, as a registry's store is by the uploads before a (re)start: the
  // seeding's own work (the store API, gzip) is the bench's, not the server's, and stays out of its process.
  execFileSync(process.execPath, [here, 'seed', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const store = await openSqliteStorage(dir);
  const server = await createServer({
    store,
    publicUrl: 'http://127.0.0.1',
    limits: { readPerMinute: 1_000_000_000 },
    ...(way === 'proxied' ? { trustProxy: 1 } : {}),
    ...(way === 'logging' ? { logger: true } : {}),
  });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = server.app.server.address();
  reportCpuOnRequest();
  process.on('message', async (message) => {
    if (message === 'stop') {
      await server.app.close();
      await rm(dir, { recursive: true, force: true });
      process.exit(0);
    }
  });
  process.send({ port, heldBytes: server.context.registry().files.bytes });
}

// ---------------------------------------------------------------------------------------------
// Child: the bare node:http server (the floor)
// ---------------------------------------------------------------------------------------------

/** The floor's handler: `bytes` with `headers` (a 200), or a 304 when If-None-Match equals their ETag. */
function bareHandler(bytes, headers) {
  const etag = headers.etag;
  const notModifiedHeaders = Object.fromEntries(Object.entries(headers).filter(([name]) => !['content-length', 'content-encoding', 'content-type'].includes(name)));
  return (request, response) => {
    if (request.headers['if-none-match'] === etag) {
      response.writeHead(304, notModifiedHeaders);
      response.end();
      return;
    }
    response.writeHead(200, headers);
    response.end(bytes);
  };
}

function serveBare() {
  process.once('message', ({ body, headers }) => {
    const server = http.createServer(bareHandler(Buffer.from(body, 'base64'), headers));
    server.keepAliveTimeout = 72_000; // fastify's default, so that neither server closes connections
    server.listen(0, '127.0.0.1', () => {
      reportCpuOnRequest();
      process.on('message', (message) => {
        if (message === 'stop') server.close(() => process.exit(0));
      });
      process.send({ port: server.address().port });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Child: both servers in one process, without the kernel
// ---------------------------------------------------------------------------------------------

/**
 * The 304 of /registry.json answered by the embedded server and by a bare node:http handler of the
 * same bytes and headers, both in this one process and fed through in-memory sockets (pipelined
 * requests in, answers counted and dropped): what each answer costs in JavaScript and Node's HTTP
 * code alone, with no system call, no load generator and no other process. The network figures
 * above add the kernel's work and the machine's noise to this. Interleaved rounds; the median of each.
 */
async function measureInProcess() {
  const { Duplex } = await import('node:stream');
  const { openSqliteStorage } = await import(path.join(root, 'build/src/store/index.js'));
  const { createServer } = await import(path.join(root, 'build/src/server/index.js'));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tr-bench-read-'));
  execFileSync(process.execPath, [here, 'seed', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const server = await createServer({ store: await openSqliteStorage(dir), publicUrl: 'http://127.0.0.1', limits: { readPerMinute: 1_000_000_000 } });
  await server.app.ready();
  const first = await server.app.inject({ url: '/registry.json', headers: { 'accept-encoding': ACCEPT_ENCODING } });
  const headers = Object.fromEntries(Object.entries(first.headers).filter(([name]) => !TRANSPORT_HEADERS.has(name)));
  const etag = headers.etag;
  const bare = http.createServer(bareHandler(first.rawPayload, headers));
  const request = Buffer.from(`GET /registry.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: ${ACCEPT_ENCODING}\r\nIf-None-Match: ${etag}\r\n\r\n`);
  const PIPELINED = 10;
  const batch = Buffer.concat(Array.from({ length: PIPELINED }, () => request));
  /** A connection to `target`: `send()` writes PIPELINED requests and resolves when as many 304s came back. */
  const connect = (target) => {
    let waiting = 0;
    let done = () => {};
    const socket = new Duplex({
      read() {},
      write(chunk, _encoding, callback) {
        const text = chunk.toString('latin1');
        if (text.startsWith('HTTP/1.1 ')) {
          if (!text.startsWith('HTTP/1.1 304 ')) throw new Error(`expected a 304, got ${text.slice(0, 40)}`);
          if (--waiting === 0) done();
        }
        callback();
      },
    });
    Object.assign(socket, { remoteAddress: '127.0.0.1', remotePort: 40000, setTimeout: () => socket, setNoDelay: () => socket, setKeepAlive: () => socket });
    target.emit('connection', socket);
    return () =>
      new Promise((resolve) => {
        waiting = PIPELINED;
        done = resolve;
        socket.push(batch);
      });
  };
  const clients = { embedded: connect(server.app.server), bare: connect(bare) };
  const REQUESTS = QUICK ? 20_000 : 100_000;
  const ROUNDS_IN_PROCESS = QUICK ? 3 : 9;
  const timePerRequest = async (send) => {
    const start = process.hrtime.bigint();
    for (let sent = 0; sent < REQUESTS; sent += PIPELINED) await send();
    return Number(process.hrtime.bigint() - start) / 1000 / REQUESTS;
  };
  for (const send of Object.values(clients)) await timePerRequest(send); // warm-up
  const samples = { embedded: [], bare: [] };
  for (let round = 0; round < ROUNDS_IN_PROCESS; round++) {
    for (const name of round % 2 === 0 ? ['embedded', 'bare'] : ['bare', 'embedded']) samples[name].push(await timePerRequest(clients[name]));
  }
  await server.app.close();
  await rm(dir, { recursive: true, force: true });
  process.send({ embedded: median(samples.embedded), bare: median(samples.bare), requests: REQUESTS, rounds: ROUNDS_IN_PROCESS });
}

// ---------------------------------------------------------------------------------------------
// Orchestrator
// ---------------------------------------------------------------------------------------------

function startChild(role, first) {
  const child = fork(here, [role], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the ${role} server exited (${code}) before listening`)));
  });
  if (first) child.send(first);
  return { child, ready };
}

function get(port, headers) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/registry.json', headers }, (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

/** Headers a server sets itself on every response (not part of what the route answers). */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

function cpuOf(child) {
  return new Promise((resolve) => {
    const listener = (message) => {
      if (message && typeof message.cpu === 'number') {
        child.off('message', listener);
        resolve(message.cpu);
      }
    };
    child.on('message', listener);
    child.send('cpu');
  });
}

/** Requests per second, and the server's CPU microseconds per request, of one run of `seconds`. */
async function load(autocannon, target, headers, seconds) {
  const cpuBefore = await cpuOf(target.child);
  const result = await autocannon({ url: `http://127.0.0.1:${target.port}/registry.json`, connections: CONNECTIONS, duration: seconds, headers });
  const cpu = (await cpuOf(target.child)) - cpuBefore;
  const expected = headers['if-none-match'] ? 304 : 200;
  const answered = expected === 304 ? result['3xx'] : result['2xx'];
  if (result.errors > 0 || result.timeouts > 0 || answered !== result.requests.total) {
    const counts = { errors: result.errors, timeouts: result.timeouts, '2xx': result['2xx'], '3xx': result['3xx'], non2xx: result.non2xx, total: result.requests.total };
    throw new Error(`expected only ${expected} answers from port ${target.port}: ${JSON.stringify(counts)}`);
  }
  return { rate: result.requests.total / seconds, cpuPerRequest: cpu / Math.max(1, result.requests.total) };
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round2 = (value) => Math.round(value * 100) / 100;

const WAYS = [
  ['embedded', 'plain', ''],
  ['proxied', 'proxied', ', --trust-proxy 1'],
  ['logging', 'logging', ', logging every request'],
];

/**
 * One set of server processes (the embedded server's ways and the bare server), measured in
 * `ROUNDS` interleaved rounds, then stopped: the samples of every server, and what the set served.
 */
async function measureSet(autocannon) {
  const started = WAYS.map(([role]) => startChild(role));
  const ready = await Promise.all(started.map((child) => child.ready));
  const embeddedPort = ready[0].port;
  const heldBytes = ready[0].heldBytes;

  const first = await get(embeddedPort, { 'accept-encoding': ACCEPT_ENCODING });
  if (first.status !== 200 || first.headers['content-encoding'] !== 'br') throw new Error(`GET /registry.json answered ${first.status} ${first.headers['content-encoding']}`);
  const identity = await get(embeddedPort, {});
  const servers = {};
  for (const [k, [name]] of WAYS.entries()) {
    const answer = await get(ready[k].port, { 'accept-encoding': ACCEPT_ENCODING });
    const plain = await get(ready[k].port, {});
    if (answer.status !== 200 || plain.body.length !== identity.body.length) throw new Error(`the ${name} server does not answer a registry.json of the same size`);
    servers[name] = { child: started[k].child, port: ready[k].port, etag: answer.headers.etag };
  }
  // What the route answered, less what node:http adds to every answer itself.
  const answered = Object.fromEntries(Object.entries(first.headers).filter(([name]) => !TRANSPORT_HEADERS.has(name)));
  const bare = startChild('bare', { body: first.body.toString('base64'), headers: answered });
  const { port: barePort } = await bare.ready;
  const check = await get(barePort, { 'accept-encoding': ACCEPT_ENCODING });
  if (!check.body.equals(first.body)) throw new Error('the bare server does not answer the same bytes');
  servers.bare = { child: bare.child, port: barePort, etag: first.headers.etag };

  const headersOf = (pair, server) => ({ 'accept-encoding': ACCEPT_ENCODING, ...(pair.revalidate ? { 'if-none-match': server.etag } : {}) });
  const pairs = [
    { name: 'GET /registry.json 200 (br)', floor: 'bare node:http 200', revalidate: false },
    { name: 'GET /registry.json 304 (If-None-Match)', floor: 'bare node:http 304', revalidate: true },
  ];
  const names = Object.keys(servers);
  for (const pair of pairs) for (const server of Object.values(servers)) await load(autocannon, server, headersOf(pair, server), 1); // warm-up
  // Each round runs the servers back to back (in a rotating order), so all meet the same moment of the machine.
  const samples = pairs.map(() => Object.fromEntries(names.map((name) => [name, []])));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, pair] of pairs.entries()) {
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const which of order) samples[k][which].push(await load(autocannon, servers[which], headersOf(pair, servers[which]), SECONDS));
    }
  }
  for (const server of Object.values(servers)) server.child.send('stop');
  return { samples, pairs, first, identity, heldBytes };
}

async function orchestrate() {
  const { default: autocannon } = await import('autocannon');
  // Several sets of processes: on this machine one server process can run 15-20% slower than
  // another of the same code for its whole life (measured 2026-11-28: four processes of the
  // embedded server answered 0.80, 0.80, 0.81 and 0.65x the bare server's 304s), so the figure of
  // each server is the median of its sets' means, never one process's luck.
  const sets = [];
  for (let set = 0; set < PROCESS_SETS; set++) sets.push(await measureSet(autocannon));
  const { pairs, first, identity, heldBytes } = sets[0];

  const rows = [];
  const notes = [];
  const figure = (k, which, field) => median(sets.map(({ samples }) => mean(samples[k][which].map((s) => s[field]))));
  for (const [name, , label] of WAYS) {
    for (const [k, pair] of pairs.entries()) {
      const ratio = round2(figure(k, name, 'rate') / figure(k, 'bare', 'rate'));
      const targeted = name === 'embedded';
      rows.push({
        name: `${pair.name}${label}`,
        value: Math.round(figure(k, name, 'rate')),
        unit: 'req/s',
        baseline: `${pair.floor} (same bytes and headers)`,
        baselineValue: Math.round(figure(k, 'bare', 'rate')),
        ratio,
        target: targeted ? `>= ${TARGET}x floor` : null,
        met: targeted ? ratio >= TARGET : null,
      });
      if (targeted && ratio < TARGET) notes.push(`${pair.name}: ${ratio}x the requests per second of the bare server, under the ${TARGET}x target.`);
    }
  }
  const inProcess = await new Promise((resolve, reject) => {
    const child = fork(here, ['in-process'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the in-process measure exited (${code}) before reporting`)));
  });
  rows.push({
    name: 'GET /registry.json 304 (If-None-Match), both servers in one process over in-memory sockets: time per request',
    value: round2(inProcess.embedded),
    unit: 'us',
    baseline: 'bare node:http 304, same process',
    baselineValue: round2(inProcess.bare),
    ratio: round2(inProcess.embedded / inProcess.bare),
    target: null,
    met: null,
  });
  for (const [k, pair] of pairs.entries()) {
    for (const [name, , label] of WAYS) {
      const ours = figure(k, name, 'cpuPerRequest');
      const floor = figure(k, 'bare', 'cpuPerRequest');
      rows.push({ name: `${pair.name}${label}: server CPU per request`, value: round2(ours), unit: 'us', baseline: pair.floor, baselineValue: round2(floor), ratio: round2(ours / floor), target: null, met: null });
    }
  }
  notes.push(
    'One pipeline: every request goes through fastify (its routing, the request-id and rate-limit hooks, the API-version check); the static ' +
      "files' routes answer a plain read (no query string) from their own onRequest hook, from headers and buffers computed once per build, " +
      "written without fastify's send pipeline (src/server/routes/read.ts). " +
      'At its start the server calls process.nextTick uniformly 12,000 times (src/server/tick-queue.ts) so that V8 optimizes it on one shape: ' +
      "node's HTTP and stream code takes five ticks per request, and without that most server processes here built every tick in V8's runtime (3-4 us more CPU per 304). " +
      'The server that trusts a proxy and the one that logs run the same code; logging costs what ' +
      'writing two JSON lines per request costs.',
    `The in-process row (both servers in one process, fed pipelined requests through in-memory sockets, ${inProcess.requests} requests per round, the median of ${inProcess.rounds} interleaved rounds) is what each 304 costs in JavaScript and Node's HTTP code alone: ` +
      `this server's costs ${round2(inProcess.embedded - inProcess.bare)} us more than the bare handler's. It has no system call and no load generator beside it, so it moves far less than the network figures on this shared machine; the network ratios add the kernel's work (the same for both servers) and the machine's noise to it.`,
    'Requests per second are what a client sees with autocannon sharing this 2-core machine with the servers (and other work); ' +
      'the CPU-per-request rows (process.cpuUsage of each server process over its runs) show the cost of each answer regardless.',
  );
  const result = {
    title: 'Embedded server: GET /registry.json against a bare node:http server',
    setup:
      `registry.json of ${VERSIONS} versions (${VERSIONS / 5} templates) built by the server at its start from a store another process filled: ${identity.body.length} bytes, ` +
      `${first.body.length} bytes br; the server holds ${heldBytes} bytes of static files (every file, every coding); autocannon ${CONNECTIONS} connections on 127.0.0.1, ${SECONDS} s per case x ${ROUNDS} rounds after 1 s warm-ups, ` +
      `the servers back to back in each round; ${PROCESS_SETS} sets of fresh server processes (each server's figure: the median of its sets' means); each server in its own child process, autocannon in the parent; ${os.cpus().length} shared cores`,
    rows,
    notes,
  };
  console.log(JSON.stringify(result));
}

/** Fills the store in `dir` with the bench's versions, then closes it. */
async function seedStore(dir) {
  const { openSqliteStorage } = await import(path.join(root, 'build/src/store/index.js'));
  const store = await openSqliteStorage(dir);
  await seed(store, VERSIONS);
  await store.close();
}

const role = process.argv[2];
if (role === 'seed') await seedStore(process.argv[3]);
else if (role === 'embedded') await serveEmbedded('plain');
else if (role === 'proxied') await serveEmbedded('proxied');
else if (role === 'logging') await serveEmbedded('logging');
else if (role === 'bare') serveBare();
else if (role === 'in-process') await measureInProcess();
else await orchestrate();
