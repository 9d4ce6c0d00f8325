/**
 * `template-registry store copy`: a folder store -> PostgreSQL + s3rver -> a folder store, progress on
 * stderr, the summary (or one JSON document) on stdout, no secret printed; a corrupted archive and a
 * non-empty target (its rows, or its bytes location) fail with exit 1 and a message naming why; of
 * two copies into one target at once one only runs; flag mistakes are usage errors.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { computeIntegrity } from '../../src/archive/integrity.js';
import { openPostgresStorage, openSqliteStorage, S3BlobStore } from '../../src/store/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';

const BUCKET = 'cli-copy';

/**
 * A folder store with two published versions, a token, an account and a webhook; gives the token.
 * `flavour` goes into the archives' bytes: two stores of other flavours hold other bytes for the same versions.
 */
async function folderStore(flavour = 'bytes'): Promise<{ dir: string; token: string }> {
  const dir = await tempDir('tr-cli-copy-');
  const storage = await openSqliteStorage(dir);
  try {
    const { token, record } = await storage.tokens.createToken({ role: 'publisher', owner: 'acme' });
    for (const version of ['1.0.0', '1.1.0']) {
      const file = path.join(await tempDir(), 'upload.tgz');
      await writeFile(file, `${flavour} of ${version}\n`.repeat(40));
      expect(await storage.versions.reserveVersion({ name: 'web-app', version, ...(await computeIntegrity(file)), owner: 'acme' }, record)).toEqual({ reserved: true });
      await storage.versions.commitVersion('web-app', version, file, { name: 'web-app', version, description: 'A web app template for tests', category: 'frontend' });
    }
    await storage.accounts.createUser({ email: 'ann@example.com', passwordHash: 'scrypt$secret-hash', role: 'admin', owner: 'acme' });
    await storage.webhooks.createWebhook({ url: 'https://hooks.example.com/x', events: ['*'], secret: 'whsec-very-secret', active: true });
    await storage.accounts.signingKey();
    return { dir, token };
  } finally {
    await storage.close();
  }
}

describe.skipIf(postgresSkipReason !== undefined)('store copy', () => {
  const postgres = usePostgres();
  let s3: FakeS3;
  let prefixes = 0;
  const saved = { AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY };

  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
    process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
  });
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await s3.close();
  });

  const bucketFlags = (flag: '--storage-from' | '--storage-to', prefix: string): string[] => [flag, `s3://${BUCKET}/${prefix}`, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'];
  const blobsAt = (prefix: string): S3BlobStore => new S3BlobStore({ bucket: BUCKET, prefix, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
  const keysAt = async (prefix: string): Promise<string[]> => {
    const keys: string[] = [];
    for await (const { key } of blobsAt(prefix).list('')) keys.push(key);
    return keys.sort();
  };

  /** Every version of the store in `url` + `prefix`, with whether its archive's sha256 is its row's. */
  async function archivesMatchRows(url: string, prefix: string): Promise<Record<string, boolean>> {
    const local = await tempDir();
    const storage = await openPostgresStorage({ url, blobs: blobsAt(prefix), publicDir: path.join(local, 'public'), tmpDir: path.join(local, 'tmp') });
    try {
      const result: Record<string, boolean> = {};
      for (const version of await storage.versions.listVersions()) {
        const reader = await storage.versions.openArchive(version.name, version.version);
        const sha256 = reader ? createHash('sha256').update(await buffer(reader.stream)).digest('hex') : 'missing';
        result[`${version.name}@${version.version}`] = sha256 === (await storage.versions.getVersion(version.name, version.version))?.sha256;
      }
      return result;
    } finally {
      await storage.close();
    }
  }

  it('copies a folder store to PostgreSQL + S3 and back, printing progress and a summary, never a secret', async () => {
    const source = await folderStore();
    const url = (await postgres.createDatabase()).replace('postgres@', 'postgres:pg-password@');
    const prefix = `run-${++prefixes}`;

    const there = await cli('store', 'copy', '--from', source.dir, '--to', url, ...bucketFlags('--storage-to', prefix), '--json');
    expect(there.code, there.stderr).toBe(0);
    const summary = JSON.parse(there.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ tokens: 1, versions: 2, completeVersions: 2, archives: 2, users: 1, webhooks: 1, settings: 1, to: { backend: 'postgres' } });
    expect(there.stderr).toMatch(/\[1\/2\] web-app@1\.0\.0: .*integrity verified/);
    expect(there.stderr).toMatch(/\[2\/2\] web-app@1\.1\.0/);

    const back = path.join(await tempDir(), 'copied');
    const home = await cli('store', 'copy', '--from', url, ...bucketFlags('--storage-from', prefix), '--to', back);
    expect(home.code, home.stderr).toBe(0);
    expect(home.stdout).toMatch(/versions: +2 \(2 complete, 0 pending\)/);
    expect(home.stdout).toMatch(/tokens: +1/);

    for (const output of [there.stdout, there.stderr, home.stdout, home.stderr]) {
      expect(output).not.toContain('pg-password');
      expect(output).not.toContain('whsec-very-secret');
      expect(output).not.toContain('secret-hash');
    }
    const copied = await openSqliteStorage(back, { create: false });
    try {
      expect(await copied.tokens.checkToken(source.token)).toMatchObject({ valid: true });
      expect((await copied.versions.listVersions()).map((version) => version.version)).toEqual(['1.0.0', '1.1.0']);
      expect(await copied.accounts.findCredentials('ann@example.com')).toMatchObject({ passwordHash: 'scrypt$secret-hash' });
    } finally {
      await copied.close();
    }

    // Into a store that is not empty: refused, nothing changed.
    const again = await cli('store', 'copy', '--from', source.dir, '--to', back, '--json');
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toEqual({ error: { exitCode: 1, message: expect.stringMatching(/^TARGET_NOT_EMPTY: the target .* is not empty \(it holds 2 versions, 1 token/) as string } });
  }, 90_000);

  it('fails on a corrupted archive, naming the version, leaving the target without versions', async () => {
    const source = await folderStore();
    await writeFile(path.join(source.dir, 'archives', 'web-app', '1.1.0.tgz'), 'tampered');
    const target = path.join(await tempDir(), 'target');
    const run = await cli('store', 'copy', '--from', source.dir, '--to', target);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/error: INTEGRITY_MISMATCH: web-app@1\.1\.0: the archive in the source does not match its version row \(size mismatch/);
    const left = await openSqliteStorage(target, { create: false });
    try {
      expect(await left.versions.listVersions()).toEqual([]);
      expect(await left.tokens.listTokens()).toEqual([]);
    } finally {
      await left.close();
    }
  }, 60_000);

  it('refuses a target whose --storage-to holds another store\'s archives, changing none of its bytes', async () => {
    // A store in use: its rows in one database, its bytes below a prefix.
    const prefix = `live-${++prefixes}`;
    const live = await postgres.createDatabase();
    const made = await cli('store', 'copy', '--from', (await folderStore('live')).dir, '--to', live, ...bucketFlags('--storage-to', prefix));
    expect(made.code, made.stderr).toBe(0);
    const before = await Promise.all((await keysAt(prefix)).map(async (key) => [key, (await blobsAt(prefix).readBytes(key))?.toString('base64')]));

    // Another, empty, database, but the same prefix: refused, naming the flag and what is there.
    const other = await postgres.createDatabase();
    const refused = await cli('store', 'copy', '--from', (await folderStore('other')).dir, '--to', other, ...bucketFlags('--storage-to', prefix));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^error: TARGET_NOT_EMPTY: the target's storage s3://${BUCKET}/${prefix} \\(--storage-to\\) is not empty \\(it holds archives/web-app/1\\.0\\.0\\.tgz,`, 'm'));
    expect(await Promise.all((await keysAt(prefix)).map(async (key) => [key, (await blobsAt(prefix).readBytes(key))?.toString('base64')]))).toEqual(before);
    expect(await archivesMatchRows(live, prefix)).toEqual({ 'web-app@1.0.0': true, 'web-app@1.1.0': true });
    expect(await archivesMatchRows(other, prefix)).toEqual({});

    // A folder target whose folder holds an archive but no store: refused, naming --to.
    const folder = await tempDir();
    await mkdir(path.join(folder, 'archives', 'web-app'), { recursive: true });
    await writeFile(path.join(folder, 'archives', 'web-app', '1.0.0.tgz'), 'not ours');
    const intoFolder = await cli('store', 'copy', '--from', (await folderStore()).dir, '--to', folder);
    expect(intoFolder.code).toBe(1);
    expect(intoFolder.stderr).toMatch(/^error: TARGET_NOT_EMPTY: the target's storage .* \(--to\) is not empty \(it holds archives\/web-app\/1\.0\.0\.tgz,/m);
  }, 90_000);

  it('of two copies into one empty target at once, runs one and refuses the other; the target\'s bytes are those its rows describe', async () => {
    const prefix = `race-${++prefixes}`;
    const url = await postgres.createDatabase();
    const sources = [await folderStore('first'), await folderStore('second')];
    const runs = await Promise.all(sources.map((source) => cli('store', 'copy', '--from', source.dir, '--to', url, ...bucketFlags('--storage-to', prefix))));
    expect(runs.map((run) => run.code).sort()).toEqual([0, 1]);
    const loser = runs.find((run) => run.code === 1);
    expect(loser?.stderr).toMatch(/^error: TARGET_NOT_EMPTY: the target postgres:\/\/\S+ \(--to\) (is taken: another store copy is running into it|is not empty)/m);
    expect(await archivesMatchRows(url, prefix)).toEqual({ 'web-app@1.0.0': true, 'web-app@1.1.0': true });
    // Only the winner's bytes, and no claim left behind.
    expect(await keysAt(prefix)).toEqual(['archives/web-app/1.0.0.tgz', 'archives/web-app/1.1.0.tgz', 'manifests/web-app/1.0.0.json', 'manifests/web-app/1.1.0.json']);
  }, 90_000);

  it('names a manifest that is not its version\'s as invalid', async () => {
    const source = await folderStore();
    await writeFile(path.join(source.dir, 'manifests', 'web-app', '1.1.0.json'), '{}');
    const run = await cli('store', 'copy', '--from', source.dir, '--to', path.join(await tempDir(), 'target'));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: MANIFEST_INVALID: web-app@1\.1\.0: its manifest in the source \(manifests\/web-app\/1\.1\.0\.json in .*\) is invalid: it has no "name" and no "version", not those of web-app@1\.1\.0$/m);
  });

  it('a missing bucket fails naming its flag, before anything is made', async () => {
    const target = path.join(await tempDir(), 'target');
    const run = await cli('store', 'copy', '--from', (await folderStore()).dir, '--to', target, '--storage-to', 's3://nobucket/p', '--s3-endpoint', s3.endpoint, '--s3-force-path-style');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: cannot open the storage \(--storage-to s3:\/\/nobucket\/p\): the bucket nobucket does not exist$/m);
    await expect(openSqliteStorage(target, { create: false })).rejects.toThrow(/holds no registry store/);
  });

  it('refuses flag mistakes as usage errors', async () => {
    const missingStorage = await cli('store', 'copy', '--from', await tempDir(), '--to', 'postgres://user:pw@127.0.0.1:1/db');
    expect(missingStorage.code).toBe(2);
    expect(missingStorage.stderr).toMatch(/--storage-to is needed with --to postgres:\/\//);
    const noBucket = await cli('store', 'copy', '--from', await tempDir(), '--to', await tempDir(), '--s3-force-path-style');
    expect(noBucket.code).toBe(2);
    const noSource = await cli('store', 'copy', '--from', path.join(await tempDir(), 'nothing'), '--to', await tempDir());
    expect(noSource.code).toBe(2);
    expect(noSource.stderr).toMatch(/--from: .*holds no registry store/);
  });
});
