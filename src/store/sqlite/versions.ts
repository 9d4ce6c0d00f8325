import path from 'node:path';

import type Database from 'better-sqlite3';

import { isStorageFull } from '../../core/errors.js';
import { FOREIGN_TEMP_AGE_MS, ownedTempName, removeLeftoverTemps } from '../../core/files.js';
import { retryDelay, type BackoffLimits } from '../../core/retry.js';
import type { TemplateManifest } from '../../core/schema-types.js';
import type { ArchiveReader, ArchiveToStore, BlobStore, LifecycleChange, LifecycleEvents, NewVersion, PublishedVersion, PurgedVersion, Reservation, StoredVersion, TokenRecord, VersionLifecycle, VersionStore, WebhookEventRecord } from '../types.js';
import { manifestKey, removeBlobs } from '../blob-layout.js';
import { permission } from '../records.js';
import { checkCommit, hasVersionKeys, lifecycleColumns, lifecycleOf, nextLifecycle, openVersionArchive, readVersionBundle, recoverPending, reservedAt, reservedColumns, removePendingBytes, versionOf as toVersion, versionRowOf, type VersionRow, VERSION_COLUMNS, writeVersionBytes } from '../version-rules.js';
import type { SpaceReserve } from './space-reserve.js';
import { ownersOfSync } from './tokens.js';
import { settlePendingPublishersSync, trustedSync } from './trusted-publishers.js';
import { insertOutboxEvents } from './webhooks.js';

/** The store holds token hashes and webhook secrets: its folders and files are its account's only. */
export const PRIVATE_FOLDER = 0o700;
export const PRIVATE_FILE = 0o600;

/** Where the local folders of the embedded store are, below its folder. */
export class StoreLayout {
  readonly archives: string;
  readonly manifests: string;
  readonly tmp: string;

  constructor(readonly dir: string) {
    this.archives = path.join(dir, 'archives');
    this.manifests = path.join(dir, 'manifests');
    this.tmp = path.join(dir, 'tmp');
  }
}


/** How often the removal of a pending version that could not be undone (a full disk) is tried again. */
export const ABORT_RETRY: BackoffLimits = { minDelayMs: 1000, maxDelayMs: 60_000 };

/**
 * Versions in SQLite; archives and manifests in a blob store (`archives/<name>/<version>.tgz`,
 * `manifests/<name>/<version>.json`: by default files below the store folder), the manifest also in
 * the row so a registry build reads them all in one query.
 */
export class SqliteVersionStore implements VersionStore {
  /**
   * Pending versions this process failed to undo (no room even after the reserve): removed again
   * in the background, and taken over at once by an upload of the same version. `name@version` to its timer.
   */
  private readonly abandoned = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly db: Database.Database,
    private readonly blobs: BlobStore,
    /** The local folder uploads wait in (tmp/ of the store), whatever the blob store. */
    private readonly tmpDir: string,
    /** Room kept so that an undo never fails for want of space (space-reserve.ts); none: no reserve. */
    private readonly reserve?: SpaceReserve,
  ) {}

  private getSync(name: string, version: string): StoredVersion | undefined {
    const row = this.db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE name = ? AND version = ?`).get(name, version) as VersionRow | undefined;
    return row ? toVersion(row) : undefined;
  }

  getVersion(name: string, version: string): Promise<StoredVersion | undefined> {
    return Promise.resolve(this.getSync(name, version));
  }

  listVersions(): Promise<StoredVersion[]> {
    return Promise.resolve((this.db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE state = 'complete' ORDER BY name, created_at`).all() as VersionRow[]).map(toVersion));
  }

  async listPublished(known: ReadonlySet<string> = new Set()): Promise<PublishedVersion[]> {
    // The keys of every complete version (no order: the generator sorts what it builds), then the
    // whole row and manifest of the ones the caller does not know.
    // A caller that knows nothing gets every row in one query.
    type Row = VersionRow & { manifest: string | null };
    const all = known.size === 0 ? (this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE state = 'complete'`).raw().all() as unknown[][]).map(versionRowOf) : undefined;
    const keys = all ? all.map((row): [string, string] => [row.name, row.version]) : this.publishedKeys();
    const rowOf = this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE name = ? AND version = ?`);
    const backfill = this.db.prepare('UPDATE versions SET manifest = ? WHERE name = ? AND version = ? AND manifest IS NULL');
    const result: PublishedVersion[] = [];
    for (const [index, [name, version]] of keys.entries()) {
      if (known.has(`${name}@${version}`)) {
        result.push({ name, version, known: true });
        continue;
      }
      const row = all ? all[index] : (rowOf.get(name, version) as Row | undefined);
      if (!row) continue; // gone since the keys were read: only a pending version can go
      let manifest: TemplateManifest;
      if (typeof row.manifest === 'string') {
        manifest = JSON.parse(row.manifest) as TemplateManifest;
      } else {
        // Stored by a release that kept manifests only as files: read it, and keep it in the row.
        manifest = await this.readManifest(name, version);
        backfill.run(JSON.stringify(manifest), name, version);
      }
      const stored = toVersion(row) as StoredVersion & { manifest: TemplateManifest };
      stored.manifest = manifest;
      result.push(stored);
    }
    return result;
  }

  /**
   * The versions of each template, read from an index (versions_complete_keys), a row per template:
   * 100,000 rows of two columns cost more to make than the keys (NUL, which no stored text holds,
   * separates the versions).
   */
  private publishedVersionsSync(): Map<string, string[]> {
    const grouped = this.db.prepare("SELECT name, group_concat(version, char(0)) FROM versions WHERE state = 'complete' GROUP BY name").raw().all() as [string, string][];
    return new Map(grouped.map(([name, versions]) => [name, versions.split('\0')]));
  }

  private publishedKeys(): [string, string][] {
    const keys: [string, string][] = [];
    for (const [name, versions] of this.publishedVersionsSync()) for (const version of versions) keys.push([name, version]);
    return keys;
  }

  publishedVersions(): Promise<Map<string, string[]>> {
    return Promise.resolve(this.publishedVersionsSync());
  }

  publishedNames(): Promise<string[]> {
    // From the index of the keys alone: a tenth of the time of grouping every version (100,000 versions: 6 ms against 40-110).
    return Promise.resolve(this.db.prepare("SELECT DISTINCT name FROM versions WHERE state = 'complete'").pluck().all() as string[]);
  }

  async listPublishedOf(names: readonly string[]): Promise<(StoredVersion & { manifest: TemplateManifest })[]> {
    // One query for all the names (the primary key (name, version) answers each by an index range).
    const rows = (this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE name IN (SELECT value FROM json_each(?)) AND state = 'complete'`).raw().all(JSON.stringify(names)) as unknown[][]).map(versionRowOf);
    const backfill = this.db.prepare('UPDATE versions SET manifest = ? WHERE name = ? AND version = ? AND manifest IS NULL');
    const result: (StoredVersion & { manifest: TemplateManifest })[] = [];
    for (const row of rows) {
      let manifest: TemplateManifest;
      if (typeof row.manifest === 'string') {
        manifest = JSON.parse(row.manifest) as TemplateManifest;
      } else {
        // Stored by a release that kept manifests only as files: read it, and keep it in the row.
        manifest = await this.readManifest(row.name, row.version);
        backfill.run(JSON.stringify(manifest), row.name, row.version);
      }
      // The row's version with its manifest set on it: no copy of every field (100,000 at a full build).
      const stored = toVersion(row) as StoredVersion & { manifest: TemplateManifest };
      stored.manifest = manifest;
      result.push(stored);
    }
    return result;
  }

  async reserveVersion(version: NewVersion, token: TokenRecord): Promise<Reservation> {
    const createdAt = reservedAt(version);
    const key = `${version.name}@${version.version}`;
    // No reservation without the room to undo it: a disk too full for the reserve refuses the upload.
    let noRoom: Error | undefined;
    try {
      await this.reserve?.ensure();
    } catch (error) {
      if (!isStorageFull(error)) throw error;
      noRoom = error as Error;
    }
    const reservation = this.db
      .transaction((): Reservation => {
        const purged = this.purgedSync(version.name, version.version);
        if (purged !== undefined) return { reserved: false, purged };
        const existing = this.getSync(version.name, version.version);
        const takeOver = existing?.state === 'pending' && this.abandoned.has(key);
        if (existing && !takeOver) return { reserved: false, existing };
        const owners = ownersOfSync(this.db, version.name);
        const allowed = permission(token, version.name, owners, trustedSync(this.db, token, version.name));
        if (!allowed.allowed) return { reserved: false, forbidden: allowed.reason };
        if (noRoom !== undefined) throw noRoom;
        if (owners.length === 0) {
          this.db.prepare('INSERT INTO owners (name, owner, claimed_at) VALUES (?, ?, ?)').run(version.name, token.owner, createdAt);
          settlePendingPublishersSync(this.db, version.name, token.owner);
        }
        const row = reservedColumns(version, token, owners, createdAt);
        const values = [row.integrity, row.sha256, row.size, row.owner, row.created_at, row.publisher, row.attestation, version.name, version.version];
        if (takeOver) {
          this.db
            .prepare("UPDATE versions SET integrity = ?, sha256 = ?, size = ?, owner = ?, created_at = ?, publisher = ?, attestation = ?, manifest = NULL WHERE name = ? AND version = ? AND state = 'pending'")
            .run(...values);
        } else {
          this.db.prepare("INSERT INTO versions (integrity, sha256, size, owner, created_at, publisher, attestation, name, version, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')").run(...values);
        }
        return { reserved: true };
      })
      .immediate();
    if (reservation.reserved) this.forget(key);
    return reservation;
  }

  async commitVersion(name: string, version: string, archiveFile: ArchiveToStore, manifest: TemplateManifest, webhookEvents: readonly WebhookEventRecord[] = [], attestation?: string): Promise<StoredVersion> {
    // The rules (version-rules.ts): only a pending reservation, its bytes before its row.
    const reserved = this.getSync(name, version);
    checkCommit(name, version, reserved, attestation);
    await writeVersionBytes(this.blobs, reserved, archiveFile, manifest, attestation);
    // The version and its webhook deliveries (the outbox) in one transaction: both or neither.
    this.db.transaction(() => {
      const completed = this.db.prepare("UPDATE versions SET state = 'complete', manifest = ? WHERE name = ? AND version = ? AND state = 'pending'").run(JSON.stringify(manifest), name, version);
      if (completed.changes > 0) insertOutboxEvents(this.db, webhookEvents);
    })();
    const stored = this.getSync(name, version);
    if (!stored) throw new Error(`version ${name}@${version} vanished while it was committed`);
    return stored;
  }

  /**
   * Undoes a reservation: its bytes, then its row (only a pending version's: a complete one stays
   * whole). On a full disk the bytes' removal and then the reserve make room for the row's; should
   * even that fail, the row is removed again in the background, and an upload of the same version
   * takes it over meanwhile.
   */
  async abortVersion(name: string, version: string): Promise<void> {
    if (this.getSync(name, version)?.state !== 'pending') return;
    await removePendingBytes(this.blobs, name, version);
    if (this.removePending(name, version)) return;
    if ((await this.reserve?.release()) && this.removePending(name, version)) return;
    this.abandon(name, version, 1);
  }

  /** Removes a pending row; false when the disk is too full to (other failures are thrown). */
  private removePending(name: string, version: string): boolean {
    try {
      this.db.prepare("DELETE FROM versions WHERE name = ? AND version = ? AND state = 'pending'").run(name, version);
      this.forget(`${name}@${version}`);
      return true;
    } catch (error) {
      if (!isStorageFull(error)) throw error;
      return false;
    }
  }

  private abandon(name: string, version: string, attempt: number): void {
    const key = `${name}@${version}`;
    this.forget(key);
    // Only the row: its bytes went before the first try, and an upload taking the version over
    // writes its own (a removal now could take them); the row's removal and a take-over are one
    // synchronous statement each, never interleaved.
    const timer = setTimeout(() => {
      if (!this.db.open || this.abandoned.get(key) !== timer) return;
      let removed = false;
      try {
        removed = this.removePending(name, version);
      } catch {
        // another failure than a full disk: tried again all the same
      }
      if (!removed) this.abandon(name, version, attempt + 1);
    }, retryDelay(attempt, ABORT_RETRY));
    timer.unref();
    this.abandoned.set(key, timer);
  }

  private forget(key: string): void {
    clearTimeout(this.abandoned.get(key));
    this.abandoned.delete(key);
  }

  async readAttestation(name: string, version: string): Promise<Buffer | undefined> {
    return readVersionBundle(this.blobs, this.getSync(name, version), name, version);
  }

  async readManifest(name: string, version: string): Promise<TemplateManifest> {
    const bytes = await this.blobs.readBytes(manifestKey(name, version));
    // As a missing file did: callers tell "not there" from a failure by the code.
    if (!bytes) throw Object.assign(new Error(`no manifest stored for ${name}@${version} in ${this.blobs.location}`), { code: 'ENOENT' });
    return JSON.parse(bytes.toString('utf8')) as TemplateManifest;
  }

  openArchive(name: string, version: string): Promise<ArchiveReader | undefined> {
    return openVersionArchive(this.blobs, name, version);
  }

  updateLifecycle(name: string, version: string, change: LifecycleChange, webhookEvents?: LifecycleEvents): Promise<{ version: StoredVersion; changed: boolean } | undefined> {
    const result = this.db
      .transaction((): { version: StoredVersion; changed: boolean } | undefined => {
        const row = this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE name = ? AND version = ? AND state = 'complete'`).get(name, version) as
          | (VersionRow & { manifest: string | null })
          | undefined;
        if (!row) return undefined;
        const manifestStability = row.manifest ? (JSON.parse(row.manifest) as TemplateManifest).stability : undefined;
        const { columns, changed } = nextLifecycle(lifecycleColumns(row), manifestStability, change);
        const before = changed && webhookEvents ? this.getSync(name, version) : undefined;
        if (changed) {
          this.db
            .prepare('UPDATE versions SET stability = ?, deprecation_message = ?, yanked_at = ? WHERE name = ? AND version = ?')
            .run(columns.stability, columns.deprecationMessage, columns.yankedAt, name, version);
        }
        const updated = this.getSync(name, version);
        // The change and its webhook deliveries (the outbox) in one transaction: both or neither.
        if (before && updated && webhookEvents) insertOutboxEvents(this.db, webhookEvents(before, updated));
        return updated ? { version: updated, changed } : undefined;
      })
      .immediate();
    return Promise.resolve(result);
  }

  listLifecycles(): Promise<Map<string, VersionLifecycle>> {
    // The partial index holds the few versions with a lifecycle (SQLite prefers the keys' index otherwise, and reads every row).
    type Row = Pick<VersionRow, 'name' | 'version' | 'stability' | 'deprecation_message' | 'yanked_at'>;
    const rows = this.db
      .prepare(
        "SELECT name, version, stability, deprecation_message, yanked_at FROM versions INDEXED BY versions_with_lifecycle WHERE state = 'complete' AND (stability IS NOT NULL OR deprecation_message IS NOT NULL OR yanked_at IS NOT NULL)",
      )
      .all() as Row[];
    return Promise.resolve(new Map(rows.map((row) => [`${row.name}@${row.version}`, lifecycleOf(lifecycleColumns(row))])));
  }

  private purgedSync(name: string, version: string): string | undefined {
    const row = this.db.prepare('SELECT purged_at FROM purged_versions WHERE name = ? AND version = ?').get(name, version) as { purged_at: string } | undefined;
    return row?.purged_at;
  }

  purgedAt(name: string, version: string): Promise<string | undefined> {
    return Promise.resolve(this.purgedSync(name, version));
  }

  async purgeVersion(name: string, version: string, now: Date = new Date()): Promise<PurgedVersion | undefined> {
    // The row and the mark in one transaction: from then on the version is not served and never reserved.
    const purged = this.db
      .transaction((): PurgedVersion | undefined => {
        const before = this.purgedSync(name, version);
        if (before !== undefined) return { purgedAt: before };
        const stored = this.getSync(name, version);
        if (stored?.state !== 'complete') return undefined;
        const purgedAt = now.toISOString();
        this.db.prepare('INSERT INTO purged_versions (name, version, purged_at) VALUES (?, ?, ?)').run(name, version, purgedAt);
        this.db.prepare('DELETE FROM versions WHERE name = ? AND version = ?').run(name, version);
        return { version: stored, purgedAt };
      })
      .immediate();
    // Then the bytes; a failure is thrown (purging again removes what is left).
    if (purged) await removeBlobs(this.blobs, name, version);
    return purged;
  }

  /** A fresh path in tmp/ naming this process as its owner (core/temp-owner.ts). */
  uploadTempPath(suffix = ''): string {
    return path.join(this.tmpDir, ownedTempName(suffix));
  }

  /**
   * At start (one server per store, so no upload is in flight): completes a pending version whose
   * commit stored both blobs and died before its transaction, removes the other pending versions
   * and their blobs, and removes from tmp/ what a process that no longer runs left there (another
   * process on the store, such as a second server, keeps its own; one of a process that cannot be
   * seen, another machine's or container's, goes once an hour old; an older release's at once). A blob store that cannot be read fails the recovery rather than having a
   * version taken for incomplete.
   */
  async recover(): Promise<void> {
    const pending = this.db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE state = 'pending'`).all() as VersionRow[];
    for (const row of pending) {
      await recoverPending(this.blobs, toVersion(row), {
        complete: (manifest) => {
          this.db.prepare("UPDATE versions SET state = 'complete', manifest = ? WHERE name = ? AND version = ? AND state = 'pending'").run(JSON.stringify(manifest), row.name, row.version);
          return Promise.resolve();
        },
        // No upload runs at start: the blobs go before the row, so a failed removal leaves the row to retry it at the next start.
        abandon: async () => {
          if (hasVersionKeys(row.name, row.version)) await removeBlobs(this.blobs, row.name, row.version);
          this.db.prepare("DELETE FROM versions WHERE name = ? AND version = ? AND state = 'pending'").run(row.name, row.version);
        },
      });
    }
    await removeLeftoverTemps(this.tmpDir, { isTemp: () => true, foreignAfterMs: FOREIGN_TEMP_AGE_MS, legacyAfterMs: 0 });
  }
}
