/**
 * `copyStore`: SQLite -> PostgreSQL + S3 (s3rver) -> SQLite, everything kept (hashes, lifecycle,
 * owners, accounts, webhooks and their outbox, events, the signing key, archives); a corrupted
 * archive fails the copy naming its version and leaves nothing listed; a non-empty target is refused.
 * The dumpers are made here from the backends' handles (a second SQLite connection, a pg Pool).
 */
import { createHash } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';

import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { computeIntegrity } from '../../src/archive/integrity.js';
import {
  copyStore,
  FolderBlobStore,
  openPostgresStorage,
  openSqliteStorage,
  postgresDumper,
  S3BlobStore,
  sqliteDumper,
  StoreCopyError,
  type CopyProgress,
  type RegistryStorage,
  type StoreDumper,
  type TokenRecord,
} from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { templateManifest } from '../helpers/builders.js';

const BUCKET = 'store-copy';
const TRUSTED_ISSUER = 'https://token.actions.githubusercontent.com';

/** Reserves and commits name@version with an archive of `content` and its true digests. */
async function publish(storage: RegistryStorage, token: TokenRecord, name: string, version: string, content = `archive of ${name}@${version}\n`.repeat(50), attestation?: string): Promise<void> {
  const file = path.join(await tempDir(), 'upload.tgz');
  await writeFile(file, content);
  const digest = await computeIntegrity(file);
  const verified = attestation ? { attestation: { predicateType: 'https://slsa.dev/provenance/v1', signer: { repository: 'acme/web-app', workflow: 'publish.yml', issuer: TRUSTED_ISSUER } } } : {};
  expect(await storage.versions.reserveVersion({ name, version, ...digest, owner: token.owner, ...verified }, token)).toEqual({ reserved: true });
  await storage.versions.commitVersion(name, version, file, templateManifest(name, version), [{ event: 'template.published', data: { name, version } }], attestation);
}

interface Populated {
  dir: string;
  storage: RegistryStorage;
  tokens: string[];
  session: string;
}

/** A SQLite store holding a bit of everything, made through the store API. */
async function populated(): Promise<Populated> {
  const dir = await tempDir('tr-copy-src-');
  const storage = await openSqliteStorage(dir);
  const admin = await storage.tokens.createToken({ role: 'admin', owner: 'root' });
  const publisher = await storage.tokens.createToken({ role: 'publisher', templates: ['web-app'], owner: 'acme' });
  const expiring = await storage.tokens.createToken({ role: 'publisher', owner: 'acme', expiresAt: new Date(Date.now() + 86_400_000) });
  const revoked = await storage.tokens.createToken({ role: 'publisher', owner: 'gone' });
  await storage.tokens.revokeToken(revoked.record.id);
  await storage.webhooks.createWebhook({ url: 'https://hooks.example.com/a', events: ['template.*'], secret: 'whsec-a', active: true });
  await storage.webhooks.createWebhook({ url: 'https://hooks.example.com/b', events: ['*'], secret: 'whsec-b', active: false });
  await publish(storage, publisher.record, 'web-app', '1.0.0');
  await publish(storage, publisher.record, 'web-app', '1.1.0');
  await publish(storage, publisher.record, 'web-app', '2.0.0');
  await publish(storage, admin.record, 'api-kit', '0.1.0');
  // A pending version (an upload in progress): copied as pending, without bytes.
  await storage.versions.reserveVersion({ name: 'api-kit', version: '0.2.0', integrity: 'sha512-AAAA', sha256: 'b'.repeat(64), size: 3, owner: 'root' }, admin.record);
  await storage.versions.updateLifecycle('web-app', '1.0.0', { yanked: true });
  await storage.versions.updateLifecycle('web-app', '1.1.0', { stability: 'deprecated', deprecationMessage: 'use 2.x' });
  await storage.tokens.addOwner('web-app', 'zeta');
  await storage.tokens.addOwner('web-app', 'beta');
  // Trusted publishing: an ordinary trusted publisher, a pending one, a version published with a minted token, an exchanged ID token.
  const trust = { issuer: TRUSTED_ISSUER, repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml' };
  await storage.trustedPublishers.addTrustedPublisher({ template: 'web-app', ...trust, environment: 'release', ref: 'refs/tags/v*' }, expiring.record);
  await storage.trustedPublishers.addTrustedPublisher({ template: 'fresh-name', ...trust }, expiring.record);
  const run = { ...trust, ref: 'refs/tags/v2.1.0', sha: 'c'.repeat(40), runId: '77', runAttempt: '1', environment: 'release' };
  const minted = await storage.tokens.createToken({ role: 'publisher', templates: ['web-app'], owner: 'ci', expiresAt: new Date(Date.now() + 900_000), publisher: run });
  await publish(storage, minted.record, 'web-app', '2.1.0', undefined, '{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}');
  await storage.trustedPublishers.useIdToken(TRUSTED_ISSUER, 'jti-copied', new Date(Date.now() + 600_000));
  const [delivery] = await storage.webhooks.enqueueEvent({ event: 'template.deprecated', data: { name: 'web-app' } });
  if (delivery) {
    const attempt = await storage.webhooks.startDelivery(delivery.webhookId, delivery.event, new Date(), delivery.id);
    await storage.webhooks.recordAttemptOutcome({ attemptId: attempt, deliveryId: delivery.id, state: 'pending', attempts: 1, nextAttemptAt: new Date(Date.now() + 60_000), status: 500, error: 'server error' });
  }
  for (const client of ['c1', 'c2', undefined]) {
    await storage.events.recordEvent({ type: 'download', templateId: 'web-app', version: '2.0.0', timestamp: '2024-05-01T10:00:00Z', source: 'cli' }, { ...(client ? { client } : {}), receivedAt: new Date('2024-05-01T10:00:01.250Z') });
  }
  // Events the retention removed: only the aggregates still count them, and a copy keeps those counts.
  await storage.events.recordEvent({ type: 'download', templateId: 'web-app', version: '2.0.0', timestamp: '2023-01-01T10:00:00Z' }, { client: 'c9', receivedAt: new Date('2023-01-01T10:00:00Z') });
  await storage.events.recordEvent({ type: 'feedback', templateId: 'web-app', version: '2.0.0', timestamp: '2023-01-02T10:00:00Z', rating: 2, comment: 'It crashes', userId: 'u9' }, { receivedAt: new Date('2023-01-02T10:00:00Z') });
  await storage.events.pruneEvents(new Date('2024-01-01T00:00:00Z'));
  const user = await storage.accounts.createUser({ email: 'Ann@Example.com', passwordHash: 'scrypt$N=16384$c2FsdA$aGFzaA', role: 'admin', owner: 'root', name: 'Ann' });
  if (!user.created) throw new Error('no user');
  const session = await storage.accounts.createSession({ userId: user.user.id, kind: 'refresh', expiresAt: new Date(Date.now() + 3_600_000) });
  await storage.accounts.signingKey();
  return { dir, storage, tokens: [admin.token, publisher.token, expiring.token, revoked.token], session: session.secret };
}

/** Everything the store interfaces show (tokens before any use is recorded). */
async function snapshot(storage: RegistryStorage): Promise<Record<string, unknown>> {
  const webhooks = await storage.webhooks.listWebhooks();
  const byKey = (a: { name: string; version: string }, b: { name: string; version: string }): number => `${a.name}@${a.version}`.localeCompare(`${b.name}@${b.version}`);
  const archives: Record<string, string> = {};
  for (const version of await storage.versions.listVersions()) {
    const reader = await storage.versions.openArchive(version.name, version.version);
    archives[`${version.name}@${version.version}`] = reader ? (await buffer(reader.stream)).toString('base64') : 'missing';
  }
  return {
    tokens: await storage.tokens.listTokens(),
    owners: await Promise.all(['web-app', 'api-kit'].map((name) => storage.tokens.ownersOf(name))),
    versions: await storage.versions.listVersions(),
    published: [...(await storage.versions.listPublished())].sort(byKey),
    pending: await storage.versions.getVersion('api-kit', '0.2.0'),
    lifecycles: [...(await storage.versions.listLifecycles())].sort(),
    manifest: await storage.versions.readManifest('web-app', '2.0.0'),
    archives,
    events: await storage.events.listEvents(),
    usage: [...(await storage.events.usage())],
    downloadsRecorded: await storage.events.downloadsRecorded(),
    aggregates: (await storage.events.analyticsAggregates({ versions: [{ templateId: 'web-app', version: '2.0.0' }], fromDay: 0, toDay: 100_000 })).version('web-app', '2.0.0'),
    webhooks,
    outbox: await Promise.all(webhooks.map((webhook) => storage.webhooks.listOutboxDeliveries(webhook.id))),
    attempts: await Promise.all(webhooks.map((webhook) => storage.webhooks.listDeliveries(webhook.id))),
    pendingDeliveries: await storage.webhooks.countPendingDeliveries(),
    users: await storage.accounts.listUsers(),
    credentials: await storage.accounts.findCredentials('ann@example.com'),
    signingKey: Buffer.from(await storage.accounts.signingKey()).toString('base64'),
    trustedPublishers: await Promise.all(['web-app', 'fresh-name'].map((name) => storage.trustedPublishers.listTrustedPublishers(name))),
    attestation: (await storage.versions.readAttestation('web-app', '2.1.0'))?.toString('utf8'),
  };
}

describe.skipIf(postgresSkipReason !== undefined)('copyStore', () => {
  const postgres = usePostgres();
  let s3: FakeS3;
  let prefixes = 0;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  afterAll(async () => {
    await s3.close();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const bucket = (): S3BlobStore => new S3BlobStore({ bucket: BUCKET, prefix: `copy-${++prefixes}`, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 10_000 });

  /** A second connection to a SQLite store's database, and its dumper. */
  function sqliteSide(dir: string): StoreDumper {
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.pragma('busy_timeout = 5000');
    cleanups.push(() => Promise.resolve(void db.close()));
    return sqliteDumper(db, new FolderBlobStore(dir), dir);
  }

  /** A fresh PostgreSQL store on a bucket prefix (a fresh one unless given): the storage and a dumper on its own pool. */
  async function postgresSide(blobs: S3BlobStore = bucket()): Promise<{ storage: RegistryStorage; dumper: StoreDumper; blobs: S3BlobStore }> {
    const url = await postgres.createDatabase();
    const local = await tempDir('tr-copy-pg-');
    const storage = await openPostgresStorage({ url, blobs, publicDir: path.join(local, 'public'), tmpDir: path.join(local, 'tmp') });
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    cleanups.push(async () => {
      await storage.close();
      await pool.end();
    });
    return { storage, dumper: postgresDumper(pool, blobs, url), blobs };
  }

  it('copies SQLite -> PostgreSQL + S3 -> SQLite with every row, hash, key and archive kept', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    const before = await snapshot(source.storage);

    const middle = await postgresSide();
    const progress: CopyProgress[] = [];
    const summary = await copyStore(sqliteSide(source.dir), middle.dumper, { onProgress: (event) => progress.push(event) });
    expect(summary).toMatchObject({
      tokens: 5,
      owners: 2,
      coOwners: 2,
      versions: 6,
      completeVersions: 5,
      pendingVersions: 1,
      archives: 5,
      manifests: 5,
      events: 3,
      webhooks: 2,
      outboxDeliveries: 6,
      deliveryAttempts: 1,
      users: 1,
      sessions: 1,
      settings: 1,
      trustedPublishers: 2,
      usedIdTokens: 1,
      stagedFilesSkipped: 0,
    });
    expect(progress.filter((event) => event.step === 'archive')).toHaveLength(5);
    expect((before.trustedPublishers as unknown[][]).map((list) => list.length)).toEqual([1, 1]);
    expect((await source.storage.versions.getVersion('web-app', '2.1.0'))?.publisher).toMatchObject({ runId: '77', workflow: 'publish.yml' });
    expect(before.attestation).toMatch(/sigstore\.bundle/);
    expect(progress).toContainEqual(expect.objectContaining({ step: 'pending-skipped', name: 'api-kit', version: '0.2.0' }));
    expect(await snapshot(middle.storage)).toEqual(before);

    const back = await tempDir('tr-copy-back-');
    const backStorage = await openSqliteStorage(back);
    cleanups.push(() => backStorage.close());
    await copyStore(middle.dumper, sqliteSide(back));
    expect(await snapshot(backStorage)).toEqual(before);

    // Hashes, not secrets, were copied: every token, and the session, work as they did.
    for (const target of [middle.storage, backStorage]) {
      const checks = await Promise.all(source.tokens.map((token) => target.tokens.checkToken(token)));
      expect(checks.map((check) => (check.valid ? 'valid' : check.reason))).toEqual(['valid', 'valid', 'valid', 'revoked']);
      expect(await target.tokens.checkToken('trk_not-a-token')).toEqual({ valid: false, reason: 'unknown' });
      expect(await target.accounts.checkSession(source.session, 'refresh')).toMatchObject({ valid: true, user: { email: 'ann@example.com' } });
      expect(await target.tokens.canPublish((await target.tokens.listTokens())[1] as TokenRecord, 'web-app')).toEqual({ allowed: true });
      // An ID token exchanged before the copy is still a replay after it.
      expect(await target.trustedPublishers.useIdToken(TRUSTED_ISSUER, 'jti-copied', new Date(Date.now() + 600_000))).toBe(false);
    }
    // New rows after a copy get fresh ids (the sequences moved past the copied ones).
    await middle.storage.events.recordEvent({ type: 'download', templateId: 'api-kit', version: '0.1.0', timestamp: '2024-05-02T00:00:00Z' });
    const ids = (await middle.storage.events.listEvents()).map((event) => Number(event.id));
    expect(new Set(ids).size).toBe(4);
  }, 60_000);

  it('reads the same dump from both backends once one holds a copy of the other: every row, field and order alike', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    const sqlite = sqliteSide(source.dir);
    const target = await postgresSide();
    await copyStore(sqlite, target.dumper);

    expect(await target.dumper.read()).toEqual(await sqlite.read());
  }, 60_000);

  it('fails on an archive that does not match its version row, naming the version, and leaves nothing in the target', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    // Same size, other bytes: only the digests tell.
    await writeFile(path.join(source.dir, 'archives', 'web-app', '1.1.0.tgz'), 'x'.repeat(`archive of web-app@1.1.0\n`.length * 50));
    const target = await postgresSide();
    const failure = await copyStore(sqliteSide(source.dir), target.dumper).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreCopyError);
    expect((failure as StoreCopyError).code).toBe('INTEGRITY_MISMATCH');
    expect((failure as StoreCopyError).version).toBe('web-app@1.1.0');
    expect((failure as Error).message).toMatch(/web-app@1\.1\.0.*integrity mismatch/);
    expect(await target.storage.versions.listVersions()).toEqual([]);
    expect(await target.storage.versions.listPublished()).toEqual([]);
    expect(await target.storage.tokens.listTokens()).toEqual([]);
    const left: string[] = [];
    for await (const entry of target.blobs.list('')) left.push(entry.key);
    expect(left).toEqual([]);
    // A missing archive fails the same way.
    await writeFile(path.join(source.dir, 'archives', 'web-app', '1.1.0.tgz'), '');
    const back = await tempDir('tr-copy-bad-');
    const backStorage = await openSqliteStorage(back);
    cleanups.push(() => backStorage.close());
    await expect(copyStore(sqliteSide(source.dir), sqliteSide(back))).rejects.toThrow(/web-app@1\.1\.0: .*size mismatch/);
    expect(await backStorage.versions.listVersions()).toEqual([]);
  }, 60_000);

  it('refuses a target that holds versions or tokens', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    const withToken = await postgresSide();
    await withToken.storage.tokens.createToken({ role: 'admin', owner: 'other' });
    await expect(copyStore(sqliteSide(source.dir), withToken.dumper)).rejects.toThrow(/is not empty \(it holds 1 token\)/);

    const other = await populated();
    cleanups.push(() => other.storage.close());
    const failure = await copyStore(sqliteSide(source.dir), sqliteSide(other.dir)).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'TARGET_NOT_EMPTY' });
    expect((failure as Error).message).toMatch(/holds 6 versions, 5 tokens/);
    // The refused target is as it was.
    expect(await other.storage.versions.listVersions()).toHaveLength(5);
    // A store that only made its signing key is empty: the source's key replaces it.
    const fresh = await postgresSide();
    await fresh.storage.accounts.signingKey();
    await copyStore(sqliteSide(source.dir), fresh.dumper);
    // (Read from the rows: a storage caches the key it read once.)
    expect((await fresh.dumper.read()).settings).toEqual([{ key: 'access-token-key', value: Buffer.from(await source.storage.accounts.signingKey()) }]);
  }, 60_000);

  it('refuses a target whose storage holds the archives of a store whose rows are elsewhere, writing nothing there', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    // A store in use: its rows in one database, its bytes below a prefix.
    const live = await postgresSide();
    const { record } = await live.storage.tokens.createToken({ role: 'admin', owner: 'live' });
    await publish(live.storage, record, 'web-app', '1.0.0', 'the live store\'s own bytes\n');
    const liveRow = await live.storage.versions.getVersion('web-app', '1.0.0');
    // The copy's target: another, empty, database, but the same prefix.
    const target = await postgresSide(live.blobs);
    const failure = await copyStore(sqliteSide(source.dir), target.dumper, { targetNames: { rows: '--to', bytes: '--storage-to' } }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreCopyError);
    expect(failure).toMatchObject({ code: 'TARGET_NOT_EMPTY' });
    expect((failure as Error).message).toMatch(/^the target's storage s3:\/\/store-copy\/copy-\d+ \(--storage-to\) is not empty \(it holds archives\/web-app\/1\.0\.0\.tgz,/);
    // The live store still serves the bytes its row describes; the target got no row; no claim was left.
    const reader = await live.storage.versions.openArchive('web-app', '1.0.0');
    const bytes = reader ? await buffer(reader.stream) : Buffer.alloc(0);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(liveRow?.sha256);
    expect(bytes.toString()).toBe('the live store\'s own bytes\n');
    expect(await target.storage.tokens.listTokens()).toEqual([]);
    const keys: string[] = [];
    for await (const { key } of live.blobs.list('')) keys.push(key);
    expect(keys.sort()).toEqual(['archives/web-app/1.0.0.tgz', 'manifests/web-app/1.0.0.json']);
  }, 60_000);

  it('runs one of two copies into one empty store at once, refusing the other; the bytes kept are those the rows describe', async () => {
    // Two sources with different bytes for the same version: had both written, the archive could be either's.
    const sources = await Promise.all(
      ['first', 'second'].map(async (which) => {
        const dir = await tempDir(`tr-copy-${which}-`);
        const storage = await openSqliteStorage(dir);
        cleanups.push(() => storage.close());
        const { record } = await storage.tokens.createToken({ role: 'admin', owner: which });
        await publish(storage, record, 'web-app', '1.0.0', `the ${which} source's bytes\n`.repeat(20));
        return dir;
      }),
    );
    const dir = await tempDir('tr-copy-race-');
    const target = await openSqliteStorage(dir);
    cleanups.push(() => target.close());
    const results = await Promise.allSettled(sources.map((from) => copyStore(sqliteSide(from), sqliteSide(dir))));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((result) => result.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(StoreCopyError);
    expect(refused?.reason).toMatchObject({ code: 'TARGET_NOT_EMPTY', message: expect.stringMatching(/is taken: another store copy is running into it|is not empty/) as string });
    const row = await target.versions.getVersion('web-app', '1.0.0');
    const reader = await target.versions.openArchive('web-app', '1.0.0');
    expect(createHash('sha256').update(reader ? await buffer(reader.stream) : Buffer.alloc(0)).digest('hex')).toBe(row?.sha256);
    expect((await target.tokens.listTokens()).map((token) => token.owner)).toHaveLength(1);
    // The claims are gone with the copies.
    expect((await readdir(dir)).filter((name) => name.includes('lock'))).toEqual([]);
  }, 60_000);

  it('fails on a source manifest that is not the version\'s, saying it is invalid, and leaves nothing in the target', async () => {
    const source = await populated();
    cleanups.push(() => source.storage.close());
    await writeFile(path.join(source.dir, 'manifests', 'web-app', '1.1.0.json'), '{}');
    const back = await tempDir('tr-copy-manifest-');
    const backStorage = await openSqliteStorage(back);
    cleanups.push(() => backStorage.close());
    const failure = await copyStore(sqliteSide(source.dir), sqliteSide(back)).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'MANIFEST_INVALID', version: 'web-app@1.1.0' });
    expect((failure as Error).message).toMatch(/^web-app@1\.1\.0: its manifest in the source \(manifests\/web-app\/1\.1\.0\.json in .*\) is invalid: it has no "name" and no "version", not those of web-app@1\.1\.0$/);
    await writeFile(path.join(source.dir, 'manifests', 'web-app', '1.1.0.json'), JSON.stringify(templateManifest('web-app', '2.0.0')));
    await expect(copyStore(sqliteSide(source.dir), sqliteSide(back))).rejects.toThrow(/is invalid: it has "name" "web-app" and "version" "2\.0\.0", not those of web-app@1\.1\.0$/);
    expect(await backStorage.versions.listVersions()).toEqual([]);
    const left: string[] = [];
    for await (const { key } of new FolderBlobStore(back).list('archives/')) left.push(key);
    expect(left).toEqual([]);
  }, 60_000);
});
