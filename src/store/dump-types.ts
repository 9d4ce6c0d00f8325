/**
 * Every row of a store in one backend-neutral shape, what `store copy` moves from one backend to
 * another: instants as ISO 8601 strings, hashes and keys as Buffers, JSON columns parsed. Secrets
 * stay what the stores keep of them (token and session hashes, password hashes, webhook secrets):
 * a dump is as sensitive as the store itself and is never printed.
 *
 * Arrays are in the order the store keeps them (ids, insertion order), so the target keeps every
 * order the stores promise (co-owners, outbox deliveries, events, delivery attempts).
 *
 * Staged large uploads (`/files`, `FileStore`) are not part of a dump: they are short-lived (an
 * unconfirmed or unused one expires) and are made again by retrying the upload. Neither is the purge
 * outbox (`PurgeStore`): its jobs are for the CDN of the server that wrote them.
 */
import type { AggregateRows } from '../registry/analytics.js';
import type { BlobStore, OutboxState, SessionKind, TokenRole, VersionStability } from './types.js';

export interface DumpToken {
  id: string;
  /** sha256 of the token (the token itself is never kept). */
  hash: Buffer;
  role: TokenRole;
  templates: string[] | null;
  owner: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** The CI run of a token minted for trusted publishing (parsed); null for any other token. */
  publisher: unknown;
}

export interface DumpOwner {
  name: string;
  owner: string;
  claimedAt: string;
}

export interface DumpCoOwner {
  name: string;
  owner: string;
  addedAt: string;
}

export interface DumpVersion {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  integrity: string;
  sha256: string;
  size: number;
  owner: string;
  createdAt: string;
  /** The manifest kept in the row (parsed); null when the row has none (an old store kept it only as a file). */
  manifest: unknown;
  stability: VersionStability | null;
  deprecationMessage: string | null;
  yankedAt: string | null;
  /** The CI run that published it through trusted publishing (parsed); null otherwise. */
  publisher: unknown;
  /** What its verified provenance bundle says (parsed); null when it was uploaded without one (the bundle is a blob). */
  attestation: unknown;
}

/** A trusted publisher of a template name (`trusted_publishers`). */
export interface DumpTrustedPublisher {
  id: string;
  template: string;
  issuer: string;
  repository: string;
  repositoryOwnerId: string;
  workflow: string;
  environment: string | null;
  ref: string | null;
  pendingOwner: string | null;
  createdBy: string;
  createdAt: string;
}

/** An ID token already exchanged (`oidc_id_tokens`): kept until it expires, so that it is used once, also after a copy. */
/** A purged version's name and version (`purged_versions`): never to be used again. */
export interface DumpPurgedVersion {
  name: string;
  version: string;
  purgedAt: string;
}

export interface DumpUsedIdToken {
  issuer: string;
  jti: string;
  expiresAt: string;
}

export interface DumpEvent {
  /** The store's id (kept: `RecordedEvent.id`). */
  id: number;
  type: string;
  templateId: string;
  version: string;
  /** As the client sent it (not necessarily ISO). */
  timestamp: string;
  /** The other fields of the event. */
  data: Record<string, unknown>;
  client: string | null;
  receivedAt: string | null;
}

export interface DumpWebhook {
  id: string;
  url: string;
  events: string[];
  secret: string;
  active: boolean;
  createdAt: string;
  /** The secret a rotation replaced and when it stops signing (null: none). */
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
}

/** One attempt of a delivery (`deliveries`). */
export interface DumpDeliveryAttempt {
  /** The row number (the log's order). */
  id: number;
  /** The attempt's external id (X-Webhook-Delivery). */
  attemptId: string;
  webhookId: string;
  event: string;
  status: number | null;
  attemptedAt: string;
  error: string | null;
  deliveryId: string | null;
}

/** One outbox delivery (`webhook_outbox`). */
export interface DumpOutboxDelivery {
  id: string;
  webhookId: string;
  event: string;
  body: string;
  state: OutboxState;
  attempts: number;
  nextAttemptAt: string;
  createdAt: string;
  updatedAt: string;
  lastStatus: number | null;
  lastError: string | null;
}

export interface DumpUser {
  id: string;
  email: string;
  passwordHash: string;
  role: TokenRole;
  owner: string;
  name: string | null;
  createdAt: string;
}

export interface DumpSession {
  /** sha256 of the session secret. */
  hash: Buffer;
  family: string;
  userId: string;
  kind: SessionKind;
  createdAt: string;
  expiresAt: string;
  replacedAt: string | null;
  revokedAt: string | null;
}

/** A settings row (`access-token-key`: the key access tokens are signed with). */
export interface DumpSetting {
  key: string;
  value: Buffer;
}

export interface StoreDump {
  tokens: DumpToken[];
  owners: DumpOwner[];
  coOwners: DumpCoOwner[];
  versions: DumpVersion[];
  events: DumpEvent[];
  webhooks: DumpWebhook[];
  outbox: DumpOutboxDelivery[];
  deliveryAttempts: DumpDeliveryAttempt[];
  users: DumpUser[];
  sessions: DumpSession[];
  settings: DumpSetting[];
  trustedPublishers: DumpTrustedPublisher[];
  usedIdTokens: DumpUsedIdToken[];
  /** Versions purged for good: their names and versions stay refused in the copy. */
  purgedVersions: DumpPurgedVersion[];
  /**
   * The analytics aggregates (registry/analytics.ts): they hold counts the events no longer do once
   * the retention pruned them, so they are copied as they are, not made again from the events.
   */
  analytics: AggregateRows;
  /** Staged files the source held (not copied; see above). */
  stagedFilesSkipped: number;
}

/** How many rows of each kind a store holds (`analytics`: versions with analytics aggregates). */
export type StoreCounts = { [K in Exclude<keyof StoreDump, 'stagedFilesSkipped'>]: number } & { stagedFiles: number };

/**
 * The backend-level access `store copy` needs, beside the store interfaces (which never give out
 * hashes or raw rows): read every row, count them, write a dump into an empty store. Each backend
 * makes one from its own database handle (`sqliteDumper`, `postgresDumper`) and exposes it as
 * `RegistryStorage.dump`.
 */
export interface StoreDumper {
  readonly backend: 'sqlite' | 'postgres';
  /** Where the rows live, for messages (a folder, or a database URL without its password). */
  readonly location: string;
  /** Where the archives and manifests live (`archives/<name>/<version>.tgz`, `manifests/<name>/<version>.json`). */
  readonly blobs: BlobStore;
  /** Every row, read in one consistent snapshot. */
  read(): Promise<StoreDump>;
  counts(): Promise<StoreCounts>;
  /**
   * Writes every row of `dump` in one transaction (all or nothing). The settings rows replace any
   * of the same key; every other table must be empty (the caller checks; a key clash fails the whole load).
   */
  load(dump: StoreDump): Promise<void>;
}
