/**
 * The embedded store: one folder holding a SQLite database (tokens, owners, versions, events,
 * webhooks, deliveries) beside the archives and manifests as files, and the built static registry
 * in `public/`. Several processes may open it at once (the server and `token create`): SQLite's WAL
 * mode and busy timeout serialize their writes, so a token created by the CLI works at once.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import type { RegistryStorage } from '../types.js';
import { openDatabase } from './database.js';
import { SqliteEventStore } from './events.js';
import { SqliteTokenStore } from './tokens.js';
import { SqliteVersionStore, StoreLayout } from './versions.js';
import { SqliteWebhookStore } from './webhooks.js';

export { SCHEMA_VERSION, StoreVersionError } from './database.js';

export interface SqliteStorage extends RegistryStorage {
  /** The store folder (absolute). */
  dir: string;
  /** Where an archive is kept (for tests and operators). */
  archivePath(name: string, version: string): string;
}

/** Opens (creating if needed) the store in `dir` and finishes or undoes uploads a crash interrupted. */
export async function openSqliteStorage(dir: string): Promise<SqliteStorage> {
  const layout = new StoreLayout(path.resolve(dir));
  const publicDir = path.join(layout.dir, 'public');
  for (const folder of [layout.archives, layout.manifests, layout.tmp, publicDir]) mkdirSync(folder, { recursive: true });
  const db = openDatabase(path.join(layout.dir, 'registry.sqlite'));
  const versions = new SqliteVersionStore(db, layout);
  try {
    await versions.recover();
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    dir: layout.dir,
    publicDir,
    tokens: new SqliteTokenStore(db),
    versions,
    events: new SqliteEventStore(db),
    webhooks: new SqliteWebhookStore(db),
    archivePath: (name, version) => layout.archive(name, version),
    close: () => {
      if (db.open) db.close();
      return Promise.resolve();
    },
  };
}
