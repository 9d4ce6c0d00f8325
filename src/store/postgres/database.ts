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
