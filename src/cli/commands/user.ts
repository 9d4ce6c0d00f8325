/**
 * `template-registry user create|list`: accounts of a store, made by whoever runs the server (the
 * HTTP route `POST /users` does the same for an admin credential). The password comes from standard
 * input (`--password-stdin`, so it is never in the shell history or the process list), from
 * `--password`, or is made up and printed once.
 */
import { randomBytes } from 'node:crypto';

import type { Command } from 'commander';

import { AccountInputError, createAccount } from '../../server/index.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { addBackendOptions, withStoreForCommand, type BackendFlags } from './backends.js';

function parseRole(role: string): 'publisher' | 'admin' {
  if (role !== 'publisher' && role !== 'admin') throw new UsageError(`--role must be publisher or admin (got ${JSON.stringify(role)})`);
  return role;
}

/** The password from standard input: its first line, without the line ending. */
async function passwordFromStdin(io: CliIo): Promise<string> {
  if (!io.readStdin) throw new UsageError('--password-stdin: this shell has no standard input');
  const [line = ''] = (await io.readStdin()).split(/\r?\n/);
  if (line === '') throw new UsageError('--password-stdin: standard input is empty (pipe the password in, e.g. `printf %s "$PASSWORD" | template-registry user create ...`)');
  return line;
}

export function registerUser(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const user = program.command('user').description(COMMAND_SUMMARIES.user.description);
  addBackendOptions(
    user
      .command('create')
      .description('create a publisher or admin account')
      .requiredOption('--email <email>', 'the e-mail the account logs in with (unique)')
      .option('--password-stdin', 'read the password from standard input (default: make one up and print it once)')
    .option('--password <password>', 'the password (visible to other users of this machine in the process list: prefer --password-stdin)')
      .option('--role <role>', 'publisher or admin', 'publisher')
      .option('--owner <owner>', 'who the account publishes for (default: the e-mail)')
      .option('--name <name>', 'a display name'),
  )
    .option('--json', 'print the account as JSON')
    .action(async (flags: BackendFlags & { email: string; passwordStdin?: boolean; password?: string; role: string; owner?: string; name?: string; json?: boolean }) => {
      const role = parseRole(flags.role);
      if (flags.password !== undefined && flags.passwordStdin) throw new UsageError('give the password one way: --password or --password-stdin');
      const made = flags.passwordStdin || flags.password !== undefined ? undefined : randomBytes(18).toString('base64url');
      const password = made ?? flags.password ?? (await passwordFromStdin(io));
      setExit(
        await withStoreForCommand(flags, { create: true }, async (store) => {
          try {
            const creation = await createAccount(store.accounts, {
              email: flags.email,
              password,
              role,
              ...(flags.owner ? { owner: flags.owner } : {}),
              ...(flags.name ? { name: flags.name } : {}),
            });
            if (!creation.created) {
              io.stderr(`error: EMAIL_EXISTS: an account with the e-mail ${flags.email.trim().toLowerCase()} exists already in ${store.where}\n`);
              return EXIT.failure;
            }
            const account = creation.user;
            if (flags.json) io.stdout(`${JSON.stringify({ ...account, ...(made ? { password: made } : {}) }, null, 2)}\n`);
            else {
              io.stdout(made ? `${made}\n` : `${account.id}\n`);
              io.stderr(`created ${account.role} account ${account.id} for ${account.email} (owner ${account.owner})${made ? '; its password is shown only once' : ''}\n`);
            }
            return EXIT.ok;
          } catch (error) {
            if (error instanceof AccountInputError) throw new UsageError(error.details.map((detail) => `--${detail.field} ${detail.message}`).join('; '));
            throw error;
          }
        }),
      );
    });
  addBackendOptions(user.command('list').description('list the accounts of a store (never their passwords)'))
    .option('--json', 'print the accounts as a JSON array')
    .action(async (flags: BackendFlags & { json?: boolean }) => {
      setExit(
        await withStoreForCommand(flags, { create: false }, async (store) => {
          const users = await store.accounts.listUsers();
          if (flags.json) io.stdout(`${JSON.stringify(users, null, 2)}\n`);
          else if (users.length === 0) io.stdout(`no accounts in ${store.where} (create one with: template-registry user create --email <email>)\n`);
          else io.stdout(users.map((account) => `${account.id}  ${account.role.padEnd(9)}  ${account.email}  owner ${account.owner}\n`).join(''));
          return EXIT.ok;
        }),
      );
    });
  for (const command of user.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
