/**
 * The registry server's storage, by concern, as small async interfaces: tokens and ownership,
 * versions and their archives, analytics events, webhooks and their delivery log. The embedded
 * SQLite + files store (store/sqlite/) is one implementation; other backends implement the same
 * interfaces and run the same shared test suite (test/store/storage-contract.ts).
 */
import type { Readable } from 'node:stream';

import type { Stability } from '../core/listing.js';
import type { TemplateManifest } from '../core/schema-types.js';
import type { RegistryOutput } from '../registry/output.js';
import type { AnalyticsAggregates } from '../registry/analytics.js';

import type { StoreDumper } from './dump-types.js';

export type TokenRole = 'publisher' | 'admin';

export interface TokenRecord {
  id: string;
  role: TokenRole;
  /** Names this token may publish; undefined means any name its owner may publish. */
  templates?: string[];
  /** Who the token publishes for: the first publish of a name claims it for this owner. */
  owner: string;
  createdAt: string;
  /** From this instant on the token is refused; undefined: it never expires. */
  expiresAt?: string;
  /** When it was revoked (the record is kept, for the audit trail); undefined: it was not. */
  revokedAt?: string;
  /** When it last authenticated a request, to within `LAST_USED_PRECISION_MS`; undefined: never. */
  lastUsedAt?: string;
  /**
   * Set on a token minted for a CI run's OIDC ID token (trusted publishing, `POST /api/oidc/token`):
   * the run it was minted for, kept for the audit trail and stored with every version it publishes.
   * Such a token only publishes (never manages owners, trusted publishers or the lifecycle).
   */
  publisher?: PublisherRun;
}

/**
 * The CI run a trusted publisher's token was minted for, from the claims of its ID token: what a
 * version published with it shows (`publisher` of `GET /templates/{id}/versions/{version}`).
 */
export interface PublisherRun {
  /** The ID token's issuer (`https://token.actions.githubusercontent.com`). */
  issuer: string;
  /** `owner/name`, as the token spelled it. */
  repository: string;
  /** GitHub's numeric id of the repository's owner (text, as the claim gives it). */
  repositoryOwnerId: string;
  /** The workflow file, below `.github/workflows/` (`publish.yml`), from `job_workflow_ref`. */
  workflow: string;
  /** The git ref the run is for (`refs/tags/v1.0.0`). */
  ref: string;
  /** The commit the run is for. */
  sha: string;
  runId: string;
  runAttempt?: string;
  /** The deployment environment of the job, when it had one. */
  environment?: string;
}

export interface NewToken {
  role: TokenRole;
  templates?: string[];
  owner?: string;
  /** When the token stops working; must be after `now`. Default: never. */
  expiresAt?: Date;
  now?: Date;
  /** The CI run of a token minted for trusted publishing (see `TokenRecord.publisher`). */
  publisher?: PublisherRun;
}

/** Whether a token works: active, or refused because it expired or was revoked (revoked wins when both). */
export type TokenState = 'active' | 'expired' | 'revoked';

/** The state of a token record at `now`: the one rule `checkToken`, `token list` and the server share. */
export function tokenState(record: Pick<TokenRecord, 'expiresAt' | 'revokedAt'>, now: Date = new Date()): TokenState {
  if (record.revokedAt !== undefined) return 'revoked';
  if (record.expiresAt !== undefined && now.getTime() >= Date.parse(record.expiresAt)) return 'expired';
  return 'active';
}

/**
 * How stale `lastUsedAt` may be: a use is written only when the stored one is at least this old,
 * so a busy token costs one write a minute, not one per request.
 */
export const LAST_USED_PRECISION_MS = 60_000;

/** What a presented token is: an active token's record, or why it is refused. */
export type TokenCheck =
  | { valid: true; record: TokenRecord }
  | { valid: false; reason: 'unknown' }
  | { valid: false; reason: 'expired' | 'revoked'; record: TokenRecord };

/** The outcome of revoking a token by id. */
export type Revocation = { found: false } | { found: true; alreadyRevoked: boolean; record: TokenRecord };

/** Whether a token may publish a name, and why not. */
export type Permission = { allowed: true } | { allowed: false; reason: string };

export interface TokenStore {
  /** Creates a token; the token itself is returned once and only its hash is kept. */
  createToken(options: NewToken): Promise<{ token: string; record: TokenRecord }>;
  /**
   * What a presented token is (compared through its hash in constant time), read from the storage
   * on every call (never cached, so a revocation by another process applies at once). An active
   * token's use is recorded in `lastUsedAt`, at most once per `LAST_USED_PRECISION_MS`.
   */
  checkToken(token: string, now?: Date): Promise<TokenCheck>;
  /** Every token, expired and revoked ones included, oldest first. */
  listTokens(): Promise<TokenRecord[]>;
  /** Marks a token revoked (its record is kept); revoking a revoked token changes nothing. */
  revokeToken(id: string, now?: Date): Promise<Revocation>;
  /** The owner who claimed a template name, if any. */
  ownerOf(name: string): Promise<string | undefined>;
  /** Every owner of a template name (the claimer, then co-owners in the order they were added); empty when unclaimed. */
  ownersOf(name: string): Promise<string[]>;
  /** Adds a co-owner of a claimed name (`changed: false` when it already is one). */
  addOwner(name: string, owner: string, now?: Date): Promise<OwnerChange>;
  /** Removes an owner of a name; the last owner cannot be removed. */
  removeOwner(name: string, owner: string): Promise<OwnerChange>;
  /**
   * The publishing rule: admins publish anything; a publisher its listed names, when unclaimed or one
   * of its owners'; a token minted for trusted publishing its listed names while a trusted publisher
   * of the name still matches its run.
   */
  canPublish(token: TokenRecord, name: string): Promise<Permission>;
  /**
   * Who may manage a name (its owners, trusted publishers and lifecycle): the publishing rule, but
   * never a token minted for trusted publishing (it only publishes).
   */
  canManage(token: TokenRecord, name: string): Promise<Permission>;
}

/**
 * A CI workflow trusted to publish a template (trusted publishing): an ID token of its issuer whose
 * claims match every field here is exchanged for a short-lived token limited to the template.
 */
export interface TrustedPublisher {
  /** External id, `tp_<hex>`. */
  id: string;
  /** The template name it may publish. */
  template: string;
  /** The ID tokens' issuer (`https://token.actions.githubusercontent.com`). */
  issuer: string;
  /** `owner/name` (compared without regard to case, as GitHub does). */
  repository: string;
  /**
   * The numeric id of the repository's owner, pinned when the record was saved: an account that
   * takes over a deleted owner's name has another id, and is refused.
   */
  repositoryOwnerId: string;
  /** The workflow file below `.github/workflows/` (`publish.yml`). */
  workflow: string;
  /** The deployment environment the job must run in (compared without regard to case); undefined: any, or none. */
  environment?: string;
  /** A pattern the run's git ref must match, `*` standing for any characters (`refs/tags/v*`); undefined: any ref. */
  ref?: string;
  /**
   * Set while the name is unclaimed (a pending publisher): the owner the first publish through it
   * claims the name for. When the name is claimed, the claimer's pending records become ordinary
   * ones and the others are removed.
   */
  pendingOwner?: string;
  /** The owner (a token's or an account's) who saved it. */
  createdBy: string;
  createdAt: string;
}

/** A trusted publisher to save: the fields its saver gives (the store adds the id, the pending owner, who saved it and when). */
export type NewTrustedPublisher = Pick<TrustedPublisher, 'template' | 'issuer' | 'repository' | 'repositoryOwnerId' | 'workflow' | 'environment' | 'ref'> & { now?: Date };

/** The outcome of saving a trusted publisher: saved, the same one already there, or why the token may not. */
export type TrustedPublisherAddition =
  | { added: true; publisher: TrustedPublisher }
  | { added: false; existing: TrustedPublisher }
  | { added: false; forbidden: string }
  | { added: false; full: number };

/** Which trusted publishers of a template a removal takes: one by id, or those of a repository's workflow. */
export type TrustedPublisherSelector = { id: string } | { issuer?: string; repository: string; workflow: string; environment?: string };

/** Trusted publishers of template names, and the ID tokens already exchanged (each is used once). */
export interface TrustedPublisherStore {
  /**
   * Saves a trusted publisher of `template` for `token`, checked in the same transaction: on a claimed
   * name only an owner (or an admin) may; an unclaimed name gets a pending one (`pendingOwner`: the
   * token's owner). The same repository, workflow, environment and ref again: `existing`. At most
   * `MAX_TRUSTED_PUBLISHERS` per template (`full`).
   */
  addTrustedPublisher(record: NewTrustedPublisher, token: TokenRecord): Promise<TrustedPublisherAddition>;
  /** A template's trusted publishers, oldest first. */
  listTrustedPublishers(template: string): Promise<TrustedPublisher[]>;
  /** Removes the trusted publishers of `template` the selector names; returns them (empty: none matched). */
  removeTrustedPublishers(template: string, selector: TrustedPublisherSelector): Promise<TrustedPublisher[]>;
  /** Every trusted publisher of a repository (compared without regard to case) at an issuer, by template: the candidates of an exchange. */
  trustedPublishersOf(issuer: string, repository: string): Promise<TrustedPublisher[]>;
  /**
   * Records that the ID token `jti` of `issuer` was exchanged, until `expiresAt` (it could not be
   * used after that anyway); false when it was already recorded and has not expired: a replay. Of
   * concurrent uses of one jti, on any instance of the storage, exactly one gets true.
   */
  useIdToken(issuer: string, jti: string, expiresAt: Date, now?: Date): Promise<boolean>;
}

/** The most trusted publishers one template may have (pending ones included). */
export const MAX_TRUSTED_PUBLISHERS = 20;

/** The outcome of adding or removing an owner: the owners after it, or why nothing changed. */
export type OwnerChange = { changed: boolean; owners: string[] } | { refused: 'unclaimed' | 'not-an-owner' | 'last-owner' };

/** A publisher or admin account (people log in with its e-mail and password). */
export interface UserRecord {
  /** External id, `usr_<hex>`. */
  id: string;
  /** Lower-cased; unique. */
  email: string;
  role: TokenRole;
  /** Who the account publishes for (as a token's `owner`). */
  owner: string;
  name?: string;
  createdAt: string;
}

export interface NewUser {
  email: string;
  /** The password's hash (the server hashes; the store never sees a password). */
  passwordHash: string;
  role: TokenRole;
  owner: string;
  name?: string;
  now?: Date;
}

export type UserCreation = { created: true; user: UserRecord } | { created: false; reason: 'email-exists' };

/** `refresh`: a refresh token of the login route; `cookie`: a browser session. */
export type SessionKind = 'refresh' | 'cookie';

export interface NewSession {
  userId: string;
  kind: SessionKind;
  expiresAt: Date;
  now?: Date;
}

/** A session secret checked: its user, or why it is refused (`reused`: a rotated refresh token presented again; its whole family is revoked). */
export type SessionCheck = { valid: true; user: UserRecord; expiresAt: string } | { valid: false; reason: 'unknown' | 'expired' | 'revoked' | 'reused' };

export type SessionRotation =
  | { rotated: true; user: UserRecord; secret: string; expiresAt: string; family: string }
  | { rotated: false; reason: 'unknown' | 'expired' | 'revoked' | 'reused' };

/**
 * A session just started; its secret is returned once. `family` names the login it belongs to:
 * every refresh token a login rotates into shares it, and the login's access tokens carry it.
 */
export interface NewSessionSecret {
  secret: string;
  expiresAt: string;
  family: string;
}

/** At most `max` failed logins in any `windowMs`. */
export interface LoginLimit {
  max: number;
  windowMs: number;
}

/** Which count a login limit keeps: one account from one address, one address (any account), one account (every address). */
export type LoginScope = 'account-address' | 'address' | 'account';

/** A login about to be checked: the account (its e-mail, lower-cased) and the client address, with the limits of each scope. */
export interface LoginAttempt {
  account: string;
  address: string;
  limits: Record<LoginScope, LoginLimit>;
  now?: Date;
}

/** An attempt counted (its `id` settles it), or refused: the limit it would pass and how long until it may be tried. */
export type LoginAdmission = { admitted: true; id: string } | { admitted: false; scope: LoginScope; retryAfterMs: number };

/** What came of an admitted login: `failed` stays counted; `succeeded` clears the account's failures from that address; `unchecked` (never evaluated) is forgotten. */
export type LoginOutcome = 'failed' | 'succeeded' | 'unchecked';

/** Accounts, their sessions (refresh tokens and browser sessions: only their hashes kept) and the key access tokens are signed with. */
export interface AccountStore {
  createUser(user: NewUser): Promise<UserCreation>;
  getUser(id: string): Promise<UserRecord | undefined>;
  /** The account of an e-mail (compared lower-cased) with its password hash, for a login. */
  findCredentials(email: string): Promise<{ user: UserRecord; passwordHash: string } | undefined>;
  /** Every account, oldest first. */
  listUsers(): Promise<UserRecord[]>;
  /** Starts a session (a new login, its own family); its secret is returned once. */
  createSession(session: NewSession): Promise<NewSessionSecret>;
  /** What a presented session secret of `kind` is, at `now` (compared through its hash). */
  checkSession(secret: string, kind: SessionKind, now?: Date): Promise<SessionCheck>;
  /**
   * Replaces a refresh token by a new one of the same family, atomically: of concurrent rotations of
   * one token one wins. A token already replaced, presented again, revokes its whole family (`reused`).
   */
  rotateSession(secret: string, expiresAt: Date, now?: Date): Promise<SessionRotation>;
  /** Ends a session (and the rest of its family); false when there was none. */
  revokeSession(secret: string, now?: Date): Promise<boolean>;
  /**
   * The account `userId` of the login `family` while that login lasts, for its access tokens: one
   * query, on every request. Undefined once any session of the family was revoked (a replayed
   * refresh token, a logout), when the family is unknown or another account's, or the account is gone.
   */
  loginUser(family: string, userId: string): Promise<UserRecord | undefined>;
  /** The key access tokens are signed with: made once, shared by every process on this storage. */
  signingKey(): Promise<Uint8Array>;
  /**
   * Counts a login before its password is checked, or refuses it (`loginRefusal`): the counts and
   * the new attempt in one transaction, so that of concurrent logins (from any instance) at most
   * each limit's `max` are admitted. An admitted attempt counts as failed until it is settled.
   */
  admitLogin(attempt: LoginAttempt): Promise<LoginAdmission>;
  /** Settles an admitted attempt (`LoginOutcome`). */
  settleLogin(id: string, outcome: LoginOutcome): Promise<void>;
}

export interface StoredVersion {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  integrity: string;
  sha256: string;
  size: number;
  owner: string;
  createdAt: string;
  /** Lifecycle (the bytes never change): the stability set after publication, overriding the manifest's; undefined: the manifest's. */
  stability?: VersionStability;
  /** Why the version is deprecated; only with `stability: 'deprecated'`. */
  deprecationMessage?: string;
  /** When the version was yanked (kept and downloadable by exact version, never selected as latest, never reusable); undefined: it was not. */
  yankedAt?: string;
  /** The CI run that published it through trusted publishing (its token's `publisher`); undefined: published with another credential. */
  publisher?: PublisherRun;
  /**
   * The build provenance uploaded with it, as the server verified it (the Sigstore bundle itself is
   * kept immutably beside the archive: `VersionStore.readAttestation`); undefined: uploaded without one.
   */
  attestation?: StoredAttestation;
}

/** What a version's verified build provenance says (see `archive/provenance.ts`). */
export interface StoredAttestation {
  /** The in-toto statement's predicate type (`https://slsa.dev/provenance/v1`). */
  predicateType: string;
  /** Who signed it, from its certificate. */
  signer: { repository: string; workflow: string; issuer: string };
  /** The CI run that built it, when the certificate names it. */
  runUrl?: string;
}

export type VersionStability = Stability;

/** The lifecycle state of a version, as a registry build reflects it. */
export type VersionLifecycle = Pick<StoredVersion, 'stability' | 'deprecationMessage' | 'yankedAt'>;

/**
 * A change of a version's lifecycle. `stability` replaces the stored one; `deprecationMessage`
 * (null: removed) is kept only while the stability is `deprecated` (another stability removes it);
 * `yanked: true` yanks the version (a yank is never undone).
 */
export interface LifecycleChange {
  stability?: VersionStability;
  deprecationMessage?: string | null;
  yanked?: true;
  now?: Date;
}

/**
 * A complete version with its manifest; or, for a version the caller said it knows, its name and
 * version only (a complete version never changes, so the caller has the rest).
 */
export type PublishedVersion = (StoredVersion & { manifest: TemplateManifest }) | { name: string; version: string; known: true };

export type NewVersion = Omit<StoredVersion, 'state' | 'createdAt' | 'publisher'> & { createdAt?: string };

/**
 * The outcome of reserving a version: exactly one of concurrent reservations of one version gets
 * `reserved`; the others see the version that is there (pending or complete) or why the token may not.
 */
export type Reservation =
  | { reserved: true }
  | { reserved: false; existing: StoredVersion }
  | { reserved: false; forbidden: string }
  /** The version was purged (when: ISO 8601): its name and version are never used again. */
  | { reserved: false; purged: string };

/** What `VersionStore.purgeVersion` removed: the version (undefined when it was purged before) and when it was purged. */
export interface PurgedVersion {
  version?: StoredVersion;
  purgedAt: string;
}

/** An archive to send: its bytes as a stream and their count. */
export interface ArchiveReader {
  stream: Readable;
  size: number;
  /** The local file holding the bytes, when they are one (a folder blob store): a registry build on the same file system links it instead of copying. */
  file?: string;
  /** Where the bytes are in a store that can copy them within itself (`BlobStore.copy`): their key, and the version (ETag) read. */
  copyable?: BlobCopySource;
}

/** Bytes a blob store holds, as they were read: their key and ETag (a copy refuses them once they changed). */
export interface BlobCopySource {
  key: string;
  etag: string;
  size: number;
}

/**
 * An archive for `commitVersion`: a local file, or bytes the blob store holds (a staged file,
 * checked as read), copied within the store, with the local file of the same bytes stored when
 * the store cannot copy them (or they changed since).
 */
export type ArchiveToStore = string | { file: string; copyOf: BlobCopySource };

export interface VersionStore {
  getVersion(name: string, version: string): Promise<StoredVersion | undefined>;
  /** Complete versions, by name then publication. */
  listVersions(): Promise<StoredVersion[]>;
  /**
   * Complete versions with their manifests, in one pass and in no particular order (what a registry
   * build reads); the versions whose `name@version` is in `known` (a caller that kept them: they never
   * change) come as their key only.
   */
  listPublished(known?: ReadonlySet<string>): Promise<PublishedVersion[]>;
  /**
   * The versions of each template that has a complete version (no order), without their rows: with
   * `listPublishedOf`, what a registry build reads a few templates at a time instead of every
   * manifest at once, and what a build with a state compares with the versions it recorded.
   * Optional: a store without it is read whole (`listPublished`).
   */
  publishedVersions?(): Promise<Map<string, string[]>>;
  /** The names of the templates with a complete version, in no particular order (what a full build reads in batches); optional. */
  publishedNames?(): Promise<string[]>;
  /** The complete versions of the templates `names`, with their manifests, in no particular order. */
  listPublishedOf?(names: readonly string[]): Promise<(StoredVersion & { manifest: TemplateManifest })[]>;
  /** Reserves name@version (pending) and claims an unowned name for the token's owner, atomically. */
  reserveVersion(version: NewVersion, token: TokenRecord): Promise<Reservation>;
  /**
   * Stores the archive (a local file, moved or copied) and the manifest durably (and, first, the
   * version's provenance bundle `attestation`, when it was reserved with one), then marks the
   * version complete; `webhookEvents` are written to the webhook outbox in that same transaction.
   */
  commitVersion(name: string, version: string, archiveFile: ArchiveToStore, manifest: TemplateManifest, webhookEvents?: readonly WebhookEventRecord[], attestation?: string): Promise<StoredVersion>;
  /** The Sigstore bundle (JSON) of a version reserved with an `attestation`, stored by `commitVersion` before its archive; undefined when it has none. */
  readAttestation(name: string, version: string): Promise<Buffer | undefined>;
  /** Gives up a reservation and whatever of it was stored. */
  abortVersion(name: string, version: string): Promise<void>;
  readManifest(name: string, version: string): Promise<TemplateManifest>;
  /** The archive of a stored version; undefined when there is none. */
  openArchive(name: string, version: string): Promise<ArchiveReader | undefined>;
  /** A local path for an incoming upload, on which `commitVersion` can be called. */
  uploadTempPath(suffix?: string): string;
  /**
   * Changes the lifecycle of a complete version (never its archive or manifest) and returns it with
   * `changed` (false when it already was so); undefined when there is no complete version. When it
   * changed, the webhook events `webhookEvents` makes of the version before and after are written
   * to the outbox in the same transaction (both or neither, as with `commitVersion`).
   */
  updateLifecycle(name: string, version: string, change: LifecycleChange, webhookEvents?: LifecycleEvents): Promise<{ version: StoredVersion; changed: boolean } | undefined>;
  /** The lifecycle of every complete version that has one (deprecated after publication, yanked), keyed by `name@version`. */
  listLifecycles(): Promise<Map<string, VersionLifecycle>>;
  /**
   * Removes a complete version for good (a legal demand, a leaked secret): its row goes and its name
   * and version are recorded as purged in one transaction (a reservation of them is refused from
   * then on: `{ purged }`), then its archive, manifest and provenance bundle are deleted. Purging a
   * purged version deletes those blobs again (what a failure half-way left) and answers the same.
   * Undefined when there is no complete version and none was purged.
   */
  purgeVersion(name: string, version: string, now?: Date): Promise<PurgedVersion | undefined>;
  /** When name@version was purged (ISO 8601); undefined when it was not. */
  purgedAt(name: string, version: string): Promise<string | undefined>;
}

/** An analytics event as stored: the spec's event, whatever its type. */
export interface StoredEvent {
  type: string;
  templateId: string;
  version: string;
  timestamp: string;
  [field: string]: unknown;
}

export interface VersionUsage {
  downloads: number;
  lastDownload?: string;
}

/** Where an event came from, as the server saw it. */
export interface EventOrigin {
  /** An opaque id of the client address (never the address itself). */
  client?: string;
  /** When the server received it; default now. */
  receivedAt?: Date;
}

/** An event with where it came from, as `listEvents` gives it back. */
export interface RecordedEvent {
  /** The storage's id of the event (unique within the storage). */
  id: string;
  event: StoredEvent;
  /** `EventOrigin.client`, when it was known. */
  client?: string;
  /** When the server received it (ISO 8601); undefined for events stored before it was kept. */
  receivedAt?: string;
}

/** Which events `listEvents` gives: every one, or those of a template and/or of a type. */
export interface EventFilter {
  templateId?: string;
  type?: string;
}

/** What `EventStore.analyticsAggregates` reads: the versions whose records are made, and the days of those records. */
export interface AnalyticsQuery {
  versions: readonly { templateId: string; version: string }[];
  fromDay: number;
  toDay: number;
}

export interface EventStore {
  /**
   * Stores an event (kept until the retention prunes it), and adds what it counts for to the
   * analytics aggregates (registry/analytics.ts) in the same transaction.
   */
  recordEvent(event: StoredEvent, origin?: EventOrigin): Promise<void>;
  /**
   * Downloads and last download, keyed by `name@version`, from the aggregates (not the events). A
   * client counts at most one download of a version per day (UTC, by when the server received it);
   * events of unknown clients count one each.
   */
  usage(): Promise<Map<string, VersionUsage>>;
  /** How many download events were ever recorded (pruned ones included): it moves whenever `usage` may have. */
  downloadsRecorded(): Promise<number>;
  /** The aggregates analytics records are made from: every version's downloads, and the days and ratings of `query.versions`. */
  analyticsAggregates(query: AnalyticsQuery): Promise<AnalyticsAggregates>;
  /**
   * Removes the raw events received before `before` (the retention), and the marks of which client
   * downloaded what on those days; the aggregates keep every count. Resolves with how many events went.
   */
  pruneEvents(before: Date): Promise<number>;
  countEvents(type?: string): Promise<number>;
  /** The stored events matching `filter`, in the order they were recorded, with their origin. */
  listEvents(filter?: EventFilter): Promise<RecordedEvent[]>;
}

/** A registered webhook, secret included: never send it to clients. */
export interface StoredWebhook {
  id: string;
  url: string;
  events: string[];
  secret: string;
  active: boolean;
  createdAt: string;
  /** The secret a rotation replaced: deliveries are signed with it too (X-Webhook-Signature-Previous) until `previousSecretExpiresAt`. */
  previousSecret?: string;
  /** When the previous secret stops signing (ISO 8601). */
  previousSecretExpiresAt?: string;
}

/**
 * A change of a registered webhook: `PUT /webhooks/{id}` gives all four fields, `PATCH` some of them.
 * Its id, creation time and delivery log stay.
 */
export interface WebhookUpdate {
  url?: string;
  events?: readonly string[];
  secret?: string;
  active?: boolean;
  /** A new `secret` (another than the current one) keeps the current one signing for this long, in ms; 0: not at all. */
  secretOverlapMs: number;
}

export interface NewWebhook {
  url: string;
  events: readonly string[];
  secret: string;
  active: boolean;
  now?: Date;
}

/** One delivery attempt of an event to a webhook. */
export interface DeliveryRecord {
  /** The attempt's external id (X-Webhook-Delivery): a UUID version 7, in the order attempts were made; never the log's row number. */
  id: string;
  webhookId: string;
  event: string;
  /** HTTP status of the answer; null when there was none (network error, time-out, not sent). */
  status: number | null;
  attemptedAt: string;
  error: string | null;
  /** The external id of the delivery (outbox row) this attempt belongs to (X-Webhook-Id); null for attempts logged before the outbox. */
  deliveryId: string | null;
}

/** An event to deliver: the outbox gets one delivery per active webhook subscribed to it. */
/** The webhook events of a lifecycle change, from the version before and after it (a pure function: it runs inside the store's transaction). */
export type LifecycleEvents = (before: StoredVersion, after: StoredVersion) => readonly WebhookEventRecord[];

export interface WebhookEventRecord {
  event: string;
  data: unknown;
  /** When it happened (ISO 8601); default now. */
  timestamp?: string;
}

/** pending: to be attempted at `nextAttemptAt`; the others are final. */
export type OutboxState = 'pending' | 'delivered' | 'failed' | 'cancelled';

/** One delivery of an event to one webhook, in the outbox: the body is fixed, attempts are retried until a final state. */
export interface OutboxDelivery {
  /** The external id (a UUID), sent as X-Webhook-Id on every attempt. */
  id: string;
  webhookId: string;
  event: string;
  /** The exact JSON body sent (and signed) on every attempt. */
  body: string;
  state: OutboxState;
  attempts: number;
  nextAttemptAt: string;
  createdAt: string;
  lastStatus: number | null;
  lastError: string | null;
}

/** The outcome of an attempt, written back to the outbox. */
export interface OutboxUpdate {
  state: OutboxState;
  attempts: number;
  /** When a pending delivery is due again. */
  nextAttemptAt?: Date;
  status: number | null;
  error: string | null;
}

/**
 * What one attempt came to: its row in the log (status, error) and its delivery's new state in the
 * outbox, written in one transaction (`recordAttemptOutcome`). Written apart, a process dying between
 * the two would leave an attempt logged as answered 2xx beside a delivery still pending, which the
 * next claim would send again.
 */
export interface AttemptOutcome extends OutboxUpdate {
  /** The attempt, as `startDelivery` named it. */
  attemptId: string;
  /** Its delivery (the outbox row). */
  deliveryId: string;
  /** Switch the delivery's webhook off as well (its receiver answered 410 Gone). */
  disableWebhook?: boolean;
}

export interface WebhookStore {
  createWebhook(options: NewWebhook): Promise<StoredWebhook>;
  getWebhook(id: string): Promise<StoredWebhook | undefined>;
  /** Every webhook, oldest first. */
  listWebhooks(): Promise<StoredWebhook[]>;
  /** Active webhooks subscribed to `event` (by name, `*`, or `<prefix>.*`). */
  webhooksFor(event: string): Promise<StoredWebhook[]>;
  /** Removes a webhook and its delivery log; false when there was none. */
  deleteWebhook(id: string): Promise<boolean>;
  /**
   * Changes a webhook in one transaction (`updatedWebhook` of records.ts: a new secret keeps the one it
   * replaces signing for the overlap); its id, creation time, outbox and delivery log stay. Undefined
   * when there is none.
   */
  updateWebhook(id: string, update: WebhookUpdate, now?: Date): Promise<StoredWebhook | undefined>;
  /** Switches a webhook on or off (off: a 410 answer); false when there is none. */
  setWebhookActive(id: string, active: boolean): Promise<boolean>;
  /** Writes one outbox delivery per active webhook subscribed to the event (due at once), in one transaction. */
  enqueueEvent(event: WebhookEventRecord, now?: Date): Promise<OutboxDelivery[]>;
  /**
   * Pending deliveries due at `now` (oldest first, at most `limit`), leased for `leaseMs` (their next
   * attempt moved past it). At most one per webhook: its oldest pending delivery (in the order they
   * were written), and only when that one is due; the later ones wait until it is delivered, failed
   * or cancelled, so that a webhook receives its events in the order they were written.
   */
  claimDueDeliveries(now: Date, limit: number, leaseMs: number): Promise<OutboxDelivery[]>;
  /** When the earliest delivery `claimDueDeliveries` could give is due; undefined when none is pending. */
  nextDueAt(): Promise<Date | undefined>;
  countPendingDeliveries(): Promise<number>;
  updateOutboxDelivery(id: string, update: OutboxUpdate, now?: Date): Promise<void>;
  getOutboxDelivery(id: string): Promise<OutboxDelivery | undefined>;
  /** A webhook's outbox deliveries, newest first. */
  listOutboxDeliveries(webhookId: string): Promise<OutboxDelivery[]>;
  /** Records the start of an attempt (status and error null) of outbox delivery `deliveryId`; returns the attempt's external id. */
  startDelivery(webhookId: string, event: string, attemptedAt?: Date, deliveryId?: string): Promise<string>;
  /**
   * Records an attempt's status and error and its delivery's new state together (one transaction:
   * both or neither). The delivery changes only while it is pending (a final state is never left,
   * whatever a late attempt of another process came to); true when it changed.
   */
  recordAttemptOutcome(outcome: AttemptOutcome, now?: Date): Promise<boolean>;
  /** A webhook's most recent attempts, newest first. */
  listDeliveries(webhookId: string, limit?: number): Promise<DeliveryRecord[]>;
  /** Keeps a webhook's `keep` most recent attempts (and `keep` most recent finished outbox deliveries). */
  pruneDeliveries(webhookId: string, keep: number): Promise<void>;
}

/** A purge job's state: `pending` until the CDN accepted it (`done`) or every attempt failed (`failed`). */
export type PurgeJobState = 'pending' | 'done' | 'failed';

/**
 * One purge of a CDN after a change, in the purge outbox: the URLs a build changed, for one target
 * (`cloudfront:E2QWRUHAPOMQZL`, `http://127.0.0.1:6081`), retried with backoff until the CDN accepts
 * it, also after a restart (server/purges.ts).
 */
export interface PurgeJob {
  id: string;
  /** The target as configured (`PurgeTarget.spec`). */
  target: string;
  /** Absolute URLs, sorted. */
  urls: string[];
  state: PurgeJobState;
  attempts: number;
  /** When a pending job is due (a claimed one: when its lease ends). */
  nextAttemptAt: string;
  createdAt: string;
  lastError: string | null;
}

/** A purge job's outcome, written back to the outbox. */
export interface PurgeJobUpdate {
  state: PurgeJobState;
  attempts: number;
  /** When a pending job is due again. */
  nextAttemptAt?: Date;
  error: string | null;
}

/** The purge outbox (a table in each backend; several instances share PostgreSQL's). */
export interface PurgeStore {
  /** Writes one pending job per target for `urls` (due at `now`), in one transaction. */
  enqueuePurges(targets: readonly string[], urls: readonly string[], now?: Date): Promise<PurgeJob[]>;
  /** Pending jobs of `targets` due at `now` (oldest first, at most `limit`), leased for `leaseMs`. Instances claiming at once take different jobs. */
  claimDuePurges(targets: readonly string[], now: Date, limit: number, leaseMs: number): Promise<PurgeJob[]>;
  /** Records an attempt's outcome; a job changes only while it is pending. */
  updatePurge(id: string, update: PurgeJobUpdate, now?: Date): Promise<void>;
  /** When the earliest pending job of `targets` is due; undefined when none is pending. */
  nextPurgeDueAt(targets: readonly string[]): Promise<Date | undefined>;
  countPendingPurges(): Promise<number>;
  /** The most recent jobs, newest first. */
  listPurges(limit?: number): Promise<PurgeJob[]>;
  /** Keeps the `keep` most recent finished jobs (pending ones are always kept). */
  prunePurges(keep: number): Promise<void>;
}

/**
 * A file staged through `/files` (a large upload): created, its bytes uploaded, confirmed, then used
 * once by a publish in place of the archive part. Unused files expire.
 */
export interface StagedFile {
  id: string;
  /** The token that created it: only that token may confirm or use it. */
  tokenId: string;
  filename: string;
  contentType: string;
  /** `pending`: no bytes yet; `uploaded`: bytes stored, not confirmed; `confirmed`: usable; `claimed`: a publish is using it. */
  state: 'pending' | 'uploaded' | 'confirmed' | 'claimed';
  /** Of the stored bytes, once uploaded. */
  size?: number;
  sha256?: string;
  integrity?: string;
  createdAt: string;
  expiresAt: string;
}

/** A staged file `storeContent` just gave bytes: with, in a store that copies within itself, where those bytes are (`BlobStore.putFile`'s answer). */
export interface StoredStagedFile extends StagedFile {
  copyable?: BlobCopySource;
}

export interface NewStagedFile {
  tokenId: string;
  filename: string;
  contentType: string;
  expiresAt: Date;
  now?: Date;
  /** The most files the token may have staged (this one included); past it `createFile` throws StagedQuotaError. */
  maxFiles?: number;
}

/** What a token has staged and not yet used: its files that have not expired, and their bytes. */
export interface StagedUsage {
  files: number;
  bytes: number;
  /** When the first of them expires (and frees its share); undefined when there are none. */
  nextExpiry?: string;
}

/** A token's staged files would pass its quota: `files` of them, or `bytes` in all (`used` before this one). */
export class StagedQuotaError extends Error {
  override readonly name = 'StagedQuotaError';

  constructor(
    readonly kind: 'files' | 'bytes',
    readonly limit: number,
    readonly used: StagedUsage,
  ) {
    super(kind === 'files' ? `the token has ${used.files} staged files; at most ${limit} are kept` : `the token's staged files hold ${used.bytes} bytes; at most ${limit} are kept`);
  }
}

export interface FileStore {
  /**
   * Stages a file with no bytes yet; `capability` (returned once, only its hash kept) lets its bytes be uploaded without a token.
   * With `maxFiles`, throws StagedQuotaError when the token has that many files staged (counted in one transaction with the insert).
   */
  createFile(options: NewStagedFile): Promise<{ file: StagedFile; capability: string }>;
  getFile(id: string): Promise<StagedFile | undefined>;
  /** The file when `capability` is its own (compared in constant time) and it has not expired at `now`. */
  checkCapability(id: string, capability: string, now?: Date): Promise<StagedFile | undefined>;
  /**
   * Moves a local file (e.g. from `VersionStore.uploadTempPath`) in as the bytes of a pending or uploaded file; undefined when the file is gone or past that.
   * With `maxBytes`, throws StagedQuotaError (the file left pending, without bytes) when the token's staged bytes, these included, would pass it;
   * checked in one transaction with the change, so concurrent uploads of one token cannot pass it together.
   */
  storeContent(id: string, localFile: string, digests: { size: number; sha256: string; integrity: string }, maxBytes?: number): Promise<StoredStagedFile | undefined>;
  /** What `tokenId` has staged at `now` (`StagedUsage`): every file not expired, in any state. */
  usage(tokenId: string, now?: Date): Promise<StagedUsage>;
  /** Marks an uploaded file confirmed, usable until `expiresAt`; undefined when it is not uploaded (or confirmed already). */
  confirmFile(id: string, expiresAt: Date): Promise<StagedFile | undefined>;
  /** Claims a confirmed file for one publish (atomically: of concurrent claims one wins); undefined when it is not confirmed. */
  claimFile(id: string): Promise<StagedFile | undefined>;
  /** Gives a claimed file back (the publish failed): confirmed again. */
  releaseFile(id: string): Promise<void>;
  /** The bytes of an uploaded file. */
  openFile(id: string): Promise<ArchiveReader | undefined>;
  /** Removes a file and its bytes (a used file is consumed); false when there was none. */
  deleteFile(id: string): Promise<boolean>;
  /** Removes the files expired at `now` (claimed ones excepted); returns how many. */
  sweepFiles(now?: Date): Promise<number>;
}

/** Everything the registry server stores. */
export interface RegistryStorage {
  tokens: TokenStore;
  versions: VersionStore;
  events: EventStore;
  webhooks: WebhookStore;
  /** Files staged by large uploads (`/files`). */
  files: FileStore;
  /** Accounts (e-mail and password logins), their sessions and the access-token signing key. */
  accounts: AccountStore;
  /** Trusted publishers of template names (OIDC trusted publishing) and the ID tokens already exchanged. */
  trustedPublishers: TrustedPublisherStore;
  /** The purge outbox: CDN purges after a change, retried until the CDN accepts them. */
  purges: PurgeStore;
  /** The local folder the static registry (registry.json, catalog, per-template files) is built into. */
  publicDir: string;
  /**
   * Where the static registry is also published, self-contained (archives beside it, URLs relative to
   * registry.json), for a CDN to serve: the `public/` folder of the bucket of `--storage s3://…`. A
   * server mirrors its builds there (under `withBuildLock`). Absent: only `publicDir`.
   */
  staticOutput?: RegistryOutput;
  /**
   * Finishes or undoes what a crashed server left (pending versions, temp files). Called once by a
   * starting server; never by tools that open the storage beside a running server. A storage several
   * instances share (PostgreSQL) only takes over what is older than its grace period, so a starting
   * instance never undoes the uploads another one is serving.
   */
  recover(): Promise<void>;
  /**
   * Tells `listener` whenever another process changed what the registry shows (a version committed,
   * deprecated or yanked through another instance on the same storage), so that every instance
   * rebuilds; resolves to a function that stops listening. Absent: the storage has one process.
   */
  watchChanges?(listener: () => void): Promise<() => Promise<void>>;
  /**
   * Runs `work` while no other process on this storage runs its own `work` through this method: what
   * serializes registry builds into output several instances share (a bucket). Absent: one process.
   */
  withBuildLock?<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Every row as a backend-neutral dump, and the load of one into an empty store (`store copy`,
   * `store/copy.ts`): what the interfaces above never give out (token and session hashes, raw rows).
   * Set by each backend from its own database handle; absent: this storage cannot be copied.
   */
  dump?: StoreDumper;
  close(): Promise<void>;
}

/** Whether a subscription (`template.published`, `template.*` or `*`) covers an event. */
export function eventMatches(subscription: string, event: string): boolean {
  if (subscription === '*' || subscription === event) return true;
  return subscription.endsWith('.*') && event.startsWith(subscription.slice(0, -1));
}

/**
 * Where a backend keeps bytes (archives, manifests, staged files): a local folder or an S3-compatible
 * bucket. Keys are `/`-separated relative paths made by the store (never by a client); a put is
 * durable when it resolves; a reader never sees a half-written object.
 */
export interface BlobStore {
  /** Where the bytes live, for messages (`/srv/store`, `s3://bucket/prefix`). */
  readonly location: string;
  /**
   * Stores a local file's bytes at `key`, replacing any (the local file may be moved away). Answers,
   * in a store that can copy within itself (`copy`), where the bytes now are: their key and the ETag
   * the store answered the put with; undefined elsewhere.
   */
  putFile(key: string, localFile: string, options?: { contentType?: string }): Promise<BlobCopySource | undefined>;
  putBytes(key: string, bytes: Uint8Array | string, options?: { contentType?: string }): Promise<void>;
  /** The bytes at `key` as a stream; undefined when there are none. */
  open(key: string): Promise<ArchiveReader | undefined>;
  readBytes(key: string): Promise<Buffer | undefined>;
  /** The size of the bytes at `key`; undefined when there are none. */
  stat(key: string): Promise<{ size: number } | undefined>;
  /** Removes the bytes at `key` (nothing when there are none). */
  delete(key: string): Promise<void>;
  /**
   * Copies the bytes at `from.key` to `key` inside the store (no byte through this process), only
   * while they still are the version `from.etag` (checked before the copy, and made its condition,
   * for the stores that ignore the condition); false when they changed or are too large to copy
   * in one request (the caller stores its own copy then). Absent where the store has no such copy.
   */
  copy?(from: BlobCopySource, key: string, options?: { contentType?: string }): Promise<boolean>;
  /** Every key below `prefix` (a folder-like prefix ending in `/`, or '' for all), in no promised order. */
  list(prefix: string): AsyncIterable<{ key: string; size: number }>;
}
