import { randomUUID } from 'node:crypto';
import path from 'node:path';

import type pg from 'pg';

import { ownedTempName, removeLeftoverTemps } from '../../core/files.js';
import type { TemplateManifest } from '../../core/schema-types.js';
import { manifestKey, removeBlobs } from '../blob-layout.js';
import { permission } from '../records.js';
import { checkCommit, lifecycleColumns, lifecycleOf, nextLifecycle, openVersionArchive, readVersionBundle, recoverPending, reservedAt, reservedColumns, removePendingBytes, versionOf as toVersion, type VersionRow, VERSION_COLUMNS, writeVersionBytes } from '../version-rules.js';
import type { ArchiveReader, ArchiveToStore, BlobStore, LifecycleChange, LifecycleEvents, NewVersion, PublishedVersion, PurgedVersion, Reservation, StoredVersion, TokenRecord, VersionLifecycle, VersionStore, WebhookEventRecord } from '../types.js';
import { notifyChange, RESERVER_DEAD_SQL, type Presence } from './coordination.js';
import { int, iso, transaction, type Queryable } from './database.js';
import { ownersIn } from './tokens.js';
import { settlePendingPublishers, trustedIn } from './trusted-publishers.js';
import { insertOutboxEvents } from './webhooks.js';

/** A row with who holds it (pending versions) and whether it is abandoned. */
interface HeldRow extends VersionRow {
  reservation: string | null;
  reserved_by: string | null;
  /** Reserved longer ago than the grace period (the database's clock). */
  expired: boolean;
  /** Pending, and its instance holds no presence lock: it died. */
  dead: boolean;
}

/** How many times a reservation is retried when the version it lost to vanished before it could read it. */
const RESERVE_ATTEMPTS = 3;

/** The columns of a `HeldRow`; `$1` is the grace period in seconds. */
const HELD_COLUMNS = `${VERSION_COLUMNS}, reservation, reserved_by,
  (state = 'pending' AND reserved_at < now() - make_interval(secs => $1)) AS expired, ${RESERVER_DEAD_SQL} AS dead`;

/** Whether a version reservation is for these very bytes. */
const sameBytes = (row: Pick<VersionRow, 'integrity' | 'sha256' | 'size'>, version: Pick<NewVersion, 'integrity' | 'sha256' | 'size'>): boolean =>
  row.sha256 === version.sha256 && row.integrity === version.integrity && int(row.size) === version.size;

export interface VersionStoreSettings {
  /** This instance's presence (a reservation holds it; a dead instance's pending versions can be taken over). */
  presence: Presence;
  /** How old a pending version must be to be taken for abandoned whoever holds it (`pendingGraceMs`). */
  graceMs: number;
}

/**
 * Versions in PostgreSQL; archives and manifests in the blob store (`archives/<name>/<version>.tgz`,
 * `manifests/<name>/<version>.json`), the manifest also in the row so a registry build reads them all
 * in one query.
 */
export class PostgresVersionStore implements VersionStore {
  /** This instance's reservations in progress: `name@version` -> reservation id. */
  private readonly held = new Map<string, string>();
  private readonly presence: Presence;
  private readonly graceMs: number;

  constructor(
    private readonly pool: pg.Pool,
    private readonly blobs: BlobStore,
    private readonly tmpDir: string,
    settings: VersionStoreSettings,
  ) {
    this.presence = settings.presence;
    this.graceMs = settings.graceMs;
  }

  private async row(db: Queryable, name: string, version: string): Promise<StoredVersion | undefined> {
    const row = (await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE name = $1 AND version = $2`, [name, version])).rows[0];
    return row ? toVersion(row) : undefined;
  }

  private async heldRow(db: Queryable, name: string, version: string): Promise<HeldRow | undefined> {
    return (await db.query<HeldRow>(`SELECT ${HELD_COLUMNS} FROM versions WHERE name = $2 AND version = $3`, [this.graceMs / 1000, name, version])).rows[0];
  }

  /**
   * The version; a pending one left by a dead instance (or older than the grace period) is no version
   * any more: undefined, so that a retry of its upload goes ahead and takes it over (`reserveVersion`).
   */
  async getVersion(name: string, version: string): Promise<StoredVersion | undefined> {
    const row = await this.heldRow(this.pool, name, version);
    if (!row || (row.state === 'pending' && (row.dead || row.expired))) return undefined;
    return toVersion(row);
  }

  async listVersions(): Promise<StoredVersion[]> {
    return (await this.pool.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE state = 'complete' ORDER BY name, created_at`)).rows.map(toVersion);
  }

  async listPublished(known: ReadonlySet<string> = new Set()): Promise<PublishedVersion[]> {
    // One query: every complete version, the manifest left out of the ones the caller knows.
    type Row = VersionRow & { manifest: TemplateManifest | null; known: boolean };
    const { rows } = await this.pool.query<Row>(
      `SELECT ${VERSION_COLUMNS}, (name || '@' || version) = ANY($1::text[]) AS known,
              CASE WHEN (name || '@' || version) = ANY($1::text[]) THEN NULL ELSE manifest END AS manifest
       FROM versions WHERE state = 'complete'`,
      [[...known]],
    );
    const result: PublishedVersion[] = [];
    for (const row of rows) {
      if (row.known) {
        result.push({ name: row.name, version: row.version, known: true });
        continue;
      }
      result.push({ ...toVersion(row), manifest: await this.#manifestOf(row) });
    }
    return result;
  }

  /** The manifest a row holds; a row without it (copied in from an older store) gets it read from the blobs and kept. */
  async #manifestOf(row: { name: string; version: string; manifest: TemplateManifest | null }): Promise<TemplateManifest> {
    if (row.manifest !== null) return row.manifest;
    const manifest = await this.readManifest(row.name, row.version);
    await this.pool.query('UPDATE versions SET manifest = $1 WHERE name = $2 AND version = $3 AND manifest IS NULL', [JSON.stringify(manifest), row.name, row.version]);
    return manifest;
  }

  async publishedVersions(): Promise<Map<string, string[]>> {
    // One row per template, from the index of the keys (versions_complete_keys).
    const { rows } = await this.pool.query<{ name: string; versions: string[] }>("SELECT name, array_agg(version) AS versions FROM versions WHERE state = 'complete' GROUP BY name");
    return new Map(rows.map((row) => [row.name, row.versions]));
  }

  async publishedNames(): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>("SELECT DISTINCT name FROM versions WHERE state = 'complete'");
    return rows.map((row) => row.name);
  }

  async listPublishedOf(names: readonly string[]): Promise<(StoredVersion & { manifest: TemplateManifest })[]> {
    type Row = VersionRow & { manifest: TemplateManifest | null };
    const { rows } = await this.pool.query<Row>(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE state = 'complete' AND name = ANY($1::text[])`, [[...names]]);
    const result: (StoredVersion & { manifest: TemplateManifest })[] = [];
    for (const row of rows) {
      result.push({ ...toVersion(row), manifest: await this.#manifestOf(row) });
    }
    return result;
  }

  /**
   * One transaction: the claim of an unowned name (INSERT ... ON CONFLICT: of concurrent first
   * publishes one claims, the others then see its owner and are checked against it) and the pending
   * row (the primary key (name, version): of concurrent reservations, from any instance, one inserts;
   * the others wait for it to commit and see it).
   */
  async reserveVersion(version: NewVersion, token: TokenRecord): Promise<Reservation> {
    const createdAt = reservedAt(version);
    const key = `${version.name}@${version.version}`;
    // Held before any reservation of this instance exists: while it lives, nobody takes one over.
    await this.presence.ensure();
    for (let attempt = 1; ; attempt++) {
      const reservation = randomUUID();
      const outcome = await transaction(this.pool, async (client): Promise<Reservation> => {
        const purged = await purgedIn(client, version.name, version.version);
        if (purged !== undefined) return { reserved: false, purged };
        const found = await this.heldRow(client, version.name, version.version);
        // A pending version is taken over when its instance died and these are its bytes (the retry of
        // an upload a crash interrupted), or when it is older than the grace period (whatever the bytes).
        const takeOver = found?.state === 'pending' && ((found.dead && sameBytes(found, version)) || found.expired);
        if (found && !takeOver) return { reserved: false, existing: toVersion(found) };
        let owners = await ownersIn(client, version.name);
        let trusted = await trustedIn(client, token, version.name);
        if (owners.length === 0 && permission(token, version.name, owners, trusted).allowed) {
          const claimed = await client.query('INSERT INTO owners (name, owner, claimed_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING', [version.name, token.owner, createdAt]);
          if (claimed.rowCount === 0) {
            // Claimed by another publish meanwhile (committed once our insert returned): its owners decide.
            owners = await ownersIn(client, version.name);
            trusted = await trustedIn(client, token, version.name);
          } else {
            await settlePendingPublishers(client, version.name, token.owner);
          }
        }
        const allowed = permission(token, version.name, owners, trusted);
        if (!allowed.allowed) return { reserved: false, forbidden: allowed.reason };
        const row = reservedColumns(version, token, owners, createdAt);
        const values = [version.name, version.version, row.integrity, row.sha256, row.size, row.owner, row.created_at, reservation, this.presence.instance, row.publisher, row.attestation];
        const inserted = found
          ? // Conditional on the reservation read: of concurrent take-overs one updates, the others lose.
            await client.query(
              `UPDATE versions SET integrity = $3, sha256 = $4, size = $5, owner = $6, created_at = $7, reservation = $8, reserved_by = $9,
                 reserved_at = now(), manifest = NULL, publisher = $10, attestation = $11
               WHERE name = $1 AND version = $2 AND state = 'pending' AND reservation IS NOT DISTINCT FROM $12`,
              [...values, found.reservation],
            )
          : await client.query(
              `INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at, reservation, reserved_by, publisher, attestation)
               VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (name, version) DO NOTHING`,
              values,
            );
        if (inserted.rowCount === 1) return { reserved: true };
        // Lost to a concurrent reservation, now committed: answer with it, our claim (if any) rolled back.
        throw new LostReservation(await this.row(client, version.name, version.version));
      }).catch((error: unknown) => {
        if (!(error instanceof LostReservation)) throw error;
        // No winner to show: it was aborted between its commit and our read; try again.
        return error.existing ? { reserved: false as const, existing: error.existing } : undefined;
      });
      if (outcome?.reserved) this.held.set(key, reservation);
      if (outcome) return outcome;
      if (attempt >= RESERVE_ATTEMPTS) throw new Error(`the reservation of ${version.name}@${version.version} kept racing with others: try again`);
    }
  }

  /**
   * The archive and the manifest go to the blob store first; only then, in one transaction, is the
   * version marked complete and are its webhook deliveries written: a version is never listed
   * without its bytes, and 201 means stored.
   */
  async commitVersion(name: string, version: string, archiveFile: ArchiveToStore, manifest: TemplateManifest, webhookEvents: readonly WebhookEventRecord[] = [], attestation?: string): Promise<StoredVersion> {
    // The reservation this instance made (undefined: one made before this process, e.g. by a tool).
    const mine = this.held.get(`${name}@${version}`);
    const before = await this.heldRow(this.pool, name, version);
    // The rules (version-rules.ts): only a pending reservation, its bytes before its row.
    checkCommit(name, version, before, attestation);
    if (mine !== undefined && before.reservation !== mine) throw new Error(`the reservation of ${name}@${version} was taken over by another upload`);
    await writeVersionBytes(this.blobs, before, archiveFile, manifest, attestation);
    const stored = await transaction(this.pool, async (client) => {
      const completed = await client.query<VersionRow>(
        `UPDATE versions SET state = 'complete', manifest = $1
         WHERE name = $2 AND version = $3 AND state = 'pending' AND ($4::text IS NULL OR reservation = $4) RETURNING ${VERSION_COLUMNS}`,
        [JSON.stringify(manifest), name, version, mine ?? null],
      );
      let stored = completed.rows[0] ? toVersion(completed.rows[0]) : undefined;
      if (!stored) {
        // Completed meanwhile by another instance's recover() (it found these very bytes in place,
        // under this reservation): still this upload's, so its deliveries are written here, as they would have been.
        const now = await this.heldRow(client, name, version);
        if (now?.state !== 'complete' || now.sha256 !== before.sha256 || now.integrity !== before.integrity || now.reservation !== before.reservation) {
          throw new Error(`version ${name}@${version} vanished or was taken over while it was committed`);
        }
        stored = toVersion(now);
      }
      await insertOutboxEvents(client, webhookEvents);
      // Delivered to the other instances only if this commits.
      await notifyChange(client, this.presence.instance, name, version, 'committed');
      return stored;
    });
    this.held.delete(`${name}@${version}`);
    return stored;
  }

  async abortVersion(name: string, version: string): Promise<void> {
    const key = `${name}@${version}`;
    const mine = this.held.get(key);
    this.held.delete(key);
    // Only this instance's own reservation (when it made one): one taken over is the other upload's.
    // The row is locked while its bytes go and removed after them, in one transaction: a reservation of
    // the same version (any instance) waits for it, so its bytes are written after these are removed,
    // never removed by this abort. A crash between the two leaves a pending row without bytes, which
    // recovery abandons. Only a pending version's bytes are removed: a complete one stays whole.
    await transaction(this.pool, async (client) => {
      const params = [name, version, mine ?? null];
      const locked = await client.query("SELECT 1 FROM versions WHERE name = $1 AND version = $2 AND state = 'pending' AND ($3::text IS NULL OR reservation = $3) FOR UPDATE", params);
      if ((locked.rowCount ?? 0) === 0) return;
      await removePendingBytes(this.blobs, name, version);
      await client.query("DELETE FROM versions WHERE name = $1 AND version = $2 AND state = 'pending' AND ($3::text IS NULL OR reservation = $3)", params);
    });
  }

  async readAttestation(name: string, version: string): Promise<Buffer | undefined> {
    return readVersionBundle(this.blobs, await this.row(this.pool, name, version), name, version);
  }

  async readManifest(name: string, version: string): Promise<TemplateManifest> {
    const row = (await this.pool.query<{ manifest: TemplateManifest | null }>('SELECT manifest FROM versions WHERE name = $1 AND version = $2', [name, version])).rows[0];
    if (row?.manifest) return row.manifest;
    const bytes = await this.blobs.readBytes(manifestKey(name, version));
    if (!bytes) throw Object.assign(new Error(`no manifest stored for ${name}@${version}`), { code: 'ENOENT' });
    return JSON.parse(bytes.toString('utf8')) as TemplateManifest;
  }

  openArchive(name: string, version: string): Promise<ArchiveReader | undefined> {
    return openVersionArchive(this.blobs, name, version);
  }

  updateLifecycle(name: string, version: string, change: LifecycleChange, webhookEvents?: LifecycleEvents): Promise<{ version: StoredVersion; changed: boolean } | undefined> {
    return transaction(this.pool, async (client) => {
      const row = (
        await client.query<VersionRow & { manifest: TemplateManifest | null }>(
          `SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE name = $1 AND version = $2 AND state = 'complete' FOR UPDATE`,
          [name, version],
        )
      ).rows[0];
      if (!row) return undefined;
      const { columns, changed } = nextLifecycle(lifecycleColumns(row), row.manifest?.stability, change);
      if (!changed) return { version: toVersion(row), changed };
      const updated = await client.query<VersionRow>(
        `UPDATE versions SET stability = $1, deprecation_message = $2, yanked_at = $3 WHERE name = $4 AND version = $5 RETURNING ${VERSION_COLUMNS}`,
        [columns.stability, columns.deprecationMessage, columns.yankedAt, name, version],
      );
      if (!updated.rows[0]) return undefined;
      const after = toVersion(updated.rows[0]);
      // The change and its webhook deliveries (the outbox) in one transaction: both or neither.
      if (webhookEvents) await insertOutboxEvents(client, webhookEvents(toVersion(row), after));
      await notifyChange(client, this.presence.instance, name, version, 'lifecycle');
      return { version: after, changed };
    });
  }

  async listLifecycles(): Promise<Map<string, VersionLifecycle>> {
    type Row = Pick<VersionRow, 'name' | 'version' | 'stability' | 'deprecation_message' | 'yanked_at'>;
    const { rows } = await this.pool.query<Row>(
      "SELECT name, version, stability, deprecation_message, yanked_at FROM versions WHERE state = 'complete' AND (stability IS NOT NULL OR deprecation_message IS NOT NULL OR yanked_at IS NOT NULL)",
    );
    return new Map(rows.map((row) => [`${row.name}@${row.version}`, lifecycleOf(lifecycleColumns(row))]));
  }

  /** A fresh path in the temp folder naming this process as its owner (core/temp-owner.ts). */
  purgedAt(name: string, version: string): Promise<string | undefined> {
    return purgedIn(this.pool, name, version);
  }

  async purgeVersion(name: string, version: string, now: Date = new Date()): Promise<PurgedVersion | undefined> {
    // The mark first (its primary key: of concurrent purges one inserts, the others wait and see it),
    // then the row, in one transaction: from then on the version is not served and never reserved.
    const purged = await transaction(this.pool, async (client): Promise<PurgedVersion | undefined> => {
      const before = await purgedIn(client, name, version);
      if (before !== undefined) return { purgedAt: before };
      const stored = await this.row(client, name, version);
      if (stored?.state !== 'complete') return undefined;
      const inserted = await client.query<{ purged_at: Date }>(
        'INSERT INTO purged_versions (name, version, purged_at) VALUES ($1, $2, $3) ON CONFLICT (name, version) DO NOTHING RETURNING purged_at',
        [name, version, now.toISOString()],
      );
      const mark = inserted.rows[0];
      if (!mark) return { purgedAt: (await purgedIn(client, name, version)) ?? now.toISOString() };
      await client.query("DELETE FROM versions WHERE name = $1 AND version = $2 AND state = 'complete'", [name, version]);
      await notifyChange(client, this.presence.instance, name, version, 'purged');
      return { version: stored, purgedAt: iso(mark.purged_at) };
    });
    // Then the bytes; a failure is thrown (purging again removes what is left).
    if (purged) await removeBlobs(this.blobs, name, version);
    return purged;
  }

  uploadTempPath(suffix = ''): string {
    return path.join(this.tmpDir, ownedTempName(suffix));
  }

  /**
   * Finishes what a crashed instance left, without harming live ones (several instances share the
   * database, and each runs this at its start while the others keep serving):
   * - a pending version whose archive (right size and sha256) and manifest are in the blob store is
   *   completed: its commit stored the bytes, then died before its transaction (were the committer
   *   alive, it sees the version complete with its digests and finishes normally);
   * - a pending version whose instance is dead (its presence lock is free), or reserved more than
   *   `graceMs` ago (the database's clock: no upload takes that long), and not complete is abandoned,
   *   its row and any bytes removed;
   * - one of a live instance, younger than that, is left alone: an upload in progress;
   * - what the local temp folder holds of a process that no longer runs is removed at once; what a
   *   running one holds (another instance on this machine may share the folder) is left alone, and
   *   what belongs to a process that cannot be seen from here (another machine, an older release)
   *   once older than `graceMs`.
   */
  async recover(graceMs: number = this.graceMs): Promise<void> {
    const { rows } = await this.pool.query<HeldRow>(`SELECT ${HELD_COLUMNS} FROM versions WHERE state = 'pending'`, [graceMs / 1000]);
    for (const row of rows) {
      await recoverPending(this.blobs, toVersion(row), {
        complete: (manifest) =>
          transaction(this.pool, async (client) => {
            const completed = await client.query("UPDATE versions SET state = 'complete', manifest = $1 WHERE name = $2 AND version = $3 AND state = 'pending'", [
              JSON.stringify(manifest),
              row.name,
              row.version,
            ]);
            if ((completed.rowCount ?? 0) > 0) await notifyChange(client, this.presence.instance, row.name, row.version, 'recovered');
          }),
        abandon: async () => {
          // Only a reservation no live upload holds, conditional on what was read: a row re-reserved (taken
          // over) meanwhile is not this one, and its bytes are the new upload's. Locked, its bytes removed,
          // then deleted, in one transaction (as abortVersion does): a new reservation waits for it.
          if (!row.expired && !row.dead) return;
          await transaction(this.pool, async (client) => {
            const params = [graceMs / 1000, row.name, row.version, row.reservation];
            const where = `name = $2 AND version = $3 AND state = 'pending' AND reservation IS NOT DISTINCT FROM $4
               AND (reserved_at < now() - make_interval(secs => $1) OR ${RESERVER_DEAD_SQL})`;
            const locked = await client.query(`SELECT 1 FROM versions WHERE ${where} FOR UPDATE`, params);
            if ((locked.rowCount ?? 0) === 0) return;
            await removePendingBytes(this.blobs, row.name, row.version);
            await client.query(`DELETE FROM versions WHERE ${where}`, params);
          });
        },
      });
    }
    await removeLeftoverTemps(this.tmpDir, { isTemp: () => true, foreignAfterMs: graceMs });
  }
}

/** When name@version was purged (ISO 8601); undefined when it was not. */
async function purgedIn(db: Queryable, name: string, version: string): Promise<string | undefined> {
  const row = (await db.query<{ purged_at: Date }>('SELECT purged_at FROM purged_versions WHERE name = $1 AND version = $2', [name, version])).rows[0];
  return row ? iso(row.purged_at) : undefined;
}

/** Thrown out of a reservation's transaction to roll it back (and its claim) while answering with the winner. */
class LostReservation extends Error {
  constructor(readonly existing: StoredVersion | undefined) {
    super('lost the reservation');
  }
}
