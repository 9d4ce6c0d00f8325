import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

import Database from 'better-sqlite3';

import type { TemplateManifest } from '../core/schema-types.js';
import { writeFileAtomic } from '../core/files.js';
import { isTemplateName, isTemplateVersion, NAME_PATTERN } from '../core/versions.js';
import type { RegistrySource, SourceVersion } from '../registry/source.js';

export type TokenRole = 'publisher' | 'admin';

export interface TokenRecord {
  id: string;
  role: TokenRole;
  /** Names this token may publish; undefined means any name its owner may publish. */
  templates?: string[];
  /** Who the token publishes for: the first publish of a name claims it for this owner. */
  owner: string;
  createdAt: string;
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
}

export interface VersionUsage {
  downloads: number;
  lastDownload?: string;
}

export interface StoredEvent {
  type: string;
  templateId: string;
  version: string;
  timestamp: string;
  [field: string]: unknown;
}


const SCHEMA = `
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY,
  hash BLOB NOT NULL UNIQUE,
  role TEXT NOT NULL CHECK (role IN ('publisher', 'admin')),
  templates TEXT,
  owner TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS owners (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  claimed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'complete')),
  integrity TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  owner TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  type TEXT NOT NULL,
  template_id TEXT NOT NULL,
  version TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_template ON events (template_id, version, type);
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  active INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id TEXT NOT NULL,
  event TEXT NOT NULL,
  status INTEGER,
  attempted_at TEXT NOT NULL,
  error TEXT
);
`;

interface VersionRow {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  integrity: string;
  sha256: string;
  size: number;
  owner: string;
  created_at: string;
}

interface TokenRow {
  id: string;
  hash: Buffer;
  role: TokenRole;
  templates: string | null;
  owner: string;
  created_at: string;
}

const toVersion = (row: VersionRow): StoredVersion => ({
  name: row.name,
  version: row.version,
  state: row.state,
  integrity: row.integrity,
  sha256: row.sha256,
  size: row.size,
  owner: row.owner,
  createdAt: row.created_at,
});

const toToken = (row: TokenRow): TokenRecord => ({
  id: row.id,
  role: row.role,
  ...(row.templates ? { templates: JSON.parse(row.templates) as string[] } : {}),
  owner: row.owner,
  createdAt: row.created_at,
});

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Compares two secrets in constant time (through their digests, so lengths may differ). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
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

/**
 * The registry's embedded store: archives and manifests as files under one folder, metadata
 * (tokens, ownership, versions, events, webhooks) in SQLite beside them. Several processes may
 * open it at once (the server and `token create`): SQLite's WAL mode and busy timeout serialize
 * their writes, so a token created by the CLI is seen by the running server at once.
 */
export class RegistryStore {
  readonly dir: string;
  readonly publicDir: string;
  readonly tmpDir: string;
  private readonly db: Database.Database;

  private constructor(dir: string) {
    this.dir = path.resolve(dir);
    this.publicDir = path.join(this.dir, 'public');
    this.tmpDir = path.join(this.dir, 'tmp');
    for (const sub of ['archives', 'manifests', 'public', 'tmp']) mkdirSync(path.join(this.dir, sub), { recursive: true });
    this.db = new Database(path.join(this.dir, 'registry.sqlite'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
  }

  /** Opens (creating if needed) a store and finishes or undoes uploads a crash interrupted. */
  static async open(dir: string): Promise<RegistryStore> {
    const store = new RegistryStore(dir);
    await store.recover();
    return store;
  }

  close(): void {
    this.db.close();
  }

  archivePath(name: string, version: string): string {
    if (!isTemplateName(name) || !isTemplateVersion(version)) throw new Error(`not a template name and version: ${name}@${version}`);
    return path.join(this.dir, 'archives', name, `${version}.tgz`);
  }

  manifestPath(name: string, version: string): string {
    if (!isTemplateName(name) || !isTemplateVersion(version)) throw new Error(`not a template name and version: ${name}@${version}`);
    return path.join(this.dir, 'manifests', name, `${version}.json`);
  }

  /** A path for an upload in progress, on the store's file system so it can be renamed into place. */
  tempPath(suffix = ''): string {
    return path.join(this.tmpDir, `${Date.now()}-${randomBytes(8).toString('hex')}${suffix}`);
  }

  // ---- tokens ----

  /** Creates a token; the token itself is returned once and only its sha256 is stored. */
  createToken(options: { role: TokenRole; templates?: string[]; owner?: string; now?: Date }): { token: string; record: TokenRecord } {
    if (options.role !== 'publisher' && options.role !== 'admin') throw new Error(`role must be publisher or admin (got ${String(options.role)})`);
    for (const name of options.templates ?? []) {
      if (!isTemplateName(name)) throw new Error(`template name ${JSON.stringify(name)} must match ${NAME_PATTERN.source}`);
    }
    const id = `tok_${randomBytes(6).toString('hex')}`;
    const token = `trg_${randomBytes(32).toString('base64url')}`;
    const record: TokenRecord = {
      id,
      role: options.role,
      ...(options.templates && options.templates.length > 0 ? { templates: [...options.templates] } : {}),
      owner: options.owner ?? id,
      createdAt: (options.now ?? new Date()).toISOString(),
    };
    this.db
      .prepare('INSERT INTO tokens (id, hash, role, templates, owner, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(id, digest(token), record.role, record.templates ? JSON.stringify(record.templates) : null, record.owner, record.createdAt);
    return { token, record };
  }

  /** The token's record, or undefined for an unknown token. Compared in constant time. */
  authenticate(token: string): TokenRecord | undefined {
    if (token === '') return undefined;
    const presented = digest(token);
    const row = this.db.prepare('SELECT * FROM tokens WHERE hash = ?').get(presented) as TokenRow | undefined;
    if (!row || !timingSafeEqual(row.hash, presented)) return undefined;
    return toToken(row);
  }

  listTokens(): TokenRecord[] {
    return (this.db.prepare('SELECT * FROM tokens ORDER BY created_at, id').all() as TokenRow[]).map(toToken);
  }

  /** Whether a token may publish `name`, and why not. */
  canPublish(token: TokenRecord, name: string): { allowed: true } | { allowed: false; reason: string } {
    if (token.role === 'admin') return { allowed: true };
    if (token.templates && !token.templates.includes(name)) {
      return { allowed: false, reason: `this token may publish only ${token.templates.join(', ')}` };
    }
    const owner = this.ownerOf(name);
    if (owner !== undefined && owner !== token.owner) {
      return { allowed: false, reason: `template ${name} belongs to another publisher` };
    }
    return { allowed: true };
  }

  ownerOf(name: string): string | undefined {
    const row = this.db.prepare('SELECT owner FROM owners WHERE name = ?').get(name) as { owner: string } | undefined;
    return row?.owner;
  }

  // ---- versions ----

  getVersion(name: string, version: string): StoredVersion | undefined {
    const row = this.db.prepare('SELECT * FROM versions WHERE name = ? AND version = ?').get(name, version) as VersionRow | undefined;
    return row ? toVersion(row) : undefined;
  }

  /** Complete versions, by name then publication. */
  listVersions(): StoredVersion[] {
    return (this.db.prepare("SELECT * FROM versions WHERE state = 'complete' ORDER BY name, created_at").all() as VersionRow[]).map(toVersion);
  }

  /**
   * Reserves name@version for an upload and claims an unowned name for the publisher, in one
   * transaction: of concurrent uploads of one version exactly one gets `reserved`; the others get
   * the version that is there (pending or complete), whose integrity tells a re-run apart.
   */
  reserveVersion(
    version: Omit<StoredVersion, 'state' | 'createdAt'> & { createdAt?: string },
    token: TokenRecord,
  ): { reserved: true } | { reserved: false; existing: StoredVersion } | { reserved: false; forbidden: string } {
    const createdAt = version.createdAt ?? new Date().toISOString();
    return this.db.transaction(() => {
      const existing = this.getVersion(version.name, version.version);
      if (existing) return { reserved: false as const, existing };
      const permission = this.canPublish(token, version.name);
      if (!permission.allowed) return { reserved: false as const, forbidden: permission.reason };
      if (this.ownerOf(version.name) === undefined) {
        this.db.prepare('INSERT INTO owners (name, owner, claimed_at) VALUES (?, ?, ?)').run(version.name, token.owner, createdAt);
      }
      this.db
        .prepare("INSERT INTO versions (name, version, state, integrity, sha256, size, owner, created_at) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)")
        .run(version.name, version.version, version.integrity, version.sha256, version.size, token.owner, createdAt);
      return { reserved: true as const };
    }).immediate();
  }

  /** Moves a reserved upload's archive and manifest into place, then marks the version complete. */
  async commitVersion(name: string, version: string, archiveTemp: string, manifest: TemplateManifest): Promise<StoredVersion> {
    const archive = this.archivePath(name, version);
    await writeFileAtomic(this.manifestPath(name, version), `${JSON.stringify(manifest, null, 2)}\n`);
    await mkdir(path.dirname(archive), { recursive: true });
    await rename(archiveTemp, archive);
    this.db.prepare("UPDATE versions SET state = 'complete' WHERE name = ? AND version = ? AND state = 'pending'").run(name, version);
    const stored = this.getVersion(name, version);
    if (!stored) throw new Error(`version ${name}@${version} vanished while it was committed`);
    return stored;
  }

  /** Gives up a reservation (an upload that failed after reserving). */
  async abortVersion(name: string, version: string): Promise<void> {
    this.db.prepare("DELETE FROM versions WHERE name = ? AND version = ? AND state = 'pending'").run(name, version);
    await rm(this.manifestPath(name, version), { force: true });
  }

  async readManifest(name: string, version: string): Promise<TemplateManifest> {
    return JSON.parse(await readFile(this.manifestPath(name, version), 'utf8')) as TemplateManifest;
  }

  /** Completes pending uploads whose files are all in place and removes the rest; clears tmp/. */
  private async recover(): Promise<void> {
    const pending = this.db.prepare("SELECT * FROM versions WHERE state = 'pending'").all() as VersionRow[];
    for (const row of pending) {
      const archive = this.archivePath(row.name, row.version);
      const manifestFile = this.manifestPath(row.name, row.version);
      let manifestOk: boolean;
      try {
        const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as TemplateManifest;
        manifestOk = manifest.name === row.name && manifest.version === row.version;
      } catch {
        manifestOk = false;
      }
      if (manifestOk && (await fileSha256(archive)) === row.sha256) {
        this.db.prepare("UPDATE versions SET state = 'complete' WHERE name = ? AND version = ?").run(row.name, row.version);
      } else {
        rmSync(archive, { force: true });
        rmSync(manifestFile, { force: true });
        this.db.prepare('DELETE FROM versions WHERE name = ? AND version = ?').run(row.name, row.version);
      }
    }
    if (existsSync(this.tmpDir)) {
      for (const entry of readdirSync(this.tmpDir)) rmSync(path.join(this.tmpDir, entry), { recursive: true, force: true });
    }
  }

  // ---- events ----

  recordEvent(event: StoredEvent): void {
    const { type, templateId, version, timestamp, ...rest } = event;
    this.db
      .prepare('INSERT INTO events (type, template_id, version, timestamp, data) VALUES (?, ?, ?, ?, ?)')
      .run(type, templateId, version, timestamp, JSON.stringify(rest));
  }

  /** Download counts and last download per `name@version`. */
  usage(): Map<string, VersionUsage> {
    const rows = this.db
      .prepare("SELECT template_id, version, COUNT(*) AS downloads, MAX(timestamp) AS last FROM events WHERE type = 'download' GROUP BY template_id, version")
      .all() as { template_id: string; version: string; downloads: number; last: string }[];
    return new Map(rows.map((r) => [`${r.template_id}@${r.version}`, { downloads: r.downloads, lastDownload: r.last }]));
  }

  countEvents(type?: string): number {
    const row = (type
      ? this.db.prepare('SELECT COUNT(*) AS n FROM events WHERE type = ?').get(type)
      : this.db.prepare('SELECT COUNT(*) AS n FROM events').get()) as { n: number };
    return row.n;
  }

  // ---- webhooks and their deliveries ----
  // The signing secret is stored as given (it must be usable to sign deliveries, so it cannot be
  // hashed like tokens): the store folder must be readable by the server's account only.

  /** Registers a webhook; its id is new. */
  createWebhook(options: { url: string; events: readonly string[]; secret: string; active: boolean; now?: Date }): StoredWebhook {
    const webhook: StoredWebhook = {
      id: `wh_${randomBytes(8).toString('hex')}`,
      url: options.url,
      events: [...options.events],
      secret: options.secret,
      active: options.active,
      createdAt: (options.now ?? new Date()).toISOString(),
    };
    this.db
      .prepare('INSERT INTO webhooks (id, url, events, secret, active, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(webhook.id, webhook.url, JSON.stringify(webhook.events), webhook.secret, webhook.active ? 1 : 0, webhook.createdAt);
    return webhook;
  }

  getWebhook(id: string): StoredWebhook | undefined {
    const row = this.db.prepare('SELECT * FROM webhooks WHERE id = ?').get(id) as WebhookRow | undefined;
    return row ? toWebhook(row) : undefined;
  }

  /** Every webhook, oldest first (with their secrets: never send these to clients). */
  listWebhooks(): StoredWebhook[] {
    return (this.db.prepare('SELECT * FROM webhooks ORDER BY created_at, id').all() as WebhookRow[]).map(toWebhook);
  }

  /** Active webhooks subscribed to `event` (by name, `*`, or `<prefix>.*`). */
  webhooksFor(event: string): StoredWebhook[] {
    return this.listWebhooks().filter((w) => w.active && w.events.some((e) => eventMatches(e, event)));
  }

  /** Removes a webhook and its delivery log; false when there was none. */
  deleteWebhook(id: string): boolean {
    return this.db.transaction(() => {
      const removed = this.db.prepare('DELETE FROM webhooks WHERE id = ?').run(id).changes > 0;
      if (removed) this.db.prepare('DELETE FROM deliveries WHERE webhook_id = ?').run(id);
      return removed;
    })();
  }

  /** Records the start of a delivery attempt (status and error still null); returns its id. */
  startDelivery(webhookId: string, event: string, attemptedAt: Date = new Date()): string {
    const result = this.db
      .prepare('INSERT INTO deliveries (webhook_id, event, status, attempted_at, error) VALUES (?, ?, NULL, ?, NULL)')
      .run(webhookId, event, attemptedAt.toISOString());
    return String(result.lastInsertRowid);
  }

  /** Records how an attempt ended: the HTTP status (null without a response) and an error text, if any. */
  finishDelivery(id: string, status: number | null, error: string | null): void {
    this.db.prepare('UPDATE deliveries SET status = ?, error = ? WHERE id = ?').run(status, error, Number(id));
  }

  /** A webhook's most recent attempts, newest first. */
  listDeliveries(webhookId: string, limit = 20): DeliveryRecord[] {
    const rows = this.db
      .prepare('SELECT * FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?')
      .all(webhookId, limit) as DeliveryRow[];
    return rows.map(toDelivery);
  }

  /** Keeps a webhook's `keep` most recent attempts and removes older ones. */
  pruneDeliveries(webhookId: string, keep: number): void {
    this.db
      .prepare('DELETE FROM deliveries WHERE webhook_id = ? AND id NOT IN (SELECT id FROM deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?)')
      .run(webhookId, webhookId, keep);
  }
}

/** The store as a source of the registry generator; archive URLs are immutable per version. */
export function storeSource(store: RegistryStore, publicUrl: string): RegistrySource {
  const base = publicUrl.replace(/\/+$/, '');
  return {
    async versions(): Promise<SourceVersion[]> {
      const usage = store.usage();
      const result: SourceVersion[] = [];
      for (const stored of store.listVersions()) {
        const manifest = await store.readManifest(stored.name, stored.version);
        const used = usage.get(`${stored.name}@${stored.version}`);
        result.push({
          manifest,
          downloadUrl: `${base}/templates/${stored.name}/versions/${stored.version}/archive`,
          integrity: stored.integrity,
          sha256: stored.sha256,
          size: stored.size,
          createdAt: stored.createdAt,
          documentationUrl: `${base}/templates/${stored.name}/versions/${stored.version}`,
          ...(manifest.repository?.url ? { repositoryUrl: manifest.repository.url } : {}),
          stats: {
            downloads: used?.downloads ?? 0,
            stars: 0,
            forks: 0,
            issues: 0,
            ...(used?.lastDownload ? { lastDownload: used.lastDownload } : {}),
          },
        });
      }
      return result;
    },
  };
}

// ---- webhook records (used by the webhook block of RegistryStore) ----

/** A registered webhook, secret included (see the webhook block of RegistryStore). */
export interface StoredWebhook {
  id: string;
  url: string;
  events: string[];
  secret: string;
  active: boolean;
  createdAt: string;
}

/** One delivery attempt of an event to a webhook. */
export interface DeliveryRecord {
  id: string;
  webhookId: string;
  event: string;
  /** HTTP status of the answer; null when there was none (network error, time-out, not sent). */
  status: number | null;
  attemptedAt: string;
  error: string | null;
}

interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret: string;
  active: number;
  created_at: string;
}

interface DeliveryRow {
  id: number;
  webhook_id: string;
  event: string;
  status: number | null;
  attempted_at: string;
  error: string | null;
}

const toWebhook = (row: WebhookRow): StoredWebhook => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  secret: row.secret,
  active: row.active !== 0,
  createdAt: row.created_at,
});

const toDelivery = (row: DeliveryRow): DeliveryRecord => ({
  id: String(row.id),
  webhookId: row.webhook_id,
  event: row.event,
  status: row.status,
  attemptedAt: row.attempted_at,
  error: row.error,
});

/** Whether a subscription (`template.published`, `template.*` or `*`) covers an event. */
export function eventMatches(subscription: string, event: string): boolean {
  if (subscription === '*' || subscription === event) return true;
  return subscription.endsWith('.*') && event.startsWith(subscription.slice(0, -1));
}
