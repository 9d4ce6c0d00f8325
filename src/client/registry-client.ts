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
import { selectLatest, sortEntries, versionsOf } from '../core/listing.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { Category, RegistryDocument, SparseIndex, TemplateEntry } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { matchesFilters, matchesTerms, searchTerms, searchText, type TemplateFilters } from '../core/search.js';

import { CachedJson, FetchFailure, type CachedJsonOptions } from './cached-json.js';

export type { TemplateFilters } from '../core/search.js';
export { RegistryUnavailableError, cacheFileFor } from './cached-json.js';

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
// Client
// ---------------------------------------------------------------------------------------------

/** How the client reads a registry: the whole document, or the sparse index and one file per template. */
export type RegistryMode = 'full' | 'sparse' | 'auto';

/** A template's file of a sparse registry (`templates/<id>.json`): all its versions. */
interface TemplateFile {
  id: string;
  versions: TemplateEntry[];
}

function violationsText(what: string, schema: string, violations: readonly { pointer: string; message: string }[]): string {
  const shown = violations.slice(0, 3).map((v) => `${v.pointer || '/'} ${v.message}`);
  const more = violations.length > shown.length ? ` (and ${violations.length - shown.length} more)` : '';
  return `the ${what} fails the ${schema} schema: ${shown.join('; ')}${more}`;
}

export class RegistryClient {
  readonly registryUrl: string;
  readonly cacheTtlMs: number;
  readonly cacheDir: string | undefined;
  readonly mode: RegistryMode;
  readonly #resource: Omit<CachedJsonOptions<unknown>, 'url' | 'what' | 'accept' | 'toJson'>;
  readonly #document: CachedJson<RegistryIndex>;
  #sparseIndex: CachedJson<SparseIndex> | undefined;
  readonly #templateFiles = new Map<string, CachedJson<TemplateFile>>();
  /** What `auto` found: undefined until it looked. */
  #detected: 'full' | 'sparse' | undefined;

  constructor(options: RegistryClientOptions) {
    if (typeof options.registryUrl !== 'string' || options.registryUrl === '') throw new TypeError('registryUrl is required');
    this.registryUrl = options.registryUrl;
    const maxBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    if (!(maxBytes > 0)) throw new TypeError('maxDocumentBytes must be a positive number of bytes');
    this.cacheTtlMs = options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
    this.cacheDir = options.cacheDir;
    this.mode = options.mode ?? 'full';
    this.#resource = {
      ttlMs: this.cacheTtlMs,
      failureBackoffMs: options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF_MS,
      timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      maxBytes,
      fetch: options.fetch ?? globalThis.fetch,
      now: options.now ?? Date.now,
      ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
    };
    const registryUrl = this.registryUrl;
    this.#document = new CachedJson<RegistryIndex>({
      ...this.#resource,
      url: registryUrl,
      what: 'registry document',
      accept: (json) => {
        const violations = describeSchemaErrors(schemaErrors('registry-document', json));
        if (violations.length > 0) throw new FetchFailure(violationsText('registry document', 'registry-document', violations));
        return buildIndex(withAbsoluteUrls(json as RegistryDocument, registryUrl));
      },
      toJson: (index) => index.document,
    });
  }

  /** The spec's list operation: filters (all optional) applied to every entry, in listing order. */
  async listTemplates(filters: TemplateFilters = {}): Promise<TemplateEntry[]> {
    return listFromIndex(await this.#document.get(), filters);
  }

  /**
   * With `version`: that exact entry or null. Without: the highest stable version, else the
   * highest; null for an unknown id. In sparse mode only the index and that template's file are read.
   */
  async getTemplate(id: string, version?: string): Promise<TemplateEntry | null> {
    const whole = this.mode === 'auto' ? await this.#document.fresh() : undefined;
    if (whole || !(await this.#useSparse())) return getFromIndex(whole ?? (await this.#document.get()), id, version);
    const index = await this.#sparse().get();
    if (!index.templates.some((line) => line.id === id)) return null;
    const file = await this.#templateFile(id, index).get();
    if (version !== undefined) return file.versions.find((entry) => entry.version === version) ?? null;
    return selectLatest(file.versions, id);
  }

  /** Every version of template `id`, highest first; empty for an unknown id. In sparse mode only the index and its file are read. */
  async listVersions(id: string): Promise<TemplateEntry[]> {
    const whole = this.mode === 'auto' ? await this.#document.fresh() : undefined;
    if (whole || !(await this.#useSparse())) return versionsOf((whole ?? (await this.#document.get())).byId.get(id) ?? [], id);
    const index = await this.#sparse().get();
    if (!index.templates.some((line) => line.id === id)) return [];
    return versionsOf((await this.#templateFile(id, index).get()).versions, id);
  }

  /** The categories array of the registry document. */
  async listCategories(): Promise<Category[]> {
    return [...(await this.#document.get()).document.categories];
  }

  /** Entries whose name, description, tags, features and category contain every term of `query`. */
  async search(query: string): Promise<TemplateEntry[]> {
    return searchIndex(await this.#document.get(), query);
  }

  /** The whole registry document in hand (fetching it when needed). */
  async document(): Promise<RegistryDocument> {
    return (await this.#document.get()).document;
  }

  /**
   * The sparse index (`index.json` beside registry.json): one line per template with its latest
   * version. Rejects when the registry publishes none.
   */
  async index(): Promise<SparseIndex> {
    return this.#sparse().get();
  }

  /**
   * Fetches now (conditionally when a registry is cached), whatever the cache's age. A failure
   * keeps the cached registry (see `status()`); rejects only when there is no registry at all.
   */
  async refresh(): Promise<RegistryStatus> {
    await this.#document.refresh();
    return this.status();
  }

  /** The state of the registry document (the sparse files have their own, with the same rules). */
  status(): RegistryStatus {
    const { lastStatus: _lastStatus, ...status } = this.#document.status();
    return status;
  }

  /** Whether one template is read through the sparse files: the option, or (auto) whether the registry has them. */
  async #useSparse(): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'sparse';
    if (this.#detected === undefined) {
      try {
        await this.#sparse().get();
        this.#detected = 'sparse';
      } catch {
        // No index (a registry server, an older build, another implementation): the whole document.
        this.#detected = 'full';
      }
    }
    return this.#detected === 'sparse';
  }

  #sparse(): CachedJson<SparseIndex> {
    this.#sparseIndex ??= new CachedJson<SparseIndex>({
      ...this.#resource,
      url: new URL(INDEX_FILE, this.registryUrl).href,
      what: 'registry index',
      accept: (json) => {
        const violations = describeSchemaErrors(schemaErrors('registry-index', json));
        if (violations.length > 0) throw new FetchFailure(violationsText('registry index', 'registry-index', violations));
        return json as SparseIndex;
      },
      toJson: (index) => index,
    });
    return this.#sparseIndex;
  }

  #templateFile(id: string, index: SparseIndex): CachedJson<TemplateFile> {
    let file = this.#templateFiles.get(id);
    if (!file) {
      const indexUrl = this.#sparse().url;
      const url = new URL((index.templatePath ?? DEFAULT_TEMPLATE_PATH).replace('{id}', encodeURIComponent(id)), indexUrl).href;
      file = new CachedJson<TemplateFile>({
        ...this.#resource,
        url,
        what: `file of template ${id}`,
        accept: (json) => {
          const versions = (json as { versions?: unknown } | null)?.versions;
          if (!Array.isArray(versions)) throw new FetchFailure(`the file of template ${id} has no versions array`);
          const problems = versions.flatMap((entry, n) => describeSchemaErrors(schemaErrors('template-entry', entry)).map((v) => ({ ...v, pointer: `/versions/${n}${v.pointer}` })));
          if (problems.length > 0) throw new FetchFailure(violationsText(`file of template ${id}`, 'template-entry', problems));
          const entries = (versions as TemplateEntry[]).filter((entry) => entry.id === id);
          // Entries are copied from registry.json: their relative URLs are relative to it.
          const document = withAbsoluteUrls({ templates: entries, categories: [], tags: [], lastUpdated: index.lastUpdated }, this.registryUrl);
          return { id, versions: document.templates };
        },
        toJson: (value) => value,
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
