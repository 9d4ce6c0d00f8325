/**
 * `template-registry db migrate`: creates or migrates the PostgreSQL schema ahead of a deploy (every
 * server also does at start, under the same advisory lock, so running both at once is safe).
 */
import type { Command } from 'commander';

import { checkDatabaseUrl, describeDatabase, migratePostgres, POSTGRES_SCHEMA_VERSION, StorageLocationError } from '../../store/index.js';
import { errorMessage } from '../../core/errors.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { DATABASE_OPTION, withoutPassword } from './backends.js';

export function registerDb(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const db = program.command('db').description(COMMAND_SUMMARIES.db.description);
  db.command('migrate')
    .description(`create or migrate the database schema to this release's version (${POSTGRES_SCHEMA_VERSION}); servers also do at start`)
    .option('--database <url>', DATABASE_OPTION)
    .option('--json', 'print the schema versions before and after as JSON')
    .action(async (flags: { database?: string; json?: boolean }) => {
      const fromFlag = flags.database !== undefined && flags.database.trim() !== '';
      const url = fromFlag ? flags.database : process.env.DATABASE_URL?.trim() ? process.env.DATABASE_URL : undefined;
      const argument = fromFlag ? '--database' : 'DATABASE_URL';
      if (url === undefined) throw new UsageError('db migrate needs --database postgres://user:password@host:port/database (or DATABASE_URL)');
      try {
        checkDatabaseUrl(url, argument);
      } catch (error) {
        if (error instanceof StorageLocationError) throw new UsageError(error.message);
        throw error;
      }
      const database = describeDatabase(url);
      let result;
      try {
        result = await migratePostgres(url);
      } catch (error) {
        // Named as every store command names it: the flag, or the variable it came from.
        throw new Error(`cannot migrate ${database} (${argument}): ${withoutPassword(errorMessage(error), url)}`, { cause: error });
      }
      const { from, to } = result;
      if (flags.json) io.stdout(`${JSON.stringify({ database, from, to, migrated: from !== to }, null, 2)}\n`);
      else if (from === to) io.stdout(`${database}: schema version ${to}, up to date\n`);
      else io.stdout(`${database}: schema version ${from} -> ${to}\n`);
      setExit(EXIT.ok);
    });
  for (const command of db.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
