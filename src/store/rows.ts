/**
 * What a record becomes as a row, and a row as a record, one place for both schemas (the SQLite and
 * the PostgreSQL stores have the same tables and columns; only their drivers read a column
 * differently: a time as ISO 8601 text or a Date, JSON as text or parsed). A backend runs the SQL.
 */
import { repositoryKey, type SessionState } from './records.js';
import type { DeliveryRecord, NewSession, OutboxDelivery, PublisherRun, PurgeJob, SessionKind, StagedFile, StagedUsage, StoredWebhook, TokenRecord, TrustedPublisher, UserRecord } from './types.js';

/** A time column as a driver reads it: ISO 8601 text or milliseconds since the epoch (SQLite), a Date (pg). */
export type TimeColumn = string | number | Date;
/** A JSON column as a driver reads it: its text (SQLite) or the value (pg, `jsonb`). */
export type JsonColumn<T extends object> = string | T;

/** An instant as the records give it (ISO 8601 in UTC, milliseconds included). */
export const timeOf = (value: TimeColumn): string => (typeof value === 'string' ? value : new Date(value).toISOString());
export const jsonOf = <T extends object>(value: JsonColumn<T>): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value);

/**
 * `INSERT INTO table (columns) VALUES (placeholders)`, a placeholder each column as the dialect
 * writes the one at `index` (from 0): `?` for SQLite, `$1`… for PostgreSQL.
 */
export function insertStatement(table: string, columns: readonly string[], placeholder: (index: number) => string): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, index) => placeholder(index)).join(', ')})`;
}

export interface TokenRow {
  id: string;
  hash: Buffer;
  role: TokenRecord['role'];
  templates: JsonColumn<string[]> | null;
  owner: string;
  created_at: TimeColumn;
  expires_at: TimeColumn | null;
  revoked_at: TimeColumn | null;
  last_used_at: TimeColumn | null;
  publisher: JsonColumn<PublisherRun> | null;
}

export function tokenOf(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    role: row.role,
    ...(row.templates ? { templates: jsonOf(row.templates) } : {}),
    owner: row.owner,
    createdAt: timeOf(row.created_at),
    ...(row.expires_at ? { expiresAt: timeOf(row.expires_at) } : {}),
    ...(row.revoked_at ? { revokedAt: timeOf(row.revoked_at) } : {}),
    ...(row.last_used_at ? { lastUsedAt: timeOf(row.last_used_at) } : {}),
    ...(row.publisher ? { publisher: jsonOf(row.publisher) } : {}),
  };
}

/** The columns a new token's row is written with, in the order of `tokenValues`. */
export const TOKEN_COLUMNS = ['id', 'hash', 'role', 'templates', 'owner', 'created_at', 'expires_at', 'publisher'] as const;

/** A new token's row (`hash`: the digest of the secret, never the secret), in the order of `TOKEN_COLUMNS`. */
export function tokenValues(record: TokenRecord, hash: Buffer): unknown[] {
  return [
    record.id,
    hash,
    record.role,
    record.templates ? JSON.stringify(record.templates) : null,
    record.owner,
    record.createdAt,
    record.expiresAt ?? null,
    record.publisher ? JSON.stringify(record.publisher) : null,
  ];
}

export interface TrustedPublisherRow {
  id: string;
  template: string;
  issuer: string;
  repository: string;
  repository_owner_id: string;
  workflow: string;
  environment: string | null;
  ref: string | null;
  pending_owner: string | null;
  created_by: string;
  created_at: TimeColumn;
}

export function trustedPublisherOf(row: TrustedPublisherRow): TrustedPublisher {
  return {
    id: row.id,
    template: row.template,
    issuer: row.issuer,
    repository: row.repository,
    repositoryOwnerId: row.repository_owner_id,
    workflow: row.workflow,
    ...(row.environment !== null ? { environment: row.environment } : {}),
    ...(row.ref !== null ? { ref: row.ref } : {}),
    ...(row.pending_owner !== null ? { pendingOwner: row.pending_owner } : {}),
    createdBy: row.created_by,
    createdAt: timeOf(row.created_at),
  };
}

/** The columns a new trusted publisher's row is written with, in the order of `trustedPublisherValues`. */
export const TRUSTED_PUBLISHER_COLUMNS = [
  'id',
  'template',
  'issuer',
  'repository',
  'repository_key',
  'repository_owner_id',
  'workflow',
  'environment',
  'ref',
  'pending_owner',
  'created_by',
  'created_at',
] as const;

/** A new trusted publisher's row (with the key lookups by repository match), in the order of `TRUSTED_PUBLISHER_COLUMNS`. */
export function trustedPublisherValues(record: TrustedPublisher): unknown[] {
  return [
    record.id,
    record.template,
    record.issuer,
    record.repository,
    repositoryKey(record.repository),
    record.repositoryOwnerId,
    record.workflow,
    record.environment ?? null,
    record.ref ?? null,
    record.pendingOwner ?? null,
    record.createdBy,
    record.createdAt,
  ];
}

export interface WebhookRow {
  id: string;
  url: string;
  events: JsonColumn<string[]>;
  secret: string;
  /** 0 or 1 (SQLite), a boolean (pg). */
  active: number | boolean;
  created_at: TimeColumn;
  previous_secret: string | null;
  previous_secret_expires_at: TimeColumn | null;
}

export function webhookOf(row: WebhookRow): StoredWebhook {
  return {
    id: row.id,
    url: row.url,
    events: jsonOf(row.events),
    secret: row.secret,
    active: row.active !== 0 && row.active !== false,
    createdAt: timeOf(row.created_at),
    ...(row.previous_secret !== null && row.previous_secret_expires_at !== null ? { previousSecret: row.previous_secret, previousSecretExpiresAt: timeOf(row.previous_secret_expires_at) } : {}),
  };
}

export interface DeliveryRow {
  /** The row number: the log's order, never shown (`attempt_id` is the attempt's id); pg reads a bigint as text. */
  id: number | string;
  attempt_id: string;
  webhook_id: string;
  event: string;
  status: number | null;
  attempted_at: TimeColumn;
  error: string | null;
  delivery_id: string | null;
}

export function deliveryOf(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.attempt_id,
    webhookId: row.webhook_id,
    event: row.event,
    status: row.status,
    attemptedAt: timeOf(row.attempted_at),
    error: row.error,
    deliveryId: row.delivery_id,
  };
}

export interface OutboxRow {
  id: string;
  webhook_id: string;
  event: string;
  body: string;
  state: OutboxDelivery['state'];
  attempts: number;
  next_attempt_at: TimeColumn;
  created_at: TimeColumn;
  last_status: number | null;
  last_error: string | null;
}

export function outboxOf(row: OutboxRow): OutboxDelivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    event: row.event,
    body: row.body,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: timeOf(row.next_attempt_at),
    createdAt: timeOf(row.created_at),
    lastStatus: row.last_status,
    lastError: row.last_error,
  };
}

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  role: UserRecord['role'];
  owner: string;
  name: string | null;
  created_at: TimeColumn;
}

export function userOf(row: UserRow): UserRecord {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    owner: row.owner,
    ...(row.name !== null ? { name: row.name } : {}),
    createdAt: timeOf(row.created_at),
  };
}

/** The columns a new account's row is written with, in the order of `userValues`. */
export const USER_COLUMNS = ['id', 'email', 'password_hash', 'role', 'owner', 'name', 'created_at'] as const;

/** A new account's row (`passwordHash`: the scrypt hash, never the password), in the order of `USER_COLUMNS`. */
export function userValues(record: UserRecord, passwordHash: string): unknown[] {
  return [record.id, record.email, passwordHash, record.role, record.owner, record.name ?? null, record.createdAt];
}

export interface SessionRow {
  hash: Buffer;
  family: string;
  user_id: string;
  kind: SessionKind;
  created_at: TimeColumn;
  expires_at: TimeColumn;
  replaced_at: TimeColumn | null;
  revoked_at: TimeColumn | null;
}

/** A session row's state, for the rule of `sessionRefusal` (`familyRevoked`: whether a session of its family was revoked). */
export function sessionStateOf(row: SessionRow, familyRevoked: boolean): SessionState {
  return {
    expiresAt: new Date(timeOf(row.expires_at)),
    ...(row.replaced_at !== null ? { replacedAt: new Date(timeOf(row.replaced_at)) } : {}),
    ...(row.revoked_at !== null ? { revokedAt: new Date(timeOf(row.revoked_at)) } : {}),
    familyRevoked,
  };
}

/** The columns a new session's row is written with, in the order of `sessionValues`. */
export const SESSION_COLUMNS = ['hash', 'family', 'user_id', 'kind', 'created_at', 'expires_at'] as const;

/** A new session's row (`hash`: the digest of its secret, never the secret), in the order of `SESSION_COLUMNS`. */
export function sessionValues(session: NewSession, hash: Buffer, family: string): unknown[] {
  return [hash, family, session.userId, session.kind, (session.now ?? new Date()).toISOString(), session.expiresAt.toISOString()];
}

export interface StagedFileRow {
  id: string;
  token_id: string;
  filename: string;
  content_type: string;
  /** The SHA-256 of the capability (`secretDigest`), never the capability. */
  capability: Buffer;
  state: StagedFile['state'];
  /** pg reads a bigint as text. */
  size: number | string | null;
  sha256: string | null;
  integrity: string | null;
  created_at: TimeColumn;
  expires_at: TimeColumn;
}

export function stagedFileOf(row: StagedFileRow): StagedFile {
  return {
    id: row.id,
    tokenId: row.token_id,
    filename: row.filename,
    contentType: row.content_type,
    state: row.state,
    ...(row.size === null ? {} : { size: Number(row.size) }),
    ...(row.sha256 === null ? {} : { sha256: row.sha256 }),
    ...(row.integrity === null ? {} : { integrity: row.integrity }),
    createdAt: timeOf(row.created_at),
    expiresAt: timeOf(row.expires_at),
  };
}

/** A token's staged files as counted by `count(*)`, `sum(size)` and `min(expires_at)` (pg reads the first two as text). */
export interface StagedUsageRow {
  files: number | string;
  bytes: number | string;
  next: TimeColumn | null;
}

export function stagedUsageOf(row: StagedUsageRow | undefined): StagedUsage {
  if (!row) return { files: 0, bytes: 0 };
  return { files: Number(row.files), bytes: Number(row.bytes), ...(row.next === null ? {} : { nextExpiry: timeOf(row.next) }) };
}

export interface PurgeRow {
  id: string;
  target: string;
  urls: JsonColumn<string[]>;
  state: PurgeJob['state'];
  attempts: number;
  next_attempt_at: TimeColumn;
  created_at: TimeColumn;
  last_error: string | null;
}

export function purgeJobOf(row: PurgeRow): PurgeJob {
  return {
    id: row.id,
    target: row.target,
    urls: jsonOf(row.urls),
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: timeOf(row.next_attempt_at),
    createdAt: timeOf(row.created_at),
    lastError: row.last_error,
  };
}
