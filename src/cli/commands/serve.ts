import path from 'node:path';

import type { Command } from 'commander';

import { loadSigstoreTrust } from '../../archive/index.js';
import { createServer } from '../../server/app.js';
import { DEFAULT_LIMITS, type ServerLimits } from '../../server/context.js';
import { DEFAULT_EVENT_RETENTION_DAYS } from '../../server/event-retention.js';
import { DEFAULT_STATS_REFRESH_MS } from '../../server/stats-refresh.js';
import { WEBHOOK_ALLOW_PRIVATE_ENV } from '../../server/webhooks/targets.js';
import { parseAddressRanges } from '../../core/ip-addresses.js';
import { DEFAULT_GITHUB_API_URL } from '../../server/github-accounts.js';
import { GITHUB_ACTIONS_ISSUER, trustedIssuers } from '../../server/oidc.js';
import { tokenState, type TokenRecord, type TokenState } from '../../store/index.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { stderrStyle } from '../style.js';
import { errorMessage } from '../../core/errors.js';
import { addBackendOptions, DEFAULT_STORE, openStoreForCommand, withStoreForCommand, type BackendFlags } from './backends.js';
import { addPurgeOptions, cdnUrlFrom, purgeTargetsFrom, type PurgeFlags } from './purge-flags.js';
import { SIGN_KEY_ENV, signingKeysFrom } from '../sign-key.js';

export { DEFAULT_STORE, openStoreForCommand, withStoreForCommand, type CommandStorage } from './backends.js';

function positiveInteger(name: string, value: string | undefined, fallback: number, least = 1): number {
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < least) throw new UsageError(`${name} must be a ${least === 0 ? 'whole number, 0 or more' : 'positive whole number'} (got ${JSON.stringify(value)})`);
  return number;
}

/**
 * `--trust-proxy`: a number of proxy hops, or the proxies' addresses (comma-separated, CIDR
 * allowed). Trusting "everything" (the leftmost X-Forwarded-For) is not offered: any client could
 * name its own address.
 */
function parseTrustProxy(value: string | undefined): number | string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1) throw new UsageError(`--trust-proxy must be a number of hops >= 1 or proxy addresses (got ${JSON.stringify(value)})`);
    return hops;
  }
  const addresses = text.split(',').map((a) => a.trim());
  if (addresses.some((a) => !/^[0-9a-fA-F:.]+(?:\/\d{1,3})?$/.test(a) && !['loopback', 'linklocal', 'uniquelocal'].includes(a))) {
    throw new UsageError(`--trust-proxy must be a number of hops or proxy addresses such as 10.0.0.1,10.0.0.0/8 (got ${JSON.stringify(value)})`);
  }
  return addresses.join(',');
}

/**
 * `--webhook-allow-private`: the addresses and CIDR ranges (comma-separated) webhooks may reach
 * although they are not public (loopback, private networks, link-local).
 */
function parseWebhookAllowPrivate(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  try {
    return parseAddressRanges(value).map((range) => range.text);
  } catch (error) {
    throw new UsageError(`--webhook-allow-private: ${errorMessage(error)}`);
  }
}

/** A yes/no environment variable: 1, true, yes or on; 0, false, no, off or empty; anything else is a usage error naming it. */
export function booleanEnv(name: string, value: string | undefined): boolean {
  const text = (value ?? '').trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['', '0', 'false', 'no', 'off'].includes(text)) return false;
  throw new UsageError(`${name} must be 1, true, yes or on (or 0, false, no, off) (got ${JSON.stringify(value)})`);
}

/** The flags of `serve` that set the server's limits. */
export interface LimitFlags {
  readLimit?: string;
  uploadLimit?: string;
  maxArchiveBytes?: string;
  requestTimeout?: string;
  bodyTimeout?: string;
  maxConnectionsPerAddress?: string;
  maxStagedFiles?: string;
  maxStagedBytes?: string;
}

interface ServeFlags extends BackendFlags, LimitFlags, PurgeFlags {
  host: string;
  port: string;
  publicUrl?: string;
  statsRefresh?: string;
  eventRetentionDays?: string;
  trustProxy?: string;
  webhookAllowPrivate?: string;
  oidcIssuer: string[];
  githubApiUrl?: string;
  requireChangelogEntry?: boolean;
  sigstoreTrustedRoot?: string;
}

/** `--sigstore-trusted-root` / REGISTRY_SIGSTORE_TRUSTED_ROOT: a trusted root file that loads, checked before the server starts. */
async function checkSigstoreTrustedRoot(file: string | undefined): Promise<string | undefined> {
  if (file === undefined || file === '') return undefined;
  try {
    await loadSigstoreTrust(file);
  } catch (error) {
    throw new UsageError(`--sigstore-trusted-root / REGISTRY_SIGSTORE_TRUSTED_ROOT: ${errorMessage(error)}`);
  }
  return file;
}

/** `--oidc-issuer` (repeatable) and `REGISTRY_OIDC_ISSUERS` (comma-separated): issuers trusted beside GitHub Actions', checked. */
function parseOidcIssuers(flags: readonly string[], env: string | undefined): string[] {
  const given = [...flags, ...(env ?? '').split(',')].map((issuer) => issuer.trim()).filter((issuer) => issuer !== '');
  try {
    return trustedIssuers(given).slice(1);
  } catch (error) {
    throw new UsageError(`--oidc-issuer / REGISTRY_OIDC_ISSUERS: ${errorMessage(error)}`);
  }
}

/** The server's limits from `serve`'s flags, each flag before its environment variable, then the default; a UsageError names a bad one. */
export function serveLimits(flags: LimitFlags, env: NodeJS.ProcessEnv = process.env): Partial<ServerLimits> {
  const seconds = (name: string, value: string | undefined, fallbackMs: number): number => 1000 * positiveInteger(name, value, fallbackMs / 1000);
  return {
    readPerMinute: positiveInteger('--read-limit', flags.readLimit ?? env.REGISTRY_READ_LIMIT, DEFAULT_LIMITS.readPerMinute),
    uploadPerMinute: positiveInteger('--upload-limit', flags.uploadLimit ?? env.REGISTRY_UPLOAD_LIMIT, DEFAULT_LIMITS.uploadPerMinute),
    maxArchiveBytes: positiveInteger('--max-archive-bytes', flags.maxArchiveBytes ?? env.REGISTRY_MAX_ARCHIVE_BYTES, DEFAULT_LIMITS.maxArchiveBytes),
    requestTimeoutMs: seconds('--request-timeout', flags.requestTimeout ?? env.REGISTRY_REQUEST_TIMEOUT, DEFAULT_LIMITS.requestTimeoutMs),
    bodyTimeoutMs: seconds('--body-timeout', flags.bodyTimeout ?? env.REGISTRY_BODY_TIMEOUT, DEFAULT_LIMITS.bodyTimeoutMs),
    maxConnectionsPerAddress: positiveInteger(
      '--max-connections-per-address',
      flags.maxConnectionsPerAddress ?? env.REGISTRY_MAX_CONNECTIONS_PER_ADDRESS,
      DEFAULT_LIMITS.maxConnectionsPerAddress,
      0,
    ),
    maxStagedFilesPerToken: positiveInteger('--max-staged-files', flags.maxStagedFiles ?? env.REGISTRY_MAX_STAGED_FILES, DEFAULT_LIMITS.maxStagedFilesPerToken),
    maxStagedBytesPerToken: positiveInteger('--max-staged-bytes', flags.maxStagedBytes ?? env.REGISTRY_MAX_STAGED_BYTES, DEFAULT_LIMITS.maxStagedBytesPerToken),
  };
}

export function registerServe(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const serve = program.command('serve').description(COMMAND_SUMMARIES.serve.description);
  addBackendOptions(serve, { store: `store folder: the embedded store, or with --database the built registry and upload temp files (env REGISTRY_STORE; default ${DEFAULT_STORE})` });
  serve
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '4873')
    .option('--public-url <url>', 'base URL clients use (env REGISTRY_PUBLIC_URL; default http://<host>:<port>)')
    .option('--read-limit <n>', `read requests per minute per client (env REGISTRY_READ_LIMIT; default ${DEFAULT_LIMITS.readPerMinute})`)
    .option('--upload-limit <n>', `uploads per minute per client (env REGISTRY_UPLOAD_LIMIT; default ${DEFAULT_LIMITS.uploadPerMinute})`)
    .option('--max-archive-bytes <n>', `largest archive accepted (env REGISTRY_MAX_ARCHIVE_BYTES; default ${DEFAULT_LIMITS.maxArchiveBytes})`)
    .option('--request-timeout <seconds>', `a request, an upload's body included, must arrive within this time (env REGISTRY_REQUEST_TIMEOUT; default ${DEFAULT_LIMITS.requestTimeoutMs / 1000})`)
    .option('--body-timeout <seconds>', `a request body (but an upload's archive, see --request-timeout) must arrive within this time of its headers, else 408 (env REGISTRY_BODY_TIMEOUT; default ${DEFAULT_LIMITS.bodyTimeoutMs / 1000})`)
    .option(
      '--max-connections-per-address <n>',
      `connections one client address may hold at once, else 429; 0: no limit; not applied with --trust-proxy (env REGISTRY_MAX_CONNECTIONS_PER_ADDRESS; default ${DEFAULT_LIMITS.maxConnectionsPerAddress})`,
    )
    .option('--max-staged-files <n>', `files one token may keep staged through /files, else 429 (env REGISTRY_MAX_STAGED_FILES; default ${DEFAULT_LIMITS.maxStagedFilesPerToken})`)
    .option('--max-staged-bytes <n>', `bytes one token's staged files may hold together, else 413 (env REGISTRY_MAX_STAGED_BYTES; default ${DEFAULT_LIMITS.maxStagedBytesPerToken})`)
    .option('--stats-refresh <seconds>', `how often the download numbers of the registry are refreshed for downloads other instances recorded; this server's own show a few seconds after them; 0: only on publish (env REGISTRY_STATS_REFRESH; default ${DEFAULT_STATS_REFRESH_MS / 1000})`)
    .option(
      '--event-retention-days <days>',
      `days of raw analytics events kept; older ones are removed (their counts stay in the analytics and download numbers); 0: keep them all (env REGISTRY_EVENT_RETENTION_DAYS; default ${DEFAULT_EVENT_RETENTION_DAYS})`,
    )
    .option('--trust-proxy <hops|addresses>', 'behind proxies: how many hops, or which proxy addresses, to trust for the client address (env REGISTRY_TRUST_PROXY)')
    .option(
      '--webhook-allow-private <addresses>',
      `addresses or CIDR ranges (comma-separated) webhooks may reach although they are loopback, private or link-local; by default webhooks reach public addresses only (env ${WEBHOOK_ALLOW_PRIVATE_ENV})`,
    )
    .option(
      '--oidc-issuer <url>',
      `trusted publishing: also accept OIDC ID tokens of this issuer (GitHub Enterprise Server: https://<host>/_services/token); repeatable (env REGISTRY_OIDC_ISSUERS, comma-separated; ${GITHUB_ACTIONS_ISSUER} always)`,
      collect,
      [] as string[],
    )
    .option(
      '--sigstore-trusted-root <file>',
      'provenance: the Sigstore trusted root (trusted_root.json) uploaded attestations are verified against: GitHub\'s, a GitHub Enterprise Server\'s or your own (env REGISTRY_SIGSTORE_TRUSTED_ROOT; default the public-good root shipped with @sigstore/tuf)',
    )
    .option('--github-api-url <url>', `the GitHub API asked for a repository owner's id when a trusted publisher is saved without one (env REGISTRY_GITHUB_API_URL; default ${DEFAULT_GITHUB_API_URL})`)
    .option('--require-changelog-entry', 'refuse (422) an upload whose change log has no section for its version; by default that is only a lint warning (env REGISTRY_REQUIRE_CHANGELOG_ENTRY=1)')
    .option('--sign-key <jwk>', `sign the static copy of the registry in the bucket of --storage s3://... with this private JWK (or JWK Set), a file or its JSON (env ${SIGN_KEY_ENV}); see build-registry --sign-key`);
  addPurgeOptions(serve, { purge: 'REGISTRY_PURGE', cdnUrl: 'REGISTRY_CDN_URL' }, "--public-url; with --storage s3://… the URL the CDN serves the bucket's public/ copy at, required")
    .action(async (flags: ServeFlags & { signKey?: string }) => {
      const env = process.env;
      const requireChangelogEntry = flags.requireChangelogEntry === true || booleanEnv('REGISTRY_REQUIRE_CHANGELOG_ENTRY', env.REGISTRY_REQUIRE_CHANGELOG_ENTRY);
      const trustProxy = parseTrustProxy(flags.trustProxy ?? env.REGISTRY_TRUST_PROXY);
      const webhookAllowPrivate = parseWebhookAllowPrivate(flags.webhookAllowPrivate ?? env[WEBHOOK_ALLOW_PRIVATE_ENV]);
      const port = positiveInteger('--port', flags.port, 4873);
      const publicUrl = flags.publicUrl ?? env.REGISTRY_PUBLIC_URL ?? `http://${flags.host}:${port}`;
      const limits = serveLimits(flags, env);
      const statsRefreshMs = 1000 * positiveInteger('--stats-refresh', flags.statsRefresh ?? env.REGISTRY_STATS_REFRESH, DEFAULT_STATS_REFRESH_MS / 1000, 0);
      const oidcIssuers = parseOidcIssuers(flags.oidcIssuer, env.REGISTRY_OIDC_ISSUERS);
      const githubApiUrl = flags.githubApiUrl ?? env.REGISTRY_GITHUB_API_URL;
      if (githubApiUrl !== undefined && !/^https?:\/\/[^\s/]+/.test(githubApiUrl)) throw new UsageError(`--github-api-url must be an http(s) URL (got ${JSON.stringify(githubApiUrl)})`);
      const purgeTargets = purgeTargetsFrom(flags, env.REGISTRY_PURGE, env);
      const bucket = /^s3:\/\//i.test(flags.storage ?? env.REGISTRY_STORAGE ?? '');
      const cdnUrl =
        purgeTargets.length === 0
          ? undefined
          : cdnUrlFrom(flags, env.REGISTRY_CDN_URL, bucket ? undefined : publicUrl, "--purge with --storage s3://… needs --cdn-url: the URL the CDN serves the bucket's public/ copy at");
      const eventRetentionDays = positiveInteger('--event-retention-days', flags.eventRetentionDays ?? env.REGISTRY_EVENT_RETENTION_DAYS, DEFAULT_EVENT_RETENTION_DAYS, 0);
      if (eventRetentionDays > MAX_EXPIRY_DAYS) throw new UsageError(`--event-retention-days must be at most ${MAX_EXPIRY_DAYS} (got ${eventRetentionDays}); 0 keeps every event`);
      const sigstoreTrustedRoot = await checkSigstoreTrustedRoot(flags.sigstoreTrustedRoot ?? env.REGISTRY_SIGSTORE_TRUSTED_ROOT);
      const signing = await signingKeysFrom(flags.signKey, env);
      const storage = await openStoreForCommand(flags, { create: true });
      if (signing && !storage.staticOutput) {
        await storage.close().catch(() => undefined);
        throw new UsageError(`${flags.signKey !== undefined ? '--sign-key' : SIGN_KEY_ENV} signs the static copy of the registry in a bucket: it needs --storage s3://bucket/prefix (to sign a registry in a folder, use build-registry --sign-key)`);
      }
      const { description } = storage;
      for (const line of storage.warnings) io.stderr(`${stderrStyle(io).yellow('warning')}: ${line}\n`);
      let server: Awaited<ReturnType<typeof createServer>>;
      try {
        server = await createServer({
          store: storage,
          publicUrl,
          limits,
          statsRefreshMs,
          ...(requireChangelogEntry ? { requireChangelogEntry } : {}),
          eventRetentionDays,
          ...(trustProxy === undefined ? {} : { trustProxy }),
          ...(webhookAllowPrivate.length > 0 ? { webhooks: { allowPrivate: webhookAllowPrivate } } : {}),
          oidcIssuers,
          ...(githubApiUrl === undefined ? {} : { githubApiUrl }),
          ...(sigstoreTrustedRoot === undefined ? {} : { sigstoreTrustedRoot }),
          ...(env.REGISTRY_ADMIN_TOKEN ? { adminToken: env.REGISTRY_ADMIN_TOKEN } : {}),
          ...(cdnUrl !== undefined ? { purge: { targets: purgeTargets, publicUrl: cdnUrl } } : {}),
          ...(signing ? { signing } : {}),
        });
      } catch (error) {
        await storage.close().catch(() => undefined);
        throw error;
      }
      let address: string;
      try {
        address = await server.app.listen({ host: flags.host, port });
      } catch (error) {
        // Closes the storage too: a database's open connections would keep the process alive.
        await server.app.close().catch(() => undefined);
        throw error;
      }
      if (description.backend === 'embedded') io.stdout(`template-registry serving ${description.dir} at ${address}\n`);
      else io.stdout(`template-registry serving at ${address}\n  database:      ${description.database ?? ''}\n`);
      if (description.backend === 'postgres' || description.storage !== description.dir) io.stdout(`  storage:       ${description.storage}\n`);
      io.stdout(`  registry.json: ${publicUrl}/registry.json   (file: ${path.join(server.store.publicDir, 'registry.json')})\n`);
      if (server.store.staticOutput) io.stdout(`  static copy:   ${server.store.staticOutput.location}   (self-contained, for a CDN${signing ? `, signed with ${signing.map((key) => key.kid).join(', ')}` : ''})\n`);
      if (cdnUrl !== undefined) io.stdout(`  CDN purges:    ${purgeTargets.map((target) => target.spec).join(', ')}   (URLs under ${cdnUrl})\n`);
      io.stdout(`  catalog:       ${publicUrl}/index.html\n`);
      const stop = (): void => {
        void server.app.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      setExit(EXIT.ok);
    });
}

/** The longest `--expires-in`: 100 years keeps every expiry a valid date. */
const MAX_EXPIRY_DAYS = 36_500;
const DAY_MS = 24 * 60 * 60 * 1000;

/** `--expires-in <days>`: a whole number of days from 1 to MAX_EXPIRY_DAYS. */
function parseExpiresIn(value: string): number {
  const days = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(days >= 1 && days <= MAX_EXPIRY_DAYS)) {
    throw new UsageError(`--expires-in must be a whole number of days from 1 to ${MAX_EXPIRY_DAYS} (got ${JSON.stringify(value)})`);
  }
  return days;
}

/** What `token list` shows of a token: never its secret or hash (the record holds neither). */
export interface TokenView {
  id: string;
  role: TokenRecord['role'];
  owner: string;
  /** The names it may publish, or "any" (an admin, or a publisher not limited to names). */
  scope: string[] | 'any';
  state: TokenState;
  createdAt: string;
  /** To within a minute; null: never used. */
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

function tokenView(record: TokenRecord, now: Date): TokenView {
  return {
    id: record.id,
    role: record.role,
    owner: record.owner,
    scope: record.role === 'publisher' && record.templates ? record.templates : 'any',
    state: tokenState(record, now),
    createdAt: record.createdAt,
    lastUsedAt: record.lastUsedAt ?? null,
    expiresAt: record.expiresAt ?? null,
    revokedAt: record.revokedAt ?? null,
  };
}

/** `2026-03-01 14:05Z`: to the minute, in UTC. */
const shortTime = (iso: string | null, none: string): string => (iso === null ? none : `${iso.slice(0, 10)} ${iso.slice(11, 16)}Z`);

function formatTokenTable(views: readonly TokenView[]): string {
  const header = ['ID', 'ROLE', 'OWNER', 'SCOPE', 'STATE', 'CREATED', 'LAST USED', 'EXPIRES'];
  const rows = views.map((v) => [
    v.id,
    v.role,
    v.owner,
    v.scope === 'any' ? 'any' : v.scope.join(','),
    v.state === 'revoked' ? `revoked ${shortTime(v.revokedAt, '')}` : v.state,
    shortTime(v.createdAt, ''),
    shortTime(v.lastUsedAt, 'never'),
    shortTime(v.expiresAt, 'never'),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

export function registerToken(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const token = program.command('token').description(COMMAND_SUMMARIES.token.description);
  addBackendOptions(
    token
      .command('create')
      .description('create a token and print it (once: only its hash is kept)')
      .requiredOption('--role <role>', 'publisher or admin')
      .option('--templates <names>', 'comma-separated template names a publisher token may publish')
      .option('--owner <owner>', 'who the token publishes for (names it publishes first are claimed for this owner)')
      .option('--expires-in <days>', `the token stops working after this many days (1 to ${MAX_EXPIRY_DAYS}; default never)`),
  )
    .option('--json', 'print the token and its record as JSON')
    .action(async (flags: BackendFlags & { role: string; templates?: string; owner?: string; expiresIn?: string; json?: boolean }) => {
      if (flags.role !== 'publisher' && flags.role !== 'admin') throw new UsageError(`--role must be publisher or admin (got ${flags.role})`);
      const role = flags.role;
      const days = flags.expiresIn === undefined ? undefined : parseExpiresIn(flags.expiresIn);
      const templates = flags.templates?.split(',').map((t) => t.trim()).filter(Boolean);
      const now = new Date();
      setExit(
        await withStoreForCommand(flags, { create: true }, async (store) => {
          try {
            const created = await store.tokens.createToken({
              role,
              ...(templates ? { templates } : {}),
              ...(flags.owner ? { owner: flags.owner } : {}),
              ...(days ? { expiresAt: new Date(now.getTime() + days * DAY_MS) } : {}),
              now,
            });
            if (flags.json) io.stdout(`${JSON.stringify({ token: created.token, ...created.record }, null, 2)}\n`);
            else {
              io.stdout(`${created.token}\n`);
              const expiry = created.record.expiresAt ? `; it expires at ${created.record.expiresAt}` : '';
              io.stderr(`created ${created.record.role} token ${created.record.id}${templates ? ` for ${templates.join(', ')}` : ''}${expiry}; it is shown only once\n`);
            }
            return EXIT.ok;
          } catch (error) {
            throw new UsageError(errorMessage(error));
          }
        }),
      );
    });
  addBackendOptions(token.command('list').description('list the tokens of a store (id, role, owner, scope, state, created, last used, expiry), never their secrets'))
    .option('--json', 'print the tokens as a JSON array')
    .action(async (flags: BackendFlags & { json?: boolean }) => {
      setExit(
        await withStoreForCommand(flags, { create: false }, async (store) => {
          const now = new Date();
          const views = (await store.tokens.listTokens()).map((record) => tokenView(record, now));
          if (flags.json) io.stdout(`${JSON.stringify(views, null, 2)}\n`);
          else if (views.length === 0) io.stdout(`no tokens in ${store.where} (create one with: template-registry token create --role publisher)\n`);
          else io.stdout(formatTokenTable(views));
          return EXIT.ok;
        }),
      );
    });
  addBackendOptions(
    token
      .command('revoke')
      .description('revoke a token: a running server refuses it (401) from the next request on; its record is kept')
      .argument('<id>', 'the token id (tok_..., see token list)'),
  )
    .option('--json', 'print the revoked token as JSON')
    .action(async (id: string, flags: BackendFlags & { json?: boolean }) => {
      setExit(
        await withStoreForCommand(flags, { create: false }, async (store) => {
          const revocation = await store.tokens.revokeToken(id);
          if (!revocation.found) {
            io.stderr(`error: no token ${JSON.stringify(id)} in ${store.where} (see template-registry token list)\n`);
            return EXIT.failure;
          }
          const { record, alreadyRevoked } = revocation;
          if (flags.json) io.stdout(`${JSON.stringify({ ...tokenView(record, new Date()), alreadyRevoked }, null, 2)}\n`);
          else if (alreadyRevoked) io.stdout(`token ${record.id} was already revoked at ${record.revokedAt ?? ''}; nothing changed\n`);
          else io.stdout(`revoked ${record.role} token ${record.id} (owner ${record.owner}); a running server refuses it from now on\n`);
          return EXIT.ok;
        }),
      );
    });
  for (const command of token.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
