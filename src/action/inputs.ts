import path from 'node:path';

import { VERSION_PATTERN, VERSION_RULE } from '../core/versions.js';
import { checkHttpUrlInput, InputError, readBooleanInput, readInput, readListInput, type ActionEnv } from '../github/inputs.js';
import { canRequestIdToken } from '../github/oidc.js';
import { PUBLIC_GOOD_ENDPOINTS, type SigstoreEndpoints } from '../publish/attest.js';

export { InputError } from '../github/inputs.js';

/** The publish action's inputs, parsed and checked. */
export interface ActionInputs {
  /** The template folder, absolute: the template-path input resolved against the workspace. */
  templatePath: string;
  /** GITHUB_WORKSPACE resolved (default the working directory): annotation paths are relative to it. */
  workspace: string;
  registryUrl?: string;
  /** The stored registry token; absent: trusted publishing (an OIDC ID token exchanged right before the upload). */
  registryToken?: string;
  /** No registry-token and not a dry run: the upload's token comes from the job's OIDC ID token. */
  trustedPublishing: boolean;
  githubToken?: string;
  /** MAJOR.MINOR.PATCH, without `v`. */
  version: string;
  /** The git tag the release belongs to (`v1.2.3`). */
  tag: string;
  exclude: string[];
  testCommand?: string;
  createRelease: boolean;
  dryRun: boolean;
  /** From GITHUB_REPOSITORY; needed to create the release. */
  repository?: { owner: string; repo: string };
  /** After the upload, wait until the public URL lists the version (`wait`). */
  wait: boolean;
  /** How long the wait lasts at most, in ms (`wait-timeout`, seconds; default 300). */
  waitTimeoutMs: number;
  /** Where clients read the registry, for the wait (`public-url`; default registry-url). */
  publicUrl?: string;
  /** Sign the archive's build provenance and send it with the upload (the `attest` input resolved). */
  attest: boolean;
  /** Where the provenance is signed, logged and timestamped (inputs `sigstore-*-url`, else `SIGSTORE_*_URL`, else the public-good instance). */
  sigstore: SigstoreEndpoints;
}

/** An endpoint: the input, else the environment variable, else the default; `none` leaves it out. */
function endpoint(env: ActionEnv, input: string, variable: string, fallback: string | undefined): string | undefined {
  const given = readInput(env, input) || (env[variable] ?? '').trim();
  if (given === 'none') return undefined;
  if (given === '') return fallback;
  checkHttpUrlInput(readInput(env, input) ? input : variable, given);
  return given;
}

/**
 * The Sigstore endpoints of the attestation: Fulcio (required), Rekor and a timestamp authority (at
 * least one of them). The public-good instance by default; GitHub's own (private repositories),
 * a GitHub Enterprise Server's or an air-gapped one through the inputs or `SIGSTORE_FULCIO_URL`,
 * `SIGSTORE_REKOR_URL`, `SIGSTORE_TSA_URL`.
 */
export function sigstoreEndpoints(env: ActionEnv): SigstoreEndpoints {
  const fulcioUrl = endpoint(env, 'sigstore-fulcio-url', 'SIGSTORE_FULCIO_URL', PUBLIC_GOOD_ENDPOINTS.fulcioUrl);
  if (fulcioUrl === undefined) throw new InputError('input sigstore-fulcio-url cannot be none: the attestation needs a certificate authority');
  const rekorUrl = endpoint(env, 'sigstore-rekor-url', 'SIGSTORE_REKOR_URL', PUBLIC_GOOD_ENDPOINTS.rekorUrl);
  const tsaUrl = endpoint(env, 'sigstore-tsa-url', 'SIGSTORE_TSA_URL', undefined);
  if (rekorUrl === undefined && tsaUrl === undefined) {
    throw new InputError('inputs sigstore-rekor-url and sigstore-tsa-url are both empty: the attestation needs a transparency log or a timestamp authority');
  }
  return { fulcioUrl, ...(rekorUrl ? { rekorUrl } : {}), ...(tsaUrl ? { tsaUrl } : {}) };
}

/** The `attest` input: `auto` (default: when the job can ask for an OIDC ID token), `true` (required) or `false`. */
function attestInput(env: ActionEnv, dryRun: boolean): boolean {
  const value = readInput(env, 'attest').toLowerCase() || 'auto';
  if (!['auto', 'true', 'false'].includes(value)) throw new InputError(`input attest must be auto, true or false (got ${JSON.stringify(readInput(env, 'attest'))})`);
  if (dryRun || value === 'false') return false;
  if (value === 'true' && !canRequestIdToken(env)) {
    throw new InputError('input attest is true but the job cannot ask for an OIDC ID token (ACTIONS_ID_TOKEN_REQUEST_URL is not set): give the job `permissions: id-token: write`');
  }
  return canRequestIdToken(env);
}

function versionFrom(env: ActionEnv): { version: string; tag: string } {
  const given = readInput(env, 'version');
  const ref = env.GITHUB_REF ?? '';
  const refTag = ref.startsWith('refs/tags/') ? ref.slice('refs/tags/'.length) : undefined;
  let version: string;
  if (given !== '') {
    version = given.replace(/^v/, '');
  } else if (refTag === undefined) {
    throw new InputError(
      `no version: this run is not on a tag (GITHUB_REF is ${JSON.stringify(ref)}); push a tag such as v1.2.3 or set the version input`,
    );
  } else if (!refTag.startsWith('v')) {
    throw new InputError(`tag ${JSON.stringify(refTag)} does not start with "v"; publish from a tag such as v1.2.3`);
  } else {
    version = refTag.slice(1);
  }
  if (!VERSION_PATTERN.test(version)) {
    const source = given !== '' ? 'the version input' : `tag ${JSON.stringify(refTag)}`;
    throw new InputError(`version ${VERSION_RULE}, as template.json requires (got ${JSON.stringify(version)} from ${source})`);
  }
  return { version, tag: given === '' && refTag ? refTag : `v${version}` };
}

/**
 * Parses the action's inputs from the environment the runner gives (a pure function of it and
 * `cwd`). template-path is resolved against GITHUB_WORKSPACE, itself resolved against `cwd`, as the
 * runner runs actions in the workspace. Throws InputError naming the input and the rule it breaks.
 */
export function parseInputs(env: ActionEnv, cwd = '.'): ActionInputs {
  const dryRun = readBooleanInput(env, 'dry-run', false);
  const createRelease = readBooleanInput(env, 'create-release', true);
  const { version, tag } = versionFrom(env);
  const registryUrl = readInput(env, 'registry-url');
  const registryToken = readInput(env, 'registry-token');
  const githubToken = readInput(env, 'github-token');
  const testCommand = readInput(env, 'test-command');
  const [owner, repo, ...rest] = (env.GITHUB_REPOSITORY ?? '').split('/');
  const workspace = path.resolve(cwd, env.GITHUB_WORKSPACE || '.');

  if (registryUrl !== '') checkHttpUrlInput('registry-url', registryUrl);
  const publicUrl = readInput(env, 'public-url');
  if (publicUrl !== '') checkHttpUrlInput('public-url', publicUrl);
  const waitTimeout = readInput(env, 'wait-timeout') || '300';
  if (!/^\d+$/.test(waitTimeout) || Number(waitTimeout) < 1) throw new InputError(`input wait-timeout must be a whole number of seconds, 1 or more (got ${JSON.stringify(waitTimeout)})`);
  if (!dryRun) {
    if (registryUrl === '') throw new InputError('input registry-url is required (unless dry-run is true)');
    if (registryToken === '' && !canRequestIdToken(env)) {
      throw new InputError(
        'input registry-token is empty and the job cannot ask for an OIDC ID token (ACTIONS_ID_TOKEN_REQUEST_URL is not set): give the job `permissions: id-token: write` to publish through a trusted publisher, or set registry-token',
      );
    }
    if (createRelease) {
      if (githubToken === '') throw new InputError('input github-token is required to create the release');
      if (!owner || !repo || rest.length > 0) {
        throw new InputError(`GITHUB_REPOSITORY must be owner/repo to create the release (got ${JSON.stringify(env.GITHUB_REPOSITORY ?? '')})`);
      }
    }
  }

  return {
    templatePath: path.resolve(workspace, readInput(env, 'template-path') || '.'),
    workspace,
    ...(registryUrl ? { registryUrl } : {}),
    ...(registryToken ? { registryToken } : {}),
    trustedPublishing: !dryRun && registryToken === '',
    ...(githubToken ? { githubToken } : {}),
    version,
    tag,
    exclude: readListInput(env, 'exclude'),
    ...(testCommand ? { testCommand } : {}),
    createRelease,
    dryRun,
    ...(owner && repo && rest.length === 0 ? { repository: { owner, repo } } : {}),
    wait: readBooleanInput(env, 'wait', false),
    waitTimeoutMs: Number(waitTimeout) * 1000,
    ...(publicUrl ? { publicUrl } : {}),
    attest: attestInput(env, dryRun),
    sigstore: sigstoreEndpoints(env),
  };
}
