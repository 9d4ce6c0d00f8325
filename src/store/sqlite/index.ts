/**
 * The embedded store: one folder holding a SQLite database (tokens, owners, versions, events,
 * webhooks, deliveries) beside the archives and manifests as files, and the built static registry
 * in `public/`. Several processes may open it at once (the server and `token create`): SQLite's WAL
 * mode and busy timeout serialize their writes, so a token created by the CLI works at once.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

import { TEMP_FILE_PATTERN } from '../../core/files.js';

import type { RegistryStorage } from '../types.js';
import { openDatabase } from './database.js';
import { SqliteEventStore } from './events.js';
import { SqliteFileStore } from './files.js';
import { SqliteTokenStore } from './tokens.js';
import { PRIVATE_FILE, PRIVATE_FOLDER, SqliteVersionStore, StoreLayout } from './versions.js';
import { SqliteWebhookStore } from './webhooks.js';

export { SCHEMA_VERSION, StoreVersionError } from './database.js';

export interface SqliteStorage extends RegistryStorage {
  /** The store folder (absolute). */
  dir: string;
  /** Where an archive is kept (for tests and operators). */
  archivePath(name: string, version: string): string;
}

/** `--store` names a folder that holds no store (and creating one was not asked for). */
export class StoreNotFoundError extends Error {
  override readonly name = 'StoreNotFoundError';
}

export interface OpenStorageOptions {
  /** Create the store when the folder has none (default true); false: StoreNotFoundError. */
  create?: boolean;
}

/** Removes the temp files of atomic writes a crashed process left below `dir`. */
async function removeStrayTemps(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) await removeStrayTemps(file);
    else if (TEMP_FILE_PATTERN.test(entry.name)) await rm(file, { force: true });
  }
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
  for (const folder of [layout.dir, layout.archives, layout.manifests, layout.tmp, publicDir]) {
    await mkdir(folder, { recursive: true, mode: PRIVATE_FOLDER });
    await chmod(folder, PRIVATE_FOLDER);
  }
  const db = openDatabase(databaseFile);
  for (const file of [databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`]) {
    if (existsSync(file)) await chmod(file, PRIVATE_FILE);
  }
  const versions = new SqliteVersionStore(db, layout);
  const files = new SqliteFileStore(db, path.join(layout.dir, 'files'));
  return {
    dir: layout.dir,
    publicDir,
    tokens: new SqliteTokenStore(db),
    versions,
    events: new SqliteEventStore(db),
    webhooks: new SqliteWebhookStore(db),
    files,
    archivePath: (name, version) => layout.archive(name, version),
    async recover() {
      await versions.recover();
      await files.recover();
      await removeStrayTemps(layout.dir);
    },
    close: () => {
      if (db.open) db.close();
      return Promise.resolve();
    },
  };
}
