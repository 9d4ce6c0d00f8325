/**
 * Amazon CloudFront: an invalidation of the URLs' paths (`CreateInvalidation` through
 * `@aws-sdk/client-cloudfront`), as crates.io invalidates its sparse index: paths (`/index.json`),
 * at most 1,000 per invalidation (CloudFront allows 3,000 in progress per distribution), a
 * CallerReference that is the same on every attempt of one purge, so that a retry after a lost
 * answer is the same invalidation, not a second one. `TooManyInvalidationsInProgress` and every
 * other failure are retried by the caller (the outbox), not by the SDK.
 *
 * Credentials and region come the AWS SDK way (environment, profile, role); the endpoint is the
 * SDK's too: `AWS_ENDPOINT_URL_CLOUDFRONT` (then `AWS_ENDPOINT_URL`) points it elsewhere (tests,
 * a proxy).
 */
import type { CloudFrontClient, CloudFrontClientConfig } from '@aws-sdk/client-cloudfront';

import { PurgeConfigError, PurgeError, type PurgeCallOptions, type PurgeTarget } from './target.js';

/** Paths per invalidation. */
export const CLOUDFRONT_BATCH = 1000;
export const CLOUDFRONT_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_CLOUDFRONT';

type Sdk = typeof import('@aws-sdk/client-cloudfront');
let sdk: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdk ??= import('@aws-sdk/client-cloudfront'));

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/**
 * The CloudFrontClient configuration in `env` (a pure function of it): CloudFront is global, its API
 * in us-east-1; the endpoint `AWS_ENDPOINT_URL_CLOUDFRONT`, then `AWS_ENDPOINT_URL` (as the SDK reads
 * them, here from the environment given); one attempt per call.
 */
export function cloudFrontClientConfig(env: Readonly<Record<string, string | undefined>> = process.env): CloudFrontClientConfig {
  const name = nonEmpty(env[CLOUDFRONT_ENDPOINT_ENV]) !== undefined ? CLOUDFRONT_ENDPOINT_ENV : nonEmpty(env.AWS_ENDPOINT_URL) !== undefined ? 'AWS_ENDPOINT_URL' : undefined;
  const endpoint = name === undefined ? undefined : (nonEmpty(env[name]) as string);
  if (endpoint !== undefined && !/^https?:\/\/[^\s/]+/.test(endpoint)) throw new PurgeConfigError(`${name ?? ''} must be an http(s) URL (got ${JSON.stringify(endpoint)})`);
  return { region: 'us-east-1', maxAttempts: 1, ...(endpoint !== undefined ? { endpoint } : {}) };
}

/** The paths CloudFront invalidates for `urls`: each URL's path as it is requested (percent-encoded). */
export function invalidationPaths(urls: readonly string[]): string[] {
  return [...new Set(urls.map((url) => new URL(url).pathname))];
}

/** The SDK's words for a failure: its error code, message and status (never the request's headers). */
function describe(error: unknown): { text: string; status?: number } {
  const e = error as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const message = typeof e?.message === 'string' && e.message !== '' && e.message !== name ? `: ${e.message}` : '';
  return { text: `${name}${message}${status !== undefined ? ` (HTTP ${status})` : ''}`, ...(status !== undefined ? { status } : {}) };
}

export interface CloudFrontSettings {
  distributionId: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** A client made elsewhere (tests); default one from `cloudFrontClientConfig(env)`. */
  client?: CloudFrontClient;
}

export class CloudFrontPurge implements PurgeTarget {
  readonly spec: string;
  readonly batchSize = CLOUDFRONT_BATCH;
  readonly #distributionId: string;
  readonly #config: CloudFrontClientConfig;
  #client: Promise<CloudFrontClient> | undefined;

  constructor(settings: CloudFrontSettings) {
    this.#distributionId = settings.distributionId;
    this.spec = `cloudfront:${settings.distributionId}`;
    this.#config = cloudFrontClientConfig(settings.env);
    if (settings.client) this.#client = Promise.resolve(settings.client);
  }

  #clientNow(): Promise<CloudFrontClient> {
    this.#client ??= loadSdk().then(({ CloudFrontClient: Client }) => new Client(this.#config));
    return this.#client;
  }

  async purge(urls: readonly string[], options: PurgeCallOptions): Promise<void> {
    const paths = invalidationPaths(urls);
    if (paths.length === 0) return;
    const [{ CreateInvalidationCommand }, client] = await Promise.all([loadSdk(), this.#clientNow()]);
    try {
      await client.send(
        new CreateInvalidationCommand({
          DistributionId: this.#distributionId,
          InvalidationBatch: { CallerReference: options.reference, Paths: { Quantity: paths.length, Items: paths } },
        }),
        options.signal ? { abortSignal: options.signal } : {},
      );
    } catch (error) {
      const { text, status } = describe(error);
      throw new PurgeError(`${this.spec}: CreateInvalidation failed: ${text}`, status);
    }
  }

  close(): void {
    void this.#client?.then((client) => client.destroy());
  }
}
