/**
 * Where the commands of the write API (publish, deprecate, yank, owner, trust) find their registry
 * and token: the flags, else the environment (`core/env-names.ts`); and the client they send
 * through (`publish/api-client.ts`: its retries, errors and redaction).
 */
import type { Command } from 'commander';

import { REGISTRY_TOKEN_ENV, REGISTRY_URL_ENV } from '../core/env-names.js';
import { registryBaseUrl } from '../core/registry-url.js';
import { RegistryApiClient } from '../publish/api-client.js';

export interface ServerFlags {
  registry?: string;
  token?: string;
  json?: boolean;
}

export interface WriteServer {
  registryUrl: string;
  token: string;
}

/** The registry and token of the flags or the environment, or the usage error naming what is missing. */
export function serverOf(flags: ServerFlags, tokenNeeded = true, env: NodeJS.ProcessEnv = process.env): WriteServer | string {
  const registryUrl = registryBaseUrl((flags.registry ?? env[REGISTRY_URL_ENV] ?? '').trim());
  if (registryUrl === '') return `no registry: pass --registry <url> or set ${REGISTRY_URL_ENV}`;
  const token = (flags.token ?? env[REGISTRY_TOKEN_ENV] ?? '').trim();
  if (!tokenNeeded) return { registryUrl, token };
  if (token === '') return `no API token: set ${REGISTRY_TOKEN_ENV} or pass --token <token>`;
  return { registryUrl, token };
}

/** The write API client of a command's registry and token (a usage error for a URL that is not http(s)). */
export function apiClientOf(server: WriteServer): RegistryApiClient {
  return new RegistryApiClient({ registryUrl: server.registryUrl, token: server.token });
}

/** `--registry` and `--token` as every write command words them. */
export const REGISTRY_FLAG_HELP = `registry base URL (default: $${REGISTRY_URL_ENV})`;
export const tokenFlagHelp = (whose: string): string => `API token of ${whose} (default: $${REGISTRY_TOKEN_ENV})`;

/** Adds `--registry` and `--token` (the token of `whose`) to a write command. */
export function writeApiOptions(command: Command, whose: string): Command {
  return command.option('--registry <url>', REGISTRY_FLAG_HELP).option('--token <token>', tokenFlagHelp(whose));
}
