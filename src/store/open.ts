/**
 * The storage a server or a command runs on, chosen at start from where things live: the embedded
 * SQLite store in a folder (the default), or PostgreSQL for the rows; the bytes (archives, manifests,
 * staged files) in the store folder or in a BlobStore (a folder or an S3-compatible bucket).
 * The store folder always holds what stays local to one machine: the built static registry
 * (`public/`) and the temp files of uploads in progress; with a database and no `storage`, the bytes
 * too (then local to this machine: several instances need a shared `storage`).
 */
import path from 'node:path';

import { parseS3Url, S3UrlError } from '../core/bucket.js';
import { S3Output } from '../registry/s3-output.js';
import { FolderBlobStore, openBlobStore, S3BlobError, S3BlobStore, type S3BlobSettings } from './blob/index.js';
import { openPostgresStorage } from './postgres/index.js';
import { describeDatabase } from './postgres/migrations.js';

export { describeDatabase };
import { openSqliteStorage } from './sqlite/index.js';
import type { BlobStore, RegistryStorage } from './types.js';

/** The embedded store's folder when none is named (relative to the working directory). */
export const DEFAULT_STORE_DIR = path.join('.template-registry', 'store');

export interface StorageLocation {
  /** The store folder: the embedded store, or with a database the local build output and upload temp files. Default DEFAULT_STORE_DIR. */
  store?: string;
  /** `postgres://` or `postgresql://` URL: the rows live in PostgreSQL. */
  database?: string;
  /** Where the bytes live: a folder or `s3://bucket/prefix`; default the store folder. */
  storage?: string;
  /** How the bucket of an `s3://` storage is reached (default endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS S3; credentials the AWS SDK way). */
  s3?: S3BlobSettings;
  /** The names the values were given by, for messages (default `--database`, `--storage`, `--s3-endpoint`). */
  names?: { database?: string; storage?: string; s3Endpoint?: string };
}

export interface StorageOpening {
  /** Create the embedded store when its folder has none (default true); false: StoreNotFoundError. A database's schema is always created or migrated. */
  create?: boolean;
  /**
   * With a database, when the store folder's `public/` and `tmp/` are made: `'open'` (the default)
   * or `'recover'`, when `recover()` runs, which the server does at start: a command that only
   * reads or writes rows (`token create`) then leaves no folder behind it.
   */
  localFolders?: 'open' | 'recover';
}

/** What a storage opened by `openStorage` runs on, for messages: never a password. */
export interface StorageDescription {
  backend: 'embedded' | 'postgres';
  /** The store folder (absolute). */
  dir: string;
  /** The database URL without its password and parameters; undefined for the embedded store. */
  database?: string;
  /** Where the bytes live: a folder (absolute) or `s3://bucket/prefix/`. */
  storage: string;
}

export interface OpenedStorage extends RegistryStorage {
  readonly description: StorageDescription;
}

/**
 * A location that names no usable database or storage: a URL of another kind, or (checked when the
 * storage is opened) a bucket that is missing, refuses the credentials or cannot be reached. The
 * message names the flag (or variable) and says why; it holds no credential.
 */
export class StorageLocationError extends Error {
  override readonly name = 'StorageLocationError';
  constructor(
    readonly argument: string,
    /** The whole message, naming `argument`. */
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Which endpoint a bucket is reached at, named as the user gave it (the flag, the variable, or AWS's
 * default). An endpoint holding a user name or password never gets this far (s3ClientConfig refuses it).
 */
function endpointName(location: StorageLocation, env: NodeJS.ProcessEnv = process.env): string {
  const given = location.s3?.endpoint?.trim();
  if (given) return `${location.names?.s3Endpoint ?? '--s3-endpoint'} ${given}`;
  for (const variable of ['AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL']) {
    const value = env[variable]?.trim();
    if (value) return `${variable} ${value}`;
  }
  return 'AWS S3';
}

/**
 * One request to the bucket of an `s3://` storage before anything is opened: a missing bucket, a
 * refused key or an endpoint that does not answer fails here, naming the flag, rather than later
 * (or never, for a command that reads no bytes, which would then succeed on a bucket that is not there).
 */
async function checkBucket(blobs: S3BlobStore, location: StorageLocation): Promise<void> {
  try {
    await blobs.checkBucket();
  } catch (error) {
    if (error instanceof S3UrlError) {
      // A bad endpoint (no http(s) URL, credentials in it): its message names the variable, or says "the S3 endpoint" for the flag.
      const given = location.s3?.endpoint?.trim();
      const argument = given ? (location.names?.s3Endpoint ?? '--s3-endpoint') : 'AWS_ENDPOINT_URL';
      throw new StorageLocationError(argument, given ? `${argument}: ${error.message.replace(/^the S3 endpoint /, '')}` : error.message);
    }
    if (!(error instanceof S3BlobError) || error.bucketProblem === undefined) throw error;
    const argument = location.names?.storage ?? '--storage';
    const why = error.bucketProblem === 'unreachable' ? `cannot reach ${endpointName(location)}: ${error.message}` : error.message;
    throw new StorageLocationError(argument, `cannot open the storage (${argument} ${blobs.location}): ${why}`, { cause: error });
  }
}

/** What a refused URL is, for messages: only its scheme (any other part may hold a secret). */
function shown(value: string): string {
  return URL.canParse(value) ? `a ${new URL(value).protocol} URL` : 'a value that is not a URL';
}

/** Checks a database URL: `postgres://` or `postgresql://` (a socket folder may be given as `?host=`). */
export function checkDatabaseUrl(value: string, argument = '--database'): string {
  if (!URL.canParse(value)) {
    throw new StorageLocationError(argument, `${argument}: must be a postgres://user:password@host:port/database URL (got a value that is not a URL)`);
  }
  if (!/^postgres(?:ql)?:\/\//i.test(value)) {
    throw new StorageLocationError(argument, `${argument}: must be a postgres:// or postgresql:// URL (got ${shown(value)})`);
  }
  return value;
}

/** The BlobStore a location names, or undefined when the bytes stay in the store folder. */
function blobsOf(location: StorageLocation): BlobStore | undefined {
  if (location.storage === undefined || location.storage === '') return undefined;
  const argument = location.names?.storage ?? '--storage';
  try {
    return openBlobStore(location.storage, location.s3 ?? {}, argument);
  } catch (error) {
    // Its message names the argument already.
    if (error instanceof S3UrlError) throw new StorageLocationError(argument, error.message);
    throw error;
  }
}

/**
 * Opens the storage at `location`: without a database the embedded SQLite store in the store folder
 * (its bytes in `storage` when given); with one, PostgreSQL, the bytes in `storage` or else in the
 * store folder. A database URL that is not PostgreSQL's, or a storage that is neither a folder nor an
 * `s3://` URL, or a bucket that cannot be used (missing, refusing the credentials, unreachable), is
 * refused with StorageLocationError before anything is opened.
 */
export async function openStorage(location: StorageLocation, options: StorageOpening = {}): Promise<OpenedStorage> {
  const dir = path.resolve(location.store ?? DEFAULT_STORE_DIR);
  const database = location.database === undefined || location.database === '' ? undefined : checkDatabaseUrl(location.database, location.names?.database ?? '--database');
  const blobs = blobsOf(location);
  if (blobs instanceof S3BlobStore) await checkBucket(blobs, location);
  if (database === undefined) {
    const storage = await withStaticOutput(await openSqliteStorage(dir, { create: options.create ?? true, ...(blobs ? { blobs } : {}) }), blobs);
    return withDescription(storage, { backend: 'embedded', dir: storage.dir, storage: blobs?.location ?? storage.dir });
  }
  const bytes = blobs ?? new FolderBlobStore(dir);
  const storage = await openPostgresStorage({
    url: database,
    blobs: bytes,
    publicDir: path.join(dir, 'public'),
    tmpDir: path.join(dir, 'tmp'),
    localFolders: options.localFolders ?? 'open',
  });
  return withDescription(await withStaticOutput(storage, bytes), { backend: 'postgres', dir, database: describeDatabase(database), storage: bytes.location });
}

/** A bucket also holds the static registry, below `public/` of its prefix, for a CDN in front of it. */
async function withStaticOutput<T extends RegistryStorage>(storage: T, blobs: BlobStore | undefined): Promise<T> {
  if (!(blobs instanceof S3BlobStore)) return storage;
  const site = parseS3Url(`s3://${blobs.bucket}/${blobs.prefix.replace(/^\/+/, '')}public/`, '--storage');
  return Object.assign(storage, { staticOutput: new S3Output({ client: await blobs.sdkClient(), ...site }) });
}

/**
 * The storage with its description. The storage's own methods are kept bound to it (a spread would
 * lose nothing here: every implementation returns a plain object of closures and store instances).
 */
function withDescription<T extends RegistryStorage>(storage: T, description: StorageDescription): T & OpenedStorage {
  return Object.assign(storage, { description });
}

/** Describes a location in one line for messages (`postgres://user@host/db + s3://bucket/prefix/`); never a password. */
export function describeStorage(description: StorageDescription): string {
  if (description.backend === 'embedded') return description.storage === description.dir ? description.dir : `${description.dir} + ${description.storage}`;
  return `${description.database ?? 'PostgreSQL'} + ${description.storage}`;
}
