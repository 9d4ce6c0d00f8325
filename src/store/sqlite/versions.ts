import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

import type Database from 'better-sqlite3';

import { openFileStream, syncDirectory, syncFile, writeFileAtomic } from '../../core/files.js';
import type { TemplateManifest } from '../../core/schema-types.js';
import { isTemplateName, isTemplateVersion } from '../../core/versions.js';
import type {
  ArchiveReader,
  LifecycleChange,
  NewVersion,
  PublishedVersion,
  Reservation,
  StoredVersion,
  TokenRecord,
  VersionLifecycle,
  VersionStability,
  VersionStore,
  WebhookEventRecord,
} from '../types.js';
import { ownerOfSync, permission } from './tokens.js';
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
}

/** Every column but the manifest, which only a registry build needs. */
const VERSION_COLUMNS = 'name, version, state, integrity, sha256, size, owner, created_at, stability, deprecation_message, yanked_at';

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
});

/** The lifecycle columns of a row, as the optional fields of a version. */
function lifecycleOf(row: Pick<VersionRow, 'stability' | 'deprecation_message' | 'yanked_at'>): VersionLifecycle {
  return {
    ...(row.stability ? { stability: row.stability } : {}),
    ...(row.deprecation_message !== null ? { deprecationMessage: row.deprecation_message } : {}),
    ...(row.yanked_at ? { yankedAt: row.yanked_at } : {}),
  };
}

async function fileSha256(file: string): Promise<string | undefined> {
  try {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } catch {
    return undefined;
  }
}

/** The store holds token hashes and webhook secrets: its folders and files are its account's only. */
export const PRIVATE_FOLDER = 0o700;
export const PRIVATE_FILE = 0o600;

/** Creates `dir` (and its missing parents) private, whatever the umask. */
async function makePrivateFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_FOLDER });
  await chmod(dir, PRIVATE_FOLDER);
}

/** Where the files of the embedded store live, below its folder. */
export class StoreLayout {
  readonly archives: string;
  readonly manifests: string;
  readonly tmp: string;

  constructor(readonly dir: string) {
    this.archives = path.join(dir, 'archives');
    this.manifests = path.join(dir, 'manifests');
    this.tmp = path.join(dir, 'tmp');
  }

  archive(name: string, version: string): string {
    return path.join(this.archives, checkedName(name, version), `${version}.tgz`);
  }

  manifest(name: string, version: string): string {
    return path.join(this.manifests, checkedName(name, version), `${version}.json`);
  }
}

/** Names and versions become path segments: only ones following the manifest's rules do. */
function checkedName(name: string, version: string): string {
  if (!isTemplateName(name) || !isTemplateVersion(version)) throw new Error(`not a template name and version: ${name}@${version}`);
  return name;
}

/** Versions in SQLite; archives and manifests as files, `archives/<name>/<version>.tgz`, `manifests/<name>/<version>.json`. */
export class SqliteVersionStore implements VersionStore {
  constructor(
    private readonly db: Database.Database,
    readonly layout: StoreLayout,
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
        const owner = ownerOfSync(this.db, version.name);
        const allowed = permission(token, version.name, owner);
        if (!allowed.allowed) return { reserved: false, forbidden: allowed.reason };
        if (owner === undefined) this.db.prepare('INSERT INTO owners (name, owner, claimed_at) VALUES (?, ?, ?)').run(version.name, token.owner, createdAt);
        this.db
          .prepare("INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)")
          .run(version.name, version.version, version.integrity, version.sha256, version.size, token.owner, createdAt);
        return { reserved: true };
      })
      .immediate();
    return Promise.resolve(reservation);
  }

  async commitVersion(name: string, version: string, archiveFile: string, manifest: TemplateManifest, webhookEvents: readonly WebhookEventRecord[] = []): Promise<StoredVersion> {
    const archive = this.layout.archive(name, version);
    const manifestFile = this.layout.manifest(name, version);
    await makePrivateFolder(path.dirname(manifestFile));
    await writeFileAtomic(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`, { mode: PRIVATE_FILE });
    await makePrivateFolder(path.dirname(archive));
    // On disk, bytes and names, before the version is marked complete: 201 means stored.
    await chmod(archiveFile, PRIVATE_FILE);
    await syncFile(archiveFile);
    await rename(archiveFile, archive);
    await syncDirectory(path.dirname(archive));
    await syncDirectory(path.dirname(manifestFile));
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
    // Only a pending version's files are removed: a complete one (another upload's) stays whole.
    if (removed) {
      // Each removal on its own: a path that cannot even be reached (what made the commit fail) must not keep the other.
      await Promise.allSettled([rm(this.layout.archive(name, version), { force: true }), rm(this.layout.manifest(name, version), { force: true })]);
    }
  }

  async readManifest(name: string, version: string): Promise<TemplateManifest> {
    return JSON.parse(await readFile(this.layout.manifest(name, version), 'utf8')) as TemplateManifest;
  }

  async openArchive(name: string, version: string): Promise<ArchiveReader | undefined> {
    let file: string;
    try {
      file = this.layout.archive(name, version);
    } catch {
      return undefined;
    }
    return openFileStream(file);
  }

  updateLifecycle(name: string, version: string, change: LifecycleChange): Promise<{ version: StoredVersion; changed: boolean } | undefined> {
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
        if (changed) {
          this.db
            .prepare('UPDATE versions SET stability = ?, deprecation_message = ?, yanked_at = ? WHERE name = ? AND version = ?')
            .run(stability, message, yankedAt, name, version);
        }
        const updated = this.getSync(name, version);
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
    return path.join(this.layout.tmp, `${Date.now()}-${randomBytes(8).toString('hex')}${suffix}`);
  }

  /** Completes pending versions whose files are all in place, removes the others, and empties tmp/. */
  async recover(): Promise<void> {
    const pending = this.db.prepare("SELECT * FROM versions WHERE state = 'pending'").all() as VersionRow[];
    for (const row of pending) {
      const archive = this.layout.archive(row.name, row.version);
      const manifestFile = this.layout.manifest(row.name, row.version);
      let manifestOk: boolean;
      try {
        const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as TemplateManifest;
        manifestOk = manifest.name === row.name && manifest.version === row.version;
      } catch {
        manifestOk = false;
      }
      if (manifestOk && (await fileSha256(archive)) === row.sha256) {
        this.db.prepare("UPDATE versions SET state = 'complete' WHERE name = ? AND version = ?").run(row.name, row.version);
      } else {
        await rm(archive, { force: true });
        await rm(manifestFile, { force: true });
        this.db.prepare('DELETE FROM versions WHERE name = ? AND version = ?').run(row.name, row.version);
      }
    }
    for (const entry of await readdir(this.layout.tmp).catch(() => [] as string[])) {
      await rm(path.join(this.layout.tmp, entry), { recursive: true, force: true });
    }
  }
}
