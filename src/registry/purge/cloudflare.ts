/**
 * Cloudflare: purge by URL through the API (`POST /zones/{zone_id}/purge_cache` with
 * `{"files": [...]}`), authenticated by an API token with the zone's Cache Purge permission
 * (`Authorization: Bearer $CLOUDFLARE_API_TOKEN`). At most 30 URLs per request, the limit of every
 * plan but Enterprise.
 */
import { oneLine, PurgeConfigError, purgeRequest, type PurgeCallOptions, type PurgeTarget } from './target.js';

/** Cloudflare's API, and where `CLOUDFLARE_API_BASE_URL` (or `--cloudflare-api-url`) points it instead (tests, a proxy). */
export const CLOUDFLARE_API_URL = 'https://api.cloudflare.com/client/v4';
export const CLOUDFLARE_TOKEN_ENV = 'CLOUDFLARE_API_TOKEN';
export const CLOUDFLARE_API_URL_ENV = 'CLOUDFLARE_API_BASE_URL';
/** URLs per purge request. */
export const CLOUDFLARE_BATCH = 30;

export interface CloudflareSettings {
  zoneId: string;
  token: string;
  apiUrl?: string;
  fetch?: typeof globalThis.fetch;
}

interface CloudflareAnswer {
  success?: unknown;
  errors?: { code?: unknown; message?: unknown }[];
}

/** The errors Cloudflare listed in its answer, as one line. */
function cloudflareErrors(text: string): string {
  try {
    const answer = JSON.parse(text) as CloudflareAnswer;
    const listed = (answer.errors ?? []).map((e) => `${typeof e.code === 'number' ? `${e.code} ` : ''}${typeof e.message === 'string' ? e.message : ''}`.trim()).filter(Boolean);
    if (listed.length > 0) return listed.join('; ');
  } catch {
    // not JSON: the text itself
  }
  return oneLine(text);
}

/** Whether Cloudflare's answer says `"success": true`. */
function acceptedBy(text: string): boolean {
  try {
    return (JSON.parse(text) as CloudflareAnswer).success === true;
  } catch {
    return false;
  }
}

export class CloudflarePurge implements PurgeTarget {
  readonly spec: string;
  readonly batchSize = CLOUDFLARE_BATCH;
  readonly #endpoint: string;
  readonly #token: string;
  readonly #fetch: typeof globalThis.fetch;

  constructor(settings: CloudflareSettings) {
    if (settings.token.trim() === '') throw new PurgeConfigError(`cloudflare:${settings.zoneId} needs an API token with the Cache Purge permission in $${CLOUDFLARE_TOKEN_ENV}`);
    this.spec = `cloudflare:${settings.zoneId}`;
    this.#endpoint = `${(settings.apiUrl ?? CLOUDFLARE_API_URL).replace(/\/+$/, '')}/zones/${encodeURIComponent(settings.zoneId)}/purge_cache`;
    this.#token = settings.token.trim();
    this.#fetch = settings.fetch ?? globalThis.fetch;
  }

  async purge(urls: readonly string[], options: PurgeCallOptions): Promise<void> {
    if (urls.length === 0) return;
    const { response, text, refused } = await purgeRequest(
      this.spec,
      this.#fetch,
      this.#endpoint,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ files: urls }),
      },
      options.signal,
    );
    if (response.ok && acceptedBy(text)) return;
    throw refused(`Cloudflare refused the purge (HTTP ${response.status}): ${cloudflareErrors(text) || 'no details'}`);
  }
}
