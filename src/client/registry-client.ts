/**
 * The registry reader: fetches one registry document (operation 1, `GET {registry_url}`), caches
 * it for `cacheTtlMs` (the spec's 3,600,000 ms), revalidates it with `If-None-Match` /
 * `If-Modified-Since`, and answers the spec's reader operations (list, get, categories, search)
 * from indexes of each fetched document, each built on first use.
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
 * - `onStale` is told (once per resource until a fetch succeeds) when a failed fetch leaves a
 *   cached copy answering that is older than the TTL, or that `refresh` wanted replaced: the CLI
 *   prints it, a library caller may log it or read `status()`.
 * - `refresh: true` revalidates every resource on its first use, whatever its age (the CLI's
 *   `--refresh`); the answer renews the cache as any fetch does. A refresh (this option, or
 *   `refresh()`) is marked in the cache folder: every resource cached before it (registry.json after
 *   a refresh that read index.json, another template's file) is revalidated on its next use, so
 *   every later command sees what the refresh saw.
 * - A template or an exact version the cached copy does not have is asked for once more (a
 *   conditional request, `Cache-Control: no-cache`) before the answer is "not found": it may have
 *   been published since.
 * - Skew between the sparse files (a CDN or a cache holding one of them older than the other): when
 *   `index.json` names a latest version the template's file lacks, the file is fetched once more
 *   with `Cache-Control: no-cache`; when the file's latest version is not the one the index names
 *   (the index is older), the index is, then the file if they still disagree. Once per file per
 *   process; the file's versions answer either way.
 * - `fallbackUrls`: registries that stand for the first (mirrors), tried in order when one cannot
 *   be reached at all (a network error, a time-out, HTTP 5xx, 408 or 429, and no cached copy); the
 *   first that answers serves the client from then on. Never when one answers with a document
 *   that fails its signature check: that is an attack, not an outage.
 * - `signatures`: signed registries (trust.ts): keys pinned from the start or on first use, every
 *   document checked before it is accepted; the pins belong to the first registry of the list and
 *   hold for every registry in it.
 */
import { isYanked, listingOrder, selectLatest, versionsOf, type ListingOrder } from '../core/listing.js';
import { describeSchemaErrors } from '../core/messages.js';
import { IndexLayoutError, indexLines, type IndexLines } from '../core/registry-index.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { buildSearchIndex, findEntries, matchesFilters, matchesTerms, searchTerms, searchText, type SearchIndex, type TemplateFilters } from '../core/search.js';
import { isTemplateName } from '../core/versions.js';

import { registryBaseUrl } from '../core/registry-url.js';
import { RoutesSource } from './routes-source.js';
import { readEntries, readRegistryDocument, skippedEntriesLine, type SkippedEntry } from './entry-reader.js';
import { CachedJson, FetchFailure, RefreshMark, RegistryUnavailableError, type CachedJsonOptions, type StaleNotice } from './cached-json.js';
import { RegistryTrust, RegistryTrustError, type SignatureOptions } from './trust.js';

export type { TemplateFilters } from '../core/search.js';
export { RegistryUnavailableError, cacheFileFor, type StaleNotice } from './cached-json.js';
export { RegistryTrustError, pinFileFor, type SignatureOptions } from './trust.js';

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
  /**
   * `full` (default): read the whole registry.json. `sparse`: read `index.json` and
   * `templates/<id>.json` for one template (list and search still read registry.json). `auto`:
   * sparse when the registry publishes an index (one probe of index.json), else full; a whole
   * document still fresh in the cache is used as it is. The CLI uses `auto`.
   */
  mode?: RegistryMode;
  /**
   * Revalidate the document (and the sparse files) on first use whatever the cache's age, as
   * `refresh()` does (the CLI's `--refresh`). A 304 or a new document renews the cache.
   */
  refresh?: boolean;
  /**
   * Told when a failed fetch leaves a cached copy answering that is older than `cacheTtlMs` (or
   * that `refresh` wanted replaced): once per resource until a fetch succeeds.
   */
  onStale?: (notice: StaleNotice) => void;
  /**
   * Told, once per document or file, of the entries that cannot be read (no id, version or
   * download URL, an unusable integrity) and were left out; every other entry is read.
   */
  onSkipped?: (notice: SkippedNotice) => void;
  /**
   * Registries that stand for `registryUrl` (its mirrors), given as their document URLs: tried in
   * order when the one before cannot be reached (see the module comment).
   */
  fallbackUrls?: readonly string[];
  /** Told when a registry of the list cannot be reached and the next one is tried. */
  onFallback?: (notice: FallbackNotice) => void;
  /**
   * Check signed registries (docs/publishing.md, "Trust"): the keys to pin from the start, or
   * `pinOnFirstUse` (kept in `cacheDir`, else for the client's life). Without it nothing is checked.
   */
  signatures?: SignatureOptions;
}

/** A registry of the list could not be reached; the next one is asked. */
export interface FallbackNotice {
  /** The registry that could not be reached. */
  from: string;
  /** The registry asked next. */
  to: string;
  reason: string;
}

/** Entries of one fetched document (or template file) that the client left out. */
export interface SkippedNotice {
  what: string;
  url: string;
  skipped: readonly SkippedEntry[];
  /** One line saying so. */
  message: string;
}

export const DEFAULT_MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

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
  /**
   * Entries of the registry in hand (and of the template files read) left out because they cannot
   * be used (client/entry-reader.ts): one line each, naming the entry and why.
   */
  skipped?: string[];
}

// ---------------------------------------------------------------------------------------------
// Indexes
// ---------------------------------------------------------------------------------------------

/**
 * The raw entries a reader left out (kept with the cached copy, so that reading it back leaves them
 * out and reports them again) and one line for each.
 */
function setAside(raw: readonly unknown[], skipped: readonly SkippedEntry[], where: string): { unreadable: unknown[]; notes: string[] } {
  return { unreadable: skipped.map((s) => raw[s.index]), notes: skipped.map((s) => `${where}/${s.index} (${s.label}) is skipped: ${s.reason}`) };
}

/** Positions into `RegistryIndex.sorted`, ascending (so a subset of them is in listing order). */
type Positions = readonly number[];

const NONE: Positions = [];

/** The fields `listFromIndex` narrows entries down by, each with a list of positions per value. */
const FILTER_FIELDS = ['category', 'stability', 'tags', 'features', 'author'] as const;
type FilterField = (typeof FILTER_FIELDS)[number];

/**
 * Lookup structures of one registry document. Each is built on first use, not when the document
 * arrives: a process that only asks for one template never sorts 100,000 entries or indexes their
 * text, and one that only lists never builds the token index. Entries are sorted once in the
 * spec's listing order; every position list is ascending into that order, so filtering is an
 * intersection of sorted lists and needs no sort afterwards.
 */
class RegistryIndex {
  readonly document: RegistryDocument;
  /** Entries left out of `document` (client/entry-reader.ts), as they were, and why. */
  readonly unreadable: readonly unknown[];
  readonly skipped: readonly string[];
  #listing: ListingOrder | undefined;
  #sorted: readonly TemplateEntry[] | undefined;
  #listed: readonly TemplateEntry[] | undefined;
  #byId: ReadonlyMap<string, readonly TemplateEntry[]> | undefined;
  readonly #byField = new Map<FilterField, ReadonlyMap<string, Positions>>();
  #tokens: SearchIndex | undefined;
  #searches = 0;
  /** id, then exact version: the first entry of the document with that pair; filled per id on first use. */
  readonly #byVersion = new Map<string, ReadonlyMap<string, TemplateEntry>>();
  /** `selectLatest` results, filled on first use per id. */
  readonly #latest = new Map<string, TemplateEntry | null>();

  constructor(document: RegistryDocument, setAside: { unreadable: readonly unknown[]; notes: readonly string[] } = { unreadable: [], notes: [] }) {
    this.document = document;
    this.unreadable = setAside.unreadable;
    this.skipped = setAside.notes;
  }

  /** The listing order of the document's entries (positions into `document.templates`). */
  get listing(): ListingOrder {
    return (this.#listing ??= listingOrder(this.document.templates));
  }

  /** Every entry, in listing order. */
  get sorted(): readonly TemplateEntry[] {
    if (this.#sorted === undefined) {
      const { templates } = this.document;
      const { order } = this.listing;
      const sorted = new Array<TemplateEntry>(order.length);
      for (let k = 0; k < order.length; k++) sorted[k] = templates[order[k] as number] as TemplateEntry;
      this.#sorted = sorted;
    }
    return this.#sorted;
  }

  /** Every entry but the yanked ones (what a list shows), in listing order; `sorted` itself when none is yanked. */
  get listed(): readonly TemplateEntry[] {
    if (this.#listed === undefined) {
      const sorted = this.sorted;
      this.#listed = sorted.some(isYanked) ? sorted.filter((entry) => !isYanked(entry)) : sorted;
    }
    return this.#listed;
  }

  /** The entries of each id, in document order. */
  get byId(): ReadonlyMap<string, readonly TemplateEntry[]> {
    if (this.#byId === undefined) {
      const byId = new Map<string, TemplateEntry[]>();
      for (const entry of this.document.templates) {
        const list = byId.get(entry.id);
        if (list) list.push(entry);
        else byId.set(entry.id, [entry]);
      }
      this.#byId = byId;
    }
    return this.#byId;
  }

  /** Ascending positions (into `sorted`) of the entries filed under each key of `field`. */
  positionsBy(field: FilterField): ReadonlyMap<string, Positions> {
    let map = this.#byField.get(field);
    if (map === undefined) {
      const built = new Map<string, number[]>();
      const { sorted } = this;
      for (let position = 0; position < sorted.length; position++) {
        const entry = sorted[position] as TemplateEntry;
        if (field === 'category') push(built, entry.category, position);
        else if (field === 'stability') push(built, entry.stability, position);
        else if (field === 'author') {
          if (entry.author?.name !== undefined) push(built, entry.author.name, position);
        } else for (const key of entry[field] ?? []) push(built, key, position);
      }
      this.#byField.set(field, (map = built));
    }
    return map;
  }

  /** The token index of the search texts, positions in listing order (into `sorted`). */
  get tokens(): SearchIndex {
    return (this.#tokens ??= buildSearchIndex(this.document.templates, this.listing.rank));
  }

  /**
   * The spec's search rule, in listing order. The first search of a document reads every entry
   * with the rule itself (`matchesTerms` on `searchText`), which costs far less than building the
   * token index: a process that searches once (the CLI) never builds it. Later searches build it
   * once and answer from it (see core/search.ts for why its answer is the rule's).
   */
  search(terms: readonly string[]): TemplateEntry[] {
    if (terms.length === 0) return [...this.sorted];
    if (this.#tokens === undefined && this.#searches++ === 0) return this.#scan(terms);
    return findEntries(this.tokens, terms, this.sorted);
  }

  /** The search rule applied to every entry; only the matches are sorted when nothing is sorted yet. */
  #scan(terms: readonly string[]): TemplateEntry[] {
    const matches = (entry: TemplateEntry): boolean => matchesTerms(searchText(entry), terms);
    if (this.#sorted !== undefined) return this.#sorted.filter(matches);
    const found = this.document.templates.filter(matches);
    return Array.from(listingOrder(found).order, (position) => found[position] as TemplateEntry);
  }

  /** The first entry of the document with this id and exact version. */
  version(id: string, version: string): TemplateEntry | undefined {
    let versions = this.#byVersion.get(id);
    if (versions === undefined) {
      const built = new Map<string, TemplateEntry>();
      for (const entry of this.byId.get(id) ?? []) if (!built.has(entry.version)) built.set(entry.version, entry);
      this.#byVersion.set(id, (versions = built));
    }
    return versions.get(version);
  }

  /** The spec's "get template" pick for `id` (`selectLatest`), null for an unknown id. */
  latest(id: string): TemplateEntry | null {
    let latest = this.#latest.get(id);
    if (latest === undefined) {
      const entries = this.byId.get(id);
      latest = entries ? selectLatest(entries, id) : null;
      this.#latest.set(id, latest);
    }
    return latest;
  }

  /** Builds every structure now (benchmarks and callers that want no cost on a later first use). */
  buildAll(): this {
    void this.sorted;
    void this.byId;
    for (const field of FILTER_FIELDS) this.positionsBy(field);
    void this.tokens;
    return this;
  }
}

function push<K>(map: Map<K, number[]>, key: K, position: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [position]);
  // A tag listed twice on one entry must not put the entry twice in the list.
  else if (list[list.length - 1] !== position) list.push(position);
}

/** A URL with a scheme; any other is relative. */
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
function withAbsoluteUrls(document: RegistryDocument, documentUrl: string): RegistryDocument {
  const isRelative = (url: string | undefined): boolean => url !== undefined && url !== '' && !ABSOLUTE_URL.test(url);
  const relative = (entry: TemplateEntry): boolean => isRelative(entry.downloadUrl) || isRelative(entry.documentationUrl) || isRelative(entry.repositoryUrl);
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

/** The (lazily built) indexes of a schema-valid registry document. */
export function buildIndex(document: RegistryDocument, setAside?: { unreadable: readonly unknown[]; notes: readonly string[] }): RegistryIndex {
  return new RegistryIndex(document, setAside);
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
  if (filters.category !== undefined) lists.push(positionsOf(index.positionsBy('category'), filters.category));
  if (filters.stability !== undefined) lists.push(positionsOf(index.positionsBy('stability'), filters.stability));
  if (filters.author !== undefined) lists.push(index.positionsBy('author').get(filters.author) ?? NONE);
  for (const tag of filters.tags ?? []) lists.push(index.positionsBy('tags').get(tag) ?? NONE);
  for (const feature of filters.features ?? []) lists.push(index.positionsBy('features').get(feature) ?? NONE);
  // Yanked versions are never listed (they are found by their exact version only).
  if (lists.length === 0) return [...index.listed];

  lists.sort((a, b) => a.length - b.length);
  let positions: Positions = lists[0] as Positions;
  for (let k = 1; k < lists.length && positions.length > 0; k++) positions = intersect(positions, lists[k] as Positions);
  const result: TemplateEntry[] = [];
  for (const position of positions) {
    const entry = index.sorted[position] as TemplateEntry;
    if (matchesFilters(entry, filters) && !isYanked(entry)) result.push(entry);
  }
  return result;
}

/** The spec's get rule on an index. */
export function getFromIndex(index: RegistryIndex, id: string, version?: string): TemplateEntry | null {
  return version === undefined ? index.latest(id) : (index.version(id, version) ?? null);
}

/** The spec's search rule on an index: entries whose search text contains every term, in listing order. */
export function searchIndex(index: RegistryIndex, query: string): TemplateEntry[] {
  return index.search(searchTerms(query)).filter((entry) => !isYanked(entry));
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/** How the client reads a registry: the whole document, or the sparse index and one file per template. */
export type RegistryMode = 'full' | 'sparse' | 'auto';

/** A template's file of a sparse registry (`templates/<id>.json`): all its versions. */
interface TemplateFile {
  id: string;
  versions: TemplateEntry[];
  /** Entries left out (client/entry-reader.ts), as they were, and why. */
  unreadable?: unknown[];
  skipped?: string[];
}

function violationsText(what: string, schema: string, violations: readonly { pointer: string; message: string }[]): string {
  const shown = violations.slice(0, 3).map((v) => `${v.pointer || '/'} ${v.message}`);
  const more = violations.length > shown.length ? ` (and ${violations.length - shown.length} more)` : '';
  return `the ${what} fails the ${schema} schema: ${shown.join('; ')}${more}`;
}

export class RegistryClient {
  /** This reader's own registry (the document URL). */
  readonly #url: string;
  readonly cacheTtlMs: number;
  readonly cacheDir: string | undefined;
  readonly mode: RegistryMode;
  readonly #resource: Omit<CachedJsonOptions<unknown>, 'url' | 'what' | 'accept' | 'toJson'>;
  readonly #document: CachedJson<RegistryIndex>;
  #sparseIndex: CachedJson<IndexLines> | undefined;
  readonly #templateFiles = new Map<string, CachedJson<TemplateFile>>();
  /** What `auto` found: undefined until it looked. */
  #detected: 'full' | 'sparse' | undefined;
  readonly #onSkipped: ((notice: SkippedNotice) => void) | undefined;
  readonly #skippedReported = new Set<string>();
  /** The routes of a registry that publishes no document (undefined: not known yet; null: it is not one). */
  #routes: RoutesSource | null | undefined;
  #routesIndex: Promise<RegistryIndex> | undefined;
  /** The signature check (shared by the readers of a list); none without `signatures`. */
  #trust: RegistryTrust | undefined;
  /** This client and a reader per fallback URL, in order; `#active` is the one answering. */
  readonly #readers: RegistryClient[];
  #active = 0;
  readonly #onFallback: ((notice: FallbackNotice) => void) | undefined;

  constructor(options: RegistryClientOptions) {
    if (typeof options.registryUrl !== 'string' || options.registryUrl === '') throw new TypeError('registryUrl is required');
    this.#url = options.registryUrl;
    const maxBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    if (!(maxBytes > 0)) throw new TypeError('maxDocumentBytes must be a positive number of bytes');
    this.cacheTtlMs = options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
    this.cacheDir = options.cacheDir;
    this.mode = options.mode ?? 'full';
    this.#onSkipped = options.onSkipped;
    this.#resource = {
      ttlMs: this.cacheTtlMs,
      failureBackoffMs: options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF_MS,
      timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      maxBytes,
      fetch: options.fetch ?? globalThis.fetch,
      now: options.now ?? Date.now,
      ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
      ...(options.refresh ? { refresh: true } : {}),
      ...(options.onStale ? { onStale: options.onStale } : {}),
      refreshMark: new RefreshMark(options.registryUrl, options.cacheDir),
    };
    const registryUrl = this.#url;
    this.#document = new CachedJson<RegistryIndex>({
      ...this.#resource,
      url: registryUrl,
      what: 'registry document',
      trustsCached: (signedBy) => this.#trustsCached(signedBy),
      verify: (body, { fresh }) => this.#verify(registryUrl, body, fresh),
      accept: (json) => {
        const read = readRegistryDocument(json);
        if ('problem' in read) throw new FetchFailure(read.problem);
        this.#reportSkipped('registry document', registryUrl, read.skipped);
        const templates = (json as { templates: unknown[] }).templates;
        return buildIndex(withAbsoluteUrls(read.document, registryUrl), setAside(templates, read.skipped, '/templates'));
      },
      // Cached as received, the skipped entries included: read back, they are skipped (and reported) again.
      toJson: (index) => (index.unreadable.length === 0 ? index.document : { ...index.document, templates: [...index.document.templates, ...index.unreadable] }),
    });
    this.#onFallback = options.onFallback;
    const fallbackUrls = options.fallbackUrls ?? [];
    for (const url of fallbackUrls) if (typeof url !== 'string' || url === '') throw new TypeError('fallbackUrls must be registry URLs');
    this.#readers = [this, ...fallbackUrls.map((url) => new RegistryClient({ ...options, registryUrl: url, fallbackUrls: [], signatures: undefined }))];
    if (options.signatures) {
      const trust = new RegistryTrust({
        ...options.signatures,
        registry: registryBaseUrl(registryUrl),
        ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
        fetch: this.#resource.fetch,
        timeoutMs: this.#resource.timeoutMs,
        now: this.#resource.now,
      });
      for (const reader of this.#readers) reader.#trust = trust;
    }
  }

  /** The registry answering: the first of the list, until one could not be reached and the next answered. */
  get registryUrl(): string {
    return (this.#readers[this.#active] ?? this).#url;
  }

  /** Checks a body of this reader's registry before it is accepted (nothing to check without `signatures`). */
  #verify(url: string, body: Buffer, fresh: boolean): Promise<string | undefined> {
    return this.#trust ? this.#trust.verify({ url, documentUrl: this.#url, body, fresh }) : Promise.resolve(undefined);
  }

  /** Whether a copy in the cache file (signed by `signedBy`) may answer under the trust of now. */
  #trustsCached(signedBy: string | undefined): Promise<boolean> {
    return this.#trust ? this.#trust.trustsCached(signedBy) : Promise.resolve(true);
  }

  /**
   * `read` on the registry answering; when it cannot be reached, on the next of the list (which
   * then answers from now on). Any other failure, a refused signature first of all, is thrown.
   */
  async #answer<T>(read: (reader: RegistryClient) => Promise<T>): Promise<T> {
    for (let at = this.#active; ; at++) {
      const reader = this.#readers[at] as RegistryClient;
      try {
        const value = await read(reader);
        this.#active = at;
        return value;
      } catch (error) {
        const next = this.#readers[at + 1];
        if (!next || !(error instanceof RegistryUnavailableError) || !error.unreachable) throw error;
        this.#onFallback?.({ from: reader.#url, to: next.#url, reason: error.reason });
      }
    }
  }

  /**
   * The whole document; or, for a registry that publishes none (its document answers 404) but
   * answers the `/templates` routes, those routes. Known after the first answer, for the client's life.
   */
  async #whole(): Promise<{ index: RegistryIndex } | { routes: RoutesSource }> {
    if (this.#routes) return { routes: this.#routes };
    try {
      return { index: await this.#document.get() };
    } catch (error) {
      if (this.#routes === undefined && error instanceof RegistryUnavailableError && this.#document.status().lastStatus === 404) {
        // A registry whose keys are pinned publishes signed documents: routes would carry no signature.
        if (this.#trust && (await this.#trust.pinned())) {
          throw new RegistryTrustError(registryBaseUrl(this.#url), 'registry.json', 'as HTTP 404 though its keys are pinned (its routes carry no signature)');
        }
        const base = registryBaseUrl(this.#url);
        const probe = { base, fetch: this.#resource.fetch, timeoutMs: this.#resource.timeoutMs };
        if (await RoutesSource.detect(probe).catch(() => false)) {
          this.#routes = new RoutesSource({ ...probe, onSkipped: (what, url, skipped) => this.#reportSkipped(what, url, skipped) });
          return { routes: this.#routes };
        }
        this.#routes = null;
      }
      throw error;
    }
  }

  /** The index of the whole document, or of the latest entries a routes-only registry lists. */
  async #wholeIndex(): Promise<RegistryIndex> {
    const whole = await this.#whole();
    if ('index' in whole) return whole.index;
    const routes = whole.routes;
    this.#routesIndex ??= routes.document().then((document) => buildIndex(withAbsoluteUrls(document, `${registryBaseUrl(this.#url)}/`)));
    return this.#routesIndex;
  }

  /** The spec's list operation: filters (all optional) applied to every entry, in listing order. */
  async listTemplates(filters: TemplateFilters = {}): Promise<TemplateEntry[]> {
    return this.#answer(async (reader) => listFromIndex(await reader.#wholeIndex(), filters));
  }

  /**
   * With `version`: that exact entry or null. Without: the highest stable version, else the
   * highest; null for an unknown id. In sparse mode only the index and that template's file are read.
   * An id or version the cached copy lacks is asked for once more before the answer is null.
   */
  async getTemplate(id: string, version?: string): Promise<TemplateEntry | null> {
    return this.#answer((reader) => reader.#getTemplate(id, version));
  }

  async #getTemplate(id: string, version?: string): Promise<TemplateEntry | null> {
    const whole = this.mode === 'auto' ? await this.#document.fresh() : undefined;
    if (whole) {
      const found = getFromIndex(whole, id, version);
      // Not in the whole document cached: the sparse files, cheaper to ask again than the document.
      if (found) return found;
    }
    if (!(await this.#useSparse())) {
      const source = await this.#whole();
      if ('routes' in source) {
        const entry = await source.routes.get(id, version);
        return entry ? (withAbsoluteUrls({ templates: [entry], categories: [], tags: [], lastUpdated: '' }, `${registryBaseUrl(this.#url)}/`).templates[0] ?? null) : null;
      }
      const found = getFromIndex(source.index, id, version);
      if (found || !(await this.#document.recheck())) return found;
      return getFromIndex(await this.#document.get(), id, version);
    }
    let index = await this.#sparse().get();
    if (!index.templates.some((line) => line.id === id)) {
      // The index lists templates by their latest version; one whose versions are all yanked has
      // none, yet each stays downloadable by its exact version: its file tells.
      if (version !== undefined) return this.#unlistedVersion(id, version, index);
      if (!(await this.#sparse().recheck())) return null;
      index = await this.#sparse().get();
      if (!index.templates.some((line) => line.id === id)) return null;
    }
    const pick = (versions: readonly TemplateEntry[]): TemplateEntry | null =>
      version !== undefined ? (versions.find((entry) => entry.version === version) ?? null) : selectLatest(versions, id);
    const file = this.#templateFile(id, index);
    const found = pick(await this.#versionsOf(id, index, file));
    if (found || !(await file.recheck())) return found;
    return pick((await file.get()).versions);
  }

  /**
   * The versions in the file of a template the index lists, the two made to agree when one is older
   * than the other (see the module comment): the file when it lacks the version the index names, the
   * index when the file's latest is another one, then the file if they still disagree.
   */
  async #versionsOf(id: string, index: IndexLines, file: CachedJson<TemplateFile>): Promise<readonly TemplateEntry[]> {
    let { versions } = await file.get();
    const listed = (of: IndexLines): string | undefined => of.templates.find((line) => line.id === id)?.version;
    const lacks = (version: string | undefined): boolean => version !== undefined && !versions.some((entry) => entry.version === version);
    const refetchFile = async (): Promise<void> => {
      if (await file.refetchUncached()) versions = (await file.get()).versions;
    };
    const named = listed(index);
    if (named === undefined) return versions;
    if (lacks(named)) {
      await refetchFile();
      return versions;
    }
    if (selectLatest(versions, id)?.version === named) return versions;
    // The file knows a later change (a version published or yanked since) than the index: the index is older.
    const sparse = this.#sparse();
    if (!(await sparse.refetchUncached())) return versions;
    const renamed = listed(await sparse.get());
    if (renamed !== undefined && (lacks(renamed) || selectLatest(versions, id)?.version !== renamed)) await refetchFile();
    return versions;
  }

  /** An exact version of a template the sparse index does not list; null when the registry has no file for it. */
  async #unlistedVersion(id: string, version: string, index: IndexLines): Promise<TemplateEntry | null> {
    const find = (versions: readonly TemplateEntry[]): TemplateEntry | null => versions.find((entry) => entry.version === version) ?? null;
    const found = find(await this.#unlistedVersions(id, index));
    if (found || !isTemplateName(id) || !(await this.#templateFile(id, index).recheck())) return found;
    return find(await this.#unlistedVersions(id, index));
  }

  /** The versions of a template the sparse index does not list (all yanked); none when the registry has no file for it. */
  async #unlistedVersions(id: string, index: IndexLines): Promise<readonly TemplateEntry[]> {
    if (!isTemplateName(id)) return [];
    const file = this.#templateFile(id, index);
    try {
      return (await file.get()).versions;
    } catch (error) {
      if (error instanceof RegistryUnavailableError && file.status().lastStatus === 404) return [];
      throw error;
    }
  }

  /**
   * The versions of template `id`, highest first; empty for an unknown id. Yanked versions are left
   * out, as from every listing, unless `includeYanked` (each keeps `yanked: true`). In sparse mode
   * only the index and its file are read.
   */
  async listVersions(id: string, options: { includeYanked?: boolean } = {}): Promise<TemplateEntry[]> {
    return this.#answer((reader) => reader.#listVersions(id, options));
  }

  async #listVersions(id: string, options: { includeYanked?: boolean }): Promise<TemplateEntry[]> {
    const shown = (versions: readonly TemplateEntry[]): TemplateEntry[] => versionsOf(versions, id).filter((entry) => options.includeYanked === true || !isYanked(entry));
    const whole = this.mode === 'auto' ? await this.#document.fresh() : undefined;
    if (whole) return shown(whole.byId.get(id) ?? []);
    if (!(await this.#useSparse())) {
      const source = await this.#whole();
      if ('index' in source) return shown(source.index.byId.get(id) ?? []);
      const versions = await source.routes.versions(id, options.includeYanked === true);
      return shown(withAbsoluteUrls({ templates: versions, categories: [], tags: [], lastUpdated: '' }, `${registryBaseUrl(this.#url)}/`).templates);
    }
    const index = await this.#sparse().get();
    if (index.templates.some((line) => line.id === id)) return shown(await this.#versionsOf(id, index, this.#templateFile(id, index)));
    // The index lists templates by their latest version; one whose versions are all yanked has none.
    return options.includeYanked === true ? shown(await this.#unlistedVersions(id, index)) : [];
  }

  /** The categories array of the registry document. */
  async listCategories(): Promise<Category[]> {
    return this.#answer(async (reader) => [...(await reader.#wholeIndex()).document.categories]);
  }

  /** Entries whose name, description, tags, features and category contain every term of `query`. */
  async search(query: string): Promise<TemplateEntry[]> {
    return this.#answer(async (reader) => searchIndex(await reader.#wholeIndex(), query));
  }

  /** The whole registry document in hand (fetching it when needed). */
  async document(): Promise<RegistryDocument> {
    return this.#answer(async (reader) => (await reader.#wholeIndex()).document);
  }

  /**
   * The sparse index (`index.json` beside registry.json): one line per template with its latest
   * version. Rejects when the registry publishes none.
   */
  async index(): Promise<IndexLines> {
    return this.#answer((reader) => reader.#sparse().get());
  }

  /**
   * Fetches now (conditionally when a registry is cached), whatever the cache's age. A failure
   * keeps the cached registry (see `status()`); rejects only when there is no registry at all.
   */
  async refresh(): Promise<RegistryStatus> {
    await this.#answer((reader) => reader.#document.refresh());
    return this.status();
  }

  /** The state of the registry document (the sparse files have their own, with the same rules). */
  /** Tells `onSkipped` of the entries a document left out, once per URL. */
  #reportSkipped(what: string, url: string, skipped: readonly SkippedEntry[]): void {
    if (skipped.length === 0 || this.#skippedReported.has(url)) return;
    this.#skippedReported.add(url);
    this.#onSkipped?.({ what, url, skipped, message: skippedEntriesLine(`the ${what} at ${url}`, skipped) });
  }

  status(): RegistryStatus {
    const reader = this.#readers[this.#active] ?? this;
    const { lastStatus: _lastStatus, ...status } = reader.#document.status();
    const skipped = [...(reader.#document.peek()?.skipped ?? []), ...[...reader.#templateFiles.values()].flatMap((file) => file.peek()?.skipped ?? [])];
    return skipped.length > 0 ? { ...status, skipped } : status;
  }

  /** Whether one template is read through the sparse files: the option, or (auto) whether the registry has them. */
  async #useSparse(): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'sparse';
    if (this.#detected === undefined) {
      try {
        await this.#sparse().get();
        this.#detected = 'sparse';
      } catch (error) {
        // A refused index is an attack on this registry, not a registry without one.
        if (error instanceof RegistryTrustError) throw error;
        // No index (a registry server, an older build, another implementation): the whole document.
        this.#detected = 'full';
      }
    }
    return this.#detected === 'sparse';
  }

  #sparse(): CachedJson<IndexLines> {
    this.#sparseIndex ??= new CachedJson<IndexLines>({
      ...this.#resource,
      url: new URL(INDEX_FILE, this.#url).href,
      what: 'registry index',
      trustsCached: (signedBy) => this.#trustsCached(signedBy),
      verify: (body, { fresh }) => this.#verify(new URL(INDEX_FILE, this.#url).href, body, fresh),
      accept: (json) => {
        let lines: unknown;
        try {
          lines = indexLines(json);
        } catch (error) {
          if (error instanceof IndexLayoutError) throw new FetchFailure(`the registry index is not valid: ${error.message}`);
          throw error;
        }
        const violations = describeSchemaErrors(schemaErrors('registry-index', lines));
        if (violations.length > 0) throw new FetchFailure(violationsText('registry index', 'registry-index', violations));
        return lines as IndexLines;
      },
      toJson: (index) => index,
    });
    return this.#sparseIndex;
  }

  #templateFile(id: string, index: IndexLines): CachedJson<TemplateFile> {
    let file = this.#templateFiles.get(id);
    if (!file) {
      const indexUrl = this.#sparse().url;
      const url = new URL((index.templatePath ?? DEFAULT_TEMPLATE_PATH).replace('{id}', encodeURIComponent(id)), indexUrl).href;
      file = new CachedJson<TemplateFile>({
        ...this.#resource,
        url,
        what: `file of template ${id}`,
        trustsCached: (signedBy) => this.#trustsCached(signedBy),
      verify: (body, { fresh }) => this.#verify(url, body, fresh),
        accept: (json) => {
          const versions = (json as { versions?: unknown } | null)?.versions;
          if (!Array.isArray(versions)) throw new FetchFailure(`the file of template ${id} has no versions array`);
          const read = readEntries(versions);
          this.#reportSkipped(`file of template ${id}`, url, read.skipped);
          const entries = read.entries.filter((entry) => entry.id === id);
          // Entries are copied from registry.json: their relative URLs are relative to it.
          const document = withAbsoluteUrls({ templates: entries, categories: [], tags: [], lastUpdated: index.lastUpdated }, this.#url);
          const aside = setAside(versions, read.skipped, `file of template ${id}: /versions`);
          return { id, versions: document.templates, ...(aside.notes.length > 0 ? { unreadable: aside.unreadable, skipped: aside.notes } : {}) };
        },
        // Cached as received, the skipped entries included: read back, they are skipped (and reported) again.
        toJson: ({ id: file, versions: entries, unreadable }) => ({ id: file, versions: [...entries, ...(unreadable ?? [])] }),
      });
      this.#templateFiles.set(id, file);
    }
    return file;
  }
}

/** Where a template's file is when the index does not say: relative to index.json. */
const DEFAULT_TEMPLATE_PATH = 'templates/{id}.json';
/** The sparse index beside registry.json. */
const INDEX_FILE = 'index.json';
