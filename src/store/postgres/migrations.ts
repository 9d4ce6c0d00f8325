/**
 * The PostgreSQL schema, versioned: `MIGRATIONS[n]` takes it from version n to n + 1, each in its own
 * transaction with its row in `schema_migrations`. Several instances may start at once on one
 * database: a session-level advisory lock lets one migrate while the others wait, then see it done.
 *
 * Instants the store makes are `timestamptz` (read back as `toISOString()`); text keys are
 * `COLLATE "C"` so listings sort by bytes as the embedded store's do, whatever the database's locale.
 * Manifests and event data are `json`, not `jsonb`: their key order is kept as written.
 */
import pg from 'pg';

import { attemptIdGenerator } from '../attempt-ids.js';
import { runStep, stepsToRun, type SchemaStep } from '../schema-steps.js';
import { ANALYTICS_TABLES_SQL, backfillAggregates } from './analytics.js';

type Migration = SchemaStep<pg.ClientBase, Promise<void>>;

/**
 * Gives every delivery attempt its external id (`attempt_id`): the log's row number was its id until
 * then, and clients saw it. Made from each attempt's time, in row order, so the ids of the older
 * attempts sort as they did and before the ones made from now on. The column's default (a random
 * UUID) is for an instance of the previous release still running during an upgrade: its attempts
 * get an id too, though not a time-ordered one.
 */
async function addAttemptIds(client: pg.ClientBase): Promise<void> {
  await client.query('ALTER TABLE deliveries ADD COLUMN attempt_id text COLLATE "C"');
  const { rows } = await client.query<{ id: string; attempted_at: Date }>('SELECT id, attempted_at FROM deliveries ORDER BY id');
  const next = attemptIdGenerator();
  const ids = rows.map((row) => next(row.attempted_at));
  await client.query('UPDATE deliveries d SET attempt_id = v.attempt_id FROM unnest($1::bigint[], $2::text[]) AS v (id, attempt_id) WHERE d.id = v.id', [
    rows.map((row) => row.id),
    ids,
  ]);
  await client.query('ALTER TABLE deliveries ALTER COLUMN attempt_id SET DEFAULT gen_random_uuid()::text, ALTER COLUMN attempt_id SET NOT NULL, ADD CONSTRAINT deliveries_attempt_id_key UNIQUE (attempt_id)');
}

const MIGRATIONS: readonly Migration[] = [
  // 1: everything the embedded store has at its schema 8, plus `reserved_at` (when a pending version
  // was reserved, by the database's clock, for recover()'s grace period) and `claimed_at` of staged files.
  `
CREATE TABLE tokens (
  id text COLLATE "C" PRIMARY KEY,
  hash bytea NOT NULL UNIQUE,
  role text NOT NULL CHECK (role IN ('publisher', 'admin')),
  templates json,
  owner text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE TABLE owners (
  name text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL,
  claimed_at timestamptz NOT NULL
);
CREATE TABLE co_owners (
  name text COLLATE "C" NOT NULL REFERENCES owners (name) ON DELETE CASCADE,
  owner text NOT NULL,
  added_at timestamptz NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (name, owner)
);
CREATE TABLE versions (
  name text COLLATE "C" NOT NULL,
  version text COLLATE "C" NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'complete')),
  integrity text NOT NULL,
  sha256 text NOT NULL,
  size bigint NOT NULL,
  owner text NOT NULL,
  created_at timestamptz NOT NULL,
  reserved_at timestamptz NOT NULL DEFAULT now(),
  manifest json,
  stability text CHECK (stability IN ('experimental', 'beta', 'stable', 'deprecated')),
  deprecation_message text,
  yanked_at timestamptz,
  PRIMARY KEY (name, version)
);
CREATE INDEX versions_pending ON versions (reserved_at) WHERE state = 'pending';
CREATE TABLE events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  type text NOT NULL,
  template_id text NOT NULL,
  version text NOT NULL,
  timestamp text NOT NULL,
  data json NOT NULL,
  client text,
  received_at timestamptz
);
CREATE INDEX events_by_template ON events (template_id, version, type);
CREATE INDEX events_by_type ON events (type);
CREATE TABLE webhooks (
  id text COLLATE "C" PRIMARY KEY,
  url text NOT NULL,
  events json NOT NULL,
  secret text NOT NULL,
  active boolean NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE TABLE deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id text NOT NULL,
  event text NOT NULL,
  status integer,
  attempted_at timestamptz NOT NULL,
  error text,
  delivery_id text
);
CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, id);
CREATE TABLE webhook_outbox (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  webhook_id text NOT NULL,
  event text NOT NULL,
  body text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  last_status integer,
  last_error text
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_outbox_by_webhook ON webhook_outbox (webhook_id, seq);
CREATE TABLE staged_files (
  id text PRIMARY KEY,
  token_id text NOT NULL,
  filename text NOT NULL,
  content_type text NOT NULL,
  capability bytea NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'uploaded', 'confirmed', 'claimed')),
  size bigint,
  sha256 text,
  integrity text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  claimed_at timestamptz
);
CREATE INDEX staged_files_by_expiry ON staged_files (expires_at);
CREATE TABLE users (
  id text COLLATE "C" PRIMARY KEY,
  email text NOT NULL UNIQUE,
  password_hash text NOT NULL,
  role text NOT NULL CHECK (role IN ('publisher', 'admin')),
  owner text NOT NULL,
  name text,
  created_at timestamptz NOT NULL
);
CREATE TABLE sessions (
  hash bytea PRIMARY KEY,
  family text NOT NULL,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('refresh', 'cookie')),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  replaced_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX sessions_by_family ON sessions (family);
CREATE TABLE settings (
  key text PRIMARY KEY,
  value bytea NOT NULL
);
`,
  // 2: who holds a pending version: `reservation` (one id per reservation: only its holder commits or
  // aborts it) and `reserved_by` (the instance, whose liveness is a session advisory lock it holds:
  // a retry of an upload whose instance died takes the reservation over at once).
  `
ALTER TABLE versions ADD COLUMN reservation text, ADD COLUMN reserved_by text;
`,
  // 3: the external id of each delivery attempt (X-Webhook-Delivery), in place of its row number.
  addAttemptIds,
  // 4: trusted publishing: the CI workflows trusted to publish each name (pending ones, for an
  // unclaimed name, carry the owner the first publish claims it for), the ID tokens already
  // exchanged (each once, on every instance: the primary key; kept until it expires), and the CI
  // run of a token minted for one and of each version published with such a token. Written to run
  // again harmlessly (IF NOT EXISTS): a database set back to an older schema number keeps them.
  `
ALTER TABLE tokens ADD COLUMN IF NOT EXISTS publisher json;
ALTER TABLE versions ADD COLUMN IF NOT EXISTS publisher json;
CREATE TABLE IF NOT EXISTS trusted_publishers (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  template text COLLATE "C" NOT NULL,
  issuer text COLLATE "C" NOT NULL,
  repository text NOT NULL,
  repository_key text COLLATE "C" NOT NULL,
  repository_owner_id text NOT NULL,
  workflow text NOT NULL,
  environment text,
  ref text,
  pending_owner text,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS trusted_publishers_by_template ON trusted_publishers (template, seq);
CREATE INDEX IF NOT EXISTS trusted_publishers_by_repository ON trusted_publishers (issuer, repository_key);
CREATE TABLE IF NOT EXISTS oidc_id_tokens (
  issuer text COLLATE "C" NOT NULL,
  jti text COLLATE "C" NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (issuer, jti)
);
CREATE INDEX IF NOT EXISTS oidc_id_tokens_by_expiry ON oidc_id_tokens (expires_at);
`,
  // 5: logins counted before their password is checked (failed ones stay until their window ends),
  // per account (the e-mail, lower-cased) and client address. Runs again harmlessly, as 4 does.
  `
CREATE TABLE IF NOT EXISTS login_attempts (
  id text COLLATE "C" PRIMARY KEY,
  account text NOT NULL,
  address text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS login_attempts_by_account ON login_attempts (account, at);
CREATE INDEX IF NOT EXISTS login_attempts_by_address ON login_attempts (address, at);
CREATE INDEX IF NOT EXISTS login_attempts_by_time ON login_attempts (at);
`,
  // 6: analytics aggregates, kept as events arrive (records and stats no longer read every event),
  // filled from the events stored until then.
  async (client) => {
    await client.query(ANALYTICS_TABLES_SQL);
    await backfillAggregates(client);
  },
  // 7: build provenance: what the verified Sigstore bundle of a version says (its signer, predicate
  // type and run); the bundle itself is a blob beside the archive.
  'ALTER TABLE versions ADD COLUMN IF NOT EXISTS attestation json;',
  // 8: webhook secret rotation: the secret a PUT or PATCH replaced keeps signing deliveries (beside
  // the new one) until previous_secret_expires_at. Purged versions: a version removed for good
  // (archive, manifest, row) leaves its name and version here, so that they are never used again.
  `
ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS previous_secret text;
ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS previous_secret_expires_at timestamptz;
CREATE TABLE IF NOT EXISTS purged_versions (
  name text NOT NULL,
  version text NOT NULL,
  purged_at timestamptz NOT NULL,
  PRIMARY KEY (name, version)
);
`,
  // 9: the purge outbox: one row per CDN target of the URLs a change touched, retried until the CDN
  // accepts the purge (also after a restart, by whichever instance has the target); `seq` keeps the
  // order they were written. IF NOT EXISTS: harmless to run again.
  `
CREATE TABLE IF NOT EXISTS purge_jobs (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text COLLATE "C" PRIMARY KEY,
  target text COLLATE "C" NOT NULL,
  urls jsonb NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  last_error text
);
CREATE INDEX IF NOT EXISTS purge_jobs_due ON purge_jobs (state, next_attempt_at);
`,
  // 10: a rebuild lists the keys of the published versions and their lifecycle: read from indexes,
  // not from rows that carry whole manifests.
  `
CREATE INDEX IF NOT EXISTS versions_complete_keys ON versions (state, name, version);
CREATE INDEX IF NOT EXISTS versions_with_lifecycle ON versions (name, version) WHERE stability IS NOT NULL OR deprecation_message IS NOT NULL OR yanked_at IS NOT NULL;
`,
];

/** The schema version this release writes. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** Fixed key of the advisory lock held while migrating ("tr-migr" as a big-endian integer). */
const MIGRATION_LOCK_KEY = '32776636733155186';

/** The database's schema is newer than this release knows (migrated by a later release). */
export class PostgresSchemaError extends Error {
  override readonly name = 'PostgresSchemaError';
}

/** A database URL fit for messages: its password left out. */
export function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    parsed.search = '';
    return parsed.toString();
  } catch {
    return 'the PostgreSQL database';
  }
}

export interface MigrationResult {
  /** The schema version found. */
  from: number;
  /** The schema version left (this release's). */
  to: number;
}

/** Applies the migrations `client`'s database lacks, under the migration lock. */
export async function migrateWith(client: pg.ClientBase, where: string): Promise<MigrationResult> {
  await client.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const found = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
    const current = found.rows[0]?.version ?? 0;
    for (const [index, step] of stepsToRun(MIGRATIONS, current, where, PostgresSchemaError).entries()) {
      await client.query('BEGIN');
      try {
        await runStep(step, client, async (sql) => void (await client.query(sql)));
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [current + index + 1]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    }
    return { from: current, to: Math.max(current, MIGRATIONS.length) };
  } finally {
    await client.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => undefined);
  }
}

/** Creates or migrates the schema of the database at `url` (what `template-registry db migrate` runs). */
export async function migratePostgres(url: string): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: url });
  // A connection dropped mid-migration rejects the pending query; the client must not also throw from an event.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await migrateWith(client, describeDatabase(url));
  } finally {
    await client.end().catch(() => undefined);
  }
}
