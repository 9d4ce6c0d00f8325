import path from 'node:path';

import type { Command } from 'commander';

import { createGitHubClient } from '../../github/client.js';
import { buildRegistry, failedTemplateMessage } from '../../registry/build.js';
import { purgeAfterBuild, type PurgeAfterBuildResult, type PurgeTarget } from '../../registry/purge/index.js';
import { RegistryBuildError } from '../../registry/document.js';
import { GithubSourceConfigError, githubReleasesSource, loadGithubSourceConfig, type GithubSourceConfig } from '../../registry/github-source.js';
import type { RegistrySource } from '../../registry/source.js';
import type { OutputTarget } from '../../registry/s3-output.js';
import type { SigningKey } from '../../registry/signing.js';
import { SIGN_KEY_ENV, signingKeysFrom } from '../sign-key.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { errorMessage } from '../../core/errors.js';
import { checkOutputTarget, openOutputTarget } from './output-target.js';
import { addBackendOptions, isHttpUrl, S3_ENDPOINT_OPTION, S3_PATH_STYLE_OPTION, type BackendFlags } from './backends.js';
import { addPurgeOptions, cdnUrlFrom, purgeTargetsFrom, type PurgeFlags } from './purge-flags.js';

interface BuildRegistryFlags extends BackendFlags, PurgeFlags {
  out: string;
  githubConfig?: string;
  publicUrl?: string;
  allowEmpty?: boolean;
  signKey?: string;
  json?: boolean;
}


/** A store opened as a registry source; `close` releases it (a database's connections). */
export type StoreRegistrySource = RegistrySource & { close?: () => Promise<void> };

export interface BuildRegistryDependencies {
  /**
   * The server's store as a registry source (default: the store `--store`, `--database` and
   * `--storage` name, opened as `serve` opens it). `storeDir` is `--store` ('' when only a database is named).
   */
  storeSource?: (storeDir: string, publicUrl: string | undefined, flags: BackendFlags) => Promise<StoreRegistrySource>;
  /** Waits between purge retries (tests pass one that does not wait); default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

/** The output `--out` names, checked before any source is read; `--storage s3://...` also takes the S3 flags. */
function checkOutput(flags: BuildRegistryFlags): OutputTarget {
  const storage = flags.storage ?? process.env.REGISTRY_STORAGE ?? '';
  return checkOutputTarget(flags, { given: /^s3:\/\//i.test(storage), flag: '--storage' });
}

const GITHUB_TOKEN_ENV = 'GITHUB_TOKEN';

/** The server's store as the source, opened only when a store is named (it loads SQLite or pg). */
async function openStoreSource(storeDir: string, publicUrl: string | undefined, flags: BackendFlags): Promise<StoreRegistrySource> {
  const [{ storeSource }, { openStoreForCommand }] = await Promise.all([import('../../store/index.js'), import('./backends.js')]);
  // An embedded store must exist (create: false); the S3 flags were checked with --out's.
  const storage = await openStoreForCommand(flags, { create: false, s3Elsewhere: true });
  // The output is self-contained: the archives are published beside registry.json, and without
  // --public-url every URL is relative to it, so the folder works from any host and path.
  // What names the store in the build state (build-state.ts): its folder, or its database without
  // credentials (a state recorded from another store is not used).
  const identity = JSON.stringify({ store: storeDir === '' ? null : path.resolve(storeDir), database: databaseIdentity(flags.database ?? process.env.DATABASE_URL) });
  return Object.assign(storeSource(storage, publicUrl, { layout: 'static', identity }), { close: () => storage.close() });
}

/** A database URL without its credentials: which server and database, for the build state. */
function databaseIdentity(url: string | undefined): string | null {
  if (url === undefined || url.trim() === '') return null;
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return null;
  }
}

export function registerBuildRegistry(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  deps: BuildRegistryDependencies = {},
): void {
  const command = program
    .command('build-registry')
    .description(COMMAND_SUMMARIES['build-registry'].description)
    .requiredOption('--out <dir|s3-url>', 'folder to write the registry into, or an S3-compatible bucket: s3://bucket/prefix (credentials and region the AWS SDK way)');
  addBackendOptions(command, { store: "read the versions from the registry server's store in this folder (with --database: PostgreSQL's, its bytes in --storage)", s3: false })
    .option('--github-config <file>', `read the versions from the GitHub releases of the repositories in this JSON file (token: $${GITHUB_TOKEN_ENV})`)
    .option('--public-url <url>', 'public base URL the registry is served from: every URL in the output is absolute under it (default: URLs relative to registry.json)')
    .option('--allow-empty', 'write a registry with no template even over one that lists some (refused otherwise)')
    .option('--sign-key <jwk>', `sign registry.json, index.json and each template file with this private JWK (Ed25519 or P-256, "kid" required), or JWK Set for a rotation: a file, or its JSON (env ${SIGN_KEY_ENV}); writes keys.json and a .jws beside each signed file`)
    .option('--s3-endpoint <url>', `${S3_ENDPOINT_OPTION} (for --out and --storage)`)
    .option('--s3-force-path-style', S3_PATH_STYLE_OPTION)
    .option('--json', 'print the result as JSON');
  addPurgeOptions(command, { purge: 'REGISTRY_PURGE', cdnUrl: 'REGISTRY_CDN_URL' }, '--public-url; one of them is required with --purge')
    .action(async (flags: BuildRegistryFlags) => {
      const usage = (message: string): void => {
        io.stderr(`error: ${message}\n`);
        setExit(EXIT.usage);
      };
      // A store is the source when one is named: --store, --database, or DATABASE_URL without --github-config.
      const databaseUrl = flags.database ?? (flags.githubConfig === undefined ? process.env.DATABASE_URL : undefined);
      const fromStore = flags.store !== undefined || (databaseUrl !== undefined && databaseUrl.trim() !== '');
      if (fromStore === (flags.githubConfig !== undefined)) {
        return usage('pass exactly one of --store <dir> and --github-config <file> (a store on PostgreSQL: --database <url>)');
      }
      if (flags.publicUrl !== undefined && !isHttpUrl(flags.publicUrl)) {
        return usage(`--public-url must be an http(s) URL (got "${flags.publicUrl}")`);
      }

      let target: OutputTarget;
      let purgeTargets: PurgeTarget[];
      let cdnUrl: string | undefined;
      let signing: SigningKey[] | undefined;
      try {
        target = checkOutput(flags);
        purgeTargets = purgeTargetsFrom(flags, process.env.REGISTRY_PURGE);
        if (purgeTargets.length > 0) cdnUrl = cdnUrlFrom(flags, process.env.REGISTRY_CDN_URL, flags.publicUrl, '--purge needs --cdn-url (or --public-url): the URL the CDN serves the registry at');
        signing = await signingKeysFrom(flags.signKey);
      } catch (error) {
        if (error instanceof UsageError) return usage(error.message);
        throw error;
      }

      const warnings: string[] = [];
      let source: StoreRegistrySource;
      if (fromStore) {
        try {
          source = await (deps.storeSource ?? openStoreSource)(flags.store ?? '', flags.publicUrl, flags);
        } catch (error) {
          if (error instanceof UsageError) return usage(error.message);
          throw error;
        }
      } else {
        const token = process.env[GITHUB_TOKEN_ENV] ?? '';
        if (token.trim() === '') return usage(`--github-config needs a GitHub token in $${GITHUB_TOKEN_ENV}`);
        let config: GithubSourceConfig;
        try {
          config = await loadGithubSourceConfig(flags.githubConfig ?? '');
        } catch (error) {
          if (error instanceof GithubSourceConfigError) return usage(error.message);
          throw error;
        }
        const octokit = createGitHubClient({ token, log: (message) => io.stderr(`${message}\n`) });
        source = githubReleasesSource(config, {
          octokit,
          onWarning: (message) => {
            warnings.push(message);
            if (!flags.json) io.stderr(`warning: ${message}\n`);
          },
        });
      }

      let output: Awaited<ReturnType<typeof openOutputTarget>>;
      try {
        // A build with a build state streams (a small heap): the folder's sync helper starts only once it writes many files.
        output = await openOutputTarget(target, flags, { syncHelper: 'when-many' });
      } catch (error) {
        await source.close?.();
        if (error instanceof UsageError) return usage(error.message);
        throw error;
      }
      try {
        const result = await buildRegistry(source, {
          output: output.output,
          allowEmpty: flags.allowEmpty ?? false,
          // From a store the archives beside registry.json are the build's own: a purged version's go.
          ...(fromStore ? { pruneArchives: true } : {}),
          ...(flags.publicUrl ? { publicUrl: flags.publicUrl } : {}),
          ...(signing ? { signing } : {}),
          // A build state in the output: the next build reads only the versions that changed.
          state: true,
        });
        for (const message of result.signing?.warnings ?? []) {
          warnings.push(message);
          if (!flags.json) io.stderr(`warning: ${message}\n`);
        }
        for (const skipped of result.skipped) {
          const message = `left out ${skipped.id}@${skipped.version}: its registry entry is invalid: ${skipped.violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')}`;
          warnings.push(message);
          if (!flags.json) io.stderr(`warning: ${message}\n`);
        }
        for (const failure of result.failed) {
          const message = failedTemplateMessage(failure);
          warnings.push(message);
          if (!flags.json) io.stderr(`warning: ${message}\n`);
        }
        for (const message of result.notices ?? []) {
          warnings.push(message);
          if (!flags.json) io.stderr(`warning: ${message}\n`);
          }
        let purged: PurgeAfterBuildResult | undefined;
        if (cdnUrl !== undefined) {
          purged = await purgeAfterBuild({
            output: output.output,
            targets: purgeTargets,
            publicUrl: cdnUrl,
            written: result.written,
            removed: result.removed,
            ...(deps.sleep ? { sleep: deps.sleep } : {}),
            onRetry: ({ target: purgeTarget, attempt, delayMs, error }) => {
              if (!flags.json) io.stderr(`warning: purge attempt ${attempt} at ${purgeTarget} failed (${error}); retrying in ${Math.round(delayMs / 1000)} s\n`);
            },
          });
          for (const failure of purged.failed) {
            const message = `the purge of ${failure.urls} URL(s) at ${failure.target} failed (${failure.error}); the URLs are kept in ${output.output.location}/.template-registry-purge.json and the next build-registry --purge purges them first`;
            warnings.push(message);
            if (!flags.json) io.stderr(`warning: ${message}\n`);
          }
        }
        const entries = result.counts.entries;
        if (flags.json) {
          io.stdout(
            `${JSON.stringify(
              {
                outDir: flags.out,
                entries,
                templates: result.counts.templates,
                changed: result.changed,
                etag: result.etag,
                lastUpdated: result.document.lastUpdated,
                files: result.files,
                written: result.written,
                removed: result.removed,
                ...(purged ? { purged: purged.purged, purgeFailed: purged.failed } : {}),
                ...(result.signing ? { signedBy: result.signing.kid, keys: result.signing.keys } : {}),
                warnings,
              },
              null,
              2,
            )}\n`,
          );
        } else {
          io.stdout(`registry.json: ${entries} entries (${result.changed ? 'changed' : 'unchanged'}), etag ${result.etag}${result.signing ? `, signed by key ${result.signing.kid}` : ''}\n`);
          for (const done of purged?.purged ?? []) io.stdout(`purged ${done.urls} URL(s) at ${done.target}\n`);
        }
        setExit(EXIT.ok);
      } catch (error) {
        if (error instanceof RegistryBuildError) {
          io.stderr(`${error.message}\n`);
          setExit(EXIT.failure);
          return;
        }
        io.stderr(`error: ${errorMessage(error)}\n`);
        setExit(EXIT.failure);
      } finally {
        void output.close();
        await source.close?.();
      }
    });
}
