/**
 * One JSON resource of a registry (the document, the sparse index, one template's file), fetched
 * and cached under the client's rules: kept for a TTL, revalidated with `If-None-Match` /
 * `If-Modified-Since`, read up to a size cap, persisted to a cache file that survives restarts,
 * never replaced by a failed fetch (the stale value keeps answering, `status()` says why, and
 * `onStale` is told once), retried only after a backoff, and fetched once for concurrent callers.
 * With `refresh`, the first use revalidates whatever the cache's age, and the refresh is marked
 * (`RefreshMark`) so that any other resource of the registry cached before it is revalidated on its
 * next use, in this process or a later one. A copy found stale against another resource (the
 * registry's skew, see registry-client.ts) is fetched once more with `Cache-Control: no-cache`, which
 * asks every cache on the way (a CDN, a proxy) to revalidate with the origin.
 *
 * With `verify` (a signed registry, trust.ts), a body is checked before it is parsed or accepted; a
 * refusal (`RegistryTrustError`) is not a failed fetch: it is thrown to every caller (the stale copy
 * never answers in its place) until a fetch passes. A refusal that may be a build caught between a
 * document and its signature is looked at once more, both fetched past caches.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import { MAX_DOCUMENT_BYTES_ENV } from '../core/env-names.js';
import { writeFileAtomic } from '../core/files.js';
import { errorMessage } from '../core/errors.js';
import { readBodyCapped } from '../core/response-body.js';
import { RegistryTrustError, trustFetchFailure } from './trust.js';

/** No registry could be read and none is cached: the only case in which the client rejects. */
export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
  constructor(
    readonly url: string,
    readonly reason: string,
    /**
     * Whether the registry could not be reached (a network error, a time-out, HTTP 5xx, 408 or 429),
     * as opposed to answering something unusable: only then is another registry of a list tried.
     */
    readonly unreachable = false,
  ) {
    super(`cannot load the registry from ${url}: ${reason}`);
  }
}

/** Statuses that say the registry is down or overloaded, not that the resource is wrong. */
const isOutageStatus = (status: number | undefined): boolean => status === undefined || status >= 500 || status === 408 || status === 429;

/** Why a response cannot be used; the message goes into `lastError`. */
export class FetchFailure extends Error {
  constructor(
    message: string,
    /** The HTTP status, when the server answered one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The cache file of `url` in `cacheDir`: `registry-<sha256 of the URL, hex>.json`. */
export function cacheFileFor(cacheDir: string, url: string): string {
  return path.join(cacheDir, `registry-${createHash('sha256').update(url).digest('hex')}.json`);
}

/** The refresh mark of the registry whose document is at `registryUrl`: `registry-<sha256 of the URL>.refreshed.json`. */
function refreshMarkFileFor(cacheDir: string, registryUrl: string): string {
  return cacheFileFor(cacheDir, registryUrl).replace(/\.json$/, '.refreshed.json');
}

/**
 * When the registry was last refreshed (`--refresh`, `RegistryClient.refresh()`), shared by every
 * resource of one registry and kept beside their cache files. A cached copy fetched before the mark
 * is not used as it is: it is revalidated (a conditional request) on its next use. So after a
 * refresh that read `index.json` and a template's file, a later command reading `registry.json` does
 * not answer from an older copy of it for up to an hour: every command sees what the refresh saw.
 */
export class RefreshMark {
  readonly #file: string | undefined;
  readonly #url: string;
  #at: number | undefined;
  #load: Promise<void> | undefined;
  /** Whether this process marked a refresh already (its later fetches are part of the same refresh). */
  #marked = false;

  constructor(registryUrl: string, cacheDir?: string) {
    this.#url = registryUrl;
    this.#file = cacheDir === undefined ? undefined : refreshMarkFileFor(cacheDir, registryUrl);
  }

  /** The time of the last refresh, in the clock's milliseconds; undefined when none is known. */
  get at(): number | undefined {
    return this.#at;
  }

  /** Reads the mark file once (a missing or unreadable one is no mark). */
  load(): Promise<void> {
    const file = this.#file;
    if (file === undefined) return Promise.resolve();
    this.#load ??= (async () => {
      try {
        if ((await stat(file)).size > 4096) return;
        const { url, refreshedAt } = JSON.parse(await readFile(file, 'utf8')) as { url?: unknown; refreshedAt?: unknown };
        if (url === this.#url && typeof refreshedAt === 'number' && Number.isFinite(refreshedAt) && (this.#at === undefined || refreshedAt > this.#at)) this.#at = refreshedAt;
      } catch {
        // no mark
      }
    })();
    return this.#load;
  }

  /** Marks a refresh made at `at`: the first one of this process only, the others being the same refresh. */
  async mark(at: number): Promise<void> {
    if (this.#marked) return;
    this.#marked = true;
    await this.load();
    if (this.#at !== undefined && this.#at >= at) return;
    this.#at = at;
    if (this.#file === undefined) return;
    try {
      await writeFileAtomic(this.#file, JSON.stringify({ url: this.#url, refreshedAt: at }));
    } catch {
      // ignored on purpose: only a later process misses the mark
    }
  }
}

/** The body of `response`, refused (FetchFailure) as soon as it passes `maxBytes`. */
function readCapped(response: Response, maxBytes: number, url: string, what: string): Promise<Buffer> {
  return readBodyCapped(
    response,
    maxBytes,
    (declared) =>
      new FetchFailure(`the ${what} at ${url} is ${declared === undefined ? 'larger' : `${declared} bytes`}, more than the limit of ${maxBytes} bytes (maxDocumentBytes, ${MAX_DOCUMENT_BYTES_ENV})`),
  );
}

export interface CachedJsonOptions<T> {
  url: string;
  /** What the resource is, in messages: `registry document`, `registry index`, ... */
  what: string;
  ttlMs: number;
  failureBackoffMs: number;
  timeoutMs: number;
  maxBytes: number;
  fetch: typeof globalThis.fetch;
  now: () => number;
  cacheDir?: string;
  /** The value to keep for a parsed body; throws FetchFailure saying why the body cannot be used. */
  accept: (json: unknown) => T;
  /** The JSON to write to the cache file, from which `accept` restores the value. */
  toJson: (value: T) => unknown;
  /** Revalidate on first use whatever the cache's age (the CLI's `--refresh`); the answer still renews the cache. */
  refresh?: boolean;
  /** The registry's refresh mark: a copy fetched before it is revalidated; a refresh marks it. */
  refreshMark?: RefreshMark;
  /** Told (once until a fetch succeeds) when a failed fetch leaves a cached copy answering that is expired, or that `refresh` wanted replaced. */
  onStale?: (notice: StaleNotice) => void;
  /**
   * Checks a body before it is parsed (a signed registry's signature, trust.ts); `fresh` on the
   * second look of a retry. Throws RegistryTrustError to refuse it.
   */
  verify?: (body: Buffer, options: { fresh: boolean }) => Promise<string | undefined>;
  /**
   * Whether a copy in the cache file, accepted when it was signed by `signedBy` (undefined:
   * unsigned), may still answer under the trust of now (keys given since, or pinned since).
   */
  trustsCached?: (signedBy: string | undefined) => Promise<boolean>;
}

/** A cached copy answering because fetching a fresh one failed. */
export interface StaleNotice {
  url: string;
  /** What the resource is: `registry document`, `registry index`, ... */
  what: string;
  /** When the copy was fetched or last confirmed, in `now()` milliseconds. */
  fetchedAt: number;
  /** How old the copy is, in milliseconds. */
  ageMs: number;
  /** Whether the copy is older than the cache lifetime (else `refresh` asked for a newer one). */
  expired: boolean;
  /** Why no fresh copy could be had. */
  reason: string;
}

interface Snapshot<T> {
  value: T;
  fetchedAt: number;
  etag?: string;
  lastModified?: string;
  source: 'network' | 'cache';
  /** The key that signed the copy (a signed registry's), kept with it in the cache file. */
  signedBy?: string;
}

export interface CachedJsonStatus {
  fetchedAt?: number;
  stale: boolean;
  lastError?: string;
  /** The HTTP status of the last failed fetch, when the server answered one. */
  lastStatus?: number;
  etag?: string;
  lastModified?: string;
  source: 'network' | 'cache' | 'none';
}

export class CachedJson<T> {
  readonly #options: CachedJsonOptions<T>;
  #snapshot: Snapshot<T> | undefined;
  #lastError: string | undefined;
  #lastStatus: number | undefined;
  /** Whether the last failure was the registry being unreachable (see RegistryUnavailableError). */
  #lastUnreachable = false;
  /** The refusal of the last fetch, thrown to callers until a fetch passes. */
  #refused: RegistryTrustError | undefined;
  #lastFailureAt: number | undefined;
  #inFlight: Promise<void> | undefined;
  #diskLoad: Promise<void> | undefined;
  /** Whether a fetch was attempted in this process (what `refresh` waits for). */
  #attempted = false;
  /** Whether `onStale` was told about the current failure. */
  #staleTold = false;
  /** Whether the next successful fetch is a refresh (`refresh()` was called). */
  #refreshing = false;
  /** Whether this process fetched it past the caches already (`refetchUncached`). */
  #uncached = false;

  constructor(options: CachedJsonOptions<T>) {
    this.#options = options;
  }

  get url(): string {
    return this.#options.url;
  }

  /** The value in hand, fetching or revalidating it when the cache rules say so. */
  async get(): Promise<T> {
    await this.#loadDisk();
    const snapshot = this.#snapshot;
    if (snapshot && this.#usable(snapshot)) return snapshot.value;
    const inBackoff = this.#lastFailureAt !== undefined && this.#options.now() - this.#lastFailureAt < this.#options.failureBackoffMs;
    if (this.#refused && inBackoff && !this.#inFlight) throw this.#refused;
    if (snapshot && inBackoff && !this.#inFlight) return this.#staleValue(snapshot);
    await this.#revalidate();
    if (this.#refused) throw this.#refused;
    if (this.#snapshot) return this.#staleValue(this.#snapshot);
    throw this.#unavailable();
  }

  #unavailable(): RegistryUnavailableError {
    return new RegistryUnavailableError(this.#options.url, this.#lastError ?? `no ${this.#options.what}`, this.#lastError !== undefined && this.#lastUnreachable);
  }

  /** The value in hand (or in the cache file) when it is younger than the TTL (and, with `refresh`, revalidated); never fetches. */
  async fresh(): Promise<T | undefined> {
    await this.#loadDisk();
    const snapshot = this.#snapshot;
    return snapshot && this.#usable(snapshot) ? snapshot.value : undefined;
  }

  /**
   * Fetches once more (conditionally) unless this process fetched it already, for a caller that did
   * not find what it looked for in a cached copy. Resolves to whether it fetched.
   */
  async recheck(): Promise<boolean> {
    await this.#loadDisk();
    if (this.#attempted) return false;
    await this.#revalidate(true);
    return true;
  }

  /**
   * Fetches once more past every cache on the way (`Cache-Control: no-cache`, conditionally), at most
   * once in this process whatever was fetched before: for a copy another resource shows is stale (the
   * index names a version this template file lacks). Resolves to whether it fetched.
   */
  async refetchUncached(): Promise<boolean> {
    await this.#loadDisk();
    if (this.#uncached) return false;
    this.#uncached = true;
    if (this.#inFlight) await this.#inFlight;
    await this.#revalidate(true);
    return true;
  }

  /** Fetches now (conditionally when cached), and marks the refresh; rejects only when there is no value at all. */
  async refresh(): Promise<void> {
    await this.#loadDisk();
    this.#refreshing = true;
    await this.#revalidate();
    if (this.#refused) throw this.#refused;
    if (!this.#snapshot) throw this.#unavailable();
    this.#staleValue(this.#snapshot);
  }

  /** The value in hand, if any, without fetching or reading the cache file. */
  peek(): T | undefined {
    return this.#snapshot?.value;
  }

  status(): CachedJsonStatus {
    const snapshot = this.#snapshot;
    const status: CachedJsonStatus = {
      stale: snapshot !== undefined && (this.#lastError !== undefined || this.#expired(snapshot)),
      source: snapshot?.source ?? 'none',
    };
    if (snapshot) status.fetchedAt = snapshot.fetchedAt;
    if (this.#lastError !== undefined) status.lastError = this.#lastError;
    if (this.#lastStatus !== undefined) status.lastStatus = this.#lastStatus;
    if (snapshot?.etag !== undefined) status.etag = snapshot.etag;
    if (snapshot?.lastModified !== undefined) status.lastModified = snapshot.lastModified;
    return status;
  }

  /**
   * Whether the snapshot answers without a request: young enough, not older than the registry's last
   * refresh, and revalidated once when `refresh` asks for it.
   */
  #usable(snapshot: Snapshot<T>): boolean {
    const refreshedAt = this.#options.refreshMark?.at;
    if (refreshedAt !== undefined && snapshot.fetchedAt < refreshedAt) return false;
    return !this.#expired(snapshot) && !(this.#options.refresh === true && !this.#attempted);
  }

  /** The snapshot's value; when the last fetch failed and the copy is expired (or `refresh` wanted a new one), `onStale` is told once. */
  #staleValue(snapshot: Snapshot<T>): T {
    const { onStale } = this.#options;
    const expired = this.#expired(snapshot);
    if (onStale && this.#lastError !== undefined && !this.#staleTold && (expired || this.#options.refresh === true)) {
      this.#staleTold = true;
      const { url, what } = this.#options;
      onStale({ url, what, fetchedAt: snapshot.fetchedAt, ageMs: Math.max(0, this.#options.now() - snapshot.fetchedAt), expired, reason: this.#lastError });
    }
    return snapshot.value;
  }

  #expired(snapshot: Snapshot<T>): boolean {
    const age = this.#options.now() - snapshot.fetchedAt;
    // A fetch time in the future (clock moved back) is not trusted.
    return age < 0 || age >= this.#options.ttlMs;
  }

  /** Reads the cache file (and the refresh mark) once (a missing, corrupt or unusable file is ignored). */
  #loadDisk(): Promise<void> {
    const { cacheDir } = this.#options;
    if (cacheDir === undefined) return this.#options.refreshMark?.load() ?? Promise.resolve();
    this.#diskLoad ??= (async () => {
      await this.#options.refreshMark?.load();
      const record = await this.#readCacheFile(cacheFileFor(cacheDir, this.#options.url));
      // A copy accepted under another trust (unsigned, or another key) is fetched again.
      if (record && this.#options.trustsCached && !(await this.#options.trustsCached(record.signedBy))) return;
      // A fetch that finished meanwhile is newer than the file.
      if (!record || this.#snapshot) return;
      this.#snapshot = record;
    })();
    return this.#diskLoad;
  }

  async #readCacheFile(file: string): Promise<Snapshot<T> | undefined> {
    let record: unknown;
    try {
      // A cache file bigger than any body we would accept is not ours to read.
      if ((await stat(file)).size > this.#options.maxBytes + 1024 * 1024) return undefined;
      record = JSON.parse(await readFile(file, 'utf8'));
    } catch {
      return undefined;
    }
    if (!record || typeof record !== 'object') return undefined;
    const { url, fetchedAt, etag, lastModified, document, signedBy } = record as Record<string, unknown>;
    if (url !== this.#options.url || typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) return undefined;
    if (signedBy !== undefined && typeof signedBy !== 'string') return undefined;
    if (etag !== undefined && typeof etag !== 'string') return undefined;
    if (lastModified !== undefined && typeof lastModified !== 'string') return undefined;
    let value: T;
    try {
      value = this.#options.accept(document);
    } catch {
      return undefined;
    }
    return {
      value,
      fetchedAt,
      source: 'cache',
      ...(etag === undefined ? {} : { etag }),
      ...(lastModified === undefined ? {} : { lastModified }),
      ...(signedBy === undefined ? {} : { signedBy }),
    };
  }

  /** One request at a time: concurrent callers wait for the same one. Never rejects. `uncached`: past every cache (`no-cache`). */
  #revalidate(uncached = false): Promise<void> {
    this.#inFlight ??= this.#fetchOnce(uncached).finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #fetchOnce(uncached: boolean): Promise<void> {
    const previous = this.#snapshot;
    this.#attempted = true;
    if (uncached) this.#uncached = true;
    try {
      const next = await this.#request(previous, uncached);
      this.#snapshot = next;
      this.#staleTold = false;
      this.#lastError = undefined;
      this.#lastStatus = undefined;
      this.#lastUnreachable = false;
      this.#refused = undefined;
      this.#lastFailureAt = undefined;
      await this.#persist(next);
      if (this.#options.refresh === true || this.#refreshing) await this.#options.refreshMark?.mark(next.fetchedAt);
      this.#refreshing = false;
    } catch (error) {
      const http = trustFetchFailure(error);
      const failure = http ? new FetchFailure(`cannot fetch the signature: ${http.message}`, http.status) : error;
      this.#refused = failure instanceof RegistryTrustError ? failure : undefined;
      this.#lastError = failure instanceof FetchFailure || failure instanceof RegistryTrustError ? failure.message : `network error: ${errorMessage(failure, { withCause: true })}`;
      this.#lastStatus = failure instanceof FetchFailure ? failure.status : undefined;
      // Unreachable: no answer at all, or an answer saying the server cannot serve now.
      this.#lastUnreachable = failure instanceof RegistryTrustError ? false : failure instanceof FetchFailure ? failure.status !== undefined && isOutageStatus(failure.status) : true;
      this.#lastFailureAt = this.#options.now();
    }
  }

  /**
   * `uncached`: every cache on the way revalidates with the origin before answering (RFC 9111
   * 5.2.1.4); still conditional, a 304 keeping the copy in hand. `fresh`: past caches and
   * unconditional too, for a body to verify once more (a signature caught mid-build).
   */
  async #request(previous: Snapshot<T> | undefined, uncached = false, fresh = false): Promise<Snapshot<T>> {
    const { url, what, timeoutMs } = this.#options;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (uncached || fresh) Object.assign(headers, { 'cache-control': 'no-cache', pragma: 'no-cache' });
    if (!fresh) {
      if (previous?.etag !== undefined) headers['if-none-match'] = previous.etag;
      if (previous?.lastModified !== undefined) headers['if-modified-since'] = previous.lastModified;
    }
    const response = await this.#options.fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const fetchedAt = this.#options.now();
    const etag = response.headers.get('etag') ?? undefined;
    const lastModified = response.headers.get('last-modified') ?? undefined;

    if (response.status === 304) {
      await response.body?.cancel();
      if (!previous) throw new FetchFailure(`HTTP 304 Not Modified without a cached ${what === 'registry document' ? 'registry' : what}`, 304);
      return {
        value: previous.value,
        fetchedAt,
        source: 'network',
        ...((etag ?? previous.etag) === undefined ? {} : { etag: etag ?? previous.etag }),
        ...((lastModified ?? previous.lastModified) === undefined ? {} : { lastModified: lastModified ?? previous.lastModified }),
        ...(previous.signedBy === undefined ? {} : { signedBy: previous.signedBy }),
      };
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new FetchFailure(`HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`, response.status);
    }

    const body = await readCapped(response, this.#options.maxBytes, url, what);
    let signedBy: string | undefined;
    if (this.#options.verify) {
      try {
        signedBy = await this.#options.verify(body, { fresh });
      } catch (error) {
        // A document and its signature caught between two writes of a build: both once more, past caches.
        if (error instanceof RegistryTrustError && error.retryable && !fresh) return this.#request(previous, true, true);
        throw error;
      }
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new FetchFailure(`invalid JSON: ${errorMessage(error, { withCause: true })}`);
    }
    return {
      value: this.#options.accept(json),
      fetchedAt,
      source: 'network',
      ...(etag === undefined ? {} : { etag }),
      ...(lastModified === undefined ? {} : { lastModified }),
      ...(signedBy === undefined ? {} : { signedBy }),
    };
  }

  /** Writes the cache file (atomically); a write failure only costs the next process a request. */
  async #persist(snapshot: Snapshot<T>): Promise<void> {
    const { cacheDir, url } = this.#options;
    if (cacheDir === undefined) return;
    const record = {
      url,
      fetchedAt: snapshot.fetchedAt,
      ...(snapshot.etag === undefined ? {} : { etag: snapshot.etag }),
      ...(snapshot.lastModified === undefined ? {} : { lastModified: snapshot.lastModified }),
      ...(snapshot.signedBy === undefined ? {} : { signedBy: snapshot.signedBy }),
      document: this.#options.toJson(snapshot.value),
    };
    try {
      await writeFileAtomic(cacheFileFor(cacheDir, url), JSON.stringify(record));
    } catch {
      // ignored on purpose: the value in memory is fine
    }
  }
}
