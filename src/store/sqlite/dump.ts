/**
 * The embedded store's rows as a `StoreDump` and back (what `store copy` uses): every table read in
 * one read transaction, written into an empty store in one IMMEDIATE transaction.
 */
import type Database from 'better-sqlite3';

import type { StoreCounts, StoreDump, StoreDumper } from '../dump-types.js';
import { countsOfRow, countsStatement, dumpInserts, dumpOfRows, dumpSelects, STAGED_FILES_COUNT, type DumpDialect, type Row, type RowKind } from '../dump-format.js';
import { claimLockFile, type Claimable } from '../blob/claim.js';
import type { BlobStore } from '../types.js';
import { readAggregateRows, writeAggregateRows } from './analytics.js';
import { placeholder } from './database.js';
import { insertStatement } from '../rows.js';

/** SQLite keeps JSON as its text, a boolean as 0 or 1, and the outbox's due time in milliseconds. */
const SQLITE: DumpDialect = {
  backend: 'sqlite',
  readJson: (value) => JSON.parse(typeof value === 'string' ? value : String(value)) as unknown,
  writeBool: (value) => (value ? 1 : 0),
  writeMillis: (iso) => Date.parse(iso),
};

/** Reads every row of the database (one read transaction: a consistent snapshot under WAL). */
export function readSqliteDump(db: Database.Database): StoreDump {
  return db.transaction((): StoreDump => {
    const rows = Object.fromEntries(dumpSelects(SQLITE).map(({ kind, sql }) => [kind, db.prepare(sql).all() as Row[]])) as Record<RowKind, Row[]>;
    return dumpOfRows(rows, SQLITE, readAggregateRows(db), Number((db.prepare(STAGED_FILES_COUNT).get() as Row).n));
  })();
}

/** How many rows each table holds. */
export function countSqlite(db: Database.Database): StoreCounts {
  return countsOfRow(db.prepare(countsStatement()).get() as Row);
}

/** Writes a dump into the database in one transaction: every row or none. */
export function loadSqliteDump(db: Database.Database, dump: StoreDump): void {
  db.transaction(() => {
    // Ids given explicitly move AUTOINCREMENT past them by themselves.
    for (const insert of dumpInserts(dump, SQLITE)) {
      const statement = db.prepare(`${insertStatement(insert.table, insert.columns, placeholder)} ${insert.suffix}`);
      for (const values of insert.rows) statement.run(...values);
    }
    writeAggregateRows(db, dump.analytics);
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
