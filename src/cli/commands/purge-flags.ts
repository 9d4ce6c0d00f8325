/**
 * The CDN purge flags `serve` and `build-registry` share: `--purge <target>` (repeatable), the
 * public URL the CDN serves the registry at (`--cdn-url`), and the vendors' API URLs. Credentials
 * are never flags: `CLOUDFLARE_API_TOKEN`, `FASTLY_API_TOKEN`, the AWS SDK's chain for CloudFront.
 */
import type { Command } from 'commander';

import { errorMessage } from '../../core/errors.js';
import { checkPublicUrl, PurgeConfigError, purgeTargetsOf, PURGE_SPEC_FORMS, type PurgeTarget } from '../../registry/purge/index.js';
import { UsageError } from '../io.js';
import { collect } from '../options.js';

export interface PurgeFlags {
  purge: string[];
  cdnUrl?: string;
  cloudflareApiUrl?: string;
  fastlyApiUrl?: string;
}

/** The purge flags, with the environment variables of the targets (`REGISTRY_PURGE`, comma-separated) and of the CDN URL. */
export function addPurgeOptions(command: Command, env: { purge: string; cdnUrl: string }, cdnDefault: string): Command {
  return command
    .option(
      '--purge <target>',
      `purge the CDN after each change: ${PURGE_SPEC_FORMS}; repeatable (env ${env.purge}, comma-separated); credentials from CLOUDFLARE_API_TOKEN, FASTLY_API_TOKEN or the AWS SDK's chain`,
      collect,
      [] as string[],
    )
    .option('--cdn-url <url>', `public base URL the CDN serves the registry at: the purged URLs are under it (env ${env.cdnUrl}; default ${cdnDefault})`)
    .option('--cloudflare-api-url <url>', "Cloudflare's API base URL (env CLOUDFLARE_API_BASE_URL; default https://api.cloudflare.com/client/v4)")
    .option('--fastly-api-url <url>', "Fastly's API base URL (env FASTLY_API_BASE_URL; default https://api.fastly.com)");
}

/** The purge targets the flags and `envValue` name (none: no purge); a UsageError names what is wrong. */
export function purgeTargetsFrom(flags: PurgeFlags, envValue: string | undefined, env: NodeJS.ProcessEnv = process.env): PurgeTarget[] {
  const values = flags.purge.length > 0 ? flags.purge : (envValue ?? '').split(',');
  try {
    return purgeTargetsOf(values, {
      env,
      ...(flags.cloudflareApiUrl !== undefined ? { cloudflareApiUrl: flags.cloudflareApiUrl } : {}),
      ...(flags.fastlyApiUrl !== undefined ? { fastlyApiUrl: flags.fastlyApiUrl } : {}),
    });
  } catch (error) {
    if (error instanceof PurgeConfigError) throw new UsageError(errorMessage(error));
    throw error;
  }
}

/** The public base URL purged URLs are under: `--cdn-url`, then `envValue`, then `fallback`; a UsageError when none or a bad one. */
export function cdnUrlFrom(flags: PurgeFlags, envValue: string | undefined, fallback: string | undefined, missing: string): string {
  const value = flags.cdnUrl ?? (envValue !== undefined && envValue.trim() !== '' ? envValue.trim() : undefined) ?? fallback;
  if (value === undefined) throw new UsageError(missing);
  try {
    return checkPublicUrl(value, '--cdn-url');
  } catch (error) {
    if (error instanceof PurgeConfigError) throw new UsageError(errorMessage(error));
    throw error;
  }
}
