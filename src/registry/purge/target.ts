/**
 * What a CDN purge is made of, whichever CDN: the target an operator names (`--purge`), the URLs a
 * change touched, and the one interface every vendor's adapter implements (`cloudfront.ts`,
 * `cloudflare.ts`, `fastly.ts`, `http.ts`).
 *
 * Which URLs: exactly those a client fetches of the files a build wrote or removed. A CDN caches by
 * URL, so a precompressed variant (`registry.json.br`, answered for `registry.json` by content
 * negotiation) is the URL of its base file, and the catalog page (`index.html`) is also the
 * registry's folder URL (`/`). The host's own files (`_headers`) are never fetched by clients.
 */

import { parseHttpUrl } from '../../core/http-url.js';
import { readBodyHead } from '../../core/response-body.js';
import { parseRetryAfter } from '../../core/retry.js';

/** A CDN (or cache) that can forget URLs. */
export interface PurgeTarget {
  /** The target as configured (`cloudfront:E2QWRUHAPOMQZL`, `http://127.0.0.1:6081`): it names the target in logs and in the outbox. */
  readonly spec: string;
  /** The most URLs one `purge` call takes (the vendor's limit per request); `purgeInBatches` splits longer lists. */
  readonly batchSize: number;
  /**
   * Makes the CDN forget `urls` (absolute, under the public URL the CDN serves), at most
   * `batchSize` of them. Resolves once the CDN accepted the purge; throws `PurgeError` otherwise.
   * `reference` is the same on every attempt of one purge (CloudFront's CallerReference: a retry
   * after a lost answer is the same invalidation, not a second one).
   */
  purge(urls: readonly string[], options: PurgeCallOptions): Promise<void>;
  /** Releases what the target holds (an SDK client). */
  close?(): void;
}

export interface PurgeCallOptions {
  reference: string;
  signal?: AbortSignal;
}

/** A purge the CDN did not accept (or did not answer); its message names the target and what it said, never a credential. */
export class PurgeError extends Error {
  override readonly name = 'PurgeError';
  constructor(
    message: string,
    /** The HTTP status the vendor answered, when it answered. */
    readonly status?: number,
    /** How long the vendor asked to wait (`Retry-After`), in ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** A `--purge` value or a target's settings are unusable. */
export class PurgeConfigError extends Error {
  override readonly name = 'PurgeConfigError';
}

/** A purge target as written: a vendor and its id, or the base URL of a cache that takes HTTP `PURGE`. */
export type PurgeSpec =
  | { kind: 'cloudfront'; distributionId: string }
  | { kind: 'cloudflare'; zoneId: string }
  | { kind: 'fastly'; serviceId: string }
  | { kind: 'http'; url: string };

/** Ids as the vendors make them: letters, digits, `-` and `_` (CloudFront `E2QWRUHAPOMQZL`, a Cloudflare zone's 32 hex digits). */
const VENDOR_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** What `--purge` accepts, for messages. */
export const PURGE_SPEC_FORMS = 'cloudfront:DISTRIBUTION_ID, cloudflare:ZONE_ID, fastly:SERVICE_ID or the http(s) URL of a cache that takes PURGE (Varnish, nginx)';

/**
 * Parses a purge target (`--purge`, the registry action's `purge` input); `argument` names it in
 * errors. `http://` and `https://` are a cache answering HTTP `PURGE` at that address.
 */
export function parsePurgeSpec(value: string, argument = '--purge'): PurgeSpec {
  const text = value.trim();
  const fail = (why: string): never => {
    throw new PurgeConfigError(`${argument}: ${why} (got ${JSON.stringify(value)}); give ${PURGE_SPEC_FORMS}`);
  };
  if (/^https?:\/\//i.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return fail('not a URL');
    }
    if (url.username !== '' || url.password !== '') fail('a cache URL must not hold credentials');
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '') fail('a cache URL is its address only (scheme, host and port): PURGE is sent there with the path of each URL');
    return { kind: 'http', url: url.origin };
  }
  const match = /^(cloudfront|cloudflare|fastly):(.*)$/i.exec(text);
  if (!match) return fail('unknown purge target');
  const vendor = (match[1] ?? '').toLowerCase();
  const id = match[2] ?? '';
  if (!VENDOR_ID.test(id)) fail(`the ${vendor} id may only hold letters, digits, "-" and "_"`);
  if (vendor === 'cloudfront') return { kind: 'cloudfront', distributionId: id };
  if (vendor === 'cloudflare') return { kind: 'cloudflare', zoneId: id };
  return { kind: 'fastly', serviceId: id };
}

/** The canonical text of a spec: what the outbox stores and logs show. */
export function purgeSpecText(spec: PurgeSpec): string {
  switch (spec.kind) {
    case 'cloudfront':
      return `cloudfront:${spec.distributionId}`;
    case 'cloudflare':
      return `cloudflare:${spec.zoneId}`;
    case 'fastly':
      return `fastly:${spec.serviceId}`;
    case 'http':
      return spec.url;
  }
}

/** Files of a static registry that are the host's, not the registry's: never fetched by a client. */
const HOST_FILES: ReadonlySet<string> = new Set(['_headers']);

/**
 * The public URLs of registry files (names relative to the registry's root, `/`-separated, as a
 * build reports them in `written` and `removed`) under `publicUrl` (the registry's base URL as the
 * CDN serves it): variants folded into their base file, the catalog also as the folder URL,
 * duplicates dropped, sorted.
 */
export function purgeUrlsOf(publicUrl: string, names: readonly string[]): string[] {
  const base = `${publicUrl.replace(/\/+$/, '')}/`;
  const urls = new Set<string>();
  for (const name of names) {
    if (name.startsWith('.') || HOST_FILES.has(name)) continue;
    const fetched = name.replace(/\.(gz|br)$/, '');
    const path = fetched.split('/').map(encodeURIComponent).join('/');
    urls.add(new URL(path, base).href);
    if (fetched === 'index.html') urls.add(base);
  }
  return [...urls].sort();
}

/** Checks a public base URL for purges: http(s), no credentials, query or fragment. */
export function checkPublicUrl(value: string, argument: string): string {
  const url = parseHttpUrl(value);
  if (!url) throw new PurgeConfigError(`${argument} must be an http(s) URL (got ${JSON.stringify(value)})`);
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') throw new PurgeConfigError(`${argument} must be a plain base URL, without credentials, query or fragment (got ${JSON.stringify(value)})`);
  return value.replace(/\/+$/, '');
}

/**
 * Purges `urls` at `target` in batches of its size, one after the other (a failed batch fails the
 * whole purge: its retry purges every URL again, which is harmless).
 */
export async function purgeInBatches(target: PurgeTarget, urls: readonly string[], options: PurgeCallOptions): Promise<void> {
  const size = Math.max(1, target.batchSize);
  for (let start = 0, batch = 0; start < urls.length; start += size, batch++) {
    await target.purge(urls.slice(start, start + size), { ...options, reference: urls.length > size ? `${options.reference}-${batch}` : options.reference });
  }
}

/** Most bytes of a vendor's answer read for its error message. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The answer's text, at most MAX_ANSWER_BYTES of it (a failure's details; never more than that is read). */
export async function answerText(response: Response): Promise<string> {
  // A body cut short: what arrived is enough for a message.
  return (await readBodyHead(response, MAX_ANSWER_BYTES, { partialOnError: true })).toString('utf8');
}

/** One line of a vendor's answer, for a message (control characters out, at most 300 characters). */
export function oneLine(text: string): string {
  // Control characters (a vendor's text could hold escape sequences) become spaces.
  const line = [...text].map((c) => (c < ' ' || c === '\u007f' ? ' ' : c)).join('').replace(/ {2,}/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** A purge request takes at most this long. */
export const PURGE_REQUEST_TIMEOUT_MS = 30_000;

/**
 * One request to a vendor's purge API (`target` names it in messages): within
 * PURGE_REQUEST_TIMEOUT_MS and the caller's `cancel`; no answer is a PurgeError naming the endpoint.
 * Gives the answer with its text (at most MAX_ANSWER_BYTES), and the PurgeError of a refusal: its
 * status and the `Retry-After` it asks for.
 */
export async function purgeRequest(
  target: string,
  send: typeof globalThis.fetch,
  endpoint: string,
  init: Omit<RequestInit, 'signal'>,
  cancel: AbortSignal | undefined,
): Promise<{ response: Response; text: string; refused: (message: string) => PurgeError }> {
  const timeout = AbortSignal.timeout(PURGE_REQUEST_TIMEOUT_MS);
  let response: Response;
  try {
    response = await send(endpoint, { ...init, signal: cancel ? AbortSignal.any([cancel, timeout]) : timeout });
  } catch (error) {
    throw new PurgeError(`${target}: no answer from ${endpoint}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await answerText(response);
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after') ?? undefined);
  return { response, text, refused: (message) => new PurgeError(`${target}: ${message}`, response.status, retryAfterMs) };
}
