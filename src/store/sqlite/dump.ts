/**
 * The embedded store's rows as a `StoreDump` and back (what `store copy` uses): every table read in
 * one read transaction, written into an empty store in one IMMEDIATE transaction.
 */
import type Database from 'better-sqlite3';

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
import { claimLockFile, type Claimable } from '../blob/claim.js';
import { repositoryKey } from '../records.js';
import type { BlobStore } from '../types.js';
import { readAggregateRows, writeAggregateRows } from './analytics.js';

type Row = Record<string, unknown>;

/** A column's value as text (SQLite and pg give text columns as strings; numbers only where a schema changed). */
const str = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? value.toString() : JSON.stringify(value));

const text = (value: unknown): string => str(value);
const maybeText = (value: unknown): string | null => (value === null || value === undefined ? null : str(value));
const num = (value: unknown): number => Number(value);
const maybeNum = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const json = (value: unknown): unknown => (value === null || value === undefined ? null : (JSON.parse(str(value)) as unknown));
const buffer = (value: unknown): Buffer => (Buffer.isBuffer(value) ? value : Buffer.from(value as Uint8Array));

/** Reads every row of the database (one read transaction: a consistent snapshot under WAL). */
export function readSqliteDump(db: Database.Database): StoreDump {
  const all = (sql: string): Row[] => db.prepare(sql).all() as Row[];
  return db.transaction((): StoreDump => ({
    tokens: all('SELECT * FROM tokens ORDER BY created_at, id').map(
      (row): DumpToken => ({
        id: text(row.id),
        hash: buffer(row.hash),
        role: row.role as DumpToken['role'],
        templates: json(row.templates) as string[] | null,
        owner: text(row.owner),
        createdAt: text(row.created_at),
        expiresAt: maybeText(row.expires_at),
        revokedAt: maybeText(row.revoked_at),
        lastUsedAt: maybeText(row.last_used_at),
        publisher: json(row.publisher),
      }),
    ),
    owners: all('SELECT * FROM owners ORDER BY name').map((row): DumpOwner => ({ name: text(row.name), owner: text(row.owner), claimedAt: text(row.claimed_at) })),
    coOwners: all('SELECT * FROM co_owners ORDER BY added_at, rowid').map((row): DumpCoOwner => ({ name: text(row.name), owner: text(row.owner), addedAt: text(row.added_at) })),
    versions: all('SELECT * FROM versions ORDER BY name, created_at, version').map(
      (row): DumpVersion => ({
        name: text(row.name),
        version: text(row.version),
        state: row.state as DumpVersion['state'],
        integrity: text(row.integrity),
        sha256: text(row.sha256),
        size: num(row.size),
        owner: text(row.owner),
        createdAt: text(row.created_at),
        manifest: json(row.manifest),
        stability: maybeText(row.stability) as DumpVersion['stability'],
        deprecationMessage: maybeText(row.deprecation_message),
        yankedAt: maybeText(row.yanked_at),
        publisher: json(row.publisher),
        attestation: json(row.attestation),
      }),
    ),
    events: all('SELECT * FROM events ORDER BY id').map(
      (row): DumpEvent => ({
        id: num(row.id),
        type: text(row.type),
        templateId: text(row.template_id),
        version: text(row.version),
        timestamp: text(row.timestamp),
        data: (json(row.data) ?? {}) as Record<string, unknown>,
        client: maybeText(row.client),
        receivedAt: maybeText(row.received_at),
      }),
    ),
    webhooks: all('SELECT * FROM webhooks ORDER BY created_at, id').map(
      (row): DumpWebhook => ({
        id: text(row.id),
        url: text(row.url),
        events: json(row.events) as string[],
        secret: text(row.secret),
        active: num(row.active) !== 0,
        createdAt: text(row.created_at),
        previousSecret: maybeText(row.previous_secret),
        previousSecretExpiresAt: maybeText(row.previous_secret_expires_at),
      }),
    ),
    outbox: all('SELECT * FROM webhook_outbox ORDER BY rowid').map(
      (row): DumpOutboxDelivery => ({
        id: text(row.id),
        webhookId: text(row.webhook_id),
        event: text(row.event),
        body: text(row.body),
        state: row.state as DumpOutboxDelivery['state'],
        attempts: num(row.attempts),
        nextAttemptAt: new Date(num(row.next_attempt_at)).toISOString(),
        createdAt: text(row.created_at),
        updatedAt: text(row.updated_at),
        lastStatus: maybeNum(row.last_status),
        lastError: maybeText(row.last_error),
      }),
    ),
    deliveryAttempts: all('SELECT * FROM deliveries ORDER BY id').map(
      (row): DumpDeliveryAttempt => ({
        id: num(row.id),
        attemptId: text(row.attempt_id),
        webhookId: text(row.webhook_id),
        event: text(row.event),
        status: maybeNum(row.status),
        attemptedAt: text(row.attempted_at),
        error: maybeText(row.error),
        deliveryId: maybeText(row.delivery_id),
      }),
    ),
    users: all('SELECT * FROM users ORDER BY created_at, id').map(
      (row): DumpUser => ({
        id: text(row.id),
        email: text(row.email),
        passwordHash: text(row.password_hash),
        role: row.role as DumpUser['role'],
        owner: text(row.owner),
        name: maybeText(row.name),
        createdAt: text(row.created_at),
      }),
    ),
    sessions: all('SELECT * FROM sessions ORDER BY created_at, rowid').map(
      (row): DumpSession => ({
        hash: buffer(row.hash),
        family: text(row.family),
        userId: text(row.user_id),
        kind: row.kind as DumpSession['kind'],
        createdAt: text(row.created_at),
        expiresAt: text(row.expires_at),
        replacedAt: maybeText(row.replaced_at),
        revokedAt: maybeText(row.revoked_at),
      }),
    ),
    settings: all('SELECT * FROM settings ORDER BY key').map((row): DumpSetting => ({ key: text(row.key), value: buffer(row.value) })),
    trustedPublishers: all('SELECT * FROM trusted_publishers ORDER BY created_at, rowid').map(
      (row): DumpTrustedPublisher => ({
        id: text(row.id),
        template: text(row.template),
        issuer: text(row.issuer),
        repository: text(row.repository),
        repositoryOwnerId: text(row.repository_owner_id),
        workflow: text(row.workflow),
        environment: maybeText(row.environment),
        ref: maybeText(row.ref),
        pendingOwner: maybeText(row.pending_owner),
        createdBy: text(row.created_by),
        createdAt: text(row.created_at),
      }),
    ),
    usedIdTokens: all('SELECT * FROM oidc_id_tokens ORDER BY expires_at, issuer, jti').map(
      (row): DumpUsedIdToken => ({ issuer: text(row.issuer), jti: text(row.jti), expiresAt: text(row.expires_at) }),
    ),
    purgedVersions: all('SELECT * FROM purged_versions ORDER BY name, version').map(
      (row): DumpPurgedVersion => ({ name: text(row.name), version: text(row.version), purgedAt: text(row.purged_at) }),
    ),
    analytics: readAggregateRows(db),
    stagedFilesSkipped: num((db.prepare('SELECT COUNT(*) AS n FROM staged_files').get() as Row).n),
  }))();
}

/** How many rows each table holds. */
export function countSqlite(db: Database.Database): StoreCounts {
  const count = (table: string): number => num((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as Row).n);
  return {
    tokens: count('tokens'),
    owners: count('owners'),
    coOwners: count('co_owners'),
    versions: count('versions'),
    events: count('events'),
    analytics: count('analytics_totals'),
    webhooks: count('webhooks'),
    outbox: count('webhook_outbox'),
    deliveryAttempts: count('deliveries'),
    users: count('users'),
    sessions: count('sessions'),
    settings: count('settings'),
    trustedPublishers: count('trusted_publishers'),
    usedIdTokens: count('oidc_id_tokens'),
    purgedVersions: count('purged_versions'),
    stagedFiles: count('staged_files'),
  };
}

/** Writes a dump into the database in one transaction: every row or none. */
export function loadSqliteDump(db: Database.Database, dump: StoreDump): void {
  db.transaction(() => {
    const token = db.prepare('INSERT INTO tokens (id, hash, role, templates, owner, created_at, expires_at, revoked_at, last_used_at, publisher) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (const t of dump.tokens) {
      token.run(t.id, t.hash, t.role, t.templates === null ? null : JSON.stringify(t.templates), t.owner, t.createdAt, t.expiresAt, t.revokedAt, t.lastUsedAt, t.publisher === null ? null : JSON.stringify(t.publisher));
    }
    const owner = db.prepare('INSERT INTO owners (name, owner, claimed_at) VALUES (?, ?, ?)');
    for (const o of dump.owners) owner.run(o.name, o.owner, o.claimedAt);
    const coOwner = db.prepare('INSERT INTO co_owners (name, owner, added_at) VALUES (?, ?, ?)');
    for (const c of dump.coOwners) coOwner.run(c.name, c.owner, c.addedAt);
    const version = db.prepare(
      'INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at, manifest, stability, deprecation_message, yanked_at, publisher, attestation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    for (const v of dump.versions) {
      const publisher = v.publisher === null ? null : JSON.stringify(v.publisher);
      version.run(v.name, v.version, v.state, v.integrity, v.sha256, v.size, v.owner, v.createdAt, v.manifest === null ? null : JSON.stringify(v.manifest), v.stability, v.deprecationMessage, v.yankedAt, publisher, v.attestation === null ? null : JSON.stringify(v.attestation));
    }
    const event = db.prepare('INSERT INTO events (id, type, template_id, version, timestamp, data, client, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const e of dump.events) event.run(e.id, e.type, e.templateId, e.version, e.timestamp, JSON.stringify(e.data), e.client, e.receivedAt);
    writeAggregateRows(db, dump.analytics);
    const webhook = db.prepare('INSERT INTO webhooks (id, url, events, secret, active, created_at, previous_secret, previous_secret_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const w of dump.webhooks) webhook.run(w.id, w.url, JSON.stringify(w.events), w.secret, w.active ? 1 : 0, w.createdAt, w.previousSecret ?? null, w.previousSecretExpiresAt ?? null);
    const outbox = db.prepare(
      'INSERT INTO webhook_outbox (id, webhook_id, event, body, state, attempts, next_attempt_at, created_at, updated_at, last_status, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    for (const d of dump.outbox) {
      outbox.run(d.id, d.webhookId, d.event, d.body, d.state, d.attempts, Date.parse(d.nextAttemptAt), d.createdAt, d.updatedAt, d.lastStatus, d.lastError);
    }
    const attempt = db.prepare('INSERT INTO deliveries (id, attempt_id, webhook_id, event, status, attempted_at, error, delivery_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const a of dump.deliveryAttempts) attempt.run(a.id, a.attemptId, a.webhookId, a.event, a.status, a.attemptedAt, a.error, a.deliveryId);
    const user = db.prepare('INSERT INTO users (id, email, password_hash, role, owner, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    for (const u of dump.users) user.run(u.id, u.email, u.passwordHash, u.role, u.owner, u.name, u.createdAt);
    const session = db.prepare('INSERT INTO sessions (hash, family, user_id, kind, created_at, expires_at, replaced_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const s of dump.sessions) session.run(s.hash, s.family, s.userId, s.kind, s.createdAt, s.expiresAt, s.replacedAt, s.revokedAt);
    const setting = db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    for (const s of dump.settings) setting.run(s.key, s.value);
    const trusted = db.prepare(
      `INSERT INTO trusted_publishers (id, template, issuer, repository, repository_key, repository_owner_id, workflow, environment, ref, pending_owner, created_by, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const t of dump.trustedPublishers) {
      trusted.run(t.id, t.template, t.issuer, t.repository, repositoryKey(t.repository), t.repositoryOwnerId, t.workflow, t.environment, t.ref, t.pendingOwner, t.createdBy, t.createdAt);
    }
    const used = db.prepare('INSERT INTO oidc_id_tokens (issuer, jti, expires_at) VALUES (?, ?, ?)');
    for (const u of dump.usedIdTokens) used.run(u.issuer, u.jti, u.expiresAt);
    const purged = db.prepare('INSERT INTO purged_versions (name, version, purged_at) VALUES (?, ?, ?)');
    for (const p of dump.purgedVersions ?? []) purged.run(p.name, p.version, p.purgedAt);
  }).immediate();
}

/**
 * The dumper of an embedded store: its database handle (opened by `openSqliteStorage`, or by a
 * caller) and its folder as a BlobStore (archives and manifests lie at the blob keys' paths). It
 * claims the store for a copy with a lock file beside the database, `registry.sqlite.copy.lock`,
 * created exclusively: a transaction held for the whole copy would stall a server on the same file.
 */
export function sqliteDumper(db: Database.Database, blobs: BlobStore, location: string = blobs.location): StoreDumper & Claimable {
  return {
    backend: 'sqlite',
    location,
    blobs,
    read: () => Promise.resolve(readSqliteDump(db)),
    counts: () => Promise.resolve(countSqlite(db)),
    load: (dump) => Promise.resolve(loadSqliteDump(db, dump)),
    // An in-memory database is this process's alone: nobody else can copy into it.
    claim: () => (db.memory ? Promise.resolve({ claimed: { release: () => Promise.resolve() } }) : claimLockFile(`${db.name}.copy.lock`)),
  };
}
