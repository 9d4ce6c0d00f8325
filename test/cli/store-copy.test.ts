/**
 * `template-registry store copy`: a folder store -> PostgreSQL + s3rver -> a folder store, progress on
 * stderr, the summary (or one JSON document) on stdout, no secret printed; a corrupted archive and a
 * non-empty target fail with exit 1 and a message naming why; flag mistakes are usage errors.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { computeIntegrity } from '../../src/archive/integrity.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';

const BUCKET = 'cli-copy';

/** A folder store with two published versions, a token, an account and a webhook; gives the token. */
async function folderStore(): Promise<{ dir: string; token: string }> {
  const dir = await tempDir('tr-cli-copy-');
  const storage = await openSqliteStorage(dir);
  try {
    const { token, record } = await storage.tokens.createToken({ role: 'publisher', owner: 'acme' });
    for (const version of ['1.0.0', '1.1.0']) {
      const file = path.join(await tempDir(), 'upload.tgz');
      await writeFile(file, `bytes of ${version}\n`.repeat(40));
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
