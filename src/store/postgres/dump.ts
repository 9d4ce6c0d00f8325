/**
 * The PostgreSQL store's rows as a `StoreDump` and back (what `store copy` uses): every table read
 * in one REPEATABLE READ snapshot, written into an empty database in one transaction. Ids of events
 * and delivery attempts are kept (their identity sequences moved past them); co-owners and outbox
 * deliveries get their `seq` from the order of the dump.
 */
import type pg from 'pg';

import type {
  DumpCoOwner,
  DumpDeliveryAttempt,
  DumpEvent,
  DumpOutboxDelivery,
  DumpOwner,
  DumpSession,
  DumpSetting,
  DumpToken,
  DumpTrustedPublisher,
  DumpPurgedVersion,
  DumpUsedIdToken,
  DumpUser,
  DumpVersion,
  DumpWebhook,
  StoreCounts,
  StoreDump,
  StoreDumper,
} from '../dump-types.js';
import { releasedOnce, type Claimable, type ClaimResult } from '../blob/claim.js';
import { repositoryKey } from '../records.js';
import type { BlobStore } from '../types.js';
import { readAggregateRows, writeAggregateRows } from './analytics.js';
import { insertRows, int, transaction } from './database.js';

type Row = Record<string, unknown>;

/** A column's value as text (SQLite and pg give text columns as strings; numbers only where a schema changed). */
const str = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? value.toString() : JSON.stringify(value));

const isoOf = (value: unknown): string => (value instanceof Date ? value.toISOString() : str(value));
const maybeIso = (value: unknown): string | null => (value === null || value === undefined ? null : isoOf(value));
const maybeText = (value: unknown): string | null => (value === null || value === undefined ? null : str(value));
const num = (value: unknown): number => int(value as string | number);
const maybeNum = (value: unknown): number | null => (value === null || value === undefined ? null : num(value));
/** A `json` column comes parsed; a JSON value is sent as its text (pg would send an array as a PostgreSQL array). */
const jsonText = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/** Reads every row in one read-only REPEATABLE READ transaction: one consistent snapshot. */
export async function readPostgresDump(pool: pg.Pool): Promise<StoreDump> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const all = async (sql: string): Promise<Row[]> => (await client.query<Row>(sql)).rows;
    const dump: StoreDump = {
      tokens: (await all('SELECT * FROM tokens ORDER BY created_at, id')).map(
        (row): DumpToken => ({
          id: String(row.id),
          hash: row.hash as Buffer,
          role: row.role as DumpToken['role'],
          templates: (row.templates ?? null) as string[] | null,
          owner: String(row.owner),
          createdAt: isoOf(row.created_at),
          expiresAt: maybeIso(row.expires_at),
          revokedAt: maybeIso(row.revoked_at),
          lastUsedAt: maybeIso(row.last_used_at),
          publisher: row.publisher ?? null,
        }),
      ),
      owners: (await all('SELECT * FROM owners ORDER BY name')).map((row): DumpOwner => ({ name: String(row.name), owner: String(row.owner), claimedAt: isoOf(row.claimed_at) })),
      coOwners: (await all('SELECT * FROM co_owners ORDER BY seq')).map((row): DumpCoOwner => ({ name: String(row.name), owner: String(row.owner), addedAt: isoOf(row.added_at) })),
      versions: (await all('SELECT * FROM versions ORDER BY name, created_at, version')).map(
        (row): DumpVersion => ({
          name: String(row.name),
          version: String(row.version),
          state: row.state as DumpVersion['state'],
          integrity: String(row.integrity),
          sha256: String(row.sha256),
          size: num(row.size),
          owner: String(row.owner),
          createdAt: isoOf(row.created_at),
          manifest: row.manifest ?? null,
          stability: maybeText(row.stability) as DumpVersion['stability'],
          deprecationMessage: maybeText(row.deprecation_message),
          yankedAt: maybeIso(row.yanked_at),
          publisher: row.publisher ?? null,
          attestation: row.attestation ?? null,
        }),
      ),
      events: (await all('SELECT * FROM events ORDER BY id')).map(
        (row): DumpEvent => ({
          id: num(row.id),
          type: String(row.type),
          templateId: String(row.template_id),
          version: String(row.version),
          timestamp: String(row.timestamp),
          data: (row.data ?? {}) as Record<string, unknown>,
          client: maybeText(row.client),
          receivedAt: maybeIso(row.received_at),
        }),
      ),
      webhooks: (await all('SELECT * FROM webhooks ORDER BY created_at, id')).map(
        (row): DumpWebhook => ({
          id: String(row.id),
          url: String(row.url),
          events: row.events as string[],
          secret: String(row.secret),
          active: row.active === true,
          createdAt: isoOf(row.created_at),
          previousSecret: maybeText(row.previous_secret),
          previousSecretExpiresAt: maybeIso(row.previous_secret_expires_at),
        }),
      ),
      outbox: (await all('SELECT * FROM webhook_outbox ORDER BY seq')).map(
        (row): DumpOutboxDelivery => ({
          id: String(row.id),
          webhookId: String(row.webhook_id),
          event: String(row.event),
          body: String(row.body),
          state: row.state as DumpOutboxDelivery['state'],
          attempts: num(row.attempts),
          nextAttemptAt: isoOf(row.next_attempt_at),
          createdAt: isoOf(row.created_at),
          updatedAt: isoOf(row.updated_at),
          lastStatus: maybeNum(row.last_status),
          lastError: maybeText(row.last_error),
        }),
      ),
      deliveryAttempts: (await all('SELECT * FROM deliveries ORDER BY id')).map(
        (row): DumpDeliveryAttempt => ({
          id: num(row.id),
          attemptId: String(row.attempt_id),
          webhookId: String(row.webhook_id),
          event: String(row.event),
          status: maybeNum(row.status),
          attemptedAt: isoOf(row.attempted_at),
          error: maybeText(row.error),
          deliveryId: maybeText(row.delivery_id),
        }),
      ),
      users: (await all('SELECT * FROM users ORDER BY created_at, id')).map(
        (row): DumpUser => ({
          id: String(row.id),
          email: String(row.email),
          passwordHash: String(row.password_hash),
          role: row.role as DumpUser['role'],
          owner: String(row.owner),
          name: maybeText(row.name),
          createdAt: isoOf(row.created_at),
        }),
      ),
      sessions: (await all('SELECT * FROM sessions ORDER BY created_at, hash')).map(
        (row): DumpSession => ({
          hash: row.hash as Buffer,
          family: String(row.family),
          userId: String(row.user_id),
          kind: row.kind as DumpSession['kind'],
          createdAt: isoOf(row.created_at),
          expiresAt: isoOf(row.expires_at),
          replacedAt: maybeIso(row.replaced_at),
          revokedAt: maybeIso(row.revoked_at),
        }),
      ),
      settings: (await all('SELECT * FROM settings ORDER BY key')).map((row): DumpSetting => ({ key: String(row.key), value: row.value as Buffer })),
      trustedPublishers: (await all('SELECT * FROM trusted_publishers ORDER BY seq')).map(
        (row): DumpTrustedPublisher => ({
          id: String(row.id),
          template: String(row.template),
          issuer: String(row.issuer),
          repository: String(row.repository),
          repositoryOwnerId: String(row.repository_owner_id),
          workflow: String(row.workflow),
          environment: maybeText(row.environment),
          ref: maybeText(row.ref),
          pendingOwner: maybeText(row.pending_owner),
          createdBy: String(row.created_by),
          createdAt: isoOf(row.created_at),
        }),
      ),
      usedIdTokens: (await all('SELECT * FROM oidc_id_tokens ORDER BY expires_at, issuer, jti')).map(
        (row): DumpUsedIdToken => ({ issuer: String(row.issuer), jti: String(row.jti), expiresAt: isoOf(row.expires_at) }),
      ),
      purgedVersions: (await all('SELECT * FROM purged_versions ORDER BY name, version')).map(
        (row): DumpPurgedVersion => ({ name: String(row.name), version: String(row.version), purgedAt: isoOf(row.purged_at) }),
      ),
      analytics: await readAggregateRows(client),
      stagedFilesSkipped: num((await all('SELECT count(*) AS n FROM staged_files'))[0]?.n ?? 0),
    };
    await client.query('COMMIT');
    return dump;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const TABLES: Record<keyof StoreCounts, string> = {
  tokens: 'tokens',
  owners: 'owners',
  coOwners: 'co_owners',
  versions: 'versions',
  events: 'events',
  analytics: 'analytics_totals',
  webhooks: 'webhooks',
  outbox: 'webhook_outbox',
  deliveryAttempts: 'deliveries',
  users: 'users',
  sessions: 'sessions',
  settings: 'settings',
  trustedPublishers: 'trusted_publishers',
  usedIdTokens: 'oidc_id_tokens',
  purgedVersions: 'purged_versions',
  stagedFiles: 'staged_files',
};

/** How many rows each table holds (one statement). */
export async function countPostgres(pool: pg.Pool): Promise<StoreCounts> {
  const kinds = Object.keys(TABLES) as (keyof StoreCounts)[];
  const { rows } = await pool.query<Row>(`SELECT ${kinds.map((kind) => `(SELECT count(*) FROM ${TABLES[kind]}) AS "${kind}"`).join(', ')}`);
  const row = rows[0] ?? {};
  return Object.fromEntries(kinds.map((kind) => [kind, num(row[kind] ?? 0)])) as StoreCounts;
}

/** Writes a dump into the database in one transaction: every row or none. */
export async function loadPostgresDump(pool: pg.Pool, dump: StoreDump): Promise<void> {
  await transaction(pool, async (client) => {
    await insertRows(
      client,
      'tokens',
      ['id', 'hash', 'role', 'templates', 'owner', 'created_at', 'expires_at', 'revoked_at', 'last_used_at', 'publisher'],
      dump.tokens.map((t) => [t.id, t.hash, t.role, jsonText(t.templates), t.owner, t.createdAt, t.expiresAt, t.revokedAt, t.lastUsedAt, jsonText(t.publisher)]),
    );
    await insertRows(client, 'owners', ['name', 'owner', 'claimed_at'], dump.owners.map((o) => [o.name, o.owner, o.claimedAt]));
    // Rows are inserted in the dump's order: `seq` (the co-owners' order) follows it.
    await insertRows(client, 'co_owners', ['name', 'owner', 'added_at'], dump.coOwners.map((c) => [c.name, c.owner, c.addedAt]));
    await insertRows(
      client,
      'versions',
      ['name', 'version', 'state', 'integrity', 'sha256', 'size', 'owner', 'created_at', 'manifest', 'stability', 'deprecation_message', 'yanked_at', 'publisher', 'attestation'],
      dump.versions.map((v) => [
        v.name,
        v.version,
        v.state,
        v.integrity,
        v.sha256,
        v.size,
        v.owner,
        v.createdAt,
        jsonText(v.manifest),
        v.stability,
        v.deprecationMessage,
        v.yankedAt,
        jsonText(v.publisher),
        jsonText(v.attestation),
      ]),
    );
    await insertRows(
      client,
      'events',
      ['id', 'type', 'template_id', 'version', 'timestamp', 'data', 'client', 'received_at'],
      dump.events.map((e) => [e.id, e.type, e.templateId, e.version, e.timestamp, JSON.stringify(e.data), e.client, e.receivedAt]),
      { overriding: true },
    );
    await writeAggregateRows(client, dump.analytics);
    await insertRows(
      client,
      'webhooks',
      ['id', 'url', 'events', 'secret', 'active', 'created_at', 'previous_secret', 'previous_secret_expires_at'],
      dump.webhooks.map((w) => [w.id, w.url, JSON.stringify(w.events), w.secret, w.active, w.createdAt, w.previousSecret ?? null, w.previousSecretExpiresAt ?? null]),
    );
    await insertRows(
      client,
      'webhook_outbox',
      ['id', 'webhook_id', 'event', 'body', 'state', 'attempts', 'next_attempt_at', 'created_at', 'updated_at', 'last_status', 'last_error'],
      dump.outbox.map((d) => [d.id, d.webhookId, d.event, d.body, d.state, d.attempts, d.nextAttemptAt, d.createdAt, d.updatedAt, d.lastStatus, d.lastError]),
    );
    await insertRows(
      client,
      'deliveries',
      ['id', 'attempt_id', 'webhook_id', 'event', 'status', 'attempted_at', 'error', 'delivery_id'],
      dump.deliveryAttempts.map((a) => [a.id, a.attemptId, a.webhookId, a.event, a.status, a.attemptedAt, a.error, a.deliveryId]),
      { overriding: true },
    );
    await insertRows(
      client,
      'users',
      ['id', 'email', 'password_hash', 'role', 'owner', 'name', 'created_at'],
      dump.users.map((u) => [u.id, u.email, u.passwordHash, u.role, u.owner, u.name, u.createdAt]),
    );
    await insertRows(
      client,
      'sessions',
      ['hash', 'family', 'user_id', 'kind', 'created_at', 'expires_at', 'replaced_at', 'revoked_at'],
      dump.sessions.map((s) => [s.hash, s.family, s.userId, s.kind, s.createdAt, s.expiresAt, s.replacedAt, s.revokedAt]),
    );
    await insertRows(client, 'settings', ['key', 'value'], dump.settings.map((s) => [s.key, s.value]), { suffix: 'ON CONFLICT (key) DO UPDATE SET value = excluded.value' });
    // In the dump's order: `seq` (each template's order of trusted publishers) follows it.
    await insertRows(
      client,
      'trusted_publishers',
      ['id', 'template', 'issuer', 'repository', 'repository_key', 'repository_owner_id', 'workflow', 'environment', 'ref', 'pending_owner', 'created_by', 'created_at'],
      dump.trustedPublishers.map((t) => [t.id, t.template, t.issuer, t.repository, repositoryKey(t.repository), t.repositoryOwnerId, t.workflow, t.environment, t.ref, t.pendingOwner, t.createdBy, t.createdAt]),
    );
    await insertRows(client, 'oidc_id_tokens', ['issuer', 'jti', 'expires_at'], dump.usedIdTokens.map((u) => [u.issuer, u.jti, u.expiresAt]));
    await insertRows(client, 'purged_versions', ['name', 'version', 'purged_at'], (dump.purgedVersions ?? []).map((p) => [p.name, p.version, p.purgedAt]));
    // Ids given explicitly leave the identity sequences behind: the next ones follow the largest.
    for (const table of ['events', 'deliveries']) {
      await client.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), max(id)) FROM ${table} HAVING max(id) IS NOT NULL`);
    }
  });
}

/** Fixed key of the advisory lock a `store copy` holds on its target ("tr-copy!" as a big-endian integer, like the build lock's). */
const COPY_LOCK_KEY = '8390818960839309601';

/**
 * Claims the database for one copy: a session advisory lock, tried (never waited for), on a
 * connection held until the claim is released. A copy that dies releases it with its connection.
 */
export async function claimPostgres(pool: pg.Pool): Promise<ClaimResult> {
  const client = await pool.connect();
  let claimed: boolean;
  try {
    const { rows } = await client.query<{ claimed: boolean }>(`SELECT pg_try_advisory_lock(${COPY_LOCK_KEY}) AS claimed`);
    claimed = rows[0]?.claimed === true;
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  if (!claimed) {
    client.release();
    return { busy: 'another store copy is running into it (it holds the copy lock of this database)' };
  }
  return {
    claimed: releasedOnce(async () => {
      try {
        await client.query(`SELECT pg_advisory_unlock(${COPY_LOCK_KEY})`);
        client.release();
      } catch (error) {
        // A connection whose unlock failed is closed, not pooled: closing it frees the lock.
        client.release(error as Error);
      }
    }),
  };
}

/** The dumper of a PostgreSQL store: its pool and its blob store; it claims the database for a copy (`claimPostgres`). */
export function postgresDumper(pool: pg.Pool, blobs: BlobStore, location = 'the PostgreSQL database'): StoreDumper & Claimable {
  return {
    backend: 'postgres',
    location,
    blobs,
    read: () => readPostgresDump(pool),
    counts: () => countPostgres(pool),
    load: (dump) => loadPostgresDump(pool, dump),
    claim: () => claimPostgres(pool),
  };
}
