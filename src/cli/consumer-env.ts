import { homedir } from 'node:os';
import path from 'node:path';

import { isTemplateName, isTemplateVersion, NAME_PATTERN } from '../core/versions.js';
import { UsageError } from './io.js';

/** The user's cache folder for the registry client (TEMPLATE_REGISTRY_CACHE overrides it). */
export function userCacheDir(env: Readonly<Record<string, string | undefined>> = process.env, platform = process.platform): string {
  if (env.TEMPLATE_REGISTRY_CACHE) return env.TEMPLATE_REGISTRY_CACHE;
  if (platform === 'win32') return path.join(env.LOCALAPPDATA ?? path.join(homedir(), 'AppData', 'Local'), 'template-registry', 'cache');
  if (platform === 'darwin') return path.join(homedir(), 'Library', 'Caches', 'template-registry');
  return path.join(env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'template-registry');
}

/** The registry document's URL from --registry or TEMPLATE_REGISTRY_URL. */
export function registryUrlFrom(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const value = flag ?? env.TEMPLATE_REGISTRY_URL;
  if (!value) throw new UsageError('no registry: pass --registry URL or set TEMPLATE_REGISTRY_URL');
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new UsageError(`--registry must be an http(s) URL (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** `id@version` -> { id, version }; a bare id has no version. */
export function parseTemplateSpec(spec: string): { id: string; version?: string } {
  const at = spec.lastIndexOf('@');
  const id = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : undefined;
  if (!isTemplateName(id)) throw new UsageError(`template id must match ${NAME_PATTERN.source} (got ${JSON.stringify(id)})`);
  if (version !== undefined && !isTemplateVersion(version)) {
    throw new UsageError(`version must be MAJOR.MINOR.PATCH (got ${JSON.stringify(version)})`);
  }
  return version ? { id, version } : { id };
}

/** TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES: the largest registry document the client reads (unset: the client's default). */
export function maxDocumentBytesFrom(env: Readonly<Record<string, string | undefined>> = process.env): number | undefined {
  const value = env.TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES;
  if (value === undefined || value.trim() === '') return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) {
    throw new UsageError(`TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES must be a positive number of bytes (got ${JSON.stringify(value)})`);
  }
  return Number(value);
}

/** TEMPLATE_REGISTRY_MODE: full, sparse or auto (the default: sparse when the registry publishes an index). */
export function registryModeFrom(env: Readonly<Record<string, string | undefined>> = process.env): 'full' | 'sparse' | 'auto' {
  const value = env.TEMPLATE_REGISTRY_MODE?.trim();
  if (value === undefined || value === '') return 'auto';
  if (value === 'full' || value === 'sparse' || value === 'auto') return value;
  throw new UsageError(`TEMPLATE_REGISTRY_MODE must be full, sparse or auto (got ${JSON.stringify(value)})`);
}
