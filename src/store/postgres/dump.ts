/**
 * The PostgreSQL store's rows as a `StoreDump` and back (what `store copy` uses): every table read
 * in one REPEATABLE READ snapshot, written into an empty database in one transaction. Ids of events
 * and delivery attempts are kept (their identity sequences moved past them); co-owners and outbox
 * deliveries get their `seq` from the order of the dump.
 */
import type pg from 'pg';

import type { StoreCounts, StoreDump, StoreDumper } from '../dump-types.js';
import { countsOfRow, countsStatement, dumpInserts, dumpOfRows, dumpSelects, STAGED_FILES_COUNT, type DumpDialect, type Row, type RowKind } from '../dump-format.js';
import { releasedOnce, type Claimable, type ClaimResult } from '../blob/claim.js';
import type { BlobStore } from '../types.js';
import { readAggregateRows, writeAggregateRows } from './analytics.js';
import { insertRows, transaction } from './database.js';

/** pg gives a `json` column parsed and takes a boolean and a timestamptz's ISO text as they are. */
const POSTGRES: DumpDialect = {
  backend: 'postgres',
  readJson: (value) => value,
  writeBool: (value) => value,
  writeMillis: (iso) => iso,
};

/** Reads every row in one read-only REPEATABLE READ transaction: one consistent snapshot. */
export async function readPostgresDump(pool: pg.Pool): Promise<StoreDump> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const rows = {} as Record<RowKind, Row[]>;
    for (const { kind, sql } of dumpSelects(POSTGRES)) rows[kind] = (await client.query<Row>(sql)).rows;
    const staged = (await client.query<Row>(STAGED_FILES_COUNT)).rows[0]?.n ?? 0;
    const dump = dumpOfRows(rows, POSTGRES, await readAggregateRows(client), Number(staged));
    await client.query('COMMIT');
    return dump;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** How many rows each table holds (one statement). */
export async function countPostgres(pool: pg.Pool): Promise<StoreCounts> {
  return countsOfRow((await pool.query<Row>(countsStatement())).rows[0] ?? {});
}

/** Writes a dump into the database in one transaction: every row or none. */
export async function loadPostgresDump(pool: pg.Pool, dump: StoreDump): Promise<void> {
  await transaction(pool, async (client) => {
    // In the dump's order: a `seq` column (co-owners', outbox deliveries', trusted publishers' order) follows it.
    const inserts = dumpInserts(dump, POSTGRES);
    for (const insert of inserts) {
      await insertRows(client, insert.table, insert.columns, insert.rows, { overriding: insert.keepsIds, ...(insert.suffix ? { suffix: insert.suffix } : {}) });
    }
    await writeAggregateRows(client, dump.analytics);
    // Ids given explicitly leave the identity sequences behind: the next ones follow the largest.
    for (const { table } of inserts.filter((insert) => insert.keepsIds)) {
      await client.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), max(id)) FROM ${table} HAVING max(id) IS NOT NULL`);
    }
  });
}

/** Fixed key of the advisory lock a `store copy` holds on its target ("tr-copy!" as a big-endian integer, like the build lock's). */
const COPY_LOCK_KEY = '8390818960839309601';

/**
 * Claims the database for one copy: a session advisory lock, tried (never waited for), on a
 * connection held until the claim is released. A copy that dies releases it with its connection.
 */
export async function claimPostgres(pool: pg.Pool): Promise<ClaimResult> {
  const client = await pool.connect();
  let claimed: boolean;
  try {
    const { rows } = await client.query<{ claimed: boolean }>(`SELECT pg_try_advisory_lock(${COPY_LOCK_KEY}) AS claimed`);
    claimed = rows[0]?.claimed === true;
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  if (!claimed) {
    client.release();
    return { busy: 'another store copy is running into it (it holds the copy lock of this database)' };
  }
  return {
    claimed: releasedOnce(async () => {
      try {
        await client.query(`SELECT pg_advisory_unlock(${COPY_LOCK_KEY})`);
        client.release();
      } catch (error) {
        // A connection whose unlock failed is closed, not pooled: closing it frees the lock.
        client.release(error as Error);
      }
    }),
  };
}

/** The dumper of a PostgreSQL store: its pool and its blob store; it claims the database for a copy (`claimPostgres`). */
export function postgresDumper(pool: pg.Pool, blobs: BlobStore, location = 'the PostgreSQL database'): StoreDumper & Claimable {
  return {
    backend: 'postgres',
    location,
    blobs,
    read: () => readPostgresDump(pool),
    counts: () => countPostgres(pool),
    load: (dump) => loadPostgresDump(pool, dump),
    claim: () => claimPostgres(pool),
  };
}
