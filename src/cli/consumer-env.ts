import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';


import { loadSemver } from '../core/lazy/semver.load.js';
import { MAX_DOCUMENT_BYTES_ENV, REGISTRY_CACHE_ENV, REGISTRY_KEY_ENV, REGISTRY_MODE_ENV, REGISTRY_URL_ENV } from '../core/env-names.js';
import { registryDocumentUrl, registryUrlProblem } from '../core/registry-url.js';
import { KeyFileError, MAX_KEYS_FILE_BYTES, readPublicKeys, type PublishedKey } from '../core/registry-signatures.js';
import { isTemplateName, isTemplateVersion, NAME_PATTERN, VERSION_RULE } from '../core/versions.js';
import { UsageError } from './io.js';

/** The user's cache folder for the registry client (REGISTRY_CACHE_ENV overrides it). */
export function userCacheDir(env: Readonly<Record<string, string | undefined>> = process.env, platform = process.platform): string {
  const cache = env[REGISTRY_CACHE_ENV];
  if (cache) return cache;
  if (platform === 'win32') return path.join(env.LOCALAPPDATA ?? path.join(homedir(), 'AppData', 'Local'), 'template-registry', 'cache');
  if (platform === 'darwin') return path.join(homedir(), 'Library', 'Caches', 'template-registry');
  return path.join(env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'template-registry');
}

/**
 * The registry document's URL from --registry, TEMPLATE_REGISTRY_URL or else `fallback` (the
 * registry a project's lock file names), given either as the registry's base URL or as its
 * document's URL (core/registry-url.ts has the rule).
 */
function registryUrlFrom(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env, fallback?: string): string {
  const fromEnv = env[REGISTRY_URL_ENV]?.trim() ? env[REGISTRY_URL_ENV] : undefined;
  const value = flag ?? fromEnv ?? fallback;
  if (value === undefined || value.trim() === '') throw new UsageError(`no registry: pass --registry URL or set ${REGISTRY_URL_ENV}`);
  const problem = registryUrlProblem(value);
  if (problem) throw new UsageError(`${flag !== undefined ? '--registry' : fromEnv !== undefined ? REGISTRY_URL_ENV : 'the registry of the project\'s lock file'} ${problem}`);
  return registryDocumentUrl(value);
}

/** Whether the environment is a CI run (`CI` set to anything but `0` or `false`, as GitHub Actions and most CI services set it): nothing is asked there. */
export function isCiFrom(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const value = env.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** `--task-timeout <seconds>`: the time limit of each post-generation task, in ms; undefined when not given. */
export function taskTimeoutFrom(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`--task-timeout must be a positive number of seconds (got ${JSON.stringify(value)})`);
  }
  return seconds * 1000;
}

/**
 * The registries to read, in order (the first, then the ones tried when it cannot be reached): the
 * repeated --registry, else TEMPLATE_REGISTRY_URL (comma-separated), else `fallback` (the lock
 * file's registry). Each given as a base or document URL; returned as document URLs, duplicates dropped.
 */
export function registryUrlsFrom(flags: string | readonly string[] | undefined, env: Readonly<Record<string, string | undefined>> = process.env, fallback?: string): string[] {
  const given = typeof flags === 'string' ? [flags] : [...(flags ?? [])];
  if (given.length > 0) return [...new Set(given.map((flag) => registryUrlFrom(flag, env)))];
  const fromEnv = env[REGISTRY_URL_ENV]?.trim() ? env[REGISTRY_URL_ENV] : undefined;
  if (fromEnv === undefined) return [registryUrlFrom(undefined, env, fallback)];
  const listed = fromEnv.split(',').map((value) => value.trim());
  if (listed.some((value) => value === '')) throw new UsageError(`${REGISTRY_URL_ENV} must be registry URLs separated by commas, none empty (got ${JSON.stringify(fromEnv)})`);
  return [...new Set(listed.map((value) => registryUrlFrom(undefined, { [REGISTRY_URL_ENV]: value })))];
}

/**
 * The registry's public keys to pin from the start: each --registry-key, else TEMPLATE_REGISTRY_KEY;
 * a JWK or JWK Set (`{"keys": [...]}`), inline JSON or a file holding it (a private key gives its
 * public part). Undefined when none is given.
 */
export function registryKeysFrom(flags: readonly string[] | undefined, env: Readonly<Record<string, string | undefined>> = process.env): PublishedKey[] | undefined {
  const fromEnv = env[REGISTRY_KEY_ENV]?.trim() ? env[REGISTRY_KEY_ENV] : undefined;
  const values = flags && flags.length > 0 ? flags.map((value) => ({ value, name: '--registry-key' })) : fromEnv !== undefined ? [{ value: fromEnv, name: REGISTRY_KEY_ENV }] : [];
  if (values.length === 0) return undefined;
  const keys = values.flatMap(({ value, name }) => {
    const text = value.trim();
    let json: unknown;
    let where = name;
    try {
      if (text.startsWith('{')) json = JSON.parse(text);
      else {
        where = `${name} ${text}`;
        if (statSync(text).size > MAX_KEYS_FILE_BYTES) throw new UsageError(`${where} is larger than ${MAX_KEYS_FILE_BYTES} bytes: not a key file`);
        json = JSON.parse(readFileSync(text, 'utf8'));
      }
      return readPublicKeys(json, where, { allowPrivate: true });
    } catch (error) {
      if (error instanceof UsageError) throw error;
      if (error instanceof KeyFileError) throw new UsageError(error.message);
      const code = (error as NodeJS.ErrnoException).code;
      throw new UsageError(`${where} must be a JSON Web Key (or a file holding one): ${code ?? (error as Error).message}`);
    }
  });
  const kids = keys.map((key) => key.kid);
  const duplicate = kids.find((kid, index) => kids.indexOf(kid) !== index);
  if (duplicate !== undefined) throw new UsageError(`--registry-key gives kid ${duplicate} more than once`);
  return keys;
}

/** `id@version` -> { id, version }; a bare id has no version. */
export function parseTemplateSpec(spec: string): { id: string; version?: string } {
  const at = spec.lastIndexOf('@');
  const id = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : undefined;
  if (!isTemplateName(id)) throw new UsageError(`template id must match ${NAME_PATTERN.source} (got ${JSON.stringify(id)})`);
  if (version !== undefined && !isTemplateVersion(version)) {
    throw new UsageError(`version ${VERSION_RULE} (got ${JSON.stringify(version)})`);
  }
  return version ? { id, version } : { id };
}

/** MAX_DOCUMENT_BYTES_ENV: the largest registry document the client reads (unset: the client's default). */
export function maxDocumentBytesFrom(env: Readonly<Record<string, string | undefined>> = process.env): number | undefined {
  const value = env[MAX_DOCUMENT_BYTES_ENV];
  if (value === undefined || value.trim() === '') return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) {
    throw new UsageError(`${MAX_DOCUMENT_BYTES_ENV} must be a positive number of bytes (got ${JSON.stringify(value)})`);
  }
  return Number(value);
}

/** REGISTRY_MODE_ENV: full, sparse or auto (the default: sparse when the registry publishes an index). */
export function registryModeFrom(env: Readonly<Record<string, string | undefined>> = process.env): 'full' | 'sparse' | 'auto' {
  const value = env[REGISTRY_MODE_ENV]?.trim();
  if (value === undefined || value === '') return 'auto';
  if (value === 'full' || value === 'sparse' || value === 'auto') return value;
  throw new UsageError(`${REGISTRY_MODE_ENV} must be full, sparse or auto (got ${JSON.stringify(value)})`);
}

/**
 * A version given on the command line for a runtime (`--node-version v20.11.1`): MAJOR.MINOR.PATCH,
 * a leading `v` allowed; returned without it.
 */
export function runtimeVersionFrom(flag: string, value: string): string {
  const version = loadSemver().valid(value.trim().replace(/^v/, ''));
  if (version === null) throw new UsageError(`${flag} must be a version MAJOR.MINOR.PATCH such as 20.11.1 (got ${JSON.stringify(value)})`);
  return version;
}

/** How long `npm --version` may take before the npm version counts as unknown. */
const NPM_VERSION_TIMEOUT_MS = 5_000;

/**
 * The npm version of this machine, undefined when it cannot be found. Run through npm (npm
 * start, npx), npm names itself in `npm_config_user_agent` (`npm/10.8.2 node/v20...`), which
 * costs nothing; otherwise `npm --version` is run, bounded in time. Only asked when a template
 * declares an npm range.
 */
export async function localNpmVersion(
  env: Readonly<Record<string, string | undefined>> = process.env,
  runNpm: () => Promise<string> = npmVersionOutput,
): Promise<string | undefined> {
  const agent = /^npm\/(\S+)/.exec(env.npm_config_user_agent ?? '')?.[1];
  if (agent !== undefined && loadSemver().valid(agent)) return agent;
  try {
    return loadSemver().valid((await runNpm()).trim()) ?? undefined;
  } catch {
    return undefined;
  }
}

async function npmVersionOutput(): Promise<string> {
  // npm is npm.cmd on Windows, which only a shell runs; the command line is fixed, no input in it.
  const { stdout } = await promisify(execFile)('npm', ['--version'], { timeout: NPM_VERSION_TIMEOUT_MS, shell: process.platform === 'win32', windowsHide: true });
  return stdout;
}
