import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { PROVENANCE_MODES, type ProvenanceMode } from '../client/index.js';
import { registryDocumentUrl, registryUrlProblem } from '../core/registry-url.js';
import { MAX_KEYS_FILE_BYTES, readPublicKeys, type PublishedKey } from '../core/registry-signatures.js';
import { InputError, readInput, type ActionEnv } from '../github/inputs.js';
import { isInside } from '../template/paths.js';

export { InputError } from '../github/inputs.js';

/** The sync action's inputs, parsed and checked. */
export interface SyncInputs {
  /** The registry document's URL (`registry-url` as a base or registry.json URL); absent: the one the lock file names. */
  registryUrl?: string;
  githubToken: string;
  /** GITHUB_WORKSPACE resolved (default the working directory): the checkout git runs in. */
  workspace: string;
  /** The generated project (absolute, inside the workspace). */
  projectDir: string;
  /** Absent: the repository's default branch. */
  baseBranch?: string;
  repository: { owner: string; repo: string };
  /** GITHUB_API_URL, default https://api.github.com. */
  apiUrl: string;
  /** Input `provenance` (off, warn, require); absent: warn. */
  provenance?: ProvenanceMode;
  /** Input `sigstore-trusted-root`: a trusted root file, relative to the workspace. */
  sigstoreTrustedRoot?: string;
  /** Input `registry-key`: the public keys the registry's documents must be signed with. */
  registryKeys?: PublishedKey[];
}

/**
 * The `registry-key` input: a public JWK or JWK Set, given inline (JSON) or as a file inside the
 * workspace. The runner keeps nothing between runs, so a key is pinned from the input or not at all.
 */
function registryKeysInput(value: string, workspace: string): PublishedKey[] | undefined {
  if (value === '') return undefined;
  let text = value;
  let where = 'input registry-key';
  if (!value.startsWith('{')) {
    const file = path.resolve(workspace, value);
    if (!isInside(workspace, file)) throw new InputError(`input registry-key must be a JWK (JSON) or a file inside the workspace ${workspace} (got ${JSON.stringify(value)})`);
    where = `input registry-key (${value})`;
    try {
      if (statSync(file).size > MAX_KEYS_FILE_BYTES) throw new InputError(`${where} is larger than ${MAX_KEYS_FILE_BYTES} bytes: not a key file`);
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if (error instanceof InputError) throw error;
      throw new InputError(`${where} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InputError(`${where} must be a JSON Web Key or JWK Set: ${(error as Error).message}`);
  }
  try {
    return readPublicKeys(json, where);
  } catch (error) {
    throw new InputError((error as Error).message);
  }
}

/**
 * A branch name git accepts (`git check-ref-format --branch`, the common rules): it goes into
 * git's arguments, so it must not look like an option either.
 */
function checkBranchName(name: string): void {
  const control = [...name].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);
  const bad = control || name.startsWith('-') || name.startsWith('/') || name.endsWith('/') || name.endsWith('.') || name.endsWith('.lock') || name.includes('..') || name.includes('//') || name.includes('@{') || /[\s~^:?*[\\]/.test(name);
  if (bad) throw new InputError(`input base-branch is not a valid branch name (got ${JSON.stringify(name)})`);
}

/**
 * Parses the sync action's inputs from the environment the runner gives (a pure function of it
 * and `cwd`). project-path is resolved against GITHUB_WORKSPACE and must stay inside it. Throws
 * InputError naming the input and the rule it breaks.
 */
export function parseSyncInputs(env: ActionEnv, cwd = '.'): SyncInputs {
  const workspace = path.resolve(cwd, env.GITHUB_WORKSPACE || '.');
  const githubToken = readInput(env, 'github-token');
  if (githubToken === '') throw new InputError('input github-token is required (the default ${{ github.token }} needs the permissions contents: write and pull-requests: write)');

  const registryUrl = readInput(env, 'registry-url');
  const problem = registryUrl === '' ? undefined : registryUrlProblem(registryUrl);
  if (problem) throw new InputError(`input registry-url ${problem}`);

  const projectPath = readInput(env, 'project-path') || '.';
  const projectDir = path.resolve(workspace, projectPath);
  if (!isInside(workspace, projectDir)) throw new InputError(`input project-path must stay inside the workspace ${workspace} (got ${JSON.stringify(projectPath)})`);

  const baseBranch = readInput(env, 'base-branch');
  if (baseBranch !== '') checkBranchName(baseBranch);

  const provenance = readInput(env, 'provenance');
  if (provenance !== '' && !(PROVENANCE_MODES as readonly string[]).includes(provenance)) throw new InputError(`input provenance must be off, warn or require (got ${JSON.stringify(provenance)})`);
  const trustedRoot = readInput(env, 'sigstore-trusted-root');
  const registryKeys = registryKeysInput(readInput(env, 'registry-key'), workspace);

  const [owner, repo, ...rest] = (env.GITHUB_REPOSITORY ?? '').split('/');
  if (!owner || !repo || rest.length > 0) throw new InputError(`GITHUB_REPOSITORY must be owner/repo (got ${JSON.stringify(env.GITHUB_REPOSITORY ?? '')})`);

  return {
    ...(registryUrl ? { registryUrl: registryDocumentUrl(registryUrl) } : {}),
    githubToken,
    workspace,
    projectDir,
    ...(baseBranch ? { baseBranch } : {}),
    repository: { owner, repo },
    apiUrl: (env.GITHUB_API_URL ?? '').trim() || 'https://api.github.com',
    ...(provenance ? { provenance: provenance as ProvenanceMode } : {}),
    ...(trustedRoot ? { sigstoreTrustedRoot: path.resolve(workspace, trustedRoot) } : {}),
    ...(registryKeys ? { registryKeys } : {}),
  };
}
