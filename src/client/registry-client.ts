/**
 * The registry reader: fetches one registry document (operation 1, `GET {registry_url}`), caches
 * it for `cacheTtlMs` (the spec's 3,600,000 ms), revalidates it with `If-None-Match` /
 * `If-Modified-Since`, and answers the spec's reader operations (list, get, categories, search)
 * from indexes built once per fetched document.
 *
 * Failure policy (spec: "on failure the client keeps its cached registry and continues"):
 * - A failed fetch (network error, timeout, non-2xx status, invalid JSON, a document failing the
 *   `registry-document` schema, which rejects the document as a whole) never replaces the cached
 *   registry. The client keeps answering from it, `status().stale` turns true and
 *   `status().lastError` says what failed. Nothing is thrown.
 * - Only when there is no registry at all (never fetched, no usable cache file) does a call reject,
 *   with a `RegistryUnavailableError` naming the URL and the cause.
 * - Retry policy: after a failed revalidation, calls within `failureBackoffMs` (default 30 s) are
 *   answered from the stale cache without a request, so a dead registry is not hit on every call;
 *   the first call after that window tries again. `refresh()` always tries. Without any cached
 *   registry every call tries (there is nothing to answer with).
 * - Concurrent callers share one in-flight request.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import path from 'node:path';

import { writeFileAtomic } from '../core/files.js';
import { selectLatest, sortEntries } from '../core/listing.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { matchesFilters, matchesTerms, searchTerms, searchText, type TemplateFilters } from '../core/search.js';

export type { TemplateFilters } from '../core/search.js';

/** The spec's registry cache lifetime. */
export const DEFAULT_CACHE_TTL_MS = 3_600_000;
/** After a failed revalidation, how long the stale cache is served before the next attempt. */
export const DEFAULT_FAILURE_BACKOFF_MS = 30_000;
/** A registry request (headers and body) that takes longer than this fails. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface RegistryClientOptions {
  /** URL of the registry document (operation 1), e.g. `https://registry.example/registry.json`. */
  registryUrl: string;
  /** How long a fetched document is used without a request; default 3,600,000 ms (1 hour). */
  cacheTtlMs?: number;
  /** Folder for a cache file that survives restarts (one file per registry URL); none by default. */
  cacheDir?: string;
  /** After a failed revalidation, answer from the stale cache this long before trying again (default 30 s). */
  failureBackoffMs?: number;
  /** A request taking longer than this fails (default 30 s). */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  /** Clock in milliseconds; default `Date.now`. */
  now?: () => number;
  /**
   * The largest registry document accepted, in bytes (default 256 MiB; the CLI reads
   * TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES). A bigger one is refused before it is parsed, and is
   * never read past the limit.
   */
  maxDocumentBytes?: number;
}

export const DEFAULT_MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

/** The body of `response` as text, refused (FetchFailure) as soon as it passes `maxBytes`. */
async function readCapped(response: Response, maxBytes: number, url: string): Promise<string> {
  const tooLarge = (size: string): FetchFailure =>
    new FetchFailure(`the registry document at ${url} is ${size}, more than the limit of ${maxBytes} bytes (maxDocumentBytes, TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES)`);
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(`${declared} bytes`);
  }
  if (!response.body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge('larger');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface RegistryStatus {
  /** When the registry in hand was fetched or last confirmed (304), in `now()` milliseconds. */
  fetchedAt?: number;
  /** True when the registry in hand is older than the TTL or its last revalidation failed. */
  stale: boolean;
  /** What the last fetch attempt failed on; cleared by a successful fetch. */
  lastError?: string;
  etag?: string;
  lastModified?: string;
  /**
   * Where the registry in hand was last confirmed: `network` (a 200 or 304 in this process),
   * `cache` (read from `cacheDir` and not confirmed since), `none` (no registry yet).
   */
  source: 'network' | 'cache' | 'none';
}

/** There is no registry to answer from: the first fetch failed and no cache could be used. */
export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
  readonly url: string;
  readonly reason: string;

  constructor(url: string, reason: string) {
    super(`cannot load the registry from ${url}: ${reason}`);
    this.url = url;
    this.reason = reason;
  }
}

// ---------------------------------------------------------------------------------------------
// Indexes
// ---------------------------------------------------------------------------------------------

/** Positions into `RegistryIndex.sorted`, ascending (so a subset of them is in listing order). */
type Positions = readonly number[];

const NONE: Positions = [];

/** Ends each entry's text in `RegistryIndex.corpus`; replaced by a space inside the texts. */
const SEPARATOR = '\u0000';

/**
 * Lookup structures of one registry document, built once when the document arrives. Entries are
 * sorted once in the spec's listing order; every index holds ascending positions into that order,
 * so filtering is an intersection of sorted lists and needs no sort afterwards.
 */
export interface RegistryIndex {
  readonly document: RegistryDocument;
  /** Every entry, in listing order. */
  readonly sorted: readonly TemplateEntry[];
  /**
   * The lower-cased search texts (name, description, tags, features, category) of every entry of
   * `sorted`, in that order, each followed by SEPARATOR: one string that `indexOf` scans quickly.
   */
  readonly corpus: string;
  /** `starts[i]`: where the text of `sorted[i]` begins in `corpus`; `starts[sorted.length]` is its length. */
  readonly starts: Int32Array;
  readonly byId: ReadonlyMap<string, readonly TemplateEntry[]>;
  /** id, then exact version: the first entry of the document with that pair. */
  readonly byVersion: ReadonlyMap<string, ReadonlyMap<string, TemplateEntry>>;
  readonly byCategory: ReadonlyMap<string, Positions>;
  readonly byStability: ReadonlyMap<string, Positions>;
  readonly byTag: ReadonlyMap<string, Positions>;
  readonly byFeature: ReadonlyMap<string, Positions>;
  readonly byAuthor: ReadonlyMap<string, Positions>;
  /** `selectLatest` results, filled on first use per id. */
  readonly latest: Map<string, TemplateEntry | null>;
}

function push<K>(map: Map<K, number[]>, key: K, position: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [position]);
  // A tag listed twice on one entry must not put the entry twice in the list.
  else if (list[list.length - 1] !== position) list.push(position);
}

/** Builds the indexes of a (schema-valid) registry document. */
const ABSOLUTE_URL = /^[a-z][a-z0-9+.-]*:/i;

/** `url` resolved against `base` when it is relative (a static registry's URLs are relative to registry.json). */
function absolute(url: string | undefined, base: string): string | undefined {
  if (url === undefined || url === '' || ABSOLUTE_URL.test(url)) return url;
  try {
    return new URL(url, base).href;
  } catch {
    return url;
  }
}

/**
 * The document with every relative `downloadUrl`, `documentationUrl` and `repositoryUrl` resolved
 * against the URL the document came from, so that callers only ever see absolute URLs.
 */
export function withAbsoluteUrls(document: RegistryDocument, documentUrl: string): RegistryDocument {
  const relative = (entry: TemplateEntry): boolean =>
    [entry.downloadUrl, entry.documentationUrl, entry.repositoryUrl].some((url) => url !== undefined && url !== '' && !ABSOLUTE_URL.test(url));
  if (!document.templates.some(relative)) return document;
  return {
    ...document,
    templates: document.templates.map((entry) => {
      if (!relative(entry)) return entry;
      const documentationUrl = absolute(entry.documentationUrl, documentUrl);
      const repositoryUrl = absolute(entry.repositoryUrl, documentUrl);
      return {
        ...entry,
        downloadUrl: absolute(entry.downloadUrl, documentUrl) ?? entry.downloadUrl,
        ...(documentationUrl === undefined ? {} : { documentationUrl }),
        ...(repositoryUrl === undefined ? {} : { repositoryUrl }),
      };
    }),
  };
}

export function buildIndex(document: RegistryDocument): RegistryIndex {
  const sorted = sortEntries(document.templates);
  const texts: string[] = new Array<string>(sorted.length);
  const starts = new Int32Array(sorted.length + 1);
  let offset = 0;
  const byCategory = new Map<string, number[]>();
  const byStability = new Map<string, number[]>();
  const byTag = new Map<string, number[]>();
  const byFeature = new Map<string, number[]>();
  const byAuthor = new Map<string, number[]>();
  sorted.forEach((entry, position) => {
    const tags = entry.tags ?? [];
    const features = entry.features ?? [];
    const text = searchText(entry).replaceAll(SEPARATOR, ' ');
    texts[position] = text + SEPARATOR;
    starts[position] = offset;
    offset += text.length + 1;
    push(byCategory, entry.category, position);
    push(byStability, entry.stability, position);
    for (const tag of tags) push(byTag, tag, position);
    for (const feature of features) push(byFeature, feature, position);
    if (entry.author?.name !== undefined) push(byAuthor, entry.author.name, position);
  });

  const byId = new Map<string, TemplateEntry[]>();
  const byVersion = new Map<string, Map<string, TemplateEntry>>();
  for (const entry of document.templates) {
    const list = byId.get(entry.id);
    if (list) list.push(entry);
    else byId.set(entry.id, [entry]);
    let versions = byVersion.get(entry.id);
    if (!versions) byVersion.set(entry.id, (versions = new Map<string, TemplateEntry>()));
    if (!versions.has(entry.version)) versions.set(entry.version, entry);
  }
  starts[sorted.length] = offset;
  return { document, sorted, corpus: texts.join(''), starts, byId, byVersion, byCategory, byStability, byTag, byFeature, byAuthor, latest: new Map() };
}

/** Index of the first element of `list` (ascending) that is >= `value`, searching from `from`. */
function lowerBound(list: Positions, value: number, from: number): number {
  let low = from;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((list[mid] as number) < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Intersection of two ascending lists; binary search when one is much shorter than the other. */
function intersect(small: Positions, large: Positions): number[] {
  const result: number[] = [];
  if (small.length * Math.log2(large.length + 1) < large.length) {
    let at = 0;
    for (const value of small) {
      at = lowerBound(large, value, at);
      if (at === large.length) break;
      if (large[at] === value) result.push(value);
    }
    return result;
  }
  let i = 0;
  let j = 0;
  while (i < small.length && j < large.length) {
    const a = small[i] as number;
    const b = large[j] as number;
    if (a === b) {
      result.push(a);
      i++;
      j++;
    } else if (a < b) i++;
    else j++;
  }
  return result;
}

/** Ascending positions of the entries holding any of `wanted` (one key, or a list of keys). */
function positionsOf(map: ReadonlyMap<string, Positions>, wanted: string | readonly string[]): Positions {
  if (typeof wanted === 'string') return map.get(wanted) ?? NONE;
  const merged = new Set<number>();
  for (const key of wanted) for (const position of map.get(key) ?? NONE) merged.add(position);
  return [...merged].sort((a, b) => a - b);
}

/**
 * The spec's list rule on an index, in listing order: the indexes narrow the entries down (an
 * intersection of sorted lists), then `matchesFilters`, the rule itself, decides.
 */
export function listFromIndex(index: RegistryIndex, filters: TemplateFilters = {}): TemplateEntry[] {
  const lists: Positions[] = [];
  if (filters.category !== undefined) lists.push(positionsOf(index.byCategory, filters.category));
  if (filters.stability !== undefined) lists.push(positionsOf(index.byStability, filters.stability));
  if (filters.author !== undefined) lists.push(index.byAuthor.get(filters.author) ?? NONE);
  for (const tag of filters.tags ?? []) lists.push(index.byTag.get(tag) ?? NONE);
  for (const feature of filters.features ?? []) lists.push(index.byFeature.get(feature) ?? NONE);
  if (lists.length === 0) return [...index.sorted];

  lists.sort((a, b) => a.length - b.length);
  let positions: Positions = lists[0] as Positions;
  for (let k = 1; k < lists.length && positions.length > 0; k++) positions = intersect(positions, lists[k] as Positions);
  const result: TemplateEntry[] = [];
  for (const position of positions) {
    const entry = index.sorted[position] as TemplateEntry;
    if (matchesFilters(entry, filters)) result.push(entry);
  }
  return result;
}

/** The spec's get rule on an index. */
export function getFromIndex(index: RegistryIndex, id: string, version?: string): TemplateEntry | null {
  if (version !== undefined) return index.byVersion.get(id)?.get(version) ?? null;
  const cached = index.latest.get(id);
  if (cached !== undefined) return cached;
  const entries = index.byId.get(id);
  const latest = entries ? selectLatest(entries, id) : null;
  index.latest.set(id, latest);
  return latest;
}

/** Index of the last element of `starts` (ascending) that is <= `value`, searching from `from`. */
function entryAt(starts: Int32Array, value: number, from: number): number {
  let low = from;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if ((starts[mid] as number) <= value) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * The spec's search rule on an index: entries whose search text contains every term, in listing
 * order. The longest term (usually the rarest) is looked for with `indexOf` over the whole corpus,
 * jumping to the next entry after each hit; only the entries it hits are checked for the other
 * terms. A query without terms matches every entry.
 */
export function searchIndex(index: RegistryIndex, query: string): TemplateEntry[] {
  const terms = searchTerms(query).sort((a, b) => b.length - a.length);
  if (terms.length === 0) return [...index.sorted];
  const { corpus, starts, sorted } = index;
  const [driver, ...others] = terms as [string, ...string[]];
  // The corpus has no separator inside an entry's text: such a (strange) query is checked the slow way.
  if (terms.some((term) => term.includes(SEPARATOR))) return sorted.filter((entry) => matchesTerms(searchText(entry), terms));
  const result: TemplateEntry[] = [];
  let entry = 0;
  let at = corpus.indexOf(driver);
  while (at !== -1) {
    entry = entryAt(starts, at, entry);
    const end = starts[entry + 1] as number;
    if (others.length === 0 || matchesTerms(corpus.slice(starts[entry], end - 1), others)) result.push(sorted[entry] as TemplateEntry);
    at = corpus.indexOf(driver, end);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Cache file
// ---------------------------------------------------------------------------------------------

interface CacheRecord {
  url: string;
  fetchedAt: number;
  etag?: string;
  lastModified?: string;
  document: RegistryDocument;
}

/** The cache file of `url` in `cacheDir`: `registry-<sha256 of the URL, hex>.json`. */
export function cacheFileFor(cacheDir: string, url: string): string {
  return path.join(cacheDir, `registry-${createHash('sha256').update(url).digest('hex')}.json`);
}

/** The cache record in `file`, or undefined when it is missing, corrupt, for another URL or invalid. */
async function readCacheFile(file: string, url: string, maxBytes: number): Promise<CacheRecord | undefined> {
  let record: unknown;
  try {
    // A cache file bigger than any document we would accept is not ours to read.
    if ((await stat(file)).size > maxBytes + 1024 * 1024) return undefined;
    record = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (!record || typeof record !== 'object') return undefined;
  const { url: recordUrl, fetchedAt, etag, lastModified, document } = record as Record<string, unknown>;
  if (recordUrl !== url || typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) return undefined;
  if (etag !== undefined && typeof etag !== 'string') return undefined;
  if (lastModified !== undefined && typeof lastModified !== 'string') return undefined;
  if (schemaErrors('registry-document', document).length > 0) return undefined;
  return {
    url,
    fetchedAt,
    document: document as RegistryDocument,
    ...(etag === undefined ? {} : { etag }),
    ...(lastModified === undefined ? {} : { lastModified }),
  };
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

interface Snapshot {
  index: RegistryIndex;
  fetchedAt: number;
  etag?: string;
  lastModified?: string;
  source: 'network' | 'cache';
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return `${error.message} (${code ? `${code}: ` : ''}${cause.message})`;
  }
  return error.message;
}

/** Why a response cannot be used; the message goes into `lastError`. */
class FetchFailure extends Error {}

export class RegistryClient {
  readonly registryUrl: string;
  readonly cacheTtlMs: number;
  readonly cacheDir: string | undefined;
  readonly #failureBackoffMs: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof globalThis.fetch;
  readonly #now: () => number;
  readonly #maxDocumentBytes: number;

  #snapshot: Snapshot | undefined;
  #lastError: string | undefined;
  #lastFailureAt: number | undefined;
  #inFlight: Promise<void> | undefined;
  #diskLoad: Promise<void> | undefined;

  constructor(options: RegistryClientOptions) {
    if (typeof options.registryUrl !== 'string' || options.registryUrl === '') throw new TypeError('registryUrl is required');
    this.registryUrl = options.registryUrl;
    this.#maxDocumentBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    if (!(this.#maxDocumentBytes > 0)) throw new TypeError('maxDocumentBytes must be a positive number of bytes');
    this.cacheTtlMs = options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
    this.cacheDir = options.cacheDir;
    this.#failureBackoffMs = options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF_MS;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#now = options.now ?? Date.now;
  }

  /** The spec's list operation: filters (all optional) applied to every entry, in listing order. */
  async listTemplates(filters: TemplateFilters = {}): Promise<TemplateEntry[]> {
    return listFromIndex(await this.#index(), filters);
  }

  /** With `version`: that exact entry or null. Without: the highest stable version, else the highest; null for an unknown id. */
  async getTemplate(id: string, version?: string): Promise<TemplateEntry | null> {
    return getFromIndex(await this.#index(), id, version);
  }

  /** The categories array of the registry document. */
  async listCategories(): Promise<Category[]> {
    return [...(await this.#index()).document.categories];
  }

  /** Entries whose name, description, tags, features and category contain every term of `query`. */
  async search(query: string): Promise<TemplateEntry[]> {
    return searchIndex(await this.#index(), query);
  }

  /** The whole registry document in hand (fetching it when needed). */
  async document(): Promise<RegistryDocument> {
    return (await this.#index()).document;
  }

  /**
   * Fetches now (conditionally when a registry is cached), whatever the cache's age. A failure
   * keeps the cached registry (see `status()`); rejects only when there is no registry at all.
   */
  async refresh(): Promise<RegistryStatus> {
    await this.#loadDisk();
    await this.#revalidate();
    if (!this.#snapshot) throw new RegistryUnavailableError(this.registryUrl, this.#lastError ?? 'no registry');
    return this.status();
  }

  status(): RegistryStatus {
    const snapshot = this.#snapshot;
    const status: RegistryStatus = {
      stale: snapshot !== undefined && (this.#lastError !== undefined || this.#expired(snapshot)),
      source: snapshot?.source ?? 'none',
    };
    if (snapshot) status.fetchedAt = snapshot.fetchedAt;
    if (this.#lastError !== undefined) status.lastError = this.#lastError;
    if (snapshot?.etag !== undefined) status.etag = snapshot.etag;
    if (snapshot?.lastModified !== undefined) status.lastModified = snapshot.lastModified;
    return status;
  }

  #expired(snapshot: Snapshot): boolean {
    const age = this.#now() - snapshot.fetchedAt;
    // A fetch time in the future (clock moved back) is not trusted.
    return age < 0 || age >= this.cacheTtlMs;
  }

  async #index(): Promise<RegistryIndex> {
    await this.#loadDisk();
    const snapshot = this.#snapshot;
    if (snapshot && !this.#expired(snapshot)) return snapshot.index;
    const inBackoff = this.#lastFailureAt !== undefined && this.#now() - this.#lastFailureAt < this.#failureBackoffMs;
    if (snapshot && inBackoff && !this.#inFlight) return snapshot.index;
    await this.#revalidate();
    if (this.#snapshot) return this.#snapshot.index;
    throw new RegistryUnavailableError(this.registryUrl, this.#lastError ?? 'no registry');
  }

  /** Reads the cache file once per client (a missing or corrupt file is ignored). */
  #loadDisk(): Promise<void> {
    if (this.cacheDir === undefined) return Promise.resolve();
    this.#diskLoad ??= (async () => {
      const record = await readCacheFile(cacheFileFor(this.cacheDir as string, this.registryUrl), this.registryUrl, this.#maxDocumentBytes);
      // A fetch that finished meanwhile is newer than the file.
      if (!record || this.#snapshot) return;
      this.#snapshot = {
        index: buildIndex(withAbsoluteUrls(record.document, this.registryUrl)),
        fetchedAt: record.fetchedAt,
        source: 'cache',
        ...(record.etag === undefined ? {} : { etag: record.etag }),
        ...(record.lastModified === undefined ? {} : { lastModified: record.lastModified }),
      };
    })();
    return this.#diskLoad;
  }

  /** One request at a time: concurrent callers wait for the same one. Never rejects. */
  #revalidate(): Promise<void> {
    this.#inFlight ??= this.#fetchOnce().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #fetchOnce(): Promise<void> {
    const previous = this.#snapshot;
    try {
      const next = await this.#request(previous);
      this.#snapshot = next;
      this.#lastError = undefined;
      this.#lastFailureAt = undefined;
      await this.#persist(next);
    } catch (error) {
      this.#lastError = error instanceof FetchFailure ? error.message : `network error: ${errorText(error)}`;
      this.#lastFailureAt = this.#now();
    }
  }

  async #request(previous: Snapshot | undefined): Promise<Snapshot> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (previous?.etag !== undefined) headers['if-none-match'] = previous.etag;
    if (previous?.lastModified !== undefined) headers['if-modified-since'] = previous.lastModified;
    const response = await this.#fetch(this.registryUrl, { headers, signal: AbortSignal.timeout(this.#timeoutMs) });
    const fetchedAt = this.#now();
    const etag = response.headers.get('etag') ?? undefined;
    const lastModified = response.headers.get('last-modified') ?? undefined;

    if (response.status === 304) {
      await response.body?.cancel();
      if (!previous) throw new FetchFailure(`HTTP 304 Not Modified without a cached registry`);
      return {
        index: previous.index,
        fetchedAt,
        source: 'network',
        ...((etag ?? previous.etag) === undefined ? {} : { etag: etag ?? previous.etag }),
        ...((lastModified ?? previous.lastModified) === undefined ? {} : { lastModified: lastModified ?? previous.lastModified }),
      };
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new FetchFailure(`HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
    }

    const body = await readCapped(response, this.#maxDocumentBytes, this.registryUrl);
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch (error) {
      throw new FetchFailure(`invalid JSON: ${errorText(error)}`);
    }
    const violations = describeSchemaErrors(schemaErrors('registry-document', document));
    if (violations.length > 0) {
      const shown = violations.slice(0, 3).map((v) => `${v.pointer || '/'} ${v.message}`);
      const more = violations.length > shown.length ? ` (and ${violations.length - shown.length} more)` : '';
      throw new FetchFailure(`the registry document fails the registry-document schema: ${shown.join('; ')}${more}`);
    }
    return {
      index: buildIndex(withAbsoluteUrls(document as RegistryDocument, this.registryUrl)),
      fetchedAt,
      source: 'network',
      ...(etag === undefined ? {} : { etag }),
      ...(lastModified === undefined ? {} : { lastModified }),
    };
  }

  /** Writes the cache file (atomically); a write failure only costs the next process a request. */
  async #persist(snapshot: Snapshot): Promise<void> {
    if (this.cacheDir === undefined) return;
    const record: CacheRecord = {
      url: this.registryUrl,
      fetchedAt: snapshot.fetchedAt,
      ...(snapshot.etag === undefined ? {} : { etag: snapshot.etag }),
      ...(snapshot.lastModified === undefined ? {} : { lastModified: snapshot.lastModified }),
      document: snapshot.index.document,
    };
    try {
      await writeFileAtomic(cacheFileFor(this.cacheDir, this.registryUrl), JSON.stringify(record));
    } catch {
      // ignored on purpose: the registry in memory is fine
    }
  }
}
