/**
 * A mirror of a registry (`template-registry mirror`): its documents and archives copied into a
 * folder or a bucket (the generator's outputs), to be served from any static host.
 *
 * - Incremental: every document is fetched with `If-None-Match` / `If-Modified-Since` (the
 *   validators of the last run are kept in `.template-registry-mirror.json` in the output); an
 *   archive already mirrored with the same integrity is not downloaded again.
 * - Every archive is checked against its entry (SRI integrity, SHA-256, size) before it becomes
 *   visible; an entry without either hash, or an archive that does not match, fails the run before
 *   any document is written (the previous mirror stays as it was).
 * - Provenance: an entry's attestation (`attestations.url`) is fetched and verified (Sigstore
 *   bundle against the trusted root, its subject digest against the archive) before any document
 *   is written, and copied beside the archive when its URL is relative; one that is missing or does
 *   not verify fails the run. `provenance: 'require'` also refuses an entry without one, `'off'`
 *   copies bundles unchecked. A bundle already mirrored is not fetched again unless its archive was.
 * - A signed registry (core/registry-signatures.ts): keys.json and every document's signature are
 *   checked (against the keys given, else the keys the mirror holds from its last run, else the
 *   source's own keys.json, which a key it lists must sign) and kept; the documents are copied byte
 *   for byte, so the signatures hold on the mirror and a client that pinned the source's keys reads
 *   the mirror with them. A source that stops signing, or changes keys without a rotation, is refused.
 * - URLs: relative download URLs (the layout `build-registry` writes) keep their paths and the
 *   archives are copied there. Absolute ones are rewritten to `archives/<id>/<version>.tgz` in an
 *   unsigned registry; in a signed one they are kept (rewriting would break the signature) and
 *   reported: those archives are still downloaded from where the entry says.
 * - Order: archives, then keys, template files, index.json, registry.json (each signature right
 *   after its file), as the generator writes them; template files of templates that are gone are
 *   removed.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

import { DigestStream, ProvenanceError, publicGoodTrust, verifyIntegrity, verifyProvenance, type SigstoreTrust } from '../archive/index.js';
import { mapLimit } from '../core/concurrency.js';
import { errorMessage } from '../core/errors.js';
import { parseHttpUrl } from '../core/http-url.js';
import { compareText } from '../core/listing.js';
import { registryDocumentUrl } from '../core/registry-url.js';
import {
  KEYS_FILE,
  looksLikeKeysFile,
  MAX_KEYS_FILE_BYTES,
  MAX_SIGNATURE_BYTES,
  parseKeysFile,
  SIGNATURE_SUFFIX,
  verifyFileSignature,
  verifyKeysFileSignature,
  type PublishedKey,
} from '../core/registry-signatures.js';
import { isTemplateName, isTemplateVersion } from '../core/versions.js';
import { documentFile, holds, REGISTRY_FILE, TEMPLATES_DIR, variantsOf } from './build.js';
import { INDEX_FILE } from './document.js';
import { CACHE_CONTROL, contentTypeOf, type HeldFile, type OutputFile, type RegistryOutput } from './output.js';
import { isRecord } from '../core/is-record.js';
import { readBodyCapped } from '../core/response-body.js';

/** What the mirror remembers between runs, in its output. */
export const MIRROR_STATE_FILE = '.template-registry-mirror.json';

/** Default most bytes of registry.json (and of each other document). */
export const DEFAULT_MIRROR_DOCUMENT_BYTES = 256 * 1024 * 1024;
/** Default most bytes of one archive. */
export const DEFAULT_MIRROR_ARCHIVE_BYTES = 100 * 1024 * 1024;
/** Most bytes of an attestation file. */
const MAX_ATTESTATION_BYTES = 4 * 1024 * 1024;
/** Default time a request may take (an archive's included). */
const DEFAULT_MIRROR_TIMEOUT_MS = 120_000;
/** Archives downloaded at once. */
const ARCHIVE_CONCURRENCY = 2;
/** Documents fetched at once. */
const DOCUMENT_CONCURRENCY = 8;

export interface MirrorOptions {
  /** The registry to copy: its base URL or its registry.json URL. */
  source: string;
  output: RegistryOutput;
  /** Keys the source must be signed with (`--registry-key`); default: the keys it publishes. */
  keys?: readonly PublishedKey[];
  fetch?: typeof globalThis.fetch;
  /** Per request (default 120 s). */
  timeoutMs?: number;
  /** Most bytes of a document (default 256 MiB). */
  maxDocumentBytes?: number;
  /** Most bytes of an archive (default 100 MiB). */
  maxArchiveBytes?: number;
  /** Clock for the signature checks. */
  now?: () => Date;
  /** How attestations are checked (default `verify`: a named one must verify; `require`: every entry needs one; `off`: copied unchecked). */
  provenance?: MirrorProvenanceMode;
  /** The Sigstore trusted root bundles are verified against (default the public-good root). */
  sigstoreTrust?: SigstoreTrust;
}

export type MirrorProvenanceMode = 'off' | 'verify' | 'require';
export const MIRROR_PROVENANCE_MODES: readonly MirrorProvenanceMode[] = ['off', 'verify', 'require'];

export interface MirrorResult {
  /** The source's registry.json URL. */
  source: string;
  /** Whether the source is signed (its signatures were checked and kept). */
  signed: boolean;
  templates: number;
  entries: number;
  /** Archives downloaded (and verified) by this run. */
  copied: string[];
  /** Archives already mirrored with the same integrity. */
  kept: number;
  /** Entries whose absolute download URL a signed document keeps (not copied). */
  external: string[];
  /** Entries (id@version) whose provenance this run verified. */
  provenanceVerified: string[];
  /** Document requests answered 304 Not Modified. */
  notModified: number;
  /** Document requests answered with a body. */
  fetched: number;
  written: string[];
  removed: string[];
  warnings: string[];
}

/** The mirror could not be made; the message names the URL, the entry or the rule. Nothing of the documents was written. */
export class MirrorError extends Error {
  override readonly name = 'MirrorError';
}

interface MirrorState {
  formatVersion: 1;
  source: string;
  /** Validators of each document fetched, by its path. */
  documents: Record<string, { etag?: string; lastModified?: string }>;
  /** The integrity each mirrored archive was verified against, by its path. */
  archives: Record<string, string>;
}

function parseState(bytes: Buffer | undefined, source: string): MirrorState {
  const empty: MirrorState = { formatVersion: 1, source, documents: {}, archives: {} };
  if (!bytes) return empty;
  try {
    const state = JSON.parse(bytes.toString('utf8')) as Partial<MirrorState>;
    if (state.formatVersion !== 1 || state.source !== source || typeof state.documents !== 'object' || typeof state.archives !== 'object') return empty;
    return { formatVersion: 1, source, documents: state.documents ?? {}, archives: state.archives ?? {} };
  } catch {
    return empty;
  }
}

type Fetched = { status: 'body'; bytes: Buffer; etag?: string; lastModified?: string } | { status: 'same' } | { status: 'missing' };


/** A relative URL the mirror can copy to the same path: safe segments, no query, no way out of the root. */
function mirroredPath(url: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('/') || url.startsWith('\\') || /[?#]/.test(url)) return undefined;
  const segments = url.replace(/^\.\//, '').split('/');
  if (segments.some((segment) => !/^[A-Za-z0-9._-]+$/.test(segment) || segment === '.' || segment === '..')) return undefined;
  const path = segments.join('/');
  if ([REGISTRY_FILE, INDEX_FILE, KEYS_FILE, MIRROR_STATE_FILE].some((name) => path === name || path.startsWith(`${name}.`)) || path.startsWith(`${TEMPLATES_DIR}/`)) return undefined;
  return path;
}

/** One entry's archive as the mirror sees it. */
interface PlannedArchive {
  label: string;
  /** Where to download it from. */
  url: string;
  /** Its path in the mirror. */
  path: string;
  expected: { integrity?: string; sha256?: string; size?: number };
  /** What the state records it was verified against. */
  key: string;
}

class Mirror {
  readonly #options: Required<Pick<MirrorOptions, 'timeoutMs' | 'maxDocumentBytes' | 'maxArchiveBytes'>> & MirrorOptions;
  readonly #fetch: typeof globalThis.fetch;
  readonly #documentUrl: string;
  readonly #base: URL;
  #state!: MirrorState;
  #held!: Map<string, HeldFile>;
  /** Hex SHA-256 of each archive downloaded by this run, by its path. */
  readonly #downloaded = new Map<string, string>();
  readonly #result: MirrorResult;

  constructor(options: MirrorOptions) {
    this.#options = { timeoutMs: DEFAULT_MIRROR_TIMEOUT_MS, maxDocumentBytes: DEFAULT_MIRROR_DOCUMENT_BYTES, maxArchiveBytes: DEFAULT_MIRROR_ARCHIVE_BYTES, ...options };
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#documentUrl = registryDocumentUrl(options.source);
    const base = parseHttpUrl('.', this.#documentUrl);
    if (!base) throw new MirrorError(`the source must be an http(s) URL (got ${JSON.stringify(options.source)})`);
    base.search = '';
    base.hash = '';
    this.#base = base;
    this.#result = { source: this.#documentUrl, signed: false, templates: 0, entries: 0, copied: [], kept: 0, external: [], provenanceVerified: [], notModified: 0, fetched: 0, written: [], removed: [], warnings: [] };
  }

  #url(path: string): string {
    return path === REGISTRY_FILE ? this.#documentUrl : new URL(path, this.#base).href;
  }

  /** A URL an entry names, resolved against the source's document; undefined when it is not a URL. */
  #resolve(url: string): string | undefined {
    try {
      return new URL(url, this.#documentUrl).href;
    } catch {
      return undefined;
    }
  }

  /** Reads a response body, refusing more than `max` bytes. */
  #body(response: Response, max: number, url: string): Promise<Buffer> {
    return readBodyCapped(response, max, () => new MirrorError(`${url} is larger than ${max} bytes, the most the mirror takes`));
  }

  async #get(url: string, max: number, validators?: { etag?: string; lastModified?: string }): Promise<Fetched> {
    const headers: Record<string, string> = {};
    if (validators?.etag !== undefined) headers['if-none-match'] = validators.etag;
    if (validators?.lastModified !== undefined) headers['if-modified-since'] = validators.lastModified;
    let response: Response;
    try {
      response = await this.#fetch(url, { headers, signal: AbortSignal.timeout(this.#options.timeoutMs) });
    } catch (error) {
      throw new MirrorError(`cannot fetch ${url}: ${errorMessage(error)}`);
    }
    if (response.status === 304 && validators) {
      await response.body?.cancel().catch(() => undefined);
      return { status: 'same' };
    }
    if (response.status === 404 || response.status === 410) {
      await response.body?.cancel().catch(() => undefined);
      return { status: 'missing' };
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new MirrorError(`cannot fetch ${url}: HTTP ${response.status}`);
    }
    const bytes = await this.#body(response, max, url);
    const etag = response.headers.get('etag') ?? undefined;
    const lastModified = response.headers.get('last-modified') ?? undefined;
    return { status: 'body', bytes, ...(etag !== undefined ? { etag } : {}), ...(lastModified !== undefined ? { lastModified } : {}) };
  }

  /**
   * A document of the source (`path` relative to it): conditionally when the mirror holds it from
   * the last run (a 304 gives the mirror's bytes). Undefined when the source has none.
   */
  async #document(path: string, max: number): Promise<Buffer | undefined> {
    const url = this.#url(path);
    const known = this.#state.documents[path];
    const mine = known && this.#held.has(path) ? await this.#options.output.read(path) : undefined;
    const answer = await this.#get(url, max, mine ? known : undefined);
    if (answer.status === 'same') {
      this.#result.notModified++;
      return mine;
    }
    if (answer.status === 'missing') {
      delete this.#state.documents[path];
      return undefined;
    }
    this.#result.fetched++;
    this.#state.documents[path] = { ...(answer.etag !== undefined ? { etag: answer.etag } : {}), ...(answer.lastModified !== undefined ? { lastModified: answer.lastModified } : {}) };
    return answer.bytes;
  }

  /** The keys the documents are checked with; undefined for an unsigned source. */
  async #keys(): Promise<{ keys: PublishedKey[]; files: OutputFile[] } | undefined> {
    const fetched = await this.#document(KEYS_FILE, MAX_KEYS_FILE_BYTES);
    const bytes = fetched && looksLikeKeysFile(fetched) ? fetched : undefined;
    const given = this.#options.keys && this.#options.keys.length > 0 ? [...this.#options.keys] : undefined;
    const previous = this.#held.has(KEYS_FILE) ? await this.#options.output.read(KEYS_FILE) : undefined;
    if (!bytes) {
      if (given) return { keys: given, files: [] };
      if (previous) throw new MirrorError(`${this.#url(KEYS_FILE)} is gone: the source stopped signing its documents (the mirror holds its keys from the last run); refusing to mirror it unsigned`);
      return undefined;
    }
    const signature = await this.#document(`${KEYS_FILE}${SIGNATURE_SUFFIX}`, MAX_SIGNATURE_BYTES);
    if (!signature) throw new MirrorError(`${this.#url(KEYS_FILE)} has no signature (${KEYS_FILE}${SIGNATURE_SUFFIX})`);
    let listed: PublishedKey[];
    try {
      listed = parseKeysFile(bytes, this.#url(KEYS_FILE));
      // Who vouches for keys.json: the keys given, else the ones mirrored last time (a rotation), else its own.
      let trusted = given ?? listed;
      if (!given && previous) {
        try {
          trusted = parseKeysFile(previous, `the mirror's ${KEYS_FILE}`);
        } catch {
          trusted = listed;
        }
      }
      await verifyKeysFileSignature(bytes, signature.toString('utf8'), trusted, this.#now());
    } catch (error) {
      throw new MirrorError(`${this.#url(KEYS_FILE)} cannot be trusted: ${errorMessage(error)}`);
    }
    return { keys: given ? [...given, ...listed.filter((key) => !given.some((g) => g.kid === key.kid))] : listed, files: [documentFile(KEYS_FILE, bytes), documentFile(`${KEYS_FILE}${SIGNATURE_SUFFIX}`, signature)] };
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  /** A document and, for a signed source, its checked signature: the files to write. */
  async #signedDocument(path: string, keys: readonly PublishedKey[] | undefined, required: boolean): Promise<{ bytes: Buffer; files: OutputFile[] } | undefined> {
    const bytes = await this.#document(path, this.#options.maxDocumentBytes);
    if (!bytes) {
      if (required) throw new MirrorError(`${this.#url(path)} is not there (HTTP 404)`);
      return undefined;
    }
    if (!keys) return { bytes, files: [documentFile(path, bytes)] };
    const signature = await this.#document(`${path}${SIGNATURE_SUFFIX}`, MAX_SIGNATURE_BYTES);
    if (!signature) throw new MirrorError(`${this.#url(path)} is not signed (${path}${SIGNATURE_SUFFIX} is missing) though the source publishes keys`);
    try {
      await verifyFileSignature(bytes, path, signature.toString('utf8'), keys, this.#now());
    } catch (error) {
      throw new MirrorError(`${this.#url(path)} fails its signature check: ${errorMessage(error)}`);
    }
    return { bytes, files: [documentFile(path, bytes), documentFile(`${path}${SIGNATURE_SUFFIX}`, signature)] };
  }

  async run(): Promise<MirrorResult> {
    const { output } = this.#options;
    this.#held = await output.inventory();
    this.#state = parseState(this.#held.has(MIRROR_STATE_FILE) ? await output.read(MIRROR_STATE_FILE) : undefined, this.#documentUrl);

    const trust = await this.#keys();
    this.#result.signed = trust !== undefined;
    const registry = (await this.#signedDocument(REGISTRY_FILE, trust?.keys, true)) as { bytes: Buffer; files: OutputFile[] };
    const document = this.#parse(registry.bytes, this.#url(REGISTRY_FILE));
    const entries = document.templates as Record<string, unknown>[];
    const ids = [...new Set(entries.map((entry) => entry.id as string))].sort(compareText);
    this.#result.entries = entries.length;
    this.#result.templates = ids.length;

    // The sparse files, when the source publishes an index.
    const index = await this.#signedDocument(INDEX_FILE, trust?.keys, false);
    const templatePath = index ? this.#templatePath(index.bytes) : undefined;
    const templateFiles = new Map<string, { bytes: Buffer; files: OutputFile[] }>();
    if (templatePath) {
      await mapLimit(ids, DOCUMENT_CONCURRENCY, async (id) => {
        const file = await this.#signedDocument(templatePath.replace('{id}', id), trust?.keys, false);
        if (file) templateFiles.set(id, file);
      });
    }

    // Archives: planned from every entry, downloaded and verified before any document is written.
    const rewrite = new Map<string, string>();
    const planned = this.#planArchives(entries, trust !== undefined, rewrite);
    await this.#copyArchives(planned);
    await this.#copyAttestations(entries, new Map(planned.map((archive) => [archive.label, archive.path])));

    // The documents, rewritten only for an unsigned source with absolute URLs (then fetched whole
    // next time: a 304 would leave the mirror's rewritten copy, whose URLs no longer lead to the source).
    if (rewrite.size > 0) for (const path of [REGISTRY_FILE, ...[...templateFiles.values()].map((file) => (file.files[0] as OutputFile).name)]) delete this.#state.documents[path];
    const registryFiles = rewrite.size > 0 ? [documentFile(REGISTRY_FILE, this.#rewritten(registry.bytes, 'templates', rewrite))] : registry.files;
    const templateOutputs = [...templateFiles.entries()].map(([id, file]) =>
      rewrite.size > 0 ? [documentFile((file.files[0] as OutputFile).name, this.#rewritten(file.bytes, 'versions', rewrite, id))] : file.files,
    );

    if (trust && trust.files.length > 0) await this.#write(trust.files, { inOrder: true });
    for (const files of templateOutputs) await this.#write(files);
    await output.barrier();
    const entryPoints: OutputFile[] = [];
    for (const files of [index?.files ?? [], registryFiles]) {
      const [main, ...rest] = files;
      if (!main) continue;
      const same = await holds(output, this.#held, main);
      if (!same || !this.#held.has(`${main.name}.gz`) || !this.#held.has(`${main.name}.br`)) entryPoints.push(...(await variantsOf(main)));
      if (!same) entryPoints.push(main);
      for (const file of rest) if (!(await holds(output, this.#held, file))) entryPoints.push(file);
    }
    if (entryPoints.length > 0) {
      await output.putInOrder(entryPoints);
      this.#result.written.push(...entryPoints.map((file) => file.name));
    }

    // Template files of templates the source no longer has (and signatures of a source no longer signed).
    const keptTemplates = new Set([...templateFiles.values()].flatMap((file) => file.files.map((f) => f.name)));
    const stale = [...this.#held.keys()]
      .filter((name) => (name.startsWith(`${TEMPLATES_DIR}/`) && !keptTemplates.has(name)) || (!trust && name.endsWith(SIGNATURE_SUFFIX) && !name.startsWith('archives/')) || (!index && (name === INDEX_FILE || name.startsWith(`${INDEX_FILE}.`))))
      .sort(compareText);
    await output.remove(stale);
    this.#result.removed.push(...stale);

    const state = Buffer.from(`${JSON.stringify(this.#state)}\n`, 'utf8');
    const stateFile: OutputFile = { name: MIRROR_STATE_FILE, data: state, contentType: contentTypeOf(MIRROR_STATE_FILE), cacheControl: 'no-store' };
    if (!(await holds(output, this.#held, stateFile))) await output.put(stateFile, { durable: true });
    await output.commit();
    return this.#result;
  }

  async #write(files: readonly OutputFile[], options: { inOrder?: boolean } = {}): Promise<void> {
    const changed: OutputFile[] = [];
    for (const file of files) if (!(await holds(this.#options.output, this.#held, file))) changed.push(file);
    if (changed.length === 0) return;
    if (options.inOrder) await this.#options.output.putInOrder(changed);
    else for (const file of changed) await this.#options.output.put(file);
    this.#result.written.push(...changed.map((file) => file.name));
  }

  /** registry.json parsed far enough to mirror it: every entry with a template id, a version and a download URL. */
  #parse(bytes: Buffer, url: string): { templates: unknown[] } {
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw new MirrorError(`${url} is not JSON: ${errorMessage(error)}`);
    }
    if (!isRecord(json) || !Array.isArray(json.templates)) throw new MirrorError(`${url} has no templates array`);
    json.templates.forEach((entry, index) => {
      if (!isRecord(entry) || typeof entry.id !== 'string' || !isTemplateName(entry.id) || typeof entry.version !== 'string' || !isTemplateVersion(entry.version) || typeof entry.downloadUrl !== 'string' || entry.downloadUrl === '') {
        throw new MirrorError(`${url}: /templates/${index} needs a template id, a version and a downloadUrl to be mirrored`);
      }
    });
    return json as { templates: unknown[] };
  }

  /** index.json's templatePath, checked: a relative path with `{id}` that stays under templates/. */
  #templatePath(bytes: Buffer): string {
    let pattern: unknown = `${TEMPLATES_DIR}/{id}.json`;
    try {
      const index = JSON.parse(bytes.toString('utf8')) as { templatePath?: unknown };
      if (index.templatePath !== undefined) pattern = index.templatePath;
    } catch (error) {
      throw new MirrorError(`${this.#url(INDEX_FILE)} is not JSON: ${errorMessage(error)}`);
    }
    if (typeof pattern !== 'string' || !/^templates\/[A-Za-z0-9._-]*\{id\}[A-Za-z0-9._-]*\.json$/.test(pattern)) {
      throw new MirrorError(`${this.#url(INDEX_FILE)}: templatePath ${JSON.stringify(pattern)} is not a path under templates/ the mirror can copy`);
    }
    return pattern;
  }

  #planArchives(entries: readonly Record<string, unknown>[], signed: boolean, rewrite: Map<string, string>): PlannedArchive[] {
    const byPath = new Map<string, PlannedArchive>();
    const problems: string[] = [];
    for (const entry of entries) {
      const id = entry.id as string;
      const version = entry.version as string;
      const label = `${id}@${version}`;
      const downloadUrl = entry.downloadUrl as string;
      const integrity = typeof entry.integrity === 'string' ? entry.integrity : undefined;
      const sha256 = typeof entry.sha256 === 'string' ? entry.sha256 : undefined;
      const size = typeof entry.size === 'number' && Number.isSafeInteger(entry.size) && entry.size >= 0 ? entry.size : undefined;
      let path = mirroredPath(downloadUrl);
      if (path === undefined) {
        if (signed) {
          this.#result.external.push(label);
          continue;
        }
        path = `archives/${id}/${version}.tgz`;
        rewrite.set(`${id}@${version}`, path);
      }
      if (integrity === undefined && sha256 === undefined) {
        problems.push(`${label} gives neither integrity nor sha256: its archive cannot be verified`);
        continue;
      }
      const key = integrity ?? `sha256-${sha256 ?? ''}`;
      const previous = byPath.get(path);
      if (previous && previous.key !== key) {
        problems.push(`${label} and ${previous.label} name the same archive ${path} with different integrity`);
        continue;
      }
      const url = this.#resolve(downloadUrl);
      if (url === undefined) {
        problems.push(`${label} has a download URL that is not a URL: ${JSON.stringify(downloadUrl)}`);
        continue;
      }
      if (!/^https?:$/.test(new URL(url).protocol)) {
        problems.push(`${label} is downloaded from ${url}: only http(s) archives can be mirrored`);
        continue;
      }
      byPath.set(path, { label, url, path, expected: { ...(integrity !== undefined ? { integrity } : {}), ...(sha256 !== undefined ? { sha256 } : {}), ...(size !== undefined ? { size } : {}) }, key });
    }
    if (problems.length > 0) throw new MirrorError(`nothing was written: ${problems.join('; ')}`);
    if (this.#result.external.length > 0) {
      this.#result.warnings.push(
        `${this.#result.external.length} signed entr${this.#result.external.length === 1 ? 'y names' : 'ies name'} an absolute download URL (${this.#result.external.slice(0, 3).join(', ')}${this.#result.external.length > 3 ? ', ...' : ''}): kept as they are, since rewriting them would break the registry's signature; those archives are still downloaded from their origin`,
      );
    }
    return [...byPath.values()].sort((a, b) => compareText(a.path, b.path));
  }

  async #copyArchives(planned: readonly PlannedArchive[]): Promise<void> {
    const { output } = this.#options;
    const failures: string[] = [];
    await mapLimit(planned, ARCHIVE_CONCURRENCY, async (archive) => {
      const held = this.#held.get(archive.path);
      if (held && this.#state.archives[archive.path] === archive.key && (archive.expected.size === undefined || held.size === archive.expected.size)) {
        this.#result.kept++;
        return;
      }
      try {
        const answer = await this.#get(archive.url, this.#options.maxArchiveBytes);
        if (answer.status !== 'body') throw new MirrorError(`cannot fetch ${archive.url}: HTTP 404`);
        const digest = new DigestStream();
        const stream = Readable.from([answer.bytes]).pipe(digest);
        await output.putArchive({
          name: archive.path,
          size: answer.bytes.length,
          stream,
          verify: () => verifyIntegrity(archive.expected, digest.result(), `the archive of ${archive.label} (${archive.url})`),
        });
        this.#state.archives[archive.path] = archive.key;
        this.#downloaded.set(archive.path, createHash('sha256').update(answer.bytes).digest('hex'));
        this.#result.copied.push(archive.path);
        this.#result.written.push(archive.path);
      } catch (error) {
        failures.push(errorMessage(error));
      }
    });
    this.#result.copied.sort(compareText);
    if (failures.length > 0) throw new MirrorError(`no document was written (the archives verified so far are kept): ${failures.sort(compareText).join('; ')}`);
  }

  /**
   * The attestation of every entry that names one: fetched (unless mirrored already and its archive
   * was not downloaded again), verified against the archive's SHA-256, then copied beside the
   * archive when its URL is relative. Any problem fails the run before a document is written.
   */
  async #copyAttestations(entries: readonly Record<string, unknown>[], archiveOf: ReadonlyMap<string, string>): Promise<void> {
    const mode = this.#options.provenance ?? 'verify';
    const trust = mode === 'off' ? undefined : (this.#options.sigstoreTrust ?? (await publicGoodTrust()));
    const problems: string[] = [];
    const toWrite = new Map<string, Buffer>();
    await mapLimit(entries, ARCHIVE_CONCURRENCY, async (entry) => {
      const label = `${entry.id as string}@${entry.version as string}`;
      const url = isRecord(entry.attestations) && typeof entry.attestations.url === 'string' && entry.attestations.url !== '' ? entry.attestations.url : undefined;
      if (url === undefined) {
        if (mode === 'require') problems.push(`${label} has no build provenance (the mirror was asked to require it)`);
        return;
      }
      const path = mirroredPath(url);
      const archivePath = archiveOf.get(label);
      const archiveDownloaded = archivePath !== undefined && this.#downloaded.has(archivePath);
      if (path !== undefined && this.#held.has(path) && !archiveDownloaded) return;
      const absolute = this.#resolve(url);
      if (absolute === undefined) {
        problems.push(`${label} names an attestation URL that is not a URL: ${JSON.stringify(url)}`);
        return;
      }
      try {
        const answer = await this.#get(absolute, MAX_ATTESTATION_BYTES);
        if (answer.status !== 'body') throw new MirrorError(`cannot fetch the attestation of ${label} (${absolute}): HTTP 404`);
        if (trust) {
          const sha256 = await this.#archiveSha256(entry, archivePath);
          if (sha256 === undefined) {
            this.#result.warnings.push(`the provenance of ${label} was not verified: its entry gives no sha256 and its archive is not mirrored`);
          } else {
            await verifyProvenance(answer.bytes, { sha256 }, trust);
            this.#result.provenanceVerified.push(label);
          }
        }
        if (path !== undefined) toWrite.set(path, answer.bytes);
      } catch (error) {
        if (error instanceof ProvenanceError) problems.push(`the provenance of ${label} (${absolute}) does not verify: ${error.message}`);
        else problems.push(errorMessage(error));
      }
    });
    if (problems.length > 0) throw new MirrorError(`no document was written: ${problems.sort(compareText).join('; ')}`);
    this.#result.provenanceVerified.sort(compareText);
    for (const path of [...toWrite.keys()].sort(compareText)) {
      await this.#options.output.put({ name: path, data: toWrite.get(path) as Buffer, contentType: 'application/json', cacheControl: CACHE_CONTROL.immutable });
      this.#result.written.push(path);
    }
  }

  /** The hex SHA-256 an entry's attestation must name: the entry's own, else the archive's as mirrored. */
  async #archiveSha256(entry: Record<string, unknown>, archivePath: string | undefined): Promise<string | undefined> {
    if (typeof entry.sha256 === 'string' && /^[0-9a-f]{64}$/.test(entry.sha256)) return entry.sha256;
    if (archivePath === undefined) return undefined;
    const downloaded = this.#downloaded.get(archivePath);
    if (downloaded !== undefined) return downloaded;
    const bytes = this.#held.has(archivePath) ? await this.#options.output.read(archivePath) : undefined;
    return bytes ? createHash('sha256').update(bytes).digest('hex') : undefined;
  }

  /** The document with the download URLs of `rewrite` (by id@version) replaced by their mirror paths. */
  #rewritten(bytes: Buffer, key: 'templates' | 'versions', rewrite: ReadonlyMap<string, string>, id?: string): Buffer {
    const json = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    const list = Array.isArray(json[key]) ? (json[key] as unknown[]) : [];
    json[key] = list.map((entry) => {
      if (!isRecord(entry)) return entry;
      const path = rewrite.get(`${typeof entry.id === 'string' ? entry.id : (id ?? '')}@${typeof entry.version === 'string' ? entry.version : ''}`);
      return path === undefined ? entry : { ...entry, downloadUrl: path };
    });
    return Buffer.from(`${JSON.stringify(json)}\n`, 'utf8');
  }
}

/**
 * Copies the registry at `options.source` into `options.output` (see the module comment). Throws
 * MirrorError naming what failed; the output's documents stay as the last run wrote them.
 */
export async function mirrorRegistry(options: MirrorOptions): Promise<MirrorResult> {
  return new Mirror(options).run();
}
