import type { SigstoreTrust } from '../archive/index.js';
import type { RegistryDocument } from '../core/schema-types.js';
import type { RegistryStorage } from '../store/types.js';
import type { PasswordHasher } from './passwords.js';
import type { StaticFiles } from './static-files.js';
import type { PurgeDispatcher } from './purges.js';
import type { WebhookDispatcher } from './webhooks.js';

export interface ServerLimits {
  /** Largest archive accepted, in bytes. */
  maxArchiveBytes: number;
  /** Largest manifest part, in bytes. */
  maxManifestBytes: number;
  /** Requests per minute per client on read routes. */
  readPerMinute: number;
  /** Requests per minute per client on uploads. */
  uploadPerMinute: number;
  /** A request (an upload's whole body included) must arrive within this many milliseconds. */
  requestTimeoutMs: number;
  /** A request body (but an upload's archive bytes, bounded by `requestTimeoutMs`) must arrive within this many milliseconds of its headers; past it 408. */
  bodyTimeoutMs: number;
  /** Connections one client address may hold at once (0: no limit); past it 429 TOO_MANY_CONNECTIONS. Not applied behind trusted proxies. */
  maxConnectionsPerAddress: number;
  /** Failed logins of one account from one client address allowed per `loginWindowMs`; past them that address's logins of the account get 429 until the window lets one go. */
  loginFailuresPerAccountAddress: number;
  /** Failed logins from one client address (any account) allowed per `loginWindowMs`. */
  loginFailuresPerAddress: number;
  loginWindowMs: number;
  /** Failed logins of one account from every address together allowed per `loginAccountWindowMs`: the slower limit of guesses spread over many addresses. */
  loginFailuresPerAccount: number;
  loginAccountWindowMs: number;
  /** Password hashes (scrypt, on libuv's threadpool) computed at once; the others wait in the queue. */
  maxConcurrentHashes: number;
  /** Logins waiting for a hash; past them a login is answered 503 with Retry-After at once. */
  hashQueueLength: number;
  /** Files one token may have staged through `/files` (not yet used or expired); past it 429 QUOTA_EXCEEDED. */
  maxStagedFilesPerToken: number;
  /** Bytes one token's staged files may hold together; past it 413 QUOTA_EXCEEDED. */
  maxStagedBytesPerToken: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  maxArchiveBytes: 50 * 1024 * 1024,
  maxManifestBytes: 1024 * 1024,
  readPerMinute: 600,
  uploadPerMinute: 30,
  requestTimeoutMs: 300_000,
  bodyTimeoutMs: 60_000,
  maxConnectionsPerAddress: 64,
  loginFailuresPerAccountAddress: 5,
  loginFailuresPerAddress: 20,
  loginWindowMs: 15 * 60_000,
  loginFailuresPerAccount: 50,
  loginAccountWindowMs: 60 * 60_000,
  maxConcurrentHashes: 2,
  hashQueueLength: 16,
  maxStagedFilesPerToken: 10,
  maxStagedBytesPerToken: 200 * 1024 * 1024,
};

/** The registry document being served, with what conditional requests need. */
export interface CurrentRegistry {
  document: RegistryDocument;
  /** Strong ETag of registry.json's bytes, computed once per build. */
  etag: string;
  lastModified: Date;
  /** The files of the same build the read routes answer from memory (registry.json, index.json, templates/<id>.json, index.html). */
  files: StaticFiles;
}

/** What the route plugins are given (as their options): the storage, settings, the registry and the dispatcher. */
export interface ServerContext {
  storage: RegistryStorage;
  /** Base URL clients reach the server at (no trailing slash). */
  publicUrl: string;
  limits: ServerLimits;
  /** The document of the last build. */
  registry(): CurrentRegistry;
  /** Rebuilds registry.json and the per-template files from the storage; builds never overlap. */
  rebuild(): Promise<void>;
  /** Why the last build could not write the files of template `id` (it keeps its previous ones); undefined when it could. */
  buildFailure?: (id: string) => string | undefined;
  /** REGISTRY_ADMIN_TOKEN, when set: a token with the admin role that is not in the store. */
  adminToken?: string;
  /** The password hasher of accounts and logins: bounded by the hash queue (hash-queue.ts). */
  passwords: PasswordHasher;
  /** Sends events to the registered webhooks in the background. */
  webhooks: WebhookDispatcher;
  /** Tells the server a download was recorded, so that the registry's `stats` show it soon (server/stats-refresh.ts). */
  downloadRecorded?: () => void;
  /** The server's clock for token lifetimes, Last-Modified dates and publish times (tests); default the system's. */
  clock?: () => Date;
  /** Refuse an upload whose change log has no section for its version (`--require-changelog-entry`); off by default. */
  requireChangelogEntry?: boolean;
  /** CDN purges after each change, from the purge outbox (`--purge`); absent: no CDN is purged. */
  purges?: PurgeDispatcher;
  /** The trusted root uploaded provenance is verified against (`--sigstore-trusted-root`; default the public-good root). */
  sigstore: SigstoreTrust;
}
