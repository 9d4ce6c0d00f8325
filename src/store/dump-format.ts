/**
 * A `StoreDump` as rows, one description for both backends: the tables in the order they are
 * written, each with the order its rows are read in and what each column holds (which dump field,
 * as what type). A backend only reads and writes rows (`sqlite/dump.ts`, `postgres/dump.ts`); how
 * its driver gives and takes a JSON column, a boolean and an instant kept in milliseconds is its
 * `DumpDialect`, all that differs.
 */
import { repositoryKey } from './records.js';
import type { StoreCounts, StoreDump } from './dump-types.js';

export type DumpBackend = 'sqlite' | 'postgres';

/** The kinds of a dump that are rows of one table each. */
export type RowKind = Exclude<keyof StoreDump, 'analytics' | 'stagedFilesSkipped'>;
type RecordOf<K extends RowKind> = StoreDump[K][number];
export type Row = Record<string, unknown>;

/**
 * What a column holds: text, a number, an instant (ISO 8601 in the dump), an instant the embedded
 * store keeps in milliseconds since the epoch, JSON, bytes or a boolean. Null stays null (which
 * fields may be null: the record types, `store/dump-types.ts`).
 */
export type ColumnType = 'text' | 'int' | 'time' | 'millis' | 'json' | 'bytes' | 'bool';

/** How one driver gives and takes the columns whose form differs between the backends. */
export interface DumpDialect {
  readonly backend: DumpBackend;
  /** A JSON column's value as read, parsed (SQLite gives its text, pg the parsed value). */
  readJson(value: unknown): unknown;
  /** A boolean as a parameter (SQLite: 0 or 1). */
  writeBool(value: boolean): unknown;
  /** An instant of a `millis` column as a parameter (SQLite: milliseconds since the epoch; pg: the ISO text, for a timestamptz). */
  writeMillis(iso: string): unknown;
}

export interface DumpTable<K extends RowKind> {
  kind: K;
  table: string;
  /**
   * The order rows are read in: the order the store keeps (and lists) them, so that the target, which
   * inserts them in this order, keeps it. Given per backend where each keeps insertion order its own way
   * (SQLite's rowid, PostgreSQL's `seq`).
   */
  order: string | Record<DumpBackend, string>;
  /** Each field of the record and its column's type, in the order of the INSERT; the column is the field's name in snake_case. */
  columns: { [F in keyof RecordOf<K>]-?: ColumnType };
  /** Columns of the row made from the record (kept for lookups, not in the dump). */
  derived?: Record<string, (record: RecordOf<K>) => unknown>;
  /** The rows keep their `id` (an identity column in PostgreSQL, which must then move its sequence past them). */
  keepsIds?: true;
  /** Rows that replace one of the same key (the only table a target may already hold rows of). */
  replacesOn?: string;
}

/** A table as the code that walks every table sees it (its record type erased). */
type AnyDumpTable = Omit<DumpTable<RowKind>, 'columns' | 'derived'> & {
  columns: Readonly<Record<string, ColumnType>>;
  derived?: Readonly<Record<string, (record: never) => unknown>>;
};

/** A table, checked against its kind's record: every field has a column. */
const table = <K extends RowKind>(spec: DumpTable<K>): AnyDumpTable => spec;

/** Every table of a dump, in the order they are written (a row before the rows that refer to it). */
export const DUMP_TABLES: readonly AnyDumpTable[] = [
  table({
    kind: 'tokens',
    table: 'tokens',
    order: 'created_at, id',
    columns: { id: 'text', hash: 'bytes', role: 'text', templates: 'json', owner: 'text', createdAt: 'time', expiresAt: 'time', revokedAt: 'time', lastUsedAt: 'time', publisher: 'json' },
  }),
  table({ kind: 'owners', table: 'owners', order: 'name', columns: { name: 'text', owner: 'text', claimedAt: 'time' } }),
  table({ kind: 'coOwners', table: 'co_owners', order: { sqlite: 'rowid', postgres: 'seq' }, columns: { name: 'text', owner: 'text', addedAt: 'time' } }),
  table({
    kind: 'versions',
    table: 'versions',
    order: 'name, created_at, version',
    columns: { name: 'text', version: 'text', state: 'text', integrity: 'text', sha256: 'text', size: 'int', owner: 'text', createdAt: 'time', manifest: 'json', stability: 'text', deprecationMessage: 'text', yankedAt: 'time', publisher: 'json', attestation: 'json' },
  }),
  // `timestamp` as the client sent it: text, never read as an instant.
  table({
    kind: 'events',
    table: 'events',
    order: 'id',
    keepsIds: true,
    columns: { id: 'int', type: 'text', templateId: 'text', version: 'text', timestamp: 'text', data: 'json', client: 'text', receivedAt: 'time' },
  }),
  table({
    kind: 'webhooks',
    table: 'webhooks',
    order: 'created_at, id',
    columns: { id: 'text', url: 'text', events: 'json', secret: 'text', active: 'bool', createdAt: 'time', previousSecret: 'text', previousSecretExpiresAt: 'time' },
  }),
  table({
    kind: 'outbox',
    table: 'webhook_outbox',
    order: { sqlite: 'rowid', postgres: 'seq' },
    columns: { id: 'text', webhookId: 'text', event: 'text', body: 'text', state: 'text', attempts: 'int', nextAttemptAt: 'millis', createdAt: 'time', updatedAt: 'time', lastStatus: 'int', lastError: 'text' },
  }),
  table({
    kind: 'deliveryAttempts',
    table: 'deliveries',
    order: 'id',
    keepsIds: true,
    columns: { id: 'int', attemptId: 'text', webhookId: 'text', event: 'text', status: 'int', attemptedAt: 'time', error: 'text', deliveryId: 'text' },
  }),
  table({
    kind: 'users',
    table: 'users',
    order: 'created_at, id',
    columns: { id: 'text', email: 'text', passwordHash: 'text', role: 'text', owner: 'text', name: 'text', createdAt: 'time' },
  }),
  // Sessions keep no order of their own: by time, then by hash, the same on both backends.
  table({
    kind: 'sessions',
    table: 'sessions',
    order: 'created_at, hash',
    columns: { hash: 'bytes', family: 'text', userId: 'text', kind: 'text', createdAt: 'time', expiresAt: 'time', replacedAt: 'time', revokedAt: 'time' },
  }),
  table({ kind: 'settings', table: 'settings', order: 'key', replacesOn: 'key', columns: { key: 'text', value: 'bytes' } }),
  table({
    kind: 'trustedPublishers',
    table: 'trusted_publishers',
    order: { sqlite: 'rowid', postgres: 'seq' },
    columns: { id: 'text', template: 'text', issuer: 'text', repository: 'text', repositoryOwnerId: 'text', workflow: 'text', environment: 'text', ref: 'text', pendingOwner: 'text', createdBy: 'text', createdAt: 'time' },
    derived: { repository_key: (record) => repositoryKey(record.repository) },
  }),
  table({ kind: 'usedIdTokens', table: 'oidc_id_tokens', order: 'expires_at, issuer, jti', columns: { issuer: 'text', jti: 'text', expiresAt: 'time' } }),
  table({ kind: 'purgedVersions', table: 'purged_versions', order: 'name, version', columns: { name: 'text', version: 'text', purgedAt: 'time' } }),
];

/** The table whose rows are counted as `analytics` (a version with aggregates has one row there), and the staged files' (not dumped). */
const COUNTED_ONLY: Record<Exclude<keyof StoreCounts, RowKind>, string> = { analytics: 'analytics_totals', stagedFiles: 'staged_files' };

/** One statement both dialects run: the row count of every kind, each in a column named after it. */
export function countsStatement(): string {
  const tables: [string, string][] = [...DUMP_TABLES.map((spec): [string, string] => [spec.kind, spec.table]), ...Object.entries(COUNTED_ONLY)];
  return `SELECT ${tables.map(([kind, name]) => `(SELECT count(*) FROM ${name}) AS "${kind}"`).join(', ')}`;
}

/** The counts of `countsStatement`'s row (a driver may give a count as text). */
export function countsOfRow(row: Row): StoreCounts {
  const kinds = [...DUMP_TABLES.map((spec) => spec.kind), ...(Object.keys(COUNTED_ONLY) as (keyof typeof COUNTED_ONLY)[])];
  return Object.fromEntries(kinds.map((kind) => [kind, Number(row[kind] ?? 0)])) as StoreCounts;
}

/** How many rows of each kind a dump holds (`stagedFiles`: none, they are never dumped). */
export function countsOfDump(dump: StoreDump): StoreCounts {
  const rows = Object.fromEntries(DUMP_TABLES.map((spec) => [spec.kind, rowsOf(dump, spec.kind).length]));
  return { ...rows, analytics: dump.analytics.totals.length, stagedFiles: 0 } as StoreCounts;
}

/** The statement counting the staged files a dump skips. */
export const STAGED_FILES_COUNT = `SELECT count(*) AS n FROM ${COUNTED_ONLY.stagedFiles}`;

/** The SELECT of each kind's rows, in its order on the dialect's backend (a backend runs them all in one snapshot). */
export function dumpSelects({ backend }: DumpDialect): { kind: RowKind; sql: string }[] {
  return DUMP_TABLES.map((spec) => ({ kind: spec.kind, sql: `SELECT * FROM ${spec.table} ORDER BY ${typeof spec.order === 'string' ? spec.order : spec.order[backend]}` }));
}

/** A column's value as text (drivers give text columns as strings; a number only where a schema changed). */
const text = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? value.toString() : JSON.stringify(value));

/** An instant as read: ISO 8601 text (kept as it is), milliseconds since the epoch, or a Date. */
const instant = (value: unknown): string => (value instanceof Date ? value.toISOString() : typeof value === 'number' ? new Date(value).toISOString() : text(value));

function readColumn(type: ColumnType, value: unknown, dialect: DumpDialect): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      return text(value);
    case 'int':
      return Number(value);
    case 'time':
    case 'millis':
      return instant(value);
    case 'json':
      return dialect.readJson(value);
    case 'bytes':
      return Buffer.isBuffer(value) ? value : Buffer.from(value as Uint8Array);
    case 'bool':
      // SQLite keeps 0 or 1, pg a boolean.
      return Number(value) !== 0;
  }
}

function writeColumn(type: ColumnType, value: unknown, dialect: DumpDialect): unknown {
  // A field an older dump lacks is written as null.
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'json':
      // As its text: pg would send an array as a PostgreSQL array.
      return JSON.stringify(value);
    case 'bool':
      return dialect.writeBool(value === true);
    case 'millis':
      return dialect.writeMillis(value as string);
    default:
      return value;
  }
}

/** A field's column: its name in snake_case (`createdAt`: `created_at`). */
const columnOf = (field: string): string => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** Each field of a table's records with its column and the column's type, in the order of the INSERT. */
const columnsOf = (spec: AnyDumpTable): [field: string, column: string, type: ColumnType][] => Object.entries(spec.columns).map(([field, type]) => [field, columnOf(field), type]);

/** A row of `spec`'s table as its dump record. */
function recordOfRow(spec: AnyDumpTable, row: Row, dialect: DumpDialect): Record<string, unknown> {
  return Object.fromEntries(columnsOf(spec).map(([field, column, type]) => [field, readColumn(type, row[column], dialect)]));
}

/** The rows of a kind in a dump; none where the dump has no such kind (made before the kind existed). */
function rowsOf(dump: StoreDump, kind: RowKind): readonly Record<string, unknown>[] {
  return (dump[kind] as unknown as Record<string, unknown>[] | undefined) ?? [];
}

/** What a backend writes of one table: its INSERT's columns and every row's values in their order. */
export interface TableInsert {
  table: string;
  columns: string[];
  rows: unknown[][];
  keepsIds: boolean;
  /** What the INSERT ends with (both dialects write an upsert alike), or ''. */
  suffix: string;
}

/** The inserts that write `dump`'s rows, table by table in `DUMP_TABLES`' order. */
export function dumpInserts(dump: StoreDump, dialect: DumpDialect): TableInsert[] {
  return DUMP_TABLES.map((spec): TableInsert => {
    const columns = columnsOf(spec);
    const derived = Object.entries(spec.derived ?? {});
    return {
      table: spec.table,
      columns: [...columns.map(([, column]) => column), ...derived.map(([column]) => column)],
      rows: rowsOf(dump, spec.kind).map((record) => [
        ...columns.map(([field, , type]) => writeColumn(type, record[field], dialect)),
        ...derived.map(([, make]) => (make as (record: unknown) => unknown)(record)),
      ]),
      keepsIds: spec.keepsIds === true,
      suffix: spec.replacesOn ? `ON CONFLICT (${spec.replacesOn}) DO UPDATE SET ${columns.filter(([, column]) => column !== spec.replacesOn).map(([, column]) => `${column} = excluded.${column}`).join(', ')}` : '',
    };
  });
}

/** The dump of a store from the rows of each kind (read by `dumpSelects`, in one snapshot), its analytics aggregates and its count of staged files. */
export function dumpOfRows(rows: Readonly<Record<RowKind, Row[]>>, dialect: DumpDialect, analytics: StoreDump['analytics'], stagedFilesSkipped: number): StoreDump {
  const kinds = Object.fromEntries(DUMP_TABLES.map((spec) => [spec.kind, rows[spec.kind].map((row) => recordOfRow(spec, row, dialect))]));
  return { ...(kinds as unknown as Pick<StoreDump, RowKind>), analytics, stagedFilesSkipped };
}
