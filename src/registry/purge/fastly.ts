/**
 * Fastly: Fastly's single-URL purge through the API, one request per URL
 * (`POST /purge/{host}{path}` with `Fastly-Key: $FASTLY_API_TOKEN`), as crates.io purges its
 * CDN: a hard purge (a soft one would leave the stale copy served while revalidating, which is what
 * the purge is there to end). Fastly finds the service by the URL's host; the service id names the
 * target in logs and in the outbox, and is the service the token must be allowed to purge
 * (`purge_select` scope).
 */
import { oneLine, PurgeConfigError, purgeRequest, type PurgeCallOptions, type PurgeTarget } from './target.js';

export const FASTLY_API_URL = 'https://api.fastly.com';
export const FASTLY_TOKEN_ENV = 'FASTLY_API_TOKEN';
export const FASTLY_API_URL_ENV = 'FASTLY_API_BASE_URL';

export interface FastlySettings {
  serviceId: string;
  token: string;
  apiUrl?: string;
  fetch?: typeof globalThis.fetch;
}

export class FastlyPurge implements PurgeTarget {
  readonly spec: string;
  /** Fastly purges one URL per request (more at once only by surrogate key). */
  readonly batchSize = 1;
  readonly #api: string;
  readonly #token: string;
  readonly #fetch: typeof globalThis.fetch;

  constructor(settings: FastlySettings) {
    if (settings.token.trim() === '') throw new PurgeConfigError(`fastly:${settings.serviceId} needs an API token allowed to purge the service in $${FASTLY_TOKEN_ENV}`);
    this.spec = `fastly:${settings.serviceId}`;
    this.#api = (settings.apiUrl ?? FASTLY_API_URL).replace(/\/+$/, '');
    this.#token = settings.token.trim();
    this.#fetch = settings.fetch ?? globalThis.fetch;
  }

  async purge(urls: readonly string[], options: PurgeCallOptions): Promise<void> {
    for (const url of urls) await this.#purgeOne(url, options.signal);
  }

  async #purgeOne(url: string, cancel: AbortSignal | undefined): Promise<void> {
    const parsed = new URL(url);
    const endpoint = `${this.#api}/purge/${parsed.host}${parsed.pathname}`;
    const { response, text, refused } = await purgeRequest(this.spec, this.#fetch, endpoint, { method: 'POST', headers: { 'fastly-key': this.#token, accept: 'application/json' } }, cancel);
    if (response.ok) return;
    throw refused(`Fastly refused the purge of ${url} (HTTP ${response.status}): ${oneLine(text) || 'no details'}`);
  }
}
