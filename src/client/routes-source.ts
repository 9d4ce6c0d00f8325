/**
 * A registry that answers only the conventional routes (`GET /templates`, `GET /templates/{id}`,
 * `GET /templates/{id}/versions`, `GET /templates/{id}/versions/{version}`, envelopes with
 * `data` and offset `pagination`) and publishes no registry.json: the reader's operations through
 * those routes. Lists are read page by page (`limit=100`) up to a bound; each answer is kept for the
 * life of the client, so a run asks each route once.
 */
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { readEntries, readEntry, type SkippedEntry } from './entry-reader.js';
import { isRecord } from '../core/is-record.js';

/** The largest answer of one route read. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** The most pages of one list read (100 entries each). */
const MAX_PAGES = 1000;
const PAGE_SIZE = 100;


export interface RoutesSourceOptions {
  /** The registry's base URL (the routes are `<base>/templates...`). */
  base: string;
  fetch: typeof globalThis.fetch;
  timeoutMs: number;
  onSkipped: (what: string, url: string, skipped: readonly SkippedEntry[]) => void;
}

/** A route's answer: its JSON, or the HTTP status it failed with. */
type Answer = { json: unknown } | { status: number };

export class RoutesSource {
  readonly #options: RoutesSourceOptions;
  readonly #answers = new Map<string, Promise<Answer>>();
  #document: Promise<RegistryDocument> | undefined;

  constructor(options: RoutesSourceOptions) {
    this.#options = options;
  }

  /** Whether `base` answers the list route with an envelope (one request). */
  static async detect(options: Omit<RoutesSourceOptions, 'onSkipped'>): Promise<boolean> {
    const answer = await new RoutesSource({ ...options, onSkipped: () => undefined }).#get(`/templates?limit=1`);
    return 'json' in answer && isRecord(answer.json) && Array.isArray(answer.json.data);
  }

  #get(route: string): Promise<Answer> {
    let answer = this.#answers.get(route);
    if (!answer) {
      answer = this.#fetch(`${this.#options.base}${route}`);
      this.#answers.set(route, answer);
    }
    return answer;
  }

  async #fetch(url: string): Promise<Answer> {
    const response = await this.#options.fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.#options.timeoutMs) });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return { status: response.status };
    }
    const length = Number(response.headers.get('content-length') ?? '0');
    if (length > MAX_ANSWER_BYTES) throw new Error(`${url} answered ${length} bytes, more than ${MAX_ANSWER_BYTES}`);
    const text = await response.text();
    if (text.length > MAX_ANSWER_BYTES) throw new Error(`${url} answered more than ${MAX_ANSWER_BYTES} bytes`);
    try {
      return { json: JSON.parse(text) as unknown };
    } catch {
      throw new Error(`${url} did not answer JSON`);
    }
  }

  /** Every entry of a paginated list route; undefined when the route answers 404. */
  async #list(route: string, what: string): Promise<TemplateEntry[] | undefined> {
    const entries: TemplateEntry[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const separator = route.includes('?') ? '&' : '?';
      const pageRoute = `${route}${separator}page=${page}&limit=${PAGE_SIZE}`;
      const answer = await this.#get(pageRoute);
      if ('status' in answer) {
        if (answer.status === 404 && page === 1) return undefined;
        throw new Error(`${this.#options.base}${pageRoute} answered HTTP ${answer.status}`);
      }
      const body = answer.json;
      const data = isRecord(body) && Array.isArray(body.data) ? body.data : undefined;
      if (!data) throw new Error(`${this.#options.base}${pageRoute} did not answer a list envelope`);
      const read = readEntries(data);
      this.#options.onSkipped(what, `${this.#options.base}${pageRoute}`, read.skipped);
      entries.push(...read.entries);
      const pagination = isRecord(body) && isRecord(body.pagination) ? body.pagination : undefined;
      if (pagination?.hasNext !== true || data.length === 0) return entries;
    }
    return entries;
  }

  /** The latest entry of every template, as the registry lists them, and its categories when it has that route. */
  document(): Promise<RegistryDocument> {
    this.#document ??= (async () => {
      const templates = (await this.#list('/templates', 'template list')) ?? [];
      const answer = await this.#get('/categories');
      const categories = 'json' in answer && isRecord(answer.json) && Array.isArray(answer.json.data) ? (answer.json.data.filter(isRecord) as unknown as Category[]) : [];
      return { templates, categories, tags: [...new Set(templates.flatMap((t) => t.tags ?? []))].sort(), lastUpdated: '' };
    })();
    return this.#document;
  }

  /** Every version of `id` (yanked ones with `includeYanked`); empty for an unknown id. */
  async versions(id: string, includeYanked: boolean): Promise<TemplateEntry[]> {
    const route = `/templates/${encodeURIComponent(id)}/versions${includeYanked ? '?include=yanked' : ''}`;
    return ((await this.#list(route, `versions of ${id}`)) ?? []).filter((entry) => entry.id === id);
  }

  /** One version of `id`, or (without a version) the one the registry calls its latest; null when unknown. */
  async get(id: string, version?: string): Promise<TemplateEntry | null> {
    const route = version === undefined ? `/templates/${encodeURIComponent(id)}` : `/templates/${encodeURIComponent(id)}/versions/${encodeURIComponent(version)}`;
    const answer = await this.#get(route);
    if ('status' in answer) {
      if (answer.status === 404) return null;
      throw new Error(`${this.#options.base}${route} answered HTTP ${answer.status}`);
    }
    const body = answer.json;
    const read = readEntry(isRecord(body) && 'data' in body ? body.data : body);
    if (!('entry' in read)) return null;
    return read.entry.id === id && (version === undefined || read.entry.version === version) ? read.entry : null;
  }
}
