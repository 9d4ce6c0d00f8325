/**
 * `template-registry deprecate <id>[@<range>]` and `template-registry yank <id>@<version>`: the
 * version lifecycle on a registry server (published bytes never change). `deprecate` sends one
 * `PATCH /templates/bulk` (every version of the id in the semver range); `yank` sends
 * `DELETE /templates/{id}/versions/{version}`. `owner ls|add|rm` manage who owns a template name
 * (`/templates/{id}/owners`). Exit codes: 0 done, 1 the server refused or could not be reached, 2 a
 * usage error.
 */
import type { Command } from 'commander';

import { errorMessage } from '../../core/errors.js';
import { redactor } from '../../publish/api-client.js';
import { isValidRange, isTemplateName, VERSION_PATTERN } from '../../core/versions.js';
import { EXIT, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { apiClientOf, REGISTRY_FLAG_HELP, serverOf, writeApiOptions, type ServerFlags, type WriteServer } from '../write-api.js';

export { serverOf, type ServerFlags } from '../write-api.js';

interface DeprecateFlags extends ServerFlags {
  message?: string;
}

/** `id@spec` split at the first `@` (template names hold none); `spec` undefined without one. */
function splitTarget(target: string): { id: string; spec: string | undefined } {
  const at = target.indexOf('@');
  return at === -1 ? { id: target, spec: undefined } : { id: target.slice(0, at), spec: target.slice(at + 1) };
}

/** Sends a JSON request through the write API client; the `data` of the answer, or its RegistryApiError. */
function send(server: WriteServer, method: string, path: string, body?: unknown): Promise<unknown> {
  return apiClientOf(server).json(method, path, body);
}

export function registerLifecycle(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const usage = (message: string): void => {
    io.stderr(`error: ${message}\n`);
    setExit(EXIT.usage);
  };
  /** Runs a request; prints its error and sets exit 1 when it fails. */
  const attempt = async (server: { token: string }, work: () => Promise<void>): Promise<void> => {
    try {
      await work();
      setExit(EXIT.ok);
    } catch (error) {
      io.stderr(`error: ${redactor(server.token)(errorMessage(error))}\n`);
      setExit(EXIT.failure);
    }
  };

  writeApiOptions(
    program
      .command('deprecate')
      .description(COMMAND_SUMMARIES.deprecate.description)
      .argument('<target>', 'id@range: the template id and a semver range of its versions (e.g. web-app@<2.0.0, web-app@1.x); id alone: every version')
      .option('--message <text>', 'why, and what to use instead (shown by clients and the catalog)'),
    "the template's owner or an admin",
  )
    .option('--json', 'print the result as JSON')
    .action(async (target: string, flags: DeprecateFlags) => {
      const { id, spec } = splitTarget(target);
      if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
      if (spec !== undefined && !isValidRange(spec)) return usage(`${JSON.stringify(spec)} is not a version or a semver range`);
      if (flags.message !== undefined && flags.message.trim() === '') return usage('--message must not be empty');
      const server = serverOf(flags);
      if (typeof server === 'string') return usage(server);
      await attempt(server, async () => {
        const update = { stability: 'deprecated', ...(flags.message === undefined ? {} : { deprecationMessage: flags.message }) };
        const data = (await send(server, 'PATCH', '/templates/bulk', { filter: { id, ...(spec === undefined ? {} : { version: spec }) }, update })) as {
          changed: number;
          versions: string[];
        };
        if (flags.json) io.stdout(`${JSON.stringify({ id, range: spec ?? '*', ...data }, null, 2)}\n`);
        else if (data.changed === 0) io.stdout(`no version of ${id} in ${spec ?? '*'} changed (already deprecated, or none matches)\n`);
        else io.stdout(`deprecated ${data.changed} version${data.changed === 1 ? '' : 's'} of ${id}: ${data.versions.join(', ')}\n`);
      });
    });

  writeApiOptions(
    program
      .command('yank')
      .description(COMMAND_SUMMARIES.yank.description)
      .argument('<target>', 'id@version'),
    "the template's owner or an admin",
  )
    .option('--json', 'print the yanked entry as JSON')
    .action(async (target: string, flags: ServerFlags) => {
      const { id, spec } = splitTarget(target);
      if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
      if (spec === undefined || !VERSION_PATTERN.test(spec)) return usage(`give the exact version to yank: ${id}@MAJOR.MINOR.PATCH`);
      const server = serverOf(flags);
      if (typeof server === 'string') return usage(server);
      await attempt(server, async () => {
        const entry = await send(server, 'DELETE', `/templates/${encodeURIComponent(id)}/versions/${encodeURIComponent(spec)}`);
        if (flags.json) io.stdout(`${JSON.stringify(entry, null, 2)}\n`);
        else io.stdout(`yanked ${id}@${spec}: still downloadable as ${id}@${spec}, no longer chosen as the latest\n`);
      });
    });

  const owner = program.command('owner').description(COMMAND_SUMMARIES.owner.description);
  const ownersPath = (id: string): string => `/templates/${encodeURIComponent(id)}/owners`;
  const printOwners = (data: unknown, flags: ServerFlags): void => {
    const { owners } = data as { owners: { owner: string; claimer: boolean }[] };
    if (flags.json) io.stdout(`${JSON.stringify(data, null, 2)}\n`);
    else io.stdout(`${owners.map((entry) => `${entry.owner}${entry.claimer ? ' (first publisher)' : ''}`).join('\n')}\n`);
  };
  owner
    .command('ls')
    .description('list the owners of a template name')
    .argument('<id>', 'the template id')
    .option('--registry <url>', REGISTRY_FLAG_HELP)
    .option('--json', 'print the owners as JSON')
    .action(async (id: string, flags: ServerFlags) => {
      if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
      const server = serverOf(flags, false);
      if (typeof server === 'string') return usage(server);
      await attempt(server, async () => printOwners(await send(server, 'GET', ownersPath(id)), flags));
    });
  writeApiOptions(
    owner
      .command('add')
      .description("add a co-owner of a template name (the caller must own it, or be an admin)")
      .argument('<id>', 'the template id')
      .argument('<owner>', "the owner to add: an owner name as tokens carry it, or an account's e-mail"),
    'an owner of the template or an admin',
  )
    .option('--json', 'print the owners as JSON')
    .action(async (id: string, name: string, flags: ServerFlags) => {
      if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
      if (name.trim() === '') return usage('the owner must not be empty');
      const server = serverOf(flags);
      if (typeof server === 'string') return usage(server);
      await attempt(server, async () => printOwners(await send(server, 'POST', ownersPath(id), { owner: name.trim() }), flags));
    });
  writeApiOptions(
    owner
      .command('rm')
      .description('remove an owner of a template name (never the last one)')
      .argument('<id>', 'the template id')
      .argument('<owner>', 'the owner to remove'),
    'an owner of the template or an admin',
  )
    .option('--json', 'print the owners left as JSON')
    .action(async (id: string, name: string, flags: ServerFlags) => {
      if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
      const server = serverOf(flags);
      if (typeof server === 'string') return usage(server);
      await attempt(server, async () => {
        await send(server, 'DELETE', `${ownersPath(id)}/${encodeURIComponent(name)}`);
        printOwners(await send(server, 'GET', ownersPath(id)), flags);
      });
    });
  for (const command of owner.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
