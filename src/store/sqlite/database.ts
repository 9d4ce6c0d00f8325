/**
 * The SQLite database of the embedded store, its schema versioned with `PRAGMA user_version`:
 * `MIGRATIONS[n]` takes the schema from version n to n + 1, in one transaction. A store made before
 * the schema was versioned (user_version 0, tables present) takes migration 1 as is: it only
 * creates what is missing.
 */
import Database from 'better-sqlite3';

import { attemptIdGenerator } from '../attempt-ids.js';
import { runStep, stepsToRun, type SchemaStep } from '../schema-steps.js';
import { ANALYTICS_TABLES_SQL, backfillAggregates } from './analytics.js';

type Migration = SchemaStep<Database.Database, void>;

/**
 * Gives every delivery attempt its external id (`attempt_id`): the log's row number was its id
 * until then, and clients saw it. Made from each attempt's time, in row order, so the ids of the
 * older attempts sort as they did and before the ones made from now on.
 */
function addAttemptIds(db: Database.Database): void {
  db.exec('ALTER TABLE deliveries ADD COLUMN attempt_id TEXT');
  const rows = db.prepare('SELECT id, attempted_at FROM deliveries ORDER BY id').all() as { id: number; attempted_at: string }[];
  const set = db.prepare('UPDATE deliveries SET attempt_id = ? WHERE id = ?');
  const next = attemptIdGenerator();
  for (const row of rows) set.run(next(new Date(row.attempted_at)), row.id);
  db.exec('CREATE UNIQUE INDEX IF NOT EXISTS deliveries_by_attempt_id ON deliveries (attempt_id)');
}

/** Adds a column unless the table has it (a store rolled back to an older schema number may keep later columns). */
function addColumn(db: Database.Database, table: string, column: string, type: string): void {
  const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[];
  if (!columns.includes(column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

function addTrustedPublishing(db: Database.Database): void {
  addColumn(db, 'tokens', 'publisher', 'TEXT');
  addColumn(db, 'versions', 'publisher', 'TEXT');
  db.exec(`
CREATE TABLE IF NOT EXISTS trusted_publishers (
  id TEXT PRIMARY KEY,
  template TEXT NOT NULL,
  issuer TEXT NOT NULL,
  repository TEXT NOT NULL,
  repository_key TEXT NOT NULL,
  repository_owner_id TEXT NOT NULL,
  workflow TEXT NOT NULL,
  environment TEXT,
  ref TEXT,
  pending_owner TEXT,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trusted_publishers_by_template ON trusted_publishers (template);
CREATE INDEX IF NOT EXISTS trusted_publishers_by_repository ON trusted_publishers (issuer, repository_key);
CREATE TABLE IF NOT EXISTS oidc_id_tokens (
  issuer TEXT NOT NULL,
  jti TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (issuer, jti)
);
CREATE INDEX IF NOT EXISTS oidc_id_tokens_by_expiry ON oidc_id_tokens (expires_at);
`);
}

const MIGRATIONS: readonly Migration[] = [
  // 1: tokens, owners, versions, events, webhooks, deliveries.
  `
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
`,
  // 2: who sent each event (a hash of the client address) and when the server got it, so that a
  // client counts one download per version per day.
  `
ALTER TABLE events ADD COLUMN client TEXT;
ALTER TABLE events ADD COLUMN received_at TEXT;
`,
  // 3: token lifetimes: when a token expires, when it was revoked (the row stays, for the audit
  // trail), when it was last used. Existing tokens get none of them: they keep working as before.
  `
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE tokens ADD COLUMN revoked_at TEXT;
ALTER TABLE tokens ADD COLUMN last_used_at TEXT;
`,
  // 4: the manifest of each version beside its row, so a registry build reads every manifest in one
  // query. Versions stored before have none until they are listed (read from their file then).
  `
ALTER TABLE versions ADD COLUMN manifest TEXT;
`,
  // 5: large uploads: files staged through /files (their bytes in files/), used once by a publish.
  `
CREATE TABLE IF NOT EXISTS staged_files (
  id TEXT PRIMARY KEY,
  token_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  content_type TEXT NOT NULL,
  capability BLOB NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'uploaded', 'confirmed', 'claimed')),
  size INTEGER,
  sha256 TEXT,
  integrity TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS staged_files_by_expiry ON staged_files (expires_at);
`,
  // 6: version lifecycle (the archive and manifest never change): the stability set after publication
  // (null: the manifest's), the deprecation message, and when the version was yanked.
  `
ALTER TABLE versions ADD COLUMN stability TEXT;
ALTER TABLE versions ADD COLUMN deprecation_message TEXT;
ALTER TABLE versions ADD COLUMN yanked_at TEXT;
`,
  // 7: webhook outbox: one row per delivery of an event to a webhook, written in the transaction of the
  // change that raised it, retried from here (also after a restart); each attempt in `deliveries`
  // names its delivery.
  `
CREATE TABLE IF NOT EXISTS webhook_outbox (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  event TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  last_status INTEGER,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_outbox_by_webhook ON webhook_outbox (webhook_id);
ALTER TABLE deliveries ADD COLUMN delivery_id TEXT;
`,
  // 8: accounts (e-mail and password hash), their sessions (refresh tokens and browser sessions, by
  // hash, in families so a reused refresh token ends the family), settings (the access-token signing
  // key), and co-owners of template names (the claimer stays in owners).
  `
CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('publisher', 'admin')),
  owner TEXT NOT NULL,
  name TEXT,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
  hash BLOB PRIMARY KEY,
  family TEXT NOT NULL,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('refresh', 'cookie')),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  replaced_at TEXT,
  revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_family ON sessions (family);
CREATE TABLE IF NOT EXISTS settings (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS co_owners (
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  added_at TEXT NOT NULL,
  PRIMARY KEY (name, owner)
);
`,
  // 9: the external id of each delivery attempt (X-Webhook-Delivery), in place of its row number.
  addAttemptIds,
  // 10: trusted publishing: the CI workflows trusted to publish each name (pending ones, for an
  // unclaimed name, carry the owner the first publish claims it for), the ID tokens already
  // exchanged (each once, kept until it expires), and the CI run of a token minted for one and of
  // each version published with such a token.
  addTrustedPublishing,
  // 11: logins counted before their password is checked (failed ones stay until their window ends),
  // per account (the e-mail, lower-cased) and client address; \`at\` in ms since the epoch.
  `
CREATE TABLE IF NOT EXISTS login_attempts (
  id TEXT PRIMARY KEY,
  account TEXT NOT NULL,
  address TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS login_attempts_by_account ON login_attempts (account, at);
CREATE INDEX IF NOT EXISTS login_attempts_by_address ON login_attempts (address, at);
CREATE INDEX IF NOT EXISTS login_attempts_by_time ON login_attempts (at);
`,
  // 12: analytics aggregates, kept as events arrive (records and stats no longer read every event),
  // filled from the events stored until then.
  (db) => {
    db.exec(ANALYTICS_TABLES_SQL);
    backfillAggregates(db);
  },
  // 13: build provenance: what the verified Sigstore bundle of a version says (its signer, predicate
  // type and run); the bundle itself is a blob beside the archive.
  (db) => addColumn(db, 'versions', 'attestation', 'TEXT'),
  // 14: webhook secret rotation: the secret a PUT or PATCH replaced keeps signing deliveries (beside
  // the new one) until previous_secret_expires_at. Purged versions: a version removed for good
  // (archive, manifest, row) leaves its name and version here, so that they are never used again.
  (db) => {
    addColumn(db, 'webhooks', 'previous_secret', 'TEXT');
    addColumn(db, 'webhooks', 'previous_secret_expires_at', 'TEXT');
    db.exec('CREATE TABLE IF NOT EXISTS purged_versions (name TEXT NOT NULL, version TEXT NOT NULL, purged_at TEXT NOT NULL, PRIMARY KEY (name, version))');
  },
  // 15: the purge outbox: one row per CDN target of the URLs a change touched, retried until the CDN
  // accepts the purge (also after a restart); `urls` a JSON array, `next_attempt_at` in ms since the epoch.
  // IF NOT EXISTS: harmless to run again.
  `
CREATE TABLE IF NOT EXISTS purge_jobs (
  id TEXT PRIMARY KEY,
  target TEXT NOT NULL,
  urls TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS purge_jobs_due ON purge_jobs (state, next_attempt_at);
`,
  // 16: a rebuild lists the keys of the published versions and their lifecycle: read from indexes,
  // not from rows that carry whole manifests (100,000 versions: 5 ms instead of 150 ms).
  `
CREATE INDEX IF NOT EXISTS versions_complete_keys ON versions (state, name, version);
CREATE INDEX IF NOT EXISTS versions_with_lifecycle ON versions (name, version) WHERE stability IS NOT NULL OR deprecation_message IS NOT NULL OR yanked_at IS NOT NULL;
`,
];

/** The schema version this release writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The store's schema is newer than this release knows (made by a later release). */
export class StoreVersionError extends Error {
  override readonly name = 'StoreVersionError';
}

/** Applies the migrations the database lacks; `file` names it in errors. */
export function migrate(db: Database.Database, file: string): void {
  // IMMEDIATE: of several processes opening one store at once, one migrates, the others wait and see it done.
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    for (const step of stepsToRun(MIGRATIONS, current, file, StoreVersionError)) runStep(step, db, (sql) => void db.exec(sql));
    if (current !== MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/** Opens (creating) the database with WAL, full sync and a busy timeout, and migrates it. */
export function openDatabase(file: string): Database.Database {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    migrate(db, file);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** How a statement of this dialect marks a parameter (`store/rows.ts` `insertStatement`). */
export const placeholder = (): string => '?';
