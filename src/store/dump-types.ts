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
import type { BlobStore, DeliveryRecord, OutboxDelivery, SessionKind, StoredVersion, StoredWebhook, TokenRecord, TrustedPublisher, UserRecord } from './types.js';

/** A store record as a dump keeps it: every field present, an optional one that is absent as null. */
type Dumped<T> = { [K in keyof T]-?: object extends Pick<T, K> ? NonNullable<T[K]> | null : T[K] };

export type DumpToken = Dumped<TokenRecord> & {
  /** sha256 of the token (the token itself is never kept). */
  hash: Buffer;
};

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

export type DumpVersion = Dumped<StoredVersion> & {
  /** The manifest kept in the row (parsed); null when the row has none (an old store kept it only as a file). */
  manifest: unknown;
};

/** A trusted publisher of a template name (`trusted_publishers`). */
export type DumpTrustedPublisher = Dumped<TrustedPublisher>;

/** A purged version's name and version (`purged_versions`): never to be used again. */
export interface DumpPurgedVersion {
  name: string;
  version: string;
  purgedAt: string;
}

/** An ID token already exchanged (`oidc_id_tokens`): kept until it expires, so that it is used once, also after a copy. */
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

export type DumpWebhook = Dumped<StoredWebhook>;

/** One attempt of a delivery (`deliveries`). */
export type DumpDeliveryAttempt = Omit<DeliveryRecord, 'id'> & {
  /** The row number (the log's order). */
  id: number;
  /** The attempt's external id (X-Webhook-Delivery). */
  attemptId: DeliveryRecord['id'];
};

/** One outbox delivery (`webhook_outbox`). */
export type DumpOutboxDelivery = OutboxDelivery & { updatedAt: string };

export type DumpUser = Dumped<UserRecord> & { passwordHash: string };

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
