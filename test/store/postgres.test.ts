import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { text } from 'node:stream/consumers';

import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  FolderBlobStore,
  type BlobStore,
  migratePostgres,
  openPostgresStorage,
  POSTGRES_SCHEMA_VERSION,
  PostgresSchemaError,
  type PostgresStorage,
  type PostgresStorageOptions,
  type TokenRecord,
} from '../../src/store/index.js';
import { BuildLockTimeoutError } from '../../src/store/postgres/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { AGGREGATE_TABLES, expectAggregatesOfEvents, expectMigratedAttemptIds, recordHistory, storageContract } from './storage-contract.js';
import { templateManifest } from '../helpers/builders.js';

const sha256 = (content: string): string => createHash('sha256').update(content).digest('hex');

describe.skipIf(postgresSkipReason !== undefined)('PostgreSQL', () => {
  const postgres = usePostgres();

  /** Options of one instance on `url`, with its own local folders and the blob folder `blobDir`. */
  async function instanceOptions(url: string, blobDir: string): Promise<PostgresStorageOptions> {
    const local = await tempDir('tr-pg-instance-');
    return { url, blobs: new FolderBlobStore(blobDir), publicDir: path.join(local, 'public'), tmpDir: path.join(local, 'tmp') };
  }

  storageContract(
    'PostgreSQL + folder blobs',
    async () => openPostgresStorage(await instanceOptions(await postgres.createDatabase(), await tempDir('tr-pg-blobs-'))),
    async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      return async (wrap = (blobs) => blobs) => {
        const options = await instanceOptions(url, blobDir);
        return openPostgresStorage({ ...options, blobs: wrap(options.blobs) });
      };
    },
  );

  describe('several instances on one database', () => {
    const opened: PostgresStorage[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((storage) => storage.close()));
    });

    /** `count` instances (each its own pool) on one fresh database and one blob folder. */
    async function instances(count: number, extra: Partial<PostgresStorageOptions> = {}): Promise<{ url: string; blobDir: string; all: PostgresStorage[] }> {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const all = await Promise.all(Array.from({ length: count }, async () => openPostgresStorage({ ...(await instanceOptions(url, blobDir)), ...extra })));
      opened.push(...all);
      return { url, blobDir, all };
    }

    async function archiveFile(content: string): Promise<string> {
      const file = path.join(await tempDir(), 'upload.tgz');
      await writeFile(file, content);
      return file;
    }

    it('migrates a fresh database once when three instances open it at the same time', async () => {
      const { url, all } = await instances(3);
      expect(all).toHaveLength(3);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((row) => row.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1));
      } finally {
        await client.end();
      }
      expect(await migratePostgres(url)).toEqual({ from: POSTGRES_SCHEMA_VERSION, to: POSTGRES_SCHEMA_VERSION });
    });

    it('refuses a database whose schema is newer than this release, naming both versions and no password', async () => {
      const url = await postgres.createDatabase();
      expect(await migratePostgres(url)).toEqual({ from: 0, to: POSTGRES_SCHEMA_VERSION });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [POSTGRES_SCHEMA_VERSION + 1]);
      await client.end();
      const withPassword = url.replace('postgres@', 'postgres:not-a-real-secret@');
      const refused = openPostgresStorage(await instanceOptions(withPassword, await tempDir()));
      await expect(refused).rejects.toBeInstanceOf(PostgresSchemaError);
      await expect(refused).rejects.toThrow(new RegExp(`has schema version ${POSTGRES_SCHEMA_VERSION + 1}; this release knows up to ${POSTGRES_SCHEMA_VERSION}`));
      await expect(refused).rejects.not.toThrow(/not-a-real-secret/);
    });

    it('lets exactly one of concurrent reservations of a version win across two instances', async () => {
      const { all } = await instances(2);
      const [a, b] = all as [PostgresStorage, PostgresStorage];
      const acme = (await a.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
      const other = (await a.tokens.createToken({ role: 'publisher', owner: 'other' })).record;
      const reserve = (storage: PostgresStorage, token: TokenRecord, i: number) =>
        storage.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: `sha512-${i}`, sha256: 'a'.repeat(64), size: 1, owner: token.owner }, token);
      // Two owners race for the first publish of an unclaimed name, from both instances.
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => reserve(i % 2 === 0 ? a : b, i % 4 < 2 ? acme : other, i)));
      expect(results.filter((r) => r.reserved)).toHaveLength(1);
      const winner = results.findIndex((r) => r.reserved);
      const owner = winner % 4 < 2 ? 'acme' : 'other';
      expect(await b.tokens.ownersOf('web-app')).toEqual([owner]);
      for (const result of results.filter((r) => !r.reserved)) {
        // The loser saw the winner's row, or (another owner's name by then) was refused.
        if ('existing' in result) expect(result.existing).toMatchObject({ integrity: `sha512-${winner}`, state: 'pending', owner });
        else expect(result).toEqual({ reserved: false, forbidden: 'template web-app belongs to another publisher' });
      }
    });

    it('never gives the same delivery to two instances claiming at once, nor a webhook\'s next one while the first is held', async () => {
      const { all } = await instances(2);
      const [a, b] = all as [PostgresStorage, PostgresStorage];
      for (let i = 0; i < 30; i++) await a.webhooks.createWebhook({ url: `https://h${i}.example/hook`, events: ['*'], secret: 's', active: true });
      const t0 = new Date('2026-01-01T00:00:00.000Z');
      const first = await a.webhooks.enqueueEvent({ event: 'registry.updated', data: { n: 1 } }, t0);
      const second = await a.webhooks.enqueueEvent({ event: 'registry.updated', data: { n: 2 } }, t0);
      const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).webhooks.claimDueDeliveries(t0, 7, 60_000)));
      const ids = claims.flat().map((d) => d.id);
      expect(new Set(ids).size).toBe(ids.length);
      // Each webhook's first delivery, once; none of the second ones while the first ones are leased.
      expect(new Set(ids)).toEqual(new Set(first.map((d) => d.id)));
      expect(await b.webhooks.claimDueDeliveries(t0, 100, 60_000)).toEqual([]);
      expect(await a.webhooks.nextDueAt()).toEqual(new Date(t0.getTime() + 60_000));

      // The first ones delivered through both instances at once: then the second ones, each once.
      await Promise.all(
        first.map(async (delivery, i) => {
          const store = (i % 2 === 0 ? a : b).webhooks;
          const attemptId = await store.startDelivery(delivery.webhookId, delivery.event, t0, delivery.id);
          await store.recordAttemptOutcome({ attemptId, deliveryId: delivery.id, state: 'delivered', attempts: 1, status: 200, error: null }, t0);
        }),
      );
      const next = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? b : a).webhooks.claimDueDeliveries(t0, 7, 60_000)));
      const nextIds = next.flat().map((d) => d.id);
      expect(nextIds).toHaveLength(30);
      expect(new Set(nextIds)).toEqual(new Set(second.map((d) => d.id)));
    });

    it('migrates the delivery log of a database of schema 2: every attempt gets an external id, sorting as the attempts were made', async () => {
      const url = await postgres.createDatabase();
      await migratePostgres(url);
      // Back to what the previous release left: attempts known by their row numbers only.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query('ALTER TABLE deliveries DROP COLUMN attempt_id');
        // What later migrations made (4: login attempts).
        await client.query('DROP TABLE login_attempts');
        await client.query('DELETE FROM schema_migrations WHERE version >= 3');
        await client.query("INSERT INTO webhooks (id, url, events, secret, active, created_at) VALUES ('wh_old', 'https://a.example/hook', '[\"*\"]', 's', true, '2025-01-01T00:00:00Z')");
        for (let i = 0; i < 12; i++) {
          // Two attempts in some milliseconds: row order decides between them.
          await client.query("INSERT INTO deliveries (webhook_id, event, status, attempted_at, error, delivery_id) VALUES ('wh_old', 'registry.updated', $1, $2, NULL, NULL)", [
            200 + i,
            new Date(Date.UTC(2025, 0, 1, 0, 0, Math.floor(i / 2))).toISOString(),
          ]);
        }
      } finally {
        await client.end();
      }
      expect(await migratePostgres(url)).toEqual({ from: 2, to: POSTGRES_SCHEMA_VERSION });
      const storage = await openPostgresStorage(await instanceOptions(url, await tempDir()));
      opened.push(storage);
      await expectMigratedAttemptIds(storage.webhooks);
    });

    it('fills the analytics aggregates of a database of schema 3 (events only) from its events, in the order they were recorded', async () => {
      const url = await postgres.createDatabase();
      const first = await openPostgresStorage(await instanceOptions(url, await tempDir()));
      await recordHistory(first.events, 92, 300);
      await first.close();
      // Back to what the previous release left: the events, and no aggregates.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const table of AGGREGATE_TABLES) await client.query(`DROP TABLE ${table}`);
        await client.query('DROP INDEX events_by_received_at');
        await client.query('DELETE FROM schema_migrations WHERE version >= 4');
      } finally {
        await client.end();
      }
      expect(await migratePostgres(url)).toEqual({ from: 3, to: POSTGRES_SCHEMA_VERSION });
      const storage = await openPostgresStorage(await instanceOptions(url, await tempDir()));
      opened.push(storage);
      expect(await storage.events.countEvents()).toBeGreaterThan(200);
      await expectAggregatesOfEvents(storage.events);
    });

    it('recover() completes a pending version whose bytes are all stored, and leaves a recent pending one of another instance alone', async () => {
      const { blobDir, all } = await instances(2);
      const [crashed, live] = all as [PostgresStorage, PostgresStorage];
      const blobs = new FolderBlobStore(blobDir);
      const { record } = await crashed.tokens.createToken({ role: 'admin' });
      const reserve = (version: string, content: string) =>
        crashed.versions.reserveVersion({ name: 'web-app', version, integrity: `sha512-${version}`, sha256: sha256(content), size: content.length, owner: record.owner }, record);
      // 1.0.0: a commit that stored both blobs and died before its transaction.
      await reserve('1.0.0', 'the archive');
      await blobs.putBytes('archives/web-app/1.0.0.tgz', 'the archive');
      await blobs.putBytes('manifests/web-app/1.0.0.json', JSON.stringify(templateManifest('web-app', '1.0.0')));
      // 2.0.0: the other instance's upload in progress (archive stored, manifest not yet).
      await reserve('2.0.0', 'in progress');
      await blobs.putBytes('archives/web-app/2.0.0.tgz', 'in progress');
      // 3.0.0: bytes that do not match the reservation (a torn or foreign write), recent.
      await reserve('3.0.0', 'expected');
      await blobs.putBytes('archives/web-app/3.0.0.tgz', 'something else');
      await blobs.putBytes('manifests/web-app/3.0.0.json', JSON.stringify(templateManifest('web-app', '3.0.0')));

      await live.recover();

      expect(await live.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'complete', size: 'the archive'.length });
      expect((await live.versions.listPublished()).map((v) => ('manifest' in v ? v.manifest : undefined))).toEqual([templateManifest('web-app', '1.0.0')]);
      expect(await text((await live.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('the archive');
      expect(await live.versions.getVersion('web-app', '2.0.0')).toMatchObject({ state: 'pending' });
      expect(await blobs.stat('archives/web-app/2.0.0.tgz')).toEqual({ size: 'in progress'.length });
      expect(await live.versions.getVersion('web-app', '3.0.0')).toMatchObject({ state: 'pending' });

      // The upload in progress finishes on its own instance as if nothing happened.
      const committed = await crashed.versions.commitVersion('web-app', '2.0.0', await archiveFile('in progress'), templateManifest('web-app', '2.0.0'));
      expect(committed.state).toBe('complete');
    });

    it('recover() abandons pending versions older than the grace period that are not complete, and their bytes', async () => {
      const { blobDir, all } = await instances(1, { pendingGraceMs: 0 });
      const [storage] = all as [PostgresStorage];
      const blobs = new FolderBlobStore(blobDir);
      const { record } = await storage.tokens.createToken({ role: 'admin' });
      await storage.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-x', sha256: sha256('full'), size: 4, owner: record.owner }, record);
      await blobs.putBytes('archives/web-app/1.0.0.tgz', 'part');
      await storage.recover();
      expect(await storage.versions.getVersion('web-app', '1.0.0')).toBeUndefined();
      expect(await blobs.stat('archives/web-app/1.0.0.tgz')).toBeUndefined();
    });

    it('finishes a commit whose version another instance recovered meanwhile, writing its webhook deliveries once', async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const other = await openPostgresStorage(await instanceOptions(url, blobDir));
      opened.push(other);
      // This instance's blob store lets the other's recover() run between the commit's blob writes and its transaction.
      const folder = new FolderBlobStore(blobDir);
      const racing: BlobStore = {
        location: folder.location,
        async putFile(key, file) {
          const stored = await folder.putFile(key, file);
          if (key.startsWith('archives/')) await other.recover();
          return stored;
        },
        putBytes: (key, bytes) => folder.putBytes(key, bytes),
        open: (key) => folder.open(key),
        readBytes: (key) => folder.readBytes(key),
        stat: (key) => folder.stat(key),
        delete: (key) => folder.delete(key),
        list: (prefix) => folder.list(prefix),
      };
      const committer = await openPostgresStorage({ ...(await instanceOptions(url, blobDir)), blobs: racing });
      opened.push(committer);
      const hook = await committer.webhooks.createWebhook({ url: 'https://a.example/hook', events: ['template.published'], secret: 's', active: true });
      const { record } = await committer.tokens.createToken({ role: 'admin' });
      const content = 'archive bytes';
      await committer.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-x', sha256: sha256(content), size: content.length, owner: record.owner }, record);
      const stored = await committer.versions.commitVersion('web-app', '1.0.0', await archiveFile(content), templateManifest('web-app', '1.0.0'), [{ event: 'template.published', data: {} }]);
      expect(stored).toMatchObject({ state: 'complete', sha256: sha256(content) });
      expect((await committer.webhooks.listOutboxDeliveries(hook.id)).map((d) => d.event)).toEqual(['template.published']);
      // Complete now: a second commit is refused and tells nothing again.
      await expect(committer.versions.commitVersion('web-app', '1.0.0', await archiveFile(content), templateManifest('web-app', '1.0.0'), [{ event: 'template.published', data: {} }])).rejects.toThrow(
        /already complete/,
      );
      expect(await committer.webhooks.listOutboxDeliveries(hook.id)).toHaveLength(1);
    });

    it('shares tokens, revocations, co-owners and the signing key between instances at once', async () => {
      const { all } = await instances(2);
      const [a, b] = all as [PostgresStorage, PostgresStorage];
      const { token, record } = await a.tokens.createToken({ role: 'publisher', owner: 'acme' });
      expect(await b.tokens.checkToken(token)).toMatchObject({ valid: true });
      await a.tokens.revokeToken(record.id);
      expect(await b.tokens.checkToken(token)).toMatchObject({ valid: false, reason: 'revoked' });
      const admin = (await a.tokens.createToken({ role: 'admin', owner: 'acme' })).record;
      const beta = (await b.tokens.createToken({ role: 'publisher', owner: 'beta' })).record;
      await a.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-x', sha256: 'a'.repeat(64), size: 1, owner: 'acme' }, admin);
      expect(await b.tokens.canPublish(beta, 'web-app')).toMatchObject({ allowed: false });
      // Concurrent additions of the same co-owner from both instances: one adds, the other sees it done.
      const added = await Promise.all([a.tokens.addOwner('web-app', 'beta'), b.tokens.addOwner('web-app', 'beta')]);
      expect(added.map((change) => 'changed' in change && change.changed).sort()).toEqual([false, true]);
      expect(await b.tokens.canPublish(beta, 'web-app')).toEqual({ allowed: true });
      const [keyA, keyB] = await Promise.all([a.accounts.signingKey(), b.accounts.signingKey()]);
      expect(keyA).toHaveLength(32);
      expect(Buffer.from(keyA).equals(Buffer.from(keyB))).toBe(true);
      // An ID token exchanged on both instances at once is taken by one of them only.
      const expiresAt = new Date(Date.now() + 300_000);
      const uses = await Promise.all([a, b, a, b].map((instance) => instance.trustedPublishers.useIdToken('https://token.actions.githubusercontent.com', 'jti-shared', expiresAt)));
      expect(uses.filter(Boolean)).toHaveLength(1);
    });
  });

  describe('accounts across instances', () => {
    const opened: PostgresStorage[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((storage) => storage.close()));
    });
    const fresh = async (url?: string): Promise<PostgresStorage> => {
      const storage = await openPostgresStorage(await instanceOptions(url ?? (await postgres.createDatabase()), await tempDir('tr-pg-blobs-')));
      opened.push(storage);
      return storage;
    };

    it('lets exactly one of concurrent rotations of a refresh token win, across instances', async () => {
      const url = await postgres.createDatabase();
      const a = await fresh(url);
      const b = await fresh(url);
      const created = await a.accounts.createUser({ email: 'ada@example.com', passwordHash: 'h', role: 'publisher', owner: 'acme' });
      if (!created.created) throw new Error('not created');
      const now = new Date('2026-01-01T00:00:00.000Z');
      const session = await a.accounts.createSession({ userId: created.user.id, kind: 'refresh', expiresAt: new Date('2026-02-01T00:00:00.000Z'), now });
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).accounts.rotateSession(session.secret, new Date('2026-02-02T00:00:00.000Z'), now)));
      expect(results.filter((r) => r.rotated)).toHaveLength(1);
      // The others replayed a replaced token (reused), or came after a replay ended the family (revoked).
      for (const result of results) if (!result.rotated) expect(['reused', 'revoked']).toContain(result.reason);
    });

    it('makes the signing key once, whichever instance asks first', async () => {
      const url = await postgres.createDatabase();
      const instances = await Promise.all([fresh(url), fresh(url), fresh(url)]);
      const keys = await Promise.all(instances.map((storage) => storage.accounts.signingKey()));
      for (const key of keys) expect(Buffer.from(key).toString('hex')).toBe(Buffer.from(keys[0]!).toString('hex'));
      const again = await fresh(url);
      expect(Buffer.from(await again.accounts.signingKey()).equals(Buffer.from(keys[0]!))).toBe(true);
    });
  });
  describe('coordination of instances: change notifications, the build lock, reservations of dead instances', () => {
    const opened: PostgresStorage[] = [];
    const clients: pg.Client[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((storage) => storage.close()));
      await Promise.all(clients.splice(0).map((client) => client.end().catch(() => undefined)));
    });
    async function open(url: string, blobDir: string, extra: Partial<PostgresStorageOptions> = {}): Promise<PostgresStorage> {
      const storage = await openPostgresStorage({ ...(await instanceOptions(url, blobDir)), ...extra });
      opened.push(storage);
      return storage;
    }
    async function admin(url: string): Promise<pg.Client> {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      clients.push(client);
      return client;
    }
    /** Ends the server sessions of `url`'s database whose last statement matches `pattern` (as a network failure would). */
    async function terminate(url: string, pattern: string): Promise<number> {
      const client = await admin(url);
      const { rows } = await client.query<{ ended: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1',
        [pattern],
      );
      return rows.filter((row) => row.ended).length;
    }
    async function archiveFile(content: string): Promise<string> {
      const file = path.join(await tempDir(), 'upload.tgz');
      await writeFile(file, content);
      return file;
    }
    const newVersion = (version: string, content: string, owner = 'admin') => ({ name: 'web-app', version, integrity: `sha512-${sha256(content)}`, sha256: sha256(content), size: content.length, owner });

    it("tells a watcher of every commit and lifecycle change another instance commits, not of its own, and stops when asked", async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const [a, b] = [await open(url, blobDir), await open(url, blobDir)];
      let heardByA = 0;
      let heardByB = 0;
      const stopA = await a.watchChanges!(() => heardByA++);
      const stopB = await b.watchChanges!(() => heardByB++);
      const { record } = await b.tokens.createToken({ role: 'admin' });
      await b.versions.reserveVersion(newVersion('1.0.0', 'one'), record);
      // A reservation is not listed: nobody is told.
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(heardByA).toBe(0);
      await b.versions.commitVersion('web-app', '1.0.0', await archiveFile('one'), templateManifest('web-app', '1.0.0'));
      await vi.waitFor(() => expect(heardByA).toBe(1), { timeout: 5000, interval: 10 });
      await b.versions.updateLifecycle('web-app', '1.0.0', { stability: 'deprecated', deprecationMessage: 'use 2' });
      await vi.waitFor(() => expect(heardByA).toBe(2), { timeout: 5000, interval: 10 });
      // A change that changes nothing is not told.
      await b.versions.updateLifecycle('web-app', '1.0.0', { stability: 'deprecated', deprecationMessage: 'use 2' });
      await a.versions.updateLifecycle('web-app', '1.0.0', { yanked: true });
      await vi.waitFor(() => expect(heardByB).toBe(1), { timeout: 5000, interval: 10 });
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect([heardByA, heardByB]).toEqual([2, 1]);
      await stopA();
      await b.versions.updateLifecycle('web-app', '1.0.0', { stability: 'stable' });
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(heardByA).toBe(2);
      await stopB();
    });

    it('reconnects a dropped listening connection with backoff, tells the watcher once on its return, and hears changes again', async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const a = await open(url, blobDir, { watch: { minDelayMs: 20, maxDelayMs: 200 } });
      const b = await open(url, blobDir);
      let heard = 0;
      await a.watchChanges!(() => heard++);
      expect(await terminate(url, 'LISTEN %')).toBe(1);
      // Back: told once (changes may have been missed while it was away).
      await vi.waitFor(() => expect(heard).toBe(1), { timeout: 5000, interval: 10 });
      const { record } = await b.tokens.createToken({ role: 'admin' });
      await b.versions.reserveVersion(newVersion('1.0.0', 'one'), record);
      await b.versions.commitVersion('web-app', '1.0.0', await archiveFile('one'), templateManifest('web-app', '1.0.0'));
      await vi.waitFor(() => expect(heard).toBe(2), { timeout: 5000, interval: 10 });
    });

    it('runs builds under the build lock one at a time across instances, releases it when the work throws, and bounds the wait', async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const a = await open(url, blobDir);
      const b = await open(url, blobDir, { buildLockTimeoutMs: 300 });
      let active = 0;
      let most = 0;
      const work = async (): Promise<number> => {
        active++;
        most = Math.max(most, active);
        await new Promise((resolve) => setTimeout(resolve, 20));
        active--;
        return most;
      };
      await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).withBuildLock!(work)));
      expect(most).toBe(1);
      await expect(a.withBuildLock!(() => Promise.reject(new Error('build failed')))).rejects.toThrow('build failed');
      expect(await b.withBuildLock!(() => Promise.resolve('free again'))).toBe('free again');

      let release: (() => void) | undefined;
      const holding = a.withBuildLock!(() => new Promise<void>((resolve) => (release = resolve)));
      await vi.waitFor(() => expect(release).toBeDefined(), { timeout: 2000, interval: 5 });
      // The bound is PostgreSQL's lock_timeout: BuildLockTimeoutError is what its expiry becomes, so no wall-clock check.
      const refused = b.withBuildLock!(() => Promise.resolve('never'));
      await expect(refused).rejects.toBeInstanceOf(BuildLockTimeoutError);
      await expect(refused).rejects.toThrow(/build lock stayed held by another instance for more than 300 ms/);
      release?.();
      await holding;
      expect(await b.withBuildLock!(() => Promise.resolve('mine'))).toBe('mine');
    });

    it('lets a retry of the same bytes take over the reservation of a dead instance at once, and nothing else', async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const crashed = await open(url, blobDir);
      const live = await open(url, blobDir);
      const { record } = await crashed.tokens.createToken({ role: 'admin' });
      expect(await crashed.versions.reserveVersion(newVersion('1.0.0', 'the bytes'), record)).toEqual({ reserved: true });
      // Its instance is alive: an upload in progress, for anyone.
      expect(await live.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'pending' });
      expect(await live.versions.reserveVersion(newVersion('1.0.0', 'the bytes'), record)).toMatchObject({ reserved: false, existing: { state: 'pending' } });
      // The instance dies (its connections close): the reservation is no version any more...
      opened.splice(opened.indexOf(crashed), 1);
      await crashed.close();
      expect(await live.versions.getVersion('web-app', '1.0.0')).toBeUndefined();
      expect(await live.versions.listVersions()).toEqual([]);
      // ... other bytes still wait (the grace period), the same bytes take it over at once, once.
      expect(await live.versions.reserveVersion(newVersion('1.0.0', 'other bytes'), record)).toMatchObject({ reserved: false, existing: { state: 'pending' } });
      const again = await Promise.all([live.versions.reserveVersion(newVersion('1.0.0', 'the bytes'), record), live.versions.reserveVersion(newVersion('1.0.0', 'the bytes'), record)]);
      expect(again.filter((r) => r.reserved)).toHaveLength(1);
      expect(await live.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'pending' });
      const stored = await live.versions.commitVersion('web-app', '1.0.0', await archiveFile('the bytes'), templateManifest('web-app', '1.0.0'));
      expect(stored).toMatchObject({ state: 'complete', sha256: sha256('the bytes') });
      expect(await text((await live.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('the bytes');
    });

    it('refuses the commit of an instance whose reservation was taken over while its presence was lost, and keeps the winner whole', async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const first = await open(url, blobDir);
      const second = await open(url, blobDir);
      const { record } = await first.tokens.createToken({ role: 'admin' });
      expect(await first.versions.reserveVersion(newVersion('1.0.0', 'same'), record)).toEqual({ reserved: true });
      // Its presence connection drops (a network failure), the process lives on.
      expect(await terminate(url, 'SELECT pg_advisory_lock(hashtextextended%')).toBe(1);
      await vi.waitFor(async () => expect(await second.versions.getVersion('web-app', '1.0.0')).toBeUndefined(), { timeout: 5000, interval: 20 });
      expect(await second.versions.reserveVersion(newVersion('1.0.0', 'same'), record)).toEqual({ reserved: true });
      await expect(first.versions.commitVersion('web-app', '1.0.0', await archiveFile('same'), templateManifest('web-app', '1.0.0'))).rejects.toThrow(/taken over/);
      await first.versions.abortVersion('web-app', '1.0.0');
      expect(await second.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'pending' });
      await second.versions.commitVersion('web-app', '1.0.0', await archiveFile('same'), templateManifest('web-app', '1.0.0'));
      expect(await first.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'complete' });
      // The first instance reserves again (its presence retaken on a new connection).
      expect(await first.versions.reserveVersion(newVersion('2.0.0', 'next'), record)).toEqual({ reserved: true });
      expect(await second.versions.getVersion('web-app', '2.0.0')).toMatchObject({ state: 'pending' });
    });

    it("recover() at once removes a dead instance's reservation whose bytes are not all stored", async () => {
      const url = await postgres.createDatabase();
      const blobDir = await tempDir('tr-pg-blobs-');
      const crashed = await open(url, blobDir);
      const live = await open(url, blobDir);
      const { record } = await crashed.tokens.createToken({ role: 'admin' });
      await crashed.versions.reserveVersion(newVersion('1.0.0', 'partial'), record);
      await new FolderBlobStore(blobDir).putBytes('archives/web-app/1.0.0.tgz', 'part');
      opened.splice(opened.indexOf(crashed), 1);
      await crashed.close();
      await live.recover();
      const client = await admin(url);
      expect((await client.query('SELECT name FROM versions')).rows).toEqual([]);
      expect(await new FolderBlobStore(blobDir).stat('archives/web-app/1.0.0.tgz')).toBeUndefined();
    });
  });
});
