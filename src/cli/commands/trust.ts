/**
 * `template-registry trust add|list|remove <id>`: the trusted publishers of a template name on a
 * registry server (trusted publishing: a GitHub Actions workflow publishes with a short-lived token
 * exchanged for its OIDC ID token, no stored secret). `add` on a name nobody has published saves a
 * pending one: the first publish through it claims the name for the caller. Calls
 * `/templates/{id}/trusted-publishers` with the token of `--token` or `TEMPLATE_REGISTRY_TOKEN`.
 * Exit codes: 0 done, 1 the server refused or could not be reached, 2 a usage error.
 */
import type { Command } from 'commander';

import { errorMessage } from '../../core/errors.js';
import { isTemplateName } from '../../core/versions.js';
import type { TrustedPublisherView } from '../../server/routes/trusted-publishers.js';
import { GITHUB_ACTIONS_ISSUER, REF_PATTERN, REPOSITORY_PATTERN, WORKFLOW_PATTERN } from '../../core/trusted-publisher-fields.js';
import { EXIT, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { apiClientOf, REGISTRY_FLAG_HELP, serverOf, tokenFlagHelp, type ServerFlags, type WriteServer } from '../write-api.js';
import { redactor } from '../../publish/api-client.js';

interface TrustFlags extends ServerFlags {
  repo?: string;
  workflow?: string;
  environment?: string;
  ref?: string;
  ownerId?: string;
  issuer?: string;
  id?: string;
}


/** A JSON request through the write API client; the answer's `data`, or its RegistryApiError (the server's message and details). */
function request(server: WriteServer, method: string, route: string, body?: unknown): Promise<unknown> {
  return apiClientOf(server).json(method, route, body);
}

/** `.github/workflows/publish.yml` or `publish.yml`: the file name the server keeps. */
const workflowFile = (value: string): string => value.trim().replace(/^\.?\/?\.github\/workflows\//, '');

/** One line of `trust list`. */
function describe(record: TrustedPublisherView): string {
  const parts = [`${record.id}  ${record.repository}  .github/workflows/${record.workflow}`];
  if (record.environment !== undefined) parts.push(`environment ${record.environment}`);
  if (record.ref !== undefined) parts.push(`ref ${record.ref}`);
  if (record.issuer !== GITHUB_ACTIONS_ISSUER) parts.push(`issuer ${record.issuer}`);
  parts.push(`owner id ${record.repositoryOwnerId}`);
  if (record.pending) parts.push('pending (the first publish through it claims the name)');
  return parts.join(', ');
}

export function registerTrust(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const usage = (message: string): void => {
    io.stderr(`error: ${message}\n`);
    setExit(EXIT.usage);
  };
  const attempt = async (token: string, work: () => Promise<void>): Promise<void> => {
    try {
      await work();
      setExit(EXIT.ok);
    } catch (error) {
      io.stderr(`error: ${redactor(token)(errorMessage(error))}\n`);
      setExit(EXIT.failure);
    }
  };
  const publishersPath = (id: string): string => `/templates/${encodeURIComponent(id)}/trusted-publishers`;
  /** The repository and workflow flags, checked; a usage message when they are missing or malformed. */
  const target = (flags: TrustFlags): { repository: string; workflow: string } | string => {
    if (flags.repo === undefined || flags.workflow === undefined) return 'give --repo owner/name and --workflow <file> (e.g. --repo acme/web-app --workflow publish.yml)';
    const repository = flags.repo.trim();
    const workflow = workflowFile(flags.workflow);
    if (!REPOSITORY_PATTERN.test(repository)) return `--repo must be owner/name as GitHub spells it (got ${JSON.stringify(flags.repo)})`;
    if (!WORKFLOW_PATTERN.test(workflow)) return `--workflow must be a file of .github/workflows ending in .yml or .yaml (got ${JSON.stringify(flags.workflow)})`;
    return { repository, workflow };
  };
  const common = (command: Command): Command =>
    command
      .option('--registry <url>', REGISTRY_FLAG_HELP)
      .option('--token <token>', tokenFlagHelp('an owner of the template or an admin'))
      .option('--json', 'print the result as JSON');

  const trust = program
    .command('trust')
    .description(COMMAND_SUMMARIES.trust.description);

  common(
    trust
      .command('add')
      .description('trust a workflow to publish a template (on a name nobody has published: pending, the first publish through it claims the name for you)')
      .argument('<id>', 'the template id')
      .option('--repo <owner/name>', 'the GitHub repository the workflow is in')
      .option('--workflow <file>', 'the workflow file in .github/workflows (e.g. publish.yml)')
      .option('--environment <name>', 'the deployment environment the publishing job must run in (recommended, with protection rules)')
      .option('--ref <pattern>', 'a pattern the git ref of the run must match, * for any characters (e.g. refs/tags/v*)')
      .option('--owner-id <id>', "the numeric id of the repository's owner, pinned (default: read from GitHub by the server)")
      .option('--issuer <url>', `the OIDC issuer of the ID tokens (default ${GITHUB_ACTIONS_ISSUER}; GitHub Enterprise Server: https://<host>/_services/token)`),
  ).action(async (id: string, flags: TrustFlags) => {
    if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
    const what = target(flags);
    if (typeof what === 'string') return usage(what);
    if (flags.ref !== undefined && !REF_PATTERN.test(flags.ref)) return usage(`--ref must be a git ref pattern starting with refs/ (e.g. refs/tags/v*; got ${JSON.stringify(flags.ref)})`);
    if (flags.ownerId !== undefined && !/^[1-9][0-9]{0,19}$/.test(flags.ownerId)) return usage(`--owner-id must be a number (got ${JSON.stringify(flags.ownerId)})`);
    if (flags.environment !== undefined && flags.environment.trim() === '') return usage('--environment must not be empty');
    const server = serverOf(flags);
    if (typeof server === 'string') return usage(server);
    await attempt(server.token, async () => {
      const body = {
        ...what,
        ...(flags.environment !== undefined ? { environment: flags.environment.trim() } : {}),
        ...(flags.ref !== undefined ? { ref: flags.ref } : {}),
        ...(flags.ownerId !== undefined ? { repositoryOwnerId: flags.ownerId } : {}),
        ...(flags.issuer !== undefined ? { issuer: flags.issuer } : {}),
      };
      const record = (await request(server, 'POST', publishersPath(id), body)) as TrustedPublisherView;
      if (flags.json) return io.stdout(`${JSON.stringify(record, null, 2)}\n`);
      io.stdout(`${id} trusts ${describe(record)}\n`);
      if (record.pending) io.stdout(`nobody has published ${id} yet: the first publish through this workflow claims it for you\n`);
    });
  });

  common(trust.command('list').description('list the trusted publishers of a template').argument('<id>', 'the template id')).action(async (id: string, flags: TrustFlags) => {
    if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
    const server = serverOf(flags);
    if (typeof server === 'string') return usage(server);
    await attempt(server.token, async () => {
      const data = (await request(server, 'GET', publishersPath(id))) as { trustedPublishers: TrustedPublisherView[] };
      if (flags.json) return io.stdout(`${JSON.stringify(data.trustedPublishers, null, 2)}\n`);
      if (data.trustedPublishers.length === 0) return io.stdout(`${id} has no trusted publishers (add one with: template-registry trust add ${id} --repo owner/name --workflow publish.yml)\n`);
      io.stdout(`${data.trustedPublishers.map(describe).join('\n')}\n`);
    });
  });

  common(
    trust
      .command('remove')
      .description("stop trusting a workflow: its tokens stop publishing at once")
      .argument('<id>', 'the template id')
      .option('--repo <owner/name>', 'the GitHub repository the workflow is in')
      .option('--workflow <file>', 'the workflow file in .github/workflows')
      .option('--environment <name>', 'only the trusted publisher with this environment')
      .option('--id <publisherId>', 'the trusted publisher to remove by its id (tp_..., see trust list), instead of --repo and --workflow'),
  ).action(async (id: string, flags: TrustFlags) => {
    if (!isTemplateName(id)) return usage(`${JSON.stringify(id)} is not a template id`);
    let route: string;
    if (flags.id !== undefined) {
      if (!/^tp_[0-9a-f]{12}$/.test(flags.id)) return usage(`--id must be a trusted publisher id such as tp_0123456789ab (got ${JSON.stringify(flags.id)})`);
      route = `${publishersPath(id)}/${flags.id}`;
    } else {
      const what = target(flags);
      if (typeof what === 'string') return usage(what);
      const query = new URLSearchParams({ ...what, ...(flags.environment !== undefined ? { environment: flags.environment.trim() } : {}) });
      route = `${publishersPath(id)}?${query.toString()}`;
    }
    const server = serverOf(flags);
    if (typeof server === 'string') return usage(server);
    await attempt(server.token, async () => {
      await request(server, 'DELETE', route);
      const left = (await request(server, 'GET', publishersPath(id))) as { trustedPublishers: TrustedPublisherView[] };
      if (flags.json) return io.stdout(`${JSON.stringify(left.trustedPublishers, null, 2)}\n`);
      io.stdout(`removed; ${id} has ${left.trustedPublishers.length} trusted publisher${left.trustedPublishers.length === 1 ? '' : 's'} left\n`);
    });
  });

  for (const command of trust.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
