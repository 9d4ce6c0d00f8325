import type pg from 'pg';

/** What runs queries: the pool, or one client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/**
 * Runs `work` in one transaction on one client of the pool: committed when it resolves, rolled back
 * when it throws. A client whose rollback fails is broken and is destroyed, not returned to the pool.
 */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

/** An instant as the records give it: ISO 8601 in UTC, milliseconds included. */
export function iso(value: Date): string;
export function iso(value: Date | null): string | undefined;
export function iso(value: Date | null): string | undefined {
  return value === null ? undefined : value.toISOString();
}

/** A `bigint` column (pg returns it as text: it may exceed 2^53, ours never do). */
export function int(value: string | number): number {
  return typeof value === 'number' ? value : Number(value);
}

/** A PostgreSQL error (it has a SQLSTATE), as opposed to a bug of ours. */
export function isDatabaseError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/** Rows per INSERT statement: well under PostgreSQL's 65535 parameters for the widest table. */
const BATCH = 500;

/** Inserts `rows` (each the values of `columns`, in order) in multi-row statements. */
export async function insertRows(client: Pick<pg.ClientBase, 'query'>, table: string, columns: readonly string[], rows: readonly unknown[][], options: { overriding?: boolean; suffix?: string } = {}): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH) {
    const batch = rows.slice(start, start + BATCH);
    const values = batch.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
    await client.query(
      `INSERT INTO ${table} (${columns.join(', ')})${options.overriding ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES ${values}${options.suffix ? ` ${options.suffix}` : ''}`,
      batch.flat(),
    );
  }
}

/** How a statement of this dialect marks the parameter at `index` (from 0) (`store/rows.ts` `insertStatement`). */
export const placeholder = (index: number): string => `$${index + 1}`;
