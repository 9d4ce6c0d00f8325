/**
 * The sync action, shaped like the other actions: `run()` takes its inputs from the process and
 * reports through `@actions/core` (`index.ts` only calls it); tests pass their own environment,
 * core and GitHub API. The workflow itself is `syncProject`, a library function.
 *
 * In a generated project's scheduled workflow it brings the project to its template's latest
 * version through `updateProject` (3-way merge, conflicts as inline markers) on the branch
 * `template-update/<id>-<version>`, and opens or updates one pull request for it. A re-run that
 * computes the same content pushes nothing and edits nothing.
 */
import path from 'node:path';

import * as actionsCore from '@actions/core';

import { loadSigstoreTrust, RegistryClient, type ProvenanceMode } from '../client/index.js';
import { errorMessage } from '../core/errors.js';
import { registryDocumentUrl } from '../core/registry-url.js';
import type { PublishedKey } from '../core/registry-signatures.js';
import { compareVersions, isTemplateVersion } from '../core/versions.js';
import { createGitHubClient } from '../github/client.js';
import type { ActionEnv } from '../github/inputs.js';
import { checkForUpdate, ProjectLockError, updateProject } from '../project/index.js';
import { readLock, sourceRegistry } from '../template/index.js';
import { NEEDS_ATTENTION_LABEL, pullRequestBody, pullRequestTitle } from './body.js';
import { BOT_EMAIL, commitArgs, gitIn, GIT_NETWORK_TIMEOUT_MS } from './git.js';
import { parseSyncInputs } from './inputs.js';
import { octokitPullRequestApi, type PullRequest, type PullRequestApi } from './pull-requests.js';

export { NEEDS_ATTENTION_LABEL } from './body.js';
export { octokitPullRequestApi, type PullRequest, type PullRequestApi } from './pull-requests.js';

/** Where the sync action reports; `@actions/core` is one. */
export interface SyncLog {
  info(message: string): void;
  warning(message: string): void;
  startGroup(name: string): void;
  endGroup(): void;
}

/** The part of @actions/core the sync action uses; tests pass a recording fake. */
export interface SyncActionCore extends SyncLog {
  setOutput(name: string, value: string): void;
  setSecret(secret: string): void;
  setFailed(message: string): void;
}

export interface SyncProjectOptions {
  /** The git checkout (GITHUB_WORKSPACE) whose `origin` receives the branch. */
  workspace: string;
  /** The generated project, inside the checkout. */
  projectDir: string;
  /** The registry (base or registry.json URL); default the one the lock file's `template.source` names. */
  registryUrl?: string;
  /** Default: the repository's default branch. */
  baseBranch?: string;
  /** The repository's owner: pull requests are looked up by `<owner>:<branch>`. */
  owner: string;
  api: PullRequestApi;
  log?: SyncLog;
  fetch?: typeof globalThis.fetch;
  /** Where a secret the update needs is read from (the variable's `env`, e.g. a repository secret mapped into the job); none unless given. */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Build provenance of the versions read (default `warn`: a missing or failing one is a warning);
   * whatever the mode but `off`, a version not signed by the signer the lock pins fails the run as a
   * possible takeover, before anything is pushed.
   */
  provenance?: ProvenanceMode;
  /** The Sigstore trusted root file provenance is verified against; default the public-good root. */
  sigstoreTrustedRoot?: string;
  /** The public keys the registry's documents must be signed with (a signed registry); none: documents are read unsigned-or-signed as served. */
  registryKeys?: readonly PublishedKey[];
}

export interface SyncResult {
  /** `up-to-date`: nothing was done. `updated`: the branch and pull request hold the update. */
  status: 'up-to-date' | 'updated';
  templateId: string;
  fromVersion: string;
  /** The registry's latest version (the project's own when up to date). */
  version: string;
  branch?: string;
  /** Whether the branch was pushed (false on a re-run that computed the same tree). */
  pushed: boolean;
  /** The branch has commits that are not the action's (someone resolved conflicts): left as it is. */
  branchTakenOver?: boolean;
  pullRequest?: PullRequest;
  /** What happened to the pull request. */
  pullRequestAction?: 'created' | 'edited' | 'unchanged';
  conflicts: string[];
  /** Older update pull requests closed as superseded. */
  superseded: number[];
}

/** The update could not be made (a migration step or the write failed): nothing was pushed. */
export class SyncError extends Error {
  constructor(
    message: string,
    readonly errors: string[],
  ) {
    super([message, ...errors.map((e) => `  ${e}`)].join('\n'));
    this.name = 'SyncError';
  }
}

const quiet: SyncLog = { info: () => undefined, warning: () => undefined, startGroup: () => undefined, endGroup: () => undefined };

async function inGroup<T>(log: SyncLog, name: string, work: () => Promise<T>): Promise<T> {
  log.startGroup(name);
  try {
    return await work();
  } finally {
    log.endGroup();
  }
}

/** The branch of one target version. */
const updateBranch = (templateId: string, version: string): string => `template-update/${templateId}-${version}`;

/** True when `ref` is the update branch of an older version of `templateId` than `version`. */
function olderUpdateBranch(ref: string, templateId: string, version: string): boolean {
  const prefix = updateBranch(templateId, '');
  if (!ref.startsWith(prefix)) return false;
  const other = ref.slice(prefix.length);
  return isTemplateVersion(other) && compareVersions(other, version) < 0;
}

/** The registry the lock file names (`<registry.json URL>#<id>@<version>`). */
async function lockRegistry(projectDir: string): Promise<string> {
  let source: unknown;
  try {
    source = (await readLock(projectDir)).template.source;
  } catch (error) {
    throw new ProjectLockError(errorMessage(error), { cause: error });
  }
  const url = sourceRegistry(source);
  if (url === undefined) throw new Error('input registry-url is needed: the lock file names no registry (template.source)');
  return url;
}

/**
 * Brings the project to its template's latest version on `template-update/<id>-<version>` and
 * opens (or updates) the pull request for it; see the module's comment. Throws SyncError when the
 * update fails, and the errors of git, the registry and the API.
 */
export async function syncProject(options: SyncProjectOptions): Promise<SyncResult> {
  const { api, owner, projectDir } = options;
  const log = options.log ?? quiet;
  const git = gitIn(options.workspace);
  const network = { timeoutMs: GIT_NETWORK_TIMEOUT_MS };
  const fetchOption = options.fetch ? { fetch: options.fetch } : {};

  const base = options.baseBranch ?? (await api.defaultBranch());
  // The update starts from the base as it is on origin, whatever the workflow checked out; files
  // left untracked in the project would otherwise be committed with it.
  await inGroup(log, `Check out origin/${base}`, async () => {
    await git(['fetch', '--no-tags', 'origin', `+refs/heads/${base}:refs/remotes/origin/${base}`], network);
    await git(['checkout', '--quiet', '--force', '--detach', `refs/remotes/origin/${base}`]);
    await git(['clean', '-ffdq', '--', projectDir]);
  });

  const registryUrl = registryDocumentUrl(options.registryUrl ?? (await lockRegistry(projectDir)));
  // Revalidated on every run, whatever a cache holds: the run is there to find what was published since.
  const client = new RegistryClient({ registryUrl, refresh: true, ...fetchOption, ...(options.registryKeys ? { signatures: { keys: options.registryKeys } } : {}) });
  const mode = options.provenance ?? 'warn';
  const provenance = { mode, ...(mode === 'off' ? {} : { trust: await loadSigstoreTrust(options.sigstoreTrustedRoot) }), onWarning: (message: string) => log.warning(message) };
  const check = await inGroup(log, 'Check the registry', async () => {
    const found = await checkForUpdate({ client, projectDir, provenance, ...fetchOption });
    log.info(`${found.templateId}: the project is at ${found.currentVersion}, the registry's latest is ${found.latestVersion} (${registryUrl})`);
    return found;
  });
  const { templateId, currentVersion, latestVersion } = check;
  const nothing: SyncResult = { status: 'up-to-date', templateId, fromVersion: currentVersion, version: currentVersion, pushed: false, conflicts: [], superseded: [] };
  if (!check.updateAvailable) {
    log.info('the project is up to date: nothing to do');
    return nothing;
  }

  const branch = updateBranch(templateId, latestVersion);
  const result = await inGroup(log, `Update ${templateId} ${currentVersion} -> ${latestVersion}`, async () => {
    await git(['checkout', '--quiet', '--force', '-B', branch]);
    const updated = await updateProject({ client, projectDir, to: latestVersion, conflict: 'inline', backup: false, confirmBreaking: () => true, provenance, ...fetchOption, ...(options.env ? { env: options.env } : {}) });
    if (updated.status === 'up-to-date') return undefined;
    if (updated.status !== 'updated') {
      const errors = updated.status === 'plan-failed' || updated.status === 'failed' ? updated.errors : [];
      throw new SyncError(`the update of ${templateId} to ${latestVersion} ${updated.status === 'plan-failed' ? 'could not be planned' : 'failed'}; nothing was pushed`, errors);
    }
    for (const file of updated.files) log.info(`${file.status.padEnd(8)} ${file.path}${file.reason ? ` (${file.reason})` : ''}`);
    for (const step of updated.steps.applied) log.info(`step     ${step}`);
    for (const warning of updated.steps.warnings) log.warning(warning);
    if (updated.conflicts.length > 0) log.warning(`${updated.conflicts.length} file(s) with conflicts to resolve: ${updated.conflicts.join(', ')}`);
    return updated;
  });
  // The registry moved back between the check and the update (a version withdrawn): nothing to do.
  if (!result) return nothing;

  const pushed = await inGroup(log, `Push ${branch}`, async () => {
    await git(['add', '-A', '--', projectDir]);
    const conflictNote = result.conflicts.length > 0 ? `\n\nConflicts to resolve: ${result.conflicts.join(', ')}` : '';
    await git(commitArgs(`${pullRequestTitle(templateId, latestVersion)}\n\nFrom ${currentVersion}, by the template-registry sync action.${conflictNote}`));
    const tree = await git(['rev-parse', 'HEAD^{tree}']);
    const remote = await git(['ls-remote', '--heads', 'origin', `refs/heads/${branch}`], network);
    if (remote !== '') {
      await git(['fetch', '--no-tags', 'origin', `+refs/heads/${branch}:refs/remotes/origin/${branch}`], network);
      const tracking = `refs/remotes/origin/${branch}`;
      // Someone committed to the branch (resolved the conflicts): their work is not overwritten.
      if ((await git(['log', '-1', '--format=%ae', tracking])) !== BOT_EMAIL) {
        log.warning(`${branch} has commits that are not the action's: left as it is`);
        return 'taken-over' as const;
      }
      if ((await git(['rev-parse', `${tracking}^{tree}`])) === tree) {
        log.info(`${branch} on origin already holds this update: nothing to push`);
        return false;
      }
    }
    await git(['push', '--quiet', '--force', 'origin', `HEAD:refs/heads/${branch}`], network);
    log.info(`pushed ${branch}`);
    return true;
  });

  const updatedResult: SyncResult = { status: 'updated', templateId, fromVersion: currentVersion, version: latestVersion, branch, pushed: pushed === true, conflicts: result.conflicts, superseded: [] };
  return inGroup(log, 'Pull request', async () => {
    const [existing] = await api.openPulls(`${owner}:${branch}`);
    if (pushed === 'taken-over') {
      if (existing) log.info(`pull request #${existing.number}: ${existing.url}`);
      return { ...updatedResult, branchTakenOver: true, ...(existing ? { pullRequest: existing, pullRequestAction: 'unchanged' as const } : {}) };
    }

    const title = pullRequestTitle(templateId, latestVersion);
    const body = pullRequestBody({
      templateId,
      fromVersion: currentVersion,
      toVersion: latestVersion,
      projectPath: path.relative(options.workspace, projectDir).split(path.sep).join('/'),
      branch,
      breaking: check.breaking || result.breaking.steps.length > 0,
      breakingReasons: check.breakingReasons,
      ...(result.breaking.guide ? { guide: result.breaking.guide } : {}),
      files: result.files,
      stepsApplied: result.steps.applied,
      warnings: result.steps.warnings,
      conflicts: result.conflicts,
      changelog: check.changelog,
    });
    let pull: PullRequest;
    let action: SyncResult['pullRequestAction'];
    if (!existing) {
      pull = await api.createPull({ title, body, head: branch, base });
      action = 'created';
    } else if (existing.title !== title || existing.body !== body) {
      pull = await api.updatePull(existing.number, { title, body });
      action = 'edited';
    } else {
      pull = existing;
      action = 'unchanged';
    }
    log.info(`pull request #${pull.number} ${action}: ${pull.url}`);

    // The label marks what needs a person; it goes when a later run merges cleanly.
    const labelled = pull.labels.includes(NEEDS_ATTENTION_LABEL);
    if (result.conflicts.length > 0 && !labelled) await api.addLabels(pull.number, [NEEDS_ATTENTION_LABEL]);
    if (result.conflicts.length === 0 && labelled) await api.removeLabel(pull.number, NEEDS_ATTENTION_LABEL);

    const superseded: number[] = [];
    for (const older of await api.openPulls()) {
      if (older.number === pull.number || older.headLabel !== `${owner}:${older.headRef}` || !olderUpdateBranch(older.headRef, templateId, latestVersion)) continue;
      await api.comment(older.number, `Superseded by #${pull.number}, the update to ${latestVersion}.`);
      await api.updatePull(older.number, { state: 'closed' });
      superseded.push(older.number);
      log.info(`closed #${older.number} (${older.headRef}): superseded by #${pull.number}`);
    }
    return { ...updatedResult, pullRequest: pull, pullRequestAction: action, superseded };
  });
}

/** What `run()` takes from its surroundings; every field has the runner's default. */
export interface SyncActionDependencies {
  /** Default `process.env`. */
  env?: ActionEnv;
  /** Default `@actions/core`. */
  core?: SyncActionCore;
  /** Makes the GitHub API; default Octokit (`createGitHubClient`: retries, rate limits) at GITHUB_API_URL. */
  pullRequestApi?: (token: string, repository: { owner: string; repo: string }, apiUrl: string, log: (message: string) => void) => PullRequestApi;
  fetch?: typeof globalThis.fetch;
}

export interface SyncActionOutcome {
  ok: boolean;
  outputs: Record<string, string>;
  result?: SyncResult;
}

function defaultApi(token: string, repository: { owner: string; repo: string }, apiUrl: string, log: (message: string) => void): PullRequestApi {
  const octokit = createGitHubClient({ token, baseUrl: apiUrl, userAgent: 'template-registry-sync-action', log });
  return octokitPullRequestApi(octokit, repository.owner, repository.repo);
}

/**
 * The sync action: `syncProject` on the inputs. Outputs `updated` (false when the project is
 * current), `version`, `pull-request-number`, `pull-request-url` and `conflicts` (a count).
 */
export async function run(deps: SyncActionDependencies = {}): Promise<SyncActionOutcome> {
  const env = deps.env ?? process.env;
  const core = deps.core ?? actionsCore;
  const outputs: Record<string, string> = {};
  try {
    const inputs = parseSyncInputs(env);
    core.setSecret(inputs.githubToken);
    const api = (deps.pullRequestApi ?? defaultApi)(inputs.githubToken, inputs.repository, inputs.apiUrl, (m) => core.info(m));
    const result = await syncProject({
      workspace: inputs.workspace,
      projectDir: inputs.projectDir,
      ...(inputs.registryUrl ? { registryUrl: inputs.registryUrl } : {}),
      ...(inputs.baseBranch ? { baseBranch: inputs.baseBranch } : {}),
      ...(inputs.provenance ? { provenance: inputs.provenance } : {}),
      ...(inputs.sigstoreTrustedRoot ? { sigstoreTrustedRoot: inputs.sigstoreTrustedRoot } : {}),
      ...(inputs.registryKeys ? { registryKeys: inputs.registryKeys } : {}),
      owner: inputs.repository.owner,
      api,
      log: core,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      env,
    });
    Object.assign(outputs, {
      updated: String(result.status === 'updated'),
      version: result.version,
      'pull-request-number': result.pullRequest ? String(result.pullRequest.number) : '',
      'pull-request-url': result.pullRequest?.url ?? '',
      conflicts: String(result.conflicts.length),
    });
    for (const [name, value] of Object.entries(outputs)) core.setOutput(name, value);
    return { ok: true, outputs, result };
  } catch (error) {
    core.setFailed(errorMessage(error));
    return { ok: false, outputs };
  }
}
