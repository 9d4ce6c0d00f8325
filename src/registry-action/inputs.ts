import path from 'node:path';

import { checkHttpUrlInput, InputError, readBooleanInput, readInput, readListInput, type ActionEnv } from '../github/inputs.js';
import { parsePurgeSpec, PurgeConfigError } from '../registry/purge/index.js';
import { parseOutputTarget, S3UrlError, type S3Location } from '../registry/s3-output.js';

export { InputError } from '../github/inputs.js';

/** Where the registry action writes when `out-dir` is an `s3://` URL. */
export interface RegistryActionS3 extends S3Location {
  /** `s3-endpoint`; when empty the AWS SDK's AWS_ENDPOINT_URL, else AWS S3. */
  endpoint?: string;
  forcePathStyle: boolean;
}

/** The registry action's inputs, parsed and checked. */
export interface RegistryActionInputs {
  /** The config file (absolute: resolved against the workspace). */
  configPath: string;
  /** The output folder (absolute: resolved against the workspace), or the `s3://` URL as given. */
  outDir: string;
  /** Set when out-dir is an `s3://bucket/prefix` URL. */
  s3?: RegistryActionS3;
  githubToken: string;
  /** Public base URL of the registry, for the catalog page. */
  publicUrl?: string;
  /** GITHUB_API_URL (GitHub Enterprise Server), when set. */
  apiUrl?: string;
  /** CDN targets to purge after the build (`purge`, one per line or comma-separated), each checked. */
  purge?: string[];
  /** The public base URL the CDN serves the registry at (`cdn-url`, default `public-url`); set when `purge` is. */
  cdnUrl?: string;
  /**
   * `sign-key`: a private JWK or JWK Set, as JSON (a secret) or as a file path (resolved against
   * the workspace); the registry is signed with it.
   */
  signKey?: string;
}

/** out-dir as a folder (resolved against the workspace) or a bucket, with the S3 inputs checked against it. */
function parseOutDir(env: ActionEnv, workspace: string): Pick<RegistryActionInputs, 'outDir' | 's3'> {
  const outDir = readInput(env, 'out-dir') || 'public';
  const endpoint = readInput(env, 's3-endpoint');
  const forcePathStyle = readBooleanInput(env, 's3-force-path-style', false);
  let target;
  try {
    target = parseOutputTarget(outDir, 'input out-dir');
  } catch (error) {
    if (error instanceof S3UrlError) throw new InputError(error.message);
    throw error;
  }
  if (target.kind === 'folder') {
    if (endpoint !== '') throw new InputError('input s3-endpoint needs an out-dir of the form s3://bucket/prefix');
    if (forcePathStyle) throw new InputError('input s3-force-path-style needs an out-dir of the form s3://bucket/prefix');
    return { outDir: path.resolve(workspace, target.dir) };
  }
  if (endpoint !== '') checkHttpUrlInput('s3-endpoint', endpoint);
  return { outDir, s3: { bucket: target.bucket, prefix: target.prefix, ...(endpoint !== '' ? { endpoint } : {}), forcePathStyle } };
}

/**
 * Parses the registry action's inputs from the environment the runner gives (a pure function of
 * it). Relative paths are resolved against GITHUB_WORKSPACE (default: the working directory).
 * Throws InputError naming the input and the rule it breaks.
 */
export function parseRegistryInputs(env: ActionEnv, cwd = '.'): RegistryActionInputs {
  const workspace = path.resolve(cwd, env.GITHUB_WORKSPACE || '.');
  const config = readInput(env, 'config') || 'registry.config.json';
  const githubToken = readInput(env, 'github-token');
  const publicUrl = readInput(env, 'public-url');
  if (githubToken === '') throw new InputError('input github-token is required (the default ${{ github.token }} reads public repositories)');
  if (publicUrl !== '') checkHttpUrlInput('public-url', publicUrl);
  const output = parseOutDir(env, workspace);
  const apiUrl = (env.GITHUB_API_URL ?? '').trim();
  const purge = readListInput(env, 'purge');
  for (const target of purge) {
    try {
      parsePurgeSpec(target, 'input purge');
    } catch (error) {
      if (error instanceof PurgeConfigError) throw new InputError(error.message);
      throw error;
    }
  }
  const cdnUrl = readInput(env, 'cdn-url') || publicUrl;
  if (purge.length > 0) {
    if (cdnUrl === '') throw new InputError('input purge needs cdn-url (or public-url): the URL the CDN serves the registry at');
    checkHttpUrlInput(readInput(env, 'cdn-url') ? 'cdn-url' : 'public-url', cdnUrl);
  }
  const signKey = readInput(env, 'sign-key');
  return {
    configPath: path.resolve(workspace, config),
    ...output,
    githubToken,
    ...(publicUrl ? { publicUrl } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(purge.length > 0 ? { purge, cdnUrl } : {}),
    ...(signKey !== '' ? { signKey: signKey.startsWith('{') ? signKey : path.resolve(workspace, signKey) } : {}),
  };
}
