/**
 * The backends chosen at start, from the CLI. `token create` on PostgreSQL and a
 * bucket, then `serve` (the built CLI, as a process) on the same answers a publish made with that
 * token; `user create|list` and `build-registry` read the same store; `db migrate` creates and then
 * keeps the schema; a bad `--database` exits 2 naming the flag; a bucket that is missing or cannot be
 * reached fails at once naming `--storage`; commands on a database make no local folder; and a
 * database URL's password is never printed, whatever the command.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { openStoreForCommand } from '../../src/cli/commands/backends.js';
import { POSTGRES_SCHEMA_VERSION } from '../../src/store/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli, type CliRun } from '../helpers/cli.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { freePort } from '../helpers/registry-server.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { killHard, serveOutput, serveProcess } from '../helpers/serve-process.js';

const BUCKET = 'cli-backends';
const PASSWORD = 'Pw-never-printed-9f3c';

/** The database URL with a password (the test server trusts every local connection, so any works). */
const withPassword = (url: string): string => url.replace('postgres://postgres@', `postgres://postgres:${PASSWORD}@`);

const S3_ENV = { AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey, AWS_REGION: 'us-east-1' };

function expectNoPassword(...runs: (CliRun | string)[]): void {
  for (const run of runs) {
    const text = typeof run === 'string' ? run : `${run.stdout}\n${run.stderr}`;
    expect(text).not.toContain(PASSWORD);
  }
}

/**
 * The static registry the server publishes below `public/` of its bucket, for a CDN: registry.json
 * lists the version (soon after the 201: it is published after the answer) with a URL relative to
 * it, the archive there has the published bytes, and `create` works from it.
 */
async function expectStaticRegistry(site: string, id: string, archiveFile: string): Promise<void> {
  let document: { templates: { id: string; version: string; downloadUrl: string }[] } | undefined;
  await vi.waitFor(
    async () => {
      const response = await fetch(`${site}registry.json`);
      expect(response.status).toBe(200);
      document = (await response.json()) as typeof document;
      expect(document?.templates.map((entry) => entry.id)).toContain(id);
    },
    { timeout: 15_000, interval: 100 },
  );
  const entry = document?.templates.find((candidate) => candidate.id === id);
  expect(entry?.downloadUrl).toBe(`archives/${id}/${entry?.version ?? ''}.tgz`);
  const archive = await fetch(`${site}${entry?.downloadUrl ?? ''}`);
  expect(Buffer.from(await archive.arrayBuffer()).equals(await readFile(archiveFile))).toBe(true);
  expect((await fetch(`${site}index.html`)).status).toBe(200);
  // A consumer creates a project from the bucket as from any static host.
  const project = path.join(await tempDir('tr-from-bucket-'), 'app');
  const created = await cli('create', id, project, '--registry', `${site}registry.json`, '--defaults', '--set', 'projectName=from-bucket');
  expect(created.code, created.stderr).toBe(0);
  expect(JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8'))).toMatchObject({ template: { name: id, version: entry?.version, source: `${site}registry.json#${id}@${entry?.version ?? ''}` } });
}

const children: ChildProcess[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(children.splice(0).map((child) => killHard(child)));
});

describe('--database and DATABASE_URL refused when they are not PostgreSQL URLs', () => {
  it('exits 2 naming the flag (or the variable), never echoing a password', async () => {
    const store = await tempDir('tr-store-');
    const mysql = await cli('token', 'list', '--store', store, '--database', `mysql://root:${PASSWORD}@127.0.0.1/registry`);
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toMatch(/^error: --database: must be a postgres:\/\/ or postgresql:\/\/ URL \(got a mysql: URL\)/);
    const notUrl = await cli('serve', '--store', store, '--port', '1', '--database', `postgres:${PASSWORD} nope`);
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toMatch(/^error: --database: must be a postgres:\/\/ or postgresql:\/\/ URL \(got a postgres: URL\)/);
    const garbage = await cli('token', 'list', '--store', store, '--database', `::${PASSWORD}`);
    expect(garbage.stderr).toMatch(/^error: --database: must be a postgres:\/\/user:password@host:port\/database URL \(got a value that is not a URL\)/);
    const migrate = await cli('db', 'migrate', '--database', `http://u:${PASSWORD}@example.com/`, '--json');
    expect(migrate.code).toBe(2);
    expect(JSON.parse(migrate.stdout)).toMatchObject({ error: { exitCode: 2, message: expect.stringMatching(/^--database: /) as string } });
    vi.stubEnv('DATABASE_URL', `sqlite://${PASSWORD}`);
    const fromEnv = await cli('user', 'list', '--store', store);
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toMatch(/^error: DATABASE_URL: must be a postgres:\/\//);
    const noDatabase = await cli('db', 'migrate', '--database', '');
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toMatch(/DATABASE_URL: must be a postgres/);
    vi.unstubAllEnvs();
    const missing = await cli('db', 'migrate');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/db migrate needs --database/);
    // S3 flags with no bucket to apply them to.
    const endpoint = await cli('token', 'list', '--store', store, '--s3-endpoint', 'http://127.0.0.1:9000');
    expect(endpoint.code).toBe(2);
    expect(endpoint.stderr).toMatch(/--s3-endpoint needs --storage s3:\/\/bucket\/prefix/);
    expectNoPassword(mysql, notUrl, garbage, migrate, fromEnv, noDatabase);
  });

  it('names the help texts of the environment variables', async () => {
    for (const argv of [['serve'], ['token', 'create'], ['token', 'list'], ['token', 'revoke'], ['user', 'create'], ['user', 'list'], ['build-registry']]) {
      const help = (await cli(...argv, '--help')).stdout;
      for (const text of ['--database <url>', 'DATABASE_URL', '--storage <dir|s3-url>', 'REGISTRY_STORAGE', '--s3-endpoint', 'AWS_ENDPOINT_URL', '--s3-force-path-style']) {
        expect(help, `${argv.join(' ')} --help`).toContain(text);
      }
    }
    expect((await cli('db', 'migrate', '--help')).stdout).toContain('DATABASE_URL');
  });
});

describe('--storage alone: the embedded store with its bytes in a bucket', () => {
  let s3: FakeS3 | undefined;
  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  // Every command checks the bucket when it opens the store: all need its credentials.
  beforeEach(() => {
    for (const [key, value] of Object.entries(S3_ENV)) vi.stubEnv(key, value);
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('serve (a process) keeps the rows in the store folder and the archive in the bucket, and serves it back', async () => {
    const backend = ['--storage', `s3://${BUCKET}/embedded`, '--s3-endpoint', s3?.endpoint ?? '', '--s3-force-path-style'];
    const store = await tempDir('tr-store-');
    const created = await cli('token', 'create', '--role', 'publisher', '--store', store, ...backend, '--json');
    expect(created.code, created.stderr).toBe(0);
    const { token } = JSON.parse(created.stdout) as { token: string };
    const port = await freePort();
    children.push(await serveProcess(store, port, backend, S3_ENV));
    const url = `http://127.0.0.1:${port}`;
    const pack = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'bucket-bytes' } }), { outDir: await tempDir('tr-pack-') });
    expect(await publishTemplate({ registryUrl: url, token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ uploaded: true, status: 201 });
    const archive = await fetch(`${url}/templates/bucket-bytes/versions/1.0.0/archive`);
    expect(Buffer.from(await archive.arrayBuffer()).equals(await readFile(pack.file))).toBe(true);
    // The rows are in the store folder's SQLite file; the archive is in the bucket, not in the folder.
    await expect(readFile(path.join(store, 'archives', 'bucket-bytes', '1.0.0.tgz'))).rejects.toMatchObject({ code: 'ENOENT' });
    const inBucket = await fetch(`${s3?.endpoint ?? ''}/${BUCKET}/embedded/archives/bucket-bytes/1.0.0.tgz`);
    expect(inBucket.status).toBe(200);
    expect(Buffer.from(await inBucket.arrayBuffer()).equals(await readFile(pack.file))).toBe(true);
    await expectStaticRegistry(`${s3?.endpoint ?? ''}/${BUCKET}/embedded/public/`, 'bucket-bytes', pack.file);
  }, 60_000);

  it('a missing bucket fails every command at once as a bad --database does (exit 2), naming --storage (or REGISTRY_STORAGE), before the store folder is made', async () => {
    const store = path.join(await tempDir('tr-store-'), 'never-made');
    const endpoint = ['--s3-endpoint', s3?.endpoint ?? '', '--s3-force-path-style'];
    for (const argv of [['token', 'list'], ['token', 'create', '--role', 'admin'], ['user', 'list'], ['serve', '--port', String(await freePort())]]) {
      const run = await cli(...argv, '--store', store, '--storage', 's3://nobucket/p', ...endpoint);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr, argv.join(' ')).toBe('error: cannot open the storage (--storage s3://nobucket/p): the bucket nobucket does not exist\n');
    }
    vi.stubEnv('REGISTRY_STORAGE', 's3://nobucket/from-env');
    const fromEnv = await cli('token', 'list', '--store', store, ...endpoint);
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toBe('error: cannot open the storage (REGISTRY_STORAGE s3://nobucket/from-env): the bucket nobucket does not exist\n');
    expect(existsSync(store)).toBe(false);
  });

  it('an endpoint that cannot be reached is named with its flag; one holding credentials is refused without printing them', async () => {
    const store = path.join(await tempDir('tr-store-'), 'never-made');
    const refused = await cli('token', 'list', '--store', store, '--storage', `s3://${BUCKET}/p`, '--s3-endpoint', 'http://127.0.0.1:1', '--s3-force-path-style');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`error: cannot open the storage (--storage s3://${BUCKET}/p): cannot reach --s3-endpoint http://127.0.0.1:1: connection refused\n`);
    const withSecret = await cli('token', 'list', '--store', store, '--storage', `s3://${BUCKET}/p`, '--s3-endpoint', `http://admin:${PASSWORD}@127.0.0.1:1`);
    expect(withSecret.code).toBe(2);
    expect(withSecret.stderr).toMatch(/^error: --s3-endpoint: must not hold credentials/);
    expectNoPassword(withSecret);
    expect(existsSync(store)).toBe(false);
  });
});

describe.skipIf(postgresSkipReason)('on PostgreSQL and a bucket', () => {
  const postgres = usePostgres();
  let s3: FakeS3 | undefined;
  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  // Every command checks the bucket when it opens the store: all need its credentials.
  beforeEach(() => {
    for (const [key, value] of Object.entries(S3_ENV)) vi.stubEnv(key, value);
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('db migrate creates the schema of a fresh database, then finds it up to date', async () => {
    const database = withPassword(await postgres.createDatabase());
    const first = await cli('db', 'migrate', '--database', database, '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ database: expect.stringMatching(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/test_/) as string, from: 0, to: POSTGRES_SCHEMA_VERSION, migrated: true });
    const again = await cli('db', 'migrate', '--database', database);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/test_\w+: schema version \d+, up to date\n$/);
    // DATABASE_URL when there is no flag.
    vi.stubEnv('DATABASE_URL', withPassword(await postgres.createDatabase()));
    const fromEnv = await cli('db', 'migrate');
    expect(fromEnv.stdout).toMatch(/schema version 0 -> \d+\n$/);
    // A database that cannot be reached: exit 1, the password left out.
    const unreachable = await cli('db', 'migrate', '--database', `postgres://postgres:${PASSWORD}@127.0.0.1:1/nowhere`);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot migrate postgres:\/\/postgres@127\.0\.0\.1:1\/nowhere \(--database\): .*ECONNREFUSED/);
    // A database the server does not have, from the variable: named as such.
    vi.stubEnv('DATABASE_URL', database.replace(/\/[^/]+$/, '/no_such_database'));
    const missing = await cli('db', 'migrate');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: cannot migrate postgres:\/\/postgres@127\.0\.0\.1:\d+\/no_such_database \(DATABASE_URL\): database "no_such_database" does not exist/);
    vi.unstubAllEnvs();
    const tokens = await cli('token', 'list', '--database', `postgres://postgres:${PASSWORD}@127.0.0.1:1/nowhere`, '--store', await tempDir());
    expect(tokens.code).toBe(1);
    expect(tokens.stderr).toMatch(/^error: cannot open the database \(--database\): /);
    expectNoPassword(first, again, fromEnv, unreachable, missing, tokens);
  });

  it('commands on a database without --storage make no folder in the working directory; a server there is told its archives stay local', async () => {
    const database = withPassword(await postgres.createDatabase());
    const cwd = process.cwd();
    const work = await tempDir('tr-cwd-');
    process.chdir(work);
    try {
      const created = await cli('token', 'create', '--role', 'admin', '--database', database, '--json');
      expect(created.code, created.stderr).toBe(0);
      const { id } = JSON.parse(created.stdout) as { id: string };
      expect((await cli('user', 'create', '--email', 'ops@example.com', '--password', 'a-long-enough-password', '--database', database)).code).toBe(0);
      expect((await cli('token', 'revoke', id, '--database', database)).code).toBe(0);
      expect(existsSync(path.join(work, '.template-registry'))).toBe(false);
    } finally {
      process.chdir(cwd);
    }
    // What serve prints on stderr for such a storage (its folders are made when it recovers the storage, at start).
    const store = path.join(await tempDir('tr-store-'), 'local');
    const storage = await openStoreForCommand({ database, store }, { create: true });
    try {
      expect(storage.warnings).toEqual([
        `--database without --storage: archives and manifests are kept in the store folder ${store}, local to this instance; other instances on this database will not have them: give every instance one shared --storage (s3://bucket/prefix)`,
      ]);
      expect(existsSync(store)).toBe(false);
      await storage.recover();
      expect(existsSync(path.join(store, 'public'))).toBe(true);
      expect(existsSync(path.join(store, 'tmp'))).toBe(true);
    } finally {
      await storage.close();
    }
    const server = await serveProcess(store, await freePort(), ['--database', database]);
    children.push(server);
    expect(serveOutput(server)).toContain('warning: --database without --storage: archives and manifests are kept in the store folder');
    expectNoPassword(serveOutput(server));
    const shared = await openStoreForCommand({ database, store, storage: `s3://${BUCKET}/shared`, s3Endpoint: s3?.endpoint ?? '', s3ForcePathStyle: true }, { create: true });
    try {
      expect(shared.warnings).toEqual([]);
    } finally {
      await shared.close();
    }
  });

  it('token create, then serve (a process) on the same database and bucket answers a publish made with that token; user and build-registry read the same store', async () => {
    const database = withPassword(await postgres.createDatabase());
    const storage = `s3://${BUCKET}/registry`;
    const endpoint = s3?.endpoint ?? '';
    const backend = ['--database', database, '--storage', storage, '--s3-endpoint', endpoint, '--s3-force-path-style'];
    const store = await tempDir('tr-store-');

    const created = await cli('token', 'create', '--role', 'publisher', '--owner', 'team', ...backend, '--json');
    expect(created.code, created.stderr).toBe(0);
    const { token, id } = JSON.parse(created.stdout) as { token: string; id: string };
    const listed = await cli('token', 'list', ...backend);
    expect(listed.stdout).toContain(id);
    const account = await cli('user', 'create', '--email', 'ops@example.com', ...backend);
    expect(account.code, account.stderr).toBe(0);
    expect((await cli('user', 'list', ...backend)).stdout).toContain('ops@example.com');
    const empty = await cli('token', 'revoke', 'tok_unknown', ...backend);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/in postgres:\/\/postgres@127\.0\.0\.1:\d+\/test_\w+ \+ s3:\/\/cli-backends\/registry/);

    const port = await freePort();
    const server = await serveProcess(store, port, backend, S3_ENV);
    children.push(server);
    const url = `http://127.0.0.1:${port}`;
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'cli-backends' } });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
    const published = await publishTemplate({ registryUrl: url, token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    expect(published).toMatchObject({ uploaded: true, status: 201 });
    const archive = await fetch(`${url}/templates/cli-backends/versions/1.0.0/archive`);
    expect(Buffer.from(await archive.arrayBuffer()).equals(await readFile(pack.file))).toBe(true);
    await expectStaticRegistry(`${endpoint}/${BUCKET}/registry/public/`, 'cli-backends', pack.file);
    const printed = serveOutput(server);
    expect(printed).toMatch(/^template-registry serving at http:\/\/127\.0\.0\.1:\d+\n {2}database: +postgres:\/\/postgres@127\.0\.0\.1:\d+\/test_\w+\n {2}storage: +s3:\/\/cli-backends\/registry\n/m);
    expect(printed).toMatch(/^ {2}static copy: +s3:\/\/cli-backends\/registry\/public +\(self-contained, for a CDN\)$/m);

    // build-registry reads the archives from the bucket.
    const out = await tempDir('tr-out-');
    const built = await cli('build-registry', '--out', out, ...backend, '--json');
    expect(built.code, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout)).toMatchObject({ entries: 1 });
    const document = JSON.parse(await readFile(path.join(out, 'registry.json'), 'utf8')) as { templates: { id: string; integrity: string }[] };
    expect(document.templates).toEqual([expect.objectContaining({ id: 'cli-backends', integrity: pack.integrity })]);

    // The revocation made by the CLI applies to the running server at once.
    expect((await cli('token', 'revoke', id, ...backend)).code).toBe(0);
    const refused = await fetch(`${url}/templates/cli-backends/versions/1.0.0`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    expect(refused.status).toBe(401);

    expectNoPassword(created, listed, account, empty, built, serveOutput(server));
  }, 60_000);
});
