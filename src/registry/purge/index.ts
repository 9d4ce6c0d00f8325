/**
 * CDN purges after a change: one adapter per vendor behind `PurgeTarget`, made from the targets an
 * operator names (`--purge`). Credentials come from the environment, never from flags:
 * `CLOUDFLARE_API_TOKEN`, `FASTLY_API_TOKEN`, the AWS SDK's chain for CloudFront; every vendor's API
 * can be pointed elsewhere (`AWS_ENDPOINT_URL_CLOUDFRONT`, `CLOUDFLARE_API_BASE_URL`,
 * `FASTLY_API_BASE_URL`, or the settings below), so that tests talk to local fakes.
 */
import { CloudflarePurge, CLOUDFLARE_API_URL_ENV, CLOUDFLARE_TOKEN_ENV } from './cloudflare.js';
import { CloudFrontPurge } from './cloudfront.js';
import { FastlyPurge, FASTLY_API_URL_ENV, FASTLY_TOKEN_ENV } from './fastly.js';
import { HttpPurge } from './http.js';
import { checkPublicUrl, parsePurgeSpec, type PurgeSpec, type PurgeTarget } from './target.js';

export {
  PurgeError,
  PurgeConfigError,
  parsePurgeSpec,
  purgeSpecText,
  purgeUrlsOf,
  purgeInBatches,
  checkPublicUrl,
  PURGE_SPEC_FORMS,
  type PurgeTarget,
  type PurgeSpec,
  type PurgeCallOptions,
} from './target.js';
export { CloudFrontPurge, cloudFrontClientConfig, invalidationPaths, CLOUDFRONT_BATCH, CLOUDFRONT_ENDPOINT_ENV } from './cloudfront.js';
export { CloudflarePurge, CLOUDFLARE_API_URL, CLOUDFLARE_API_URL_ENV, CLOUDFLARE_TOKEN_ENV, CLOUDFLARE_BATCH } from './cloudflare.js';
export { FastlyPurge, FASTLY_API_URL, FASTLY_API_URL_ENV, FASTLY_TOKEN_ENV } from './fastly.js';
export { HttpPurge } from './http.js';
export { purgeWithRetries, type PurgeRunOptions, type PurgeRunResult } from './run.js';
export { purgeAfterBuild, PENDING_PURGES_FILE, type PurgeAfterBuildOptions, type PurgeAfterBuildResult } from './after-build.js';

export interface PurgeSettings {
  /** Where credentials and API URLs are read (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Cloudflare's API base URL (default `$CLOUDFLARE_API_BASE_URL`, then https://api.cloudflare.com/client/v4). */
  cloudflareApiUrl?: string;
  /** Fastly's API base URL (default `$FASTLY_API_BASE_URL`, then https://api.fastly.com). */
  fastlyApiUrl?: string;
  fetch?: typeof globalThis.fetch;
}

const given = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/** The adapter of one target; a PurgeConfigError names what is missing (a token) or wrong (an API URL). */
export function createPurgeTarget(spec: PurgeSpec, settings: PurgeSettings = {}): PurgeTarget {
  const env = settings.env ?? process.env;
  const fetch = settings.fetch ? { fetch: settings.fetch } : {};
  switch (spec.kind) {
    case 'cloudfront':
      return new CloudFrontPurge({ distributionId: spec.distributionId, env });
    case 'cloudflare': {
      const apiUrl = given(settings.cloudflareApiUrl) ?? given(env[CLOUDFLARE_API_URL_ENV]);
      return new CloudflarePurge({ zoneId: spec.zoneId, token: env[CLOUDFLARE_TOKEN_ENV] ?? '', ...(apiUrl ? { apiUrl: checkPublicUrl(apiUrl, 'the Cloudflare API URL') } : {}), ...fetch });
    }
    case 'fastly': {
      const apiUrl = given(settings.fastlyApiUrl) ?? given(env[FASTLY_API_URL_ENV]);
      return new FastlyPurge({ serviceId: spec.serviceId, token: env[FASTLY_TOKEN_ENV] ?? '', ...(apiUrl ? { apiUrl: checkPublicUrl(apiUrl, 'the Fastly API URL') } : {}), ...fetch });
    }
    case 'http':
      return new HttpPurge({ url: spec.url });
  }
}

/**
 * The targets of a list of `--purge` values (each parsed, duplicates dropped); `argument` names the
 * flag or input in errors. Throws PurgeConfigError.
 */
export function purgeTargetsOf(values: readonly string[], settings: PurgeSettings = {}, argument = '--purge'): PurgeTarget[] {
  const specs = new Map<string, PurgeSpec>();
  for (const value of values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean)) {
    const spec = parsePurgeSpec(value, argument);
    specs.set(JSON.stringify(spec), spec);
  }
  return [...specs.values()].map((spec) => createPurgeTarget(spec, settings));
}
