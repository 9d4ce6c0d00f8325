/**
 * The embedded store: one folder holding a SQLite database (tokens, owners, versions, events,
 * webhooks, deliveries), by default beside the archives, manifests and staged files as files (else
 * those are in another blob store, such as a bucket), and the built static registry in `public/`.
 * Several processes may open it at once (the server and `token create`): SQLite's WAL mode and
 * busy timeout serialize their writes, so a token created by the CLI works at once.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';

import { FOREIGN_TEMP_AGE_MS, removeLeftoverTemps } from '../../core/files.js';

import { FolderBlobStore } from '../blob/folder.js';
import type { BlobStore, RegistryStorage } from '../types.js';
import { SqliteAccountStore } from './accounts.js';
import { openDatabase } from './database.js';
import { sqliteDumper } from './dump.js';
import { SqliteEventStore } from './events.js';
import { SqliteFileStore } from './files.js';
import { SqlitePurgeStore } from './purges.js';
import { SPACE_RESERVE_FILE, SpaceReserve } from './space-reserve.js';
import { SqliteTokenStore } from './tokens.js';
import { SqliteTrustedPublisherStore } from './trusted-publishers.js';
import { archiveKey } from '../blob-layout.js';
import { PRIVATE_FILE, PRIVATE_FOLDER, SqliteVersionStore, StoreLayout } from './versions.js';
import { SqliteWebhookStore } from './webhooks.js';

export { SCHEMA_VERSION, StoreVersionError } from './database.js';

export interface SqliteStorage extends RegistryStorage {
  /** The store folder (absolute). */
  dir: string;
  /** Where the archives, manifests and staged files are kept. */
  blobs: BlobStore;
  /**
   * The file an archive is kept in (for tests and operators): only meaningful when the blob store is
   * a folder (the default: the store folder); throws for another (a bucket has no local path).
   */
  archivePath(name: string, version: string): string;
}

/** The stores `openSqliteStorage` opened that keep their bytes in their own folder (see `selfContainedStoreFolder`). */
const selfContained = new WeakSet<RegistryStorage>();

/**
 * The folder another connection can open `storage` from (the server's build thread opens its own):
 * only an embedded store this module opened that keeps its bytes in that folder. Undefined for any
 * other (a bucket's client, a database pool or a wrapped store cannot be handed to a thread).
 */
export function selfContainedStoreFolder(storage: RegistryStorage): string | undefined {
  return selfContained.has(storage) ? (storage as SqliteStorage).dir : undefined;
}

/** `--store` names a folder that holds no store (and creating one was not asked for). */
export class StoreNotFoundError extends Error {
  override readonly name = 'StoreNotFoundError';
}

export interface OpenStorageOptions {
  /** Create the store when the folder has none (default true); false: StoreNotFoundError. */
  create?: boolean;
  /**
   * Where archives, manifests and staged files are kept (`archives/<name>/<version>.tgz`,
   * `manifests/<name>/<version>.json`, `files/<id>`). Default: a FolderBlobStore on the store folder,
   * the layout every store had before blob stores existed.
   */
  blobs?: BlobStore;
}

/**
 * Opens the store in `dir` (creating it unless `create: false`). Folders are created 0700 and
 * files 0600, whatever the umask: the store holds token hashes and webhook secrets.
 */
export async function openSqliteStorage(dir: string, options: OpenStorageOptions = {}): Promise<SqliteStorage> {
  const layout = new StoreLayout(path.resolve(dir));
  const databaseFile = path.join(layout.dir, 'registry.sqlite');
  if (options.create === false && !existsSync(databaseFile)) {
    throw new StoreNotFoundError(`${layout.dir} holds no registry store (no registry.sqlite): check the path, or start \`template-registry serve --store\` on it first`);
  }
  const publicDir = path.join(layout.dir, 'public');
  const blobs = options.blobs ?? new FolderBlobStore(layout.dir);
  // The bytes' folders exist from the start in a store that keeps them itself, as they always did.
  const byteFolders = options.blobs === undefined ? [layout.archives, layout.manifests] : [];
  for (const folder of [layout.dir, ...byteFolders, layout.tmp, publicDir]) {
    await mkdir(folder, { recursive: true, mode: PRIVATE_FOLDER });
    await chmod(folder, PRIVATE_FOLDER);
  }
  const db = openDatabase(databaseFile);
  for (const file of [databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`]) {
    if (existsSync(file)) await chmod(file, PRIVATE_FILE);
  }
  const reserve = new SpaceReserve(path.join(layout.dir, SPACE_RESERVE_FILE));
  // Made now when there is room; else before the next reservation (which it refuses without it).
  await reserve.ensure().catch(() => undefined);
  const versions = new SqliteVersionStore(db, blobs, layout.tmp, reserve);
  const files = new SqliteFileStore(db, blobs);
  const storage: SqliteStorage = {
    dir: layout.dir,
    publicDir,
    tokens: new SqliteTokenStore(db),
    versions,
    events: new SqliteEventStore(db),
    webhooks: new SqliteWebhookStore(db),
    files,
    accounts: new SqliteAccountStore(db),
    trustedPublishers: new SqliteTrustedPublisherStore(db),
    purges: new SqlitePurgeStore(db),
    blobs,
    dump: sqliteDumper(db, blobs, layout.dir),
    archivePath: (name, version) => {
      if (!(blobs instanceof FolderBlobStore)) throw new Error(`the archives of this store are kept in ${blobs.location}, not in local files`);
      return path.join(blobs.location, ...archiveKey(name, version).split('/'));
    },
    async recover() {
      await versions.recover();
      await files.recover();
      // Temp files of atomic writes a killed process left: a dead one's at once, never a running
      // one's; those of a release before owner keys at once too, as it always did (one server per store).
      const ages = { foreignAfterMs: FOREIGN_TEMP_AGE_MS, legacyAfterMs: 0 };
      await removeLeftoverTemps(layout.dir, ages);
      await removeLeftoverTemps(publicDir, { recursive: true, ...ages });
      if (blobs instanceof FolderBlobStore) await blobs.removeLeftoverTemps(ages);
    },
    close: () => {
      if (db.open) db.close();
      return Promise.resolve();
    },
  };
  if (options.blobs === undefined) selfContained.add(storage);
  return storage;
}
