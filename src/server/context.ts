import type { SigstoreTrust } from '../archive/index.js';
import type { RegistryDocument } from '../core/schema-types.js';
import type { RegistryStorage } from '../store/types.js';
import type { StaticFiles } from './static-files.js';
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
  /** Failed logins of one account allowed per `loginWindowMs`; past them its logins get 429 until the window ends. */
  loginFailuresPerAccount: number;
  /** Failed logins from one client address allowed per `loginWindowMs`. */
  loginFailuresPerAddress: number;
  loginWindowMs: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  maxArchiveBytes: 50 * 1024 * 1024,
  maxManifestBytes: 1024 * 1024,
  readPerMinute: 600,
  uploadPerMinute: 30,
  requestTimeoutMs: 300_000,
  loginFailuresPerAccount: 5,
  loginFailuresPerAddress: 20,
  loginWindowMs: 15 * 60_000,
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
  /** REGISTRY_ADMIN_TOKEN, when set: a token with the admin role that is not in the store. */
  adminToken?: string;
  /** Sends events to the registered webhooks in the background. */
  webhooks: WebhookDispatcher;
  /** Tells the server a download was recorded, so that the registry's `stats` show it soon (server/stats-refresh.ts). */
  downloadRecorded?: () => void;
  /** The server's clock for token lifetimes (tests); default the system's. */
  clock?: () => Date;
  /** The trusted root uploaded provenance is verified against (`--sigstore-trusted-root`; default the public-good root). */
  sigstore: SigstoreTrust;
}
