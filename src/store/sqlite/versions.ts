import { createHash, randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

import type Database from 'better-sqlite3';

import type { TemplateManifest } from '../../core/schema-types.js';
import { isTemplateName, isTemplateVersion } from '../../core/versions.js';
import type {
  ArchiveReader,
  BlobStore,
  LifecycleChange,
  LifecycleEvents,
  NewVersion,
  PublishedVersion,
  PublisherRun,
  Reservation,
  StoredAttestation,
  StoredVersion,
  TokenRecord,
  VersionLifecycle,
  VersionStability,
  VersionStore,
  WebhookEventRecord,
} from '../types.js';
import { archiveKey, attestationKey, manifestKey, manifestText } from '../blob-layout.js';
import { permission, versionOwner } from '../records.js';
import { ownersOfSync } from './tokens.js';
import { settlePendingPublishersSync, trustedSync } from './trusted-publishers.js';
import { insertOutboxEvents } from './webhooks.js';

interface VersionRow {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  integrity: string;
  sha256: string;
  size: number;
  owner: string;
  created_at: string;
  stability: VersionStability | null;
  deprecation_message: string | null;
  yanked_at: string | null;
  publisher: string | null;
  attestation: string | null;
}

/** Every column but the manifest, which only a registry build needs. */
const VERSION_COLUMNS = 'name, version, state, integrity, sha256, size, owner, created_at, stability, deprecation_message, yanked_at, publisher, attestation';

const toVersion = (row: VersionRow): StoredVersion => ({
  name: row.name,
  version: row.version,
  state: row.state,
  integrity: row.integrity,
  sha256: row.sha256,
  size: row.size,
  owner: row.owner,
  createdAt: row.created_at,
  ...lifecycleOf(row),
  ...(row.publisher ? { publisher: JSON.parse(row.publisher) as PublisherRun } : {}),
  ...(row.attestation ? { attestation: JSON.parse(row.attestation) as StoredAttestation } : {}),
});

/** The lifecycle columns of a row, as the optional fields of a version. */
function lifecycleOf(row: Pick<VersionRow, 'stability' | 'deprecation_message' | 'yanked_at'>): VersionLifecycle {
  return {
    ...(row.stability ? { stability: row.stability } : {}),
    ...(row.deprecation_message !== null ? { deprecationMessage: row.deprecation_message } : {}),
    ...(row.yanked_at ? { yankedAt: row.yanked_at } : {}),
  };
}

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


/**
 * Versions in SQLite; archives and manifests in a blob store (`archives/<name>/<version>.tgz`,
 * `manifests/<name>/<version>.json`: by default files below the store folder), the manifest also in
 * the row so a registry build reads them all in one query.
 */
export class SqliteVersionStore implements VersionStore {
  constructor(
    private readonly db: Database.Database,
    private readonly blobs: BlobStore,
    /** The local folder uploads wait in (tmp/ of the store), whatever the blob store. */
    private readonly tmpDir: string,
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
    const all = known.size === 0 ? (this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE state = 'complete'`).all() as Row[]) : undefined;
    const keys = all ? all.map((row): [string, string] => [row.name, row.version]) : (this.db.prepare("SELECT name, version FROM versions WHERE state = 'complete'").raw().all() as [string, string][]);
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
      result.push({ ...toVersion(row), manifest });
    }
    return result;
  }

  reserveVersion(version: NewVersion, token: TokenRecord): Promise<Reservation> {
    const createdAt = version.createdAt ?? new Date().toISOString();
    const reservation = this.db
      .transaction((): Reservation => {
        const existing = this.getSync(version.name, version.version);
        if (existing) return { reserved: false, existing };
        const owners = ownersOfSync(this.db, version.name);
        const allowed = permission(token, version.name, owners, trustedSync(this.db, token, version.name));
        if (!allowed.allowed) return { reserved: false, forbidden: allowed.reason };
        if (owners.length === 0) {
          this.db.prepare('INSERT INTO owners (name, owner, claimed_at) VALUES (?, ?, ?)').run(version.name, token.owner, createdAt);
          settlePendingPublishersSync(this.db, version.name, token.owner);
        }
        this.db
          .prepare("INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at, publisher, attestation) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)")
          .run(
            version.name,
            version.version,
            version.integrity,
            version.sha256,
            version.size,
            versionOwner(token, owners),
            createdAt,
            token.publisher ? JSON.stringify(token.publisher) : null,
            version.attestation ? JSON.stringify(version.attestation) : null,
          );
        return { reserved: true };
      })
      .immediate();
    return Promise.resolve(reservation);
  }

  async commitVersion(
    name: string,
    version: string,
    archiveFile: string,
    manifest: TemplateManifest,
    webhookEvents: readonly WebhookEventRecord[] = [],
    attestation?: string,
  ): Promise<StoredVersion> {
    // Bytes first (a put resolves once they and their names are durable), then the row: 201 means
    // stored, and no version is ever listed without its archive. The provenance bundle goes before
    // the archive and the manifest, so that a version recover() finds whole has it too.
    const reserved = this.getSync(name, version);
    if (reserved?.attestation && attestation === undefined) throw new Error(`version ${name}@${version} was reserved with an attestation: commit it with its bundle`);
    if (reserved?.attestation && attestation !== undefined) await this.blobs.putBytes(attestationKey(name, version), attestation, { contentType: 'application/json' });
    await this.blobs.putBytes(manifestKey(name, version), manifestText(manifest), { contentType: 'application/json' });
    await this.blobs.putFile(archiveKey(name, version), archiveFile, { contentType: 'application/gzip' });
    // A folder store moved the file in; a bucket copied it, and the copy in tmp/ is no longer wanted.
    await rm(archiveFile, { force: true });
    // The version and its webhook deliveries (the outbox) in one transaction: both or neither.
    this.db.transaction(() => {
      const completed = this.db.prepare("UPDATE versions SET state = 'complete', manifest = ? WHERE name = ? AND version = ? AND state = 'pending'").run(JSON.stringify(manifest), name, version);
      if (completed.changes > 0) insertOutboxEvents(this.db, webhookEvents);
    })();
    const stored = this.getSync(name, version);
    if (!stored) throw new Error(`version ${name}@${version} vanished while it was committed`);
    return stored;
  }

  async abortVersion(name: string, version: string): Promise<void> {
    const removed = this.db.prepare("DELETE FROM versions WHERE name = ? AND version = ? AND state = 'pending'").run(name, version).changes > 0;
    // Only a pending version's bytes are removed: a complete one (another upload's) stays whole.
    if (removed) await this.deleteBlobs(name, version);
  }

  private async deleteBlobs(name: string, version: string): Promise<void> {
    // Each removal on its own: one that fails (what made the commit fail) must not keep the other.
    await Promise.allSettled([this.blobs.delete(archiveKey(name, version)), this.blobs.delete(manifestKey(name, version)), this.blobs.delete(attestationKey(name, version))]);
  }

  async readAttestation(name: string, version: string): Promise<Buffer | undefined> {
    let key: string;
    try {
      key = attestationKey(name, version);
    } catch {
      return undefined;
    }
    return this.getSync(name, version)?.attestation ? this.blobs.readBytes(key) : undefined;
  }

  async readManifest(name: string, version: string): Promise<TemplateManifest> {
    const bytes = await this.blobs.readBytes(manifestKey(name, version));
    // As a missing file did: callers tell "not there" from a failure by the code.
    if (!bytes) throw Object.assign(new Error(`no manifest stored for ${name}@${version} in ${this.blobs.location}`), { code: 'ENOENT' });
    return JSON.parse(bytes.toString('utf8')) as TemplateManifest;
  }

  async openArchive(name: string, version: string): Promise<ArchiveReader | undefined> {
    let key: string;
    try {
      key = archiveKey(name, version);
    } catch {
      return undefined;
    }
    return this.blobs.open(key);
  }

  updateLifecycle(name: string, version: string, change: LifecycleChange, webhookEvents?: LifecycleEvents): Promise<{ version: StoredVersion; changed: boolean } | undefined> {
    const result = this.db
      .transaction((): { version: StoredVersion; changed: boolean } | undefined => {
        const row = this.db.prepare(`SELECT ${VERSION_COLUMNS}, manifest FROM versions WHERE name = ? AND version = ? AND state = 'complete'`).get(name, version) as
          | (VersionRow & { manifest: string | null })
          | undefined;
        if (!row) return undefined;
        const manifestStability = row.manifest ? (JSON.parse(row.manifest) as TemplateManifest).stability : undefined;
        const effective = change.stability ?? row.stability ?? manifestStability ?? 'stable';
        // Stored only when it differs from the manifest's: an undone deprecation leaves no trace.
        const stability = effective === (manifestStability ?? 'stable') ? null : effective;
        let message = change.deprecationMessage === undefined ? row.deprecation_message : change.deprecationMessage;
        if (effective !== 'deprecated') message = null;
        const yankedAt = row.yanked_at ?? (change.yanked ? (change.now ?? new Date()).toISOString() : null);
        const changed = stability !== row.stability || message !== row.deprecation_message || yankedAt !== row.yanked_at;
        const before = changed && webhookEvents ? this.getSync(name, version) : undefined;
        if (changed) {
          this.db
            .prepare('UPDATE versions SET stability = ?, deprecation_message = ?, yanked_at = ? WHERE name = ? AND version = ?')
            .run(stability, message, yankedAt, name, version);
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
    type Row = Pick<VersionRow, 'name' | 'version' | 'stability' | 'deprecation_message' | 'yanked_at'>;
    const rows = this.db
      .prepare(
        "SELECT name, version, stability, deprecation_message, yanked_at FROM versions WHERE state = 'complete' AND (stability IS NOT NULL OR deprecation_message IS NOT NULL OR yanked_at IS NOT NULL)",
      )
      .all() as Row[];
    return Promise.resolve(new Map(rows.map((row) => [`${row.name}@${row.version}`, lifecycleOf(row)])));
  }

  uploadTempPath(suffix = ''): string {
    return path.join(this.tmpDir, `${Date.now()}-${randomBytes(8).toString('hex')}${suffix}`);
  }

  /**
   * At start (one server per store, so nothing is in flight): completes a pending version whose
   * commit stored both blobs and died before its transaction, removes the other pending versions
   * and their blobs, and empties tmp/. A blob store that cannot be read fails the recovery rather
   * than having a version taken for incomplete.
   */
  async recover(): Promise<void> {
    const pending = this.db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE state = 'pending'`).all() as VersionRow[];
    for (const row of pending) {
      const valid = isTemplateName(row.name) && isTemplateVersion(row.version);
      const manifest = valid ? await this.storedManifest(row.name, row.version) : undefined;
      if (manifest && (await this.archiveMatches(row))) {
        this.db.prepare("UPDATE versions SET state = 'complete', manifest = ? WHERE name = ? AND version = ? AND state = 'pending'").run(JSON.stringify(manifest), row.name, row.version);
      } else {
        // The blobs go before the row: a failed removal leaves the row to retry it at the next start.
        if (valid) await Promise.all([archiveKey, manifestKey, attestationKey].map((key) => this.blobs.delete(key(row.name, row.version))));
        this.db.prepare("DELETE FROM versions WHERE name = ? AND version = ? AND state = 'pending'").run(row.name, row.version);
      }
    }
    for (const entry of await readdir(this.tmpDir).catch(() => [] as string[])) {
      await rm(path.join(this.tmpDir, entry), { recursive: true, force: true });
    }
  }

  /** The stored manifest when it is there and is this version's; undefined else (garbled included). */
  private async storedManifest(name: string, version: string): Promise<TemplateManifest | undefined> {
    const bytes = await this.blobs.readBytes(manifestKey(name, version));
    if (!bytes) return undefined;
    let manifest: TemplateManifest | null;
    try {
      manifest = JSON.parse(bytes.toString('utf8')) as TemplateManifest | null;
    } catch {
      return undefined;
    }
    return manifest?.name === name && manifest.version === version ? manifest : undefined;
  }

  /** Whether the stored archive has the bytes the version was reserved with. */
  private async archiveMatches(row: VersionRow): Promise<boolean> {
    const reader = await this.blobs.open(archiveKey(row.name, row.version));
    if (!reader) return false;
    const hash = createHash('sha256');
    for await (const chunk of reader.stream) hash.update(chunk as Buffer);
    return hash.digest('hex') === row.sha256;
  }
}
