/**
 * The registry action, shaped like actions/typescript-action: `run()` takes its inputs from the
 * process and reports through `@actions/core` (`index.ts` only calls it; so can
 * `npx @github/local-action run . src/registry-action/main.ts <dotenv>`); tests pass their own
 * environment, core, GitHub client or source.
 */
import * as actionsCore from '@actions/core';
import type { Octokit } from '@octokit/rest';

import { createGitHubClient } from '../github/client.js';
import type { ActionCoreBase, ActionEnv, SummaryCell } from '../github/inputs.js';
import { latestEntries } from '../core/listing.js';
import { buildRegistry, failedTemplateMessage, type BuildOptions, type BuildResult } from '../registry/build.js';
import { githubReleasesSource, loadGithubSourceConfig } from '../registry/github-source.js';
import { FolderOutput } from '../registry/folder-output.js';
import { purgeAfterBuild, purgeTargetsOf } from '../registry/purge/index.js';
import type { RegistryOutput } from '../registry/output.js';
import { createS3Client, S3Output } from '../registry/s3-output.js';
import { loadSigningKeys } from '../registry/signing.js';
import type { RegistrySource } from '../registry/source.js';
import { parseRegistryInputs, type RegistryActionInputs } from './inputs.js';
import { errorMessage } from '../core/errors.js';

/** The part of @actions/core the registry action uses; tests pass a recording fake. */
export interface RegistryActionCore extends ActionCoreBase {
  warning(message: string): void;
}

/** What `run()` takes from its surroundings; every field has the runner's default. */
export interface RegistryActionDependencies {
  /** Default `process.env`. */
  env?: ActionEnv;
  /** Default `@actions/core`. */
  core?: RegistryActionCore;
  /** Makes the GitHub client; default `createGitHubClient` (retries, rate-limit handling). */
  octokit?: (token: string, baseUrl: string | undefined, log: (message: string) => void) => Octokit;
  /** Waits between purge retries (tests); default a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Replaces the GitHub releases source (tests). */
  source?: RegistrySource;
  now?: () => Date;
}

export interface RegistryActionOutcome {
  ok: boolean;
  outputs: Record<string, string>;
  result?: BuildResult;
}

/**
 * Where the build writes: the folder, or the bucket through an S3 client made from the inputs and
 * the environment (credentials and region the AWS SDK way: aws-actions/configure-aws-credentials
 * sets them). `close()` releases the client.
 */
async function openOutput(inputs: RegistryActionInputs, env: ActionEnv): Promise<{ options: Pick<BuildOptions, 'output'> & { output: RegistryOutput }; close: () => void }> {
  if (!inputs.s3) {
    const output = new FolderOutput(inputs.outDir);
    return { options: { output }, close: () => void output.close() };
  }
  const { bucket, prefix, endpoint, forcePathStyle } = inputs.s3;
  const client = await createS3Client({ ...(endpoint !== undefined ? { endpoint } : {}), forcePathStyle }, env);
  return { options: { output: new S3Output({ client, bucket, prefix }) }, close: () => client.destroy() };
}

function defaultOctokit(token: string, baseUrl: string | undefined, log: (message: string) => void): Octokit {
  return createGitHubClient({ token, ...(baseUrl ? { baseUrl } : {}), userAgent: 'template-registry-registry-action', log });
}

/**
 * The registry action: read the GitHub releases of the repositories in the config file and
 * build the static registry (registry.json, per-template files, catalog page, .gz/.br) in
 * out-dir. Outputs `changed`, `templates` (distinct ids), `versions` (entries) and `etag`.
 */
export async function run(deps: RegistryActionDependencies = {}): Promise<RegistryActionOutcome> {
  const env = deps.env ?? process.env;
  const core = deps.core ?? actionsCore;
  const outputs: Record<string, string> = {};
  const setOutput = (name: string, value: string | number | boolean): void => {
    outputs[name] = String(value);
    core.setOutput(name, String(value));
  };

  let ok = false;
  let result: BuildResult | undefined;
  let warnings = 0;
  try {
    const inputs = parseRegistryInputs(env);
    core.setSecret(inputs.githubToken);
    // An inline key is a secret as a whole (and so is its private part).
    if (inputs.signKey?.startsWith('{')) core.setSecret(inputs.signKey);
    const signing = inputs.signKey !== undefined ? await loadSigningKeys(inputs.signKey, 'input sign-key') : undefined;
    const warn = (message: string): void => {
      warnings++;
      core.warning(message);
    };

    if (inputs.s3) core.info(`writing the registry to ${inputs.outDir}${inputs.s3.endpoint ? ` at ${inputs.s3.endpoint}` : ''}`);
    let source = deps.source;
    if (!source) {
      const config = await loadGithubSourceConfig(inputs.configPath);
      core.info(`reading the releases of ${config.repositories.length} repositories`);
      // Octokit's own log (failed requests, rate limits) goes to the job log; the skips it leads to are the warnings.
      const octokit = (deps.octokit ?? defaultOctokit)(inputs.githubToken, inputs.apiUrl, (m) => core.info(m));
      source = githubReleasesSource(config, { octokit, onWarning: warn });
    }

    // Credentials come from the job's environment (CLOUDFLARE_API_TOKEN, FASTLY_API_TOKEN, AWS's).
    const targets = purgeTargetsOf(inputs.purge ?? [], { env }, 'input purge');
    const output = await openOutput(inputs, env);
    try {
      result = await buildRegistry(source, {
        ...output.options,
        ...(deps.now ? { now: deps.now } : {}),
        ...(inputs.publicUrl ? { publicUrl: inputs.publicUrl } : {}),
        ...(signing ? { signing } : {}),
      });
      if (inputs.cdnUrl !== undefined && targets.length > 0) {
        const purged = await purgeAfterBuild({
          output: output.options.output,
          targets,
          publicUrl: inputs.cdnUrl,
          written: result.written,
          removed: result.removed,
          ...(deps.sleep ? { sleep: deps.sleep } : {}),
          onRetry: ({ target, attempt, delayMs, error }) => core.info(`purge attempt ${attempt} at ${target} failed (${error}); retrying in ${Math.round(delayMs / 1000)} s`),
        });
        for (const done of purged.purged) core.info(`purged ${done.urls} URL(s) at ${done.target}`);
        for (const failure of purged.failed) {
          warn(`the purge of ${failure.urls} URL(s) at ${failure.target} failed (${failure.error}); they are kept in ${inputs.outDir}/.template-registry-purge.json and the next run purges them first`);
        }
        setOutput('purged', purged.purged.reduce((sum, done) => sum + done.urls, 0));
      }
    } finally {
      output.close();
    }
    for (const skipped of result.skipped) {
      warn(`left out ${skipped.id}@${skipped.version}: its registry entry is invalid: ${skipped.violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')}`);
    }
    for (const failure of result.failed) warn(failedTemplateMessage(failure));
    for (const message of result.signing?.warnings ?? []) warn(message);
    const ids = new Set(result.document.templates.map((t) => t.id));
    setOutput('changed', result.changed);
    setOutput('templates', ids.size);
    setOutput('versions', result.document.templates.length);
    setOutput('etag', result.etag);
    setOutput('last-updated', result.document.lastUpdated);
    if (result.signing) setOutput('signed-by', result.signing.kid);
    core.info(
      `registry.json: ${result.document.templates.length} entries of ${ids.size} templates (${result.changed ? 'changed' : 'unchanged'}), etag ${result.etag}; ` +
        `${result.written.length} file(s) written, ${result.removed.length} removed, in ${inputs.outDir}`,
    );
    ok = true;
  } catch (error) {
    core.setFailed(errorMessage(error));
  }

  try {
    core.summary.addHeading('Template registry', 2);
    if (result) {
      const rows: SummaryCell[][] = [
        [
          { data: 'Template', header: true },
          { data: 'Latest', header: true },
          { data: 'Versions', header: true },
          { data: 'Downloads', header: true },
        ],
      ];
      const entries = result.document.templates;
      for (const latest of latestEntries(entries)) {
        const versions = entries.filter((e) => e.id === latest.id);
        const downloads = versions.reduce((sum, e) => sum + (e.stats?.downloads ?? 0), 0);
        // Ids and versions follow the manifest patterns ([a-z0-9-], digits and dots): safe in the summary HTML.
        rows.push([latest.id, `${latest.version} (${latest.stability})`, String(versions.length), String(downloads)]);
      }
      core.summary.addTable(rows);
      core.summary.addRaw(`${result.changed ? 'Changed' : 'Unchanged'}; lastUpdated ${result.document.lastUpdated}; ETag \`${result.etag}\`; ${warnings} warning(s).`, true);
    } else {
      core.summary.addRaw('The registry was not built (see the error).', true);
    }
    await core.summary.write();
  } catch (error) {
    core.warning(`could not write the job summary: ${errorMessage(error)}`);
  }
  return { ok, outputs, ...(result ? { result } : {}) };
}
