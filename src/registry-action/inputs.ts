import path from 'node:path';

import { checkHttpUrlInput, InputError, readInput, type ActionEnv } from '../github/inputs.js';

export { InputError } from '../github/inputs.js';

/** The registry action's inputs, parsed and checked. */
export interface RegistryActionInputs {
  /** The config file (absolute: resolved against the workspace). */
  configPath: string;
  /** The output folder (absolute: resolved against the workspace). */
  outDir: string;
  githubToken: string;
  /** Public base URL of the registry, for the catalog page. */
  publicUrl?: string;
  /** GITHUB_API_URL (GitHub Enterprise Server), when set. */
  apiUrl?: string;
}

/**
 * Parses the registry action's inputs from the environment the runner gives (a pure function of
 * it). Relative paths are resolved against GITHUB_WORKSPACE (default: the working directory).
 * Throws InputError naming the input and the rule it breaks.
 */
export function parseRegistryInputs(env: ActionEnv, cwd = '.'): RegistryActionInputs {
  const workspace = path.resolve(cwd, env.GITHUB_WORKSPACE || '.');
  const config = readInput(env, 'config') || 'registry.config.json';
  const outDir = readInput(env, 'out-dir') || 'public';
  const githubToken = readInput(env, 'github-token');
  const publicUrl = readInput(env, 'public-url');
  if (githubToken === '') throw new InputError('input github-token is required (the default ${{ github.token }} reads public repositories)');
  if (publicUrl !== '') checkHttpUrlInput('public-url', publicUrl);
  const apiUrl = (env.GITHUB_API_URL ?? '').trim();
  return {
    configPath: path.resolve(workspace, config),
    outDir: path.resolve(workspace, outDir),
    githubToken,
    ...(publicUrl ? { publicUrl } : {}),
    ...(apiUrl ? { apiUrl } : {}),
  };
}
