/**
 * A real PostgreSQL for tests, from the machine's Debian package: `initdb` into a temp folder, one
 * server per test file on a free port of 127.0.0.1, one fresh database per storage. Tests that need it
 * are skipped (saying why) only when the binaries are missing; `.ci/run` installs the package.
 */
import { afterAll, beforeAll } from 'vitest';

import { postgresSkipReason, startPostgres, type PostgresServer } from './postgres-server.js';

export { postgresBinDir, postgresSkipReason, startPostgres, type PostgresServer } from './postgres-server.js';

if (postgresSkipReason) console.warn(postgresSkipReason);

/**
 * One server for the calling test file: started in beforeAll, stopped in afterAll. Call at the top
 * level of a file (or inside a `describe.skipIf(postgresSkipReason)`); `createDatabase` is usable
 * from the tests.
 */
export function usePostgres(): { createDatabase(): Promise<string>; server(): PostgresServer } {
  let running: PostgresServer | undefined;
  beforeAll(async () => {
    running = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await running?.stop();
  }, 30_000);
  const get = (): PostgresServer => {
    if (!running) throw new Error('PostgreSQL is not running (usePostgres starts it in beforeAll)');
    return running;
  };
  return { createDatabase: () => get().createDatabase(), server: get };
}
