/**
 * The flags every command that works on a store takes, the same way everywhere: `--store` (the
 * embedded store's folder), `--database` (PostgreSQL), `--storage` (a folder or an S3-compatible
 * bucket for the bytes) and how the bucket is reached; and the one way they are opened.
 * Nothing here prints a database password: URLs are shown through `describeStorage`.
 */
import path from 'node:path';

import type { Command } from 'commander';

import type { OpenedStorage, StorageLocation } from '../../store/index.js';
import { errorMessage } from '../../core/errors.js';
import { UsageError } from '../io.js';
import { parseHttpUrl } from '../../core/http-url.js';

/** The store folder when none is named (store/open.ts's DEFAULT_STORE_DIR; not imported: the store loads SQLite and pg). */
export const DEFAULT_STORE = path.join('.template-registry', 'store');

const STORE_OPTION = `store folder (env REGISTRY_STORE; default ${DEFAULT_STORE})`;

export const DATABASE_OPTION = 'keep tokens, versions, events, webhooks and accounts in PostgreSQL: postgres://user:password@host:port/database (env DATABASE_URL)';
const STORAGE_OPTION = 'keep archives and manifests in this folder or S3-compatible bucket: s3://bucket/prefix (env REGISTRY_STORAGE; default the store folder)';
export const S3_ENDPOINT_OPTION = 'endpoint of an S3-compatible store (R2, MinIO, ...); default env AWS_ENDPOINT_URL, else AWS S3';
export const S3_PATH_STYLE_OPTION = 'address the bucket as <endpoint>/<bucket> (MinIO and most self-hosted stores)';

/** The flags `addBackendOptions` declares, as commander gives them. */
export interface BackendFlags {
  store?: string;
  database?: string;
  storage?: string;
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
}

/**
 * Declares `--store`, `--database`, `--storage`, `--s3-endpoint` and `--s3-force-path-style` on a
 * command. `s3` false leaves the two S3 flags out (a command that declares its own).
 */
export function addBackendOptions(command: Command, options: { store?: string; s3?: boolean } = {}): Command {
  command
    .option('--store <dir>', options.store ?? STORE_OPTION)
    .option('--database <url>', DATABASE_OPTION)
    .option('--storage <dir|s3-url>', STORAGE_OPTION);
  if (options.s3 !== false) command.option('--s3-endpoint <url>', S3_ENDPOINT_OPTION).option('--s3-force-path-style', S3_PATH_STYLE_OPTION);
  return command;
}

const given = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value);

export function isHttpUrl(value: string): boolean {
  return parseHttpUrl(value) !== undefined;
}

/**
 * Where a command's store is, from its flags and the environment (a flag wins over its variable):
 * REGISTRY_STORE, DATABASE_URL, REGISTRY_STORAGE; the S3 endpoint's default (AWS_ENDPOINT_URL)
 * is the AWS SDK's. A UsageError for S3 flags that have no bucket to apply to.
 */
function backendLocation(flags: BackendFlags, env: NodeJS.ProcessEnv = process.env, s3Elsewhere = false): StorageLocation {
  const database = given(flags.database) ?? given(env.DATABASE_URL);
  const storage = given(flags.storage) ?? given(env.REGISTRY_STORAGE);
  const bucket = storage !== undefined && /^s3:\/\//i.test(storage);
  if (!bucket && !s3Elsewhere) {
    if (flags.s3Endpoint !== undefined) throw new UsageError('--s3-endpoint needs --storage s3://bucket/prefix');
    if (flags.s3ForcePathStyle) throw new UsageError('--s3-force-path-style needs --storage s3://bucket/prefix');
  }
  if (flags.s3Endpoint !== undefined && !isHttpUrl(flags.s3Endpoint)) throw new UsageError(`--s3-endpoint must be an http(s) URL (got "${flags.s3Endpoint}")`);
  return {
    store: given(flags.store) ?? given(env.REGISTRY_STORE) ?? DEFAULT_STORE,
    ...(database !== undefined ? { database } : {}),
    ...(storage !== undefined ? { storage } : {}),
    s3: { ...(flags.s3Endpoint !== undefined ? { endpoint: flags.s3Endpoint } : {}), ...(flags.s3ForcePathStyle ? { forcePathStyle: true } : {}) },
    names: {
      database: given(flags.database) !== undefined ? '--database' : 'DATABASE_URL',
      storage: given(flags.storage) !== undefined ? '--storage' : 'REGISTRY_STORAGE',
      s3Endpoint: '--s3-endpoint',
    },
  };
}

/** `text` with the password of the database URL (and its escaped form) replaced: for messages of errors from below. */
export function withoutPassword(text: string, database: string | undefined): string {
  if (database === undefined) return text;
  let password: string;
  try {
    password = new URL(database).password;
  } catch {
    return text;
  }
  if (password === '') return text;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // keep the raw form
  }
  return [password, decoded].reduce((result, secret) => (secret === '' ? result : result.split(secret).join('***')), text);
}

/** A storage a command opened, and where it is, for its messages. */
export type CommandStorage = OpenedStorage & {
  /** The store folder (absolute). */
  readonly dir: string;
  /** Where the store is, for messages: the folder, or the database (no password) and the storage. */
  readonly where: string;
  /** What a server on this storage should warn about, one line each (printed by `serve`). */
  readonly warnings: readonly string[];
};

/**
 * With a database but no storage the archives go to the store folder, which is this machine's own:
 * a second instance on the same database would list versions whose bytes it does not have.
 */
function warningsOf(location: StorageLocation, storage: OpenedStorage): string[] {
  if (location.database === undefined || location.storage !== undefined) return [];
  const database = location.names?.database ?? '--database';
  return [
    `${database} without --storage: archives and manifests are kept in the store folder ${storage.description.storage}, local to this instance; other instances on this database will not have them: give every instance one shared --storage (s3://bucket/prefix)`,
  ];
}

/** Runs `work` on the store the flags name (as `openStoreForCommand` opens it), closed after it whatever happens; gives the exit code `work` gives. */
export async function withStoreForCommand(
  flags: BackendFlags,
  options: { create: boolean },
  work: (store: CommandStorage) => Promise<number>,
): Promise<number> {
  const store = await openStoreForCommand(flags, options);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/**
 * Opens the store a command names: its `--store` folder (the old form: the flag's value), or its
 * backend flags; `create: false` opens an existing embedded store only. A location that cannot be
 * (a bad URL, a missing or unreachable bucket, no store in the folder) is a UsageError naming the
 * flag; any other failure is rethrown with the database's password left out of its message.
 */
export async function openStoreForCommand(flags: string | undefined | BackendFlags, options: { create: boolean; env?: NodeJS.ProcessEnv; s3Elsewhere?: boolean }): Promise<CommandStorage> {
  const location = backendLocation(typeof flags === 'object' ? flags : { ...(flags !== undefined ? { store: flags } : {}) }, options.env ?? process.env, options.s3Elsewhere ?? false);
  // Loaded here, not above: commands that only declare these flags (help, a GitHub build) load no database driver.
  const { describeStorage, openStorage, StorageLocationError, StoreNotFoundError } = await import('../../store/index.js');
  let storage: OpenedStorage;
  try {
    // A database's local folders (the built registry, upload temp files) are made when a server recovers the storage at start, not by commands that never use them.
    storage = await openStorage(location, { create: options.create, localFolders: 'recover' });
  } catch (error) {
    if (error instanceof StorageLocationError) throw new UsageError(error.message);
    if (error instanceof StoreNotFoundError) throw new UsageError(`--store: ${error.message}`);
    if (location.database === undefined) throw error;
    throw new Error(`cannot open the database (${location.names?.database ?? '--database'}): ${withoutPassword(errorMessage(error), location.database)}`, { cause: error });
  }
  return Object.assign(storage, { dir: storage.description.dir, where: describeStorage(storage.description), warnings: warningsOf(location, storage) });
}
