/**
 * A throwaway PostgreSQL from the machine's Debian package: `initdb` into a temp folder, a server on
 * a free port of 127.0.0.1, fresh databases on demand. Free of vitest, so the benchmarks start it
 * too (bench/instances.js bundles this file); tests use it through postgres.ts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import pg from 'pg';

const DEBIAN_POSTGRES = '/usr/lib/postgresql';

/** The bin folder of the highest PostgreSQL version installed, or undefined. */
function findBinDir(): string | undefined {
  const versions = existsSync(DEBIAN_POSTGRES)
    ? readdirSync(DEBIAN_POSTGRES)
        .filter((entry) => /^\d+$/.test(entry) && existsSync(path.join(DEBIAN_POSTGRES, entry, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions[0] === undefined ? undefined : path.join(DEBIAN_POSTGRES, versions[0], 'bin');
}

export const postgresBinDir = findBinDir();

const majorVersion = postgresBinDir ? Number(path.basename(path.dirname(postgresBinDir))) : 0;

/** Why PostgreSQL tests are skipped here; undefined when they run. */
export const postgresSkipReason =
  postgresBinDir === undefined ? `PostgreSQL tests skipped: no ${DEBIAN_POSTGRES}/<version>/bin/postgres (install Debian's postgresql package; .ci/run does)` : undefined;

/** The uid and gid to run the server as: initdb and postgres refuse to run as root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root, but there is no postgres system user to run PostgreSQL as (Debian creates it with the package)');
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function run(file: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(file)} exited with ${code}: ${stderr.trim()}`))));
  });
}

/**
 * A cluster fresh from initdb, made once per machine, PostgreSQL version and user and copied for each
 * server: initdb is most of a start (one to three seconds), a copy a tenth of that. It is made aside
 * and renamed into place, so test files starting at once never see half of one.
 */
async function initializedCluster(binDir: string, user: { uid: number; gid: number } | undefined): Promise<string> {
  const version = path.basename(path.dirname(binDir));
  const cache = path.join(tmpdir(), `tr-pg-initdb-${version}-${user?.uid ?? process.getuid?.() ?? 'user'}`);
  if (existsSync(path.join(cache, 'PG_VERSION'))) return cache;
  const scratch = await mkdtemp(path.join(tmpdir(), 'tr-pg-initdb-'));
  try {
    if (user) await chown(scratch, user.uid, user.gid);
    const data = path.join(scratch, 'data');
    await run(path.join(binDir, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions', '-E', 'UTF8', '--locale=C'], user);
    await rename(data, cache).catch((error: unknown) => {
      // Another test file made it first: use theirs.
      if (!existsSync(path.join(cache, 'PG_VERSION'))) throw error;
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return cache;
}

export interface PostgresServer {
  /** The admin URL (database `postgres`). */
  readonly url: string;
  /** How long initdb and the start took, in ms. */
  readonly startMs: number;
  /** Creates an empty database with a unique name and returns its URL. */
  createDatabase(): Promise<string>;
  /** Fast shutdown (SIGINT), then removes the folder. */
  stop(): Promise<void>;
}

let databaseCount = 0;

/**
 * Starts a throwaway server. As root, initdb and postgres run as the `postgres` system user through
 * spawn's uid/gid (not runuser/su): the child is then postgres itself, so the SIGINT of `stop()`
 * reaches the postmaster directly and means a fast shutdown, whatever a wrapper would forward.
 */
export async function startPostgres(): Promise<PostgresServer> {
  if (!postgresBinDir) throw new Error(postgresSkipReason);
  const started = Date.now();
  const user = serverUser();
  const dir = await mkdtemp(path.join(tmpdir(), 'tr-pg-'));
  if (user) await chown(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  try {
    await run('cp', ['-a', await initializedCluster(postgresBinDir, user), data], undefined);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  // A free port can be taken between the probe and the bind: a few tries.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      const child = await launch(postgresBinDir, data, dir, port, user);
      return server(child, dir, port, Date.now() - started);
    } catch (error) {
      lastError = error;
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}

async function launch(binDir: string, data: string, socketDir: string, port: number, user: { uid: number; gid: number } | undefined): Promise<ChildProcess> {
  const args = ['-D', data, '-p', String(port), '-k', socketDir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  const child = spawn(path.join(binDir, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => reject(new Error(`postgres exited (${signal ?? code}) before accepting connections: ${log.trim()}`)));
    child.once('error', reject);
  });
  exited.catch(() => undefined);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    client.on('error', () => undefined);
    const ready = await Promise.race([
      client.connect().then(
        () => true,
        () => false,
      ),
      exited,
    ]);
    await client.end().catch(() => undefined);
    if (ready) return child;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`postgres did not accept connections within 20 s: ${log.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function server(child: ChildProcess, dir: string, port: number, startMs: number): PostgresServer {
  const base = `postgres://postgres@127.0.0.1:${port}`;
  // A worker that dies without afterAll must not leave a server behind.
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let admin: pg.Client | undefined;
  const create = async (): Promise<string> => {
    if (!admin) {
      admin = new pg.Client({ connectionString: `${base}/postgres` });
      admin.on('error', () => undefined);
      await admin.connect();
    }
    const name = `test_${process.pid}_${++databaseCount}`;
    // FILE_COPY (PostgreSQL 15+): a copy of the small template beats logging it page by page.
    await admin.query(`CREATE DATABASE ${name}${majorVersion >= 15 ? ' STRATEGY = FILE_COPY' : ''}`);
    return `${base}/${name}`;
  };
  // One database made ahead, while the test that asked for the last one runs.
  let ahead: Promise<string> | undefined;
  return {
    url: `${base}/postgres`,
    startMs,
    createDatabase() {
      // Swapped before any await: concurrent callers each get their own database.
      const next = ahead ?? create();
      ahead = create();
      ahead.catch(() => undefined);
      return next;
    },
    async stop() {
      await ahead?.catch(() => undefined);
      await admin?.end().catch(() => undefined);
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
