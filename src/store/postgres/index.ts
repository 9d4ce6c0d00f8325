/**
 * The scale-out store: tokens, owners, versions, events, webhooks, the outbox, staged files and
 * accounts in PostgreSQL; archives, manifests and staged bytes in a BlobStore (a folder or a
 * bucket). Several server instances may share one database and one blob store: every rule that must
 * hold across them (one reservation of a version, one claim of a delivery, one rotation of a
 * session) is a row lock or a unique key of the database, never a lock held in one process.
 */
import { randomUUID } from 'node:crypto';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';

import pg from 'pg';

import { removeLeftoverTemps } from '../../core/files.js';
import { FolderBlobStore } from '../blob/folder.js';
import type { BlobStore, RegistryStorage } from '../types.js';
import { PostgresAccountStore } from './accounts.js';
import { postgresDumper } from './dump.js';
import { BuildLock, Presence, watchChanges, type WatchOptions } from './coordination.js';
import { PostgresEventStore } from './events.js';
import { PostgresFileStore } from './files.js';
import { describeDatabase, migrateWith } from './migrations.js';
import { PostgresTokenStore } from './tokens.js';
import { PostgresTrustedPublisherStore } from './trusted-publishers.js';
import { PostgresVersionStore } from './versions.js';
import { PostgresWebhookStore } from './webhooks.js';
import { PostgresPurgeStore } from './purges.js';

export { BuildLockTimeoutError, CHANGES_CHANNEL } from './coordination.js';
export { migratePostgres, PostgresSchemaError, POSTGRES_SCHEMA_VERSION, type MigrationResult } from './migrations.js';

export interface PostgresStorageOptions {
  /** `postgres://user:password@host:port/database` (libpq parameters such as `sslmode` in the query). */
  url: string;
  /** Where archives, manifests and staged files' bytes are kept. */
  blobs: BlobStore;
  /** The local folder the static registry is built into. */
  publicDir: string;
  /** A local folder for incoming uploads (`uploadTempPath`). */
  tmpDir: string;
  /**
   * How old (by the database's clock) a pending version or a claimed staged file must be before it is
   * taken for abandoned whatever instance holds it (by `recover()`, or by an upload of the same
   * version); default one hour. A pending version of an instance known dead (its connection to the
   * database closed) needs no wait: see `reserveVersion`.
   */
  pendingGraceMs?: number;
  /** How long a registry build waits for the build lock another instance holds; default 2 minutes. */
  buildLockTimeoutMs?: number;
  /** Reconnection backoff of `watchChanges`' listening connection. */
  watch?: WatchOptions;
  /** Connections this instance may hold; default 10. */
  maxConnections?: number;
  /**
   * When `publicDir` and `tmpDir` are made: at open (the default), or in `recover()`, which a server
   * runs at start before it builds or takes an upload; a command that only works on rows
   * (`token create`) then makes no local folder.
   */
  localFolders?: 'open' | 'recover';
}

export interface PostgresStorage extends RegistryStorage {
  /** The database, password left out (for messages). */
  readonly database: string;
}

const DEFAULT_GRACE_MS = 60 * 60 * 1000;
const DEFAULT_BUILD_LOCK_TIMEOUT_MS = 2 * 60 * 1000;

/**
 * Opens the storage on the database at `url`, creating or migrating its schema first (refused, with
 * PostgresSchemaError, when a later release migrated it further).
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<PostgresStorage> {
  const database = describeDatabase(options.url);
  const graceMs = options.pendingGraceMs ?? DEFAULT_GRACE_MS;
  let foldersMade = false;
  const makeFolders = async (): Promise<void> => {
    if (foldersMade) return;
    for (const folder of [options.publicDir, options.tmpDir]) {
      await mkdir(folder, { recursive: true, mode: 0o700 });
    }
    // Uploads wait here before they reach the blob store: this instance's account only.
    await chmod(options.tmpDir, 0o700);
    foldersMade = true;
  };
  if (options.localFolders !== 'recover') await makeFolders();
  const pool = new pg.Pool({ connectionString: options.url, max: options.maxConnections ?? 10 });
  // An idle connection the server drops (restart, failover) is replaced on the next query; without
  // a listener the pool's 'error' event would end the process.
  pool.on('error', () => undefined);
  try {
    const client = await pool.connect();
    try {
      await migrateWith(client, database);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  // This instance's id: in its change notifications (not heard by itself) and its presence lock.
  const instance = randomUUID();
  const presence = new Presence(options.url, instance);
  const buildLock = new BuildLock(options.url, options.buildLockTimeoutMs ?? DEFAULT_BUILD_LOCK_TIMEOUT_MS);
  const watchers = new Set<() => Promise<void>>();
  const versions = new PostgresVersionStore(pool, options.blobs, path.resolve(options.tmpDir), { presence, graceMs });
  const files = new PostgresFileStore(pool, options.blobs);
  let closed = false;
  return {
    database,
    publicDir: path.resolve(options.publicDir),
    tokens: new PostgresTokenStore(pool),
    versions,
    events: new PostgresEventStore(pool),
    webhooks: new PostgresWebhookStore(pool),
    files,
    accounts: new PostgresAccountStore(pool),
    trustedPublishers: new PostgresTrustedPublisherStore(pool),
    purges: new PostgresPurgeStore(pool),
    dump: postgresDumper(pool, options.blobs, database),
    async recover() {
      await makeFolders();
      await versions.recover(graceMs);
      await files.recover(graceMs);
      // Temp files of atomic writes a killed process left: a dead one's at once, never a running one's.
      await removeLeftoverTemps(path.resolve(options.publicDir), { recursive: true, foreignAfterMs: graceMs });
      if (options.blobs instanceof FolderBlobStore) await options.blobs.removeLeftoverTemps({ foreignAfterMs: graceMs });
    },
    /**
     * LISTEN on a connection of its own: `listener` is called for every version committed, recovered or
     * whose lifecycle changed through another instance (notified in the transaction that made the
     * change, so only once it committed), and once after the connection dropped and came back.
     */
    async watchChanges(listener) {
      if (closed) throw new Error('the storage is closed');
      const stop = await watchChanges(options.url, instance, listener, options.watch);
      const unsubscribe = async (): Promise<void> => {
        watchers.delete(unsubscribe);
        await stop();
      };
      watchers.add(unsubscribe);
      return unsubscribe;
    },
    /** `work` under `pg_advisory_lock` on a connection of its own, waited for at most `buildLockTimeoutMs` (then BuildLockTimeoutError). */
    withBuildLock(work) {
      return buildLock.run(work);
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...watchers].map((stop) => stop()));
      await Promise.all([presence.close(), buildLock.close()]);
      await pool.end();
    },
  };
}
