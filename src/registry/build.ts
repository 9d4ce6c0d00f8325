/**
 * The registry generator: turns the versions a `RegistrySource` knows into the static files of a
 * registry, written to a `RegistryOutput` (a folder, or an S3-compatible bucket):
 *
 * - `archives/<id>/<version>.tgz` (store source): each archive at its immutable path, checked
 *   against the version's integrity before it becomes visible;
 * - `templates/<id>.json` (`{ id, versions }`), one small file per template;
 * - `index.html`, the catalog page (unless `catalog: false`);
 * - `index.json`, the small index of templates, then `registry.json`, the spec's document, each with
 *   `.gz` and `.br` variants.
 * - With signing keys (`signing`): `keys.json` and `keys.json.jws` first (a client meeting a new key
 *   finds it listed), and `<file>.jws` right after each template file, index.json and registry.json
 *   (the format: core/registry-signatures.ts; which key signs: signing.ts). A signature still valid
 *   for the same bytes and signer is kept, so an unchanged file keeps its signature. An output that
 *   holds keys.json is never built unsigned (its clients pinned the keys and would refuse it).
 *
 * The output is deterministic: the same versions give the same bytes, and `lastUpdated` only moves
 * when the content does. The document is validated before anything is written; only files whose
 * bytes differ from what the output holds are written; the entry points (index.json, then
 * registry.json, variants first) are written durably after everything they name, so a reader never
 * sees one pointing at a file that is not there.
 *
 * A `RegistryBuilder` remembers the entries of the versions it has seen (a manifest of a published
 * version never changes): the server keeps one, so a rebuild after an upload serializes only what
 * changed. One that keeps a build state in its output (`state`, what `build-registry` does) keeps
 * nothing in memory instead: its full build reads the source a few templates at a time and, where
 * the output can stage files, streams registry.json and its variants into staged files as each
 * batch is made (streamed-document.ts), so it never holds every entry, nor registry.json's bytes.
 */
import { createHash } from 'node:crypto';
import { constants as zlibConstants, createBrotliCompress, createGzip, type BrotliOptions, type ZlibOptions } from 'node:zlib';

import { DigestStream, digestOf } from '../archive/index.js';
import { mapLimit } from '../core/concurrency.js';
import { errorMessage } from '../core/errors.js';
import { compareText, selectLatest } from '../core/listing.js';
import type { RuleViolation } from '../core/messages.js';
import { describeSchemaErrors } from '../core/messages.js';
import { staticArchivePath } from '../core/routes.js';
import { staticAttestationPath } from '../core/routes.js';
import { indexColumns } from '../core/registry-index.js';
import { KEYS_FILE, readCompactSignature, SIGNATURE_SUFFIX, signFile, signKeysFile, keysFileBytes, verifyKeysFileSignature, type SigningKey } from '../core/registry-signatures.js';
import type { Category, RegistryDocument, TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { compareVersions } from '../core/versions.js';
import { renderCatalog } from './catalog.js';
import { buildCategories, DEFAULT_CATEGORIES, entryViolations, INDEX_FILE, RegistryBuildError, sparseIndexLine, TEMPLATE_FILE_PATTERN, toEntry, type SkippedVersion } from './document.js';
import { FolderOutput } from './folder-output.js';
import { CACHE_CONTROL, contentTypeOf, fileDigest, HOST_HEADERS_FILE, hostHeadersFile, partsOf, sameBytes, sizeOf, type BytesFile, type DigestAlgorithm, type HeldFile, type OutputFile, type RegistryOutput, type StagedFile } from './output.js';
import { readTemplatePageText, type PageSource } from './page-text.js';
import { planSigning, type SigningPlan } from './signing.js';
import { LARGE_DOCUMENT, StreamedDocument } from './streamed-document.js';
import { compressParts } from './compress-parts.js';
import { BrotliThread, sharedBuffer } from './brotli-thread.js';
import { gzipPieces, reuseFrom, reuseFromParts, type DocumentUnit, type MadePiece, type PieceReuse } from './gzip-pieces.js';
import type { KnownTemplate, RegistrySource, SourceVersion } from './source.js';
import { buildStateBytes, compact, flagOf, readBuildState, STATE_ARCHIVE, STATE_ATTESTATION, stateFingerprint, type BuildState, type StateTemplate } from './build-state.js';
import type { IndexLine } from '../core/registry-index.js';

export const REGISTRY_FILE = 'registry.json';
export const CATALOG_FILE = 'index.html';
export const TEMPLATES_DIR = 'templates';

export interface BuildOptions {
  /** Folder the registry files are written into (created when missing); ignored when `output` is given. */
  outDir?: string;
  /** Where the files go (a folder or a bucket); default a `FolderOutput` of `outDir`. */
  output?: RegistryOutput;
  /** Clock for `lastUpdated`; default `new Date()`. */
  now?: () => Date;
  /** Write the catalog page `index.html` (default true). */
  catalog?: boolean;
  /** Category definitions to use instead of the five defaults; their `templates` lists are recomputed. */
  categories?: Category[];
  /** Public base URL of the registry, shown on the catalog page. */
  publicUrl?: string;
  /**
   * Refuse (RegistryBuildError, nothing written) a build that would drop every template from an
   * existing registry.json that lists some; default true (`build-registry` sets it from --allow-empty).
   */
  allowEmpty?: boolean;
  /**
   * Private keys that sign the documents (`--sign-key`, signing.ts `loadSigningKeys`): keys.json,
   * keys.json.jws and a `.jws` beside registry.json, index.json and each template file.
   */
  signing?: readonly SigningKey[];
  /**
   * The output's `archives/` folder is this build's own (the server's static copy in its bucket): an
   * archive or provenance bundle there of a version the source no longer has (a purged version) is
   * removed with the stale template files. Default false: a folder may hold archives of its own.
   */
  pruneArchives?: boolean;
  /**
   * Keep a build state in the output (build-state.ts) and use the one found there, so that a build
   * in a fresh process reads and remakes only the templates whose versions changed (what
   * `build-registry` does). Default false: a long-lived builder (the server's) keeps its entries itself.
   * With it the builder keeps nothing between builds, and `document.templates` of its result is read
   * from registry.json's bytes when asked for.
   */
  state?: boolean;
}

export interface BuildResult {
  document: RegistryDocument;
  /** False when the content equals the registry.json the output already held (its lastUpdated is kept). */
  changed: boolean;
  /** Strong ETag of registry.json: `"` + base64url sha256 of its bytes + `"`. */
  etag: string;
  /** Every file of the registry, relative to its root (`/`-separated), in write order. */
  files: string[];
  /** The files this build actually (re)wrote; empty when everything was up to date. */
  written: string[];
  /** Files removed because their template is gone (and variants older releases wrote). */
  removed: string[];
  /** Versions left out because their entry breaks the rules (each reported, none fails the build). */
  skipped: SkippedVersion[];
  /** How many entries registry.json lists, of how many templates (without reading `document.templates`). */
  counts: { entries: number; templates: number };
  /**
   * Templates whose files could not be written this time (an archive, or their template file): the
   * output keeps what the previous build wrote for them, and the documents list that; every other
   * template is built. Each is reported by id; the next build tries again.
   */
  failed: FailedTemplate[];
  /** What the build has to say that is no failure: an archive the catalog could not read its page text from. */
  notices?: string[];
  /** With signing: the key that signed the documents and what the build has to say about the keys. */
  signing?: { kid: string; keys: string[]; warnings: string[] };
}

/** What a build says of a template whose output it could not write. */
export function failedTemplateMessage(failure: FailedTemplate): string {
  const then = failure.kept ? 'its previous files are kept and listed' : 'it is left out (it had no previous files)';
  return `template ${failure.id} could not be written (${failure.message}); ${then}; every other template was built, and the next build tries again`;
}

/** A template whose output could not be written by one build. */
export interface FailedTemplate {
  id: string;
  /** What failed, naming the file or version. */
  message: string;
  /** True when the output still holds (and the documents list) the template as the previous build wrote it. */
  kept: boolean;
}

/** The entry of one version as the last build made it. */
interface KnownEntry {
  /** The source's object it was made from (a source that keeps its objects gives the same one when nothing changed). */
  source: SourceVersion;
  manifest: TemplateManifest;
  entry: TemplateEntry;
  violations: RuleViolation[];
}

/** What, besides the manifest, a version's entry depends on. */
function restOf(version: SourceVersion): string {
  return JSON.stringify([
    version.downloadUrl,
    version.integrity,
    version.sha256,
    version.size,
    version.createdAt,
    version.updatedAt,
    version.documentationUrl,
    version.repositoryUrl,
    version.stats,
    version.stability,
    version.deprecationMessage,
    version.yanked,
    version.attestation,
  ]);
}

/**
 * Compression of the variants, by size. Measured on a 108 MB registry.json: brotli quality 1 gives
 * 17.6 MB in 0.3 s and gzip level 2 19.0 MB in 0.6 s, where gzip 6 takes 1.1 s for 17.4 MB and
 * brotli 4 1.7 s for 16.5 MB (quality 11, the old choice, took seconds per megabyte); the two run at
 * once on the thread pool. Files of a few megabytes (index.json of 10,000 templates) get gzip 6 and
 * brotli 5, small ones gzip 9 and brotli 7 with a window sized to the file: on 250 KB of
 * registry.json brotli 9 took 15 ms for 0.8% fewer bytes than 7 in 3.3 ms, and on the 43 KB
 * catalog page 9.4 ms against 1.3 ms for 17 bytes (a build makes these at every change). Between
 * 64 and 256 KB brotli 6: on the 103 KB catalog page of 1,000 templates 9 ms for 16,838 bytes
 * against 33 ms for 16,810 at 7, on their 198 KB index.json 8 ms for 24,129 against 27 ms for
 * 23,600. A CDN that recompresses does better anyway.
 */
function compressionLevels(size: number): { gzip: number; brotli: number } {
  if (size > LARGE_DOCUMENT) return { gzip: 2, brotli: 1 };
  if (size > 256 * 1024) return { gzip: 6, brotli: 5 };
  if (size > 64 * 1024) return { gzip: 9, brotli: 6 };
  return { gzip: 9, brotli: 7 };
}

/**
 * The options of the two compressions of `size` bytes (see `compressionLevels`). The same for every
 * size above LARGE_DOCUMENT: a streamed document (streamed-document.ts) is compressed before its
 * size is known, and must come out as the same bytes.
 */
export function compressionOptions(size: number): { gzip: ZlibOptions; brotli: BrotliOptions } {
  const levels = compressionLevels(size);
  const large = size > LARGE_DOCUMENT;
  // Output in large pieces for a large input: 16 KiB pieces of 20 MB cost more to gather than to make.
  const chunkSize = large ? 1024 * 1024 : 16 * 1024;
  return {
    gzip: { level: levels.gzip, chunkSize },
    brotli: {
      chunkSize,
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: levels.brotli,
        [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
        ...(large ? {} : { [zlibConstants.BROTLI_PARAM_SIZE_HINT]: size }),
        // The window follows the input: a 24-bit window for a 4 KB file costs milliseconds to set up.
        [zlibConstants.BROTLI_PARAM_LGWIN]: Math.max(16, Math.min(24, Math.ceil(Math.log2(size + 1)) + 1)),
      },
    },
  };
}

/** The `.gz` and `.br` variants of a document (the mirror makes them too). */
export async function variantsOf(file: OutputFile): Promise<OutputFile[]> {
  const options = compressionOptions(sizeOf(file));
  const parts = partsOf(file);
  const [gz, br] = await Promise.all([compressParts(parts, createGzip(options.gzip)), compressParts(parts, createBrotliCompress(options.brotli))]);
  const { name, contentType, cacheControl } = file;
  return [
    { name: `${name}.gz`, data: gz, contentType, cacheControl, contentEncoding: 'gzip' },
    { name: `${name}.br`, data: br, contentType, cacheControl, contentEncoding: 'br' },
  ];
}

/**
 * The variants of a document given as units (registry.json held): above LARGE_DOCUMENT its gzip is
 * made in pieces cut between the units (gzip-pieces.ts), reusing the pieces `reuse` finds, the same
 * bytes a streamed document gets; below it, `variantsOf`'s.
 */
async function unitVariants(
  file: OutputFile,
  units: () => Iterable<DocumentUnit>,
  reuse: PieceReuse | undefined,
  brotliThread: BrotliThread | undefined,
): Promise<{ files: OutputFile[]; gzip?: Awaited<ReturnType<typeof gzipPieces>> }> {
  if (sizeOf(file) <= LARGE_DOCUMENT) return { files: await variantsOf(file) };
  const options = compressionOptions(sizeOf(file));
  const brotli = async (): Promise<Buffer> => {
    // On the builder's brotli thread when it has one (its SHA-256 taken on the way); else, or if it failed, here.
    const made = file.data ? await brotliThread?.compress(file.data, options.brotli)?.catch(() => undefined) : undefined;
    if (!made) return compressParts(partsOf(file), createBrotliCompress(options.brotli));
    file.digests = { ...file.digests, sha256: made.sha256 };
    return made.compressed;
  };
  const [gzip, br] = await Promise.all([gzipPieces(units(), reuse), brotli()]);
  const { name, contentType, cacheControl } = file;
  return {
    files: [
      { name: `${name}.gz`, data: gzip.data, contentType, cacheControl, contentEncoding: 'gzip' },
      { name: `${name}.br`, data: br, contentType, cacheControl, contentEncoding: 'br' },
    ],
    gzip,
  };
}

export const documentFile = (name: string, data: Buffer): BytesFile => ({ name, data, contentType: contentTypeOf(name), cacheControl: CACHE_CONTROL.document });

/** A signature remembered by the builder: the file's SHA-256 and the signer it was made for. */
interface KnownSignature {
  sha256: string;
  kid: string;
  file: BytesFile;
}

/**
 * Whether the output holds exactly `file`'s bytes: by MD5 where it knows it, else (a file it did not
 * write, or one touched since) by reading it back when the size matches.
 */
export async function holds(output: RegistryOutput, held: ReadonlyMap<string, HeldFile>, file: OutputFile): Promise<boolean> {
  const current = held.get(file.name);
  if (current === undefined || current.size !== sizeOf(file)) return false;
  if (current.digest !== undefined) return current.digest === fileDigest(file, output.digest);
  const bytes = await output.read(file.name);
  return bytes !== undefined && sameBytes(bytes, file);
}

const JSON_COMMA = Buffer.from(',');
const COMMA = 0x2c;
const EMPTY = Buffer.alloc(0);
/** What registry.json starts with, before the first template's entries. */
const REGISTRY_HEAD = '{"templates":[';

/** The digest (hex) of the bytes of `parts` joined. */
function partsDigest(parts: readonly Buffer[], algorithm: DigestAlgorithm): string {
  const hash = createHash(algorithm);
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/**
 * A template's file, `{"id":...,"versions":[...]}` and (for the catalog) its page text as JSON;
 * `versions` is the view of its entries joined by commas, which registry.json reuses as one piece.
 * One string and one buffer per template: a buffer per entry costs more than the JSON itself.
 */
function templateFileBytes(id: string, entries: readonly TemplateEntry[], page?: string): { data: Buffer; versions: Buffer } {
  const head = `{"id":${JSON.stringify(id)},"versions":`;
  // One string: the entries' array as JSON.stringify writes it.
  const versions = JSON.stringify(entries);
  // Each piece measured and encoded into the file's buffer where it goes: joining them into one
  // string first made V8 copy it flat, and the buffer was then another copy (at 100,000 versions
  // some 300 MB of the build's 1.5 GB of allocations).
  const pieces = page === undefined ? [head, versions, '}\n'] : [head, versions, ',"page":', page, '}\n'];
  const sizes = pieces.map((piece) => Buffer.byteLength(piece, 'utf8'));
  const data = Buffer.allocUnsafe(sizes.reduce((sum, size) => sum + size, 0));
  let offset = 0;
  for (const [index, piece] of pieces.entries()) offset += data.write(piece, offset, sizes[index] as number, 'utf8');
  const start = (sizes[0] as number) + 1;
  return { data, versions: data.subarray(start, start + (sizes[1] as number) - 2) };
}

/**
 * registry.json as parts: each template's entries (already joined, in document order) and the rest
 * of the document. A few pieces per template, not one per version: 100,000 small copies cost more
 * than the bytes.
 */
function registryParts(templates: readonly Buffer[], rest: Omit<RegistryDocument, 'templates'>): Buffer[] {
  const parts: Buffer[] = [Buffer.from(REGISTRY_HEAD)];
  templates.forEach((bytes, index) => {
    if (index > 0) parts.push(JSON_COMMA);
    parts.push(bytes);
  });
  parts.push(registryTail(rest));
  return parts;
}

/** registry.json as units (gzip-pieces.ts): its head, each template's entries with the comma before them, its tail alone. */
function* registryUnits(ids: readonly string[], templates: readonly Buffer[], tail: Buffer): Generator<DocumentUnit> {
  yield { parts: [Buffer.from(REGISTRY_HEAD)] };
  for (const [index, bytes] of templates.entries()) yield { parts: index > 0 ? [JSON_COMMA, bytes] : [bytes], key: ids[index] };
  yield { parts: [tail], alone: true };
}

/** What registry.json ends with, after the last template's entries. */
function registryTail(rest: Omit<RegistryDocument, 'templates'>): Buffer {
  return Buffer.from(`],"categories":${JSON.stringify(rest.categories)},"tags":${JSON.stringify(rest.tags)},"lastUpdated":${JSON.stringify(rest.lastUpdated)}}\n`);
}

/** Whether the output holds registry.json as streamed so far followed by `tail` (by digest; read back where the output does not know it). */
async function holdsStreamed(output: RegistryOutput, held: ReadonlyMap<string, HeldFile>, streamed: StreamedDocument, tail: Buffer): Promise<boolean> {
  const current = held.get(streamed.name);
  if (current === undefined || current.size !== streamed.size + tail.length) return false;
  if (current.digest !== undefined) return streamed.digestWith(tail, output.digest) === current.digest;
  const bytes = await output.read(streamed.name);
  return bytes !== undefined && createHash('sha256').update(bytes).digest('hex') === streamed.digestWith(tail, 'sha256');
}

/** Whether the output holds the bytes of `parts` under `name`, without joining them when it knows their MD5. */
async function holdsParts(output: RegistryOutput, held: ReadonlyMap<string, HeldFile>, name: string, parts: readonly Buffer[]): Promise<boolean> {
  const current = held.get(name);
  const size = parts.reduce((sum, part) => sum + part.length, 0);
  if (current === undefined || current.size !== size) return false;
  if (current.digest !== undefined) {
    const hash = createHash(output.digest);
    for (const part of parts) hash.update(part);
    return hash.digest('hex') === current.digest;
  }
  return (await output.read(name))?.equals(Buffer.concat(parts, size)) ?? false;
}

/** Computes a large file's SHA-256 on the thread pool (WebCrypto), so it runs beside the compression. */
async function digestOffThread(file: OutputFile): Promise<void> {
  if (file.digests?.sha256 !== undefined) return;
  // WebCrypto takes one buffer, not in shared memory: a file in parts (or shared) is hashed here.
  if (file.data === undefined || file.data.buffer instanceof SharedArrayBuffer) return void fileDigest(file, 'sha256');
  const digest = Buffer.from(await globalThis.crypto.subtle.digest('SHA-256', file.data)).toString('hex');
  file.digests = { ...file.digests, sha256: digest };
}

/** The strong ETag of registry.json: `"` + base64url SHA-256 of its bytes + `"`. */
const etagOf = (file: OutputFile): string => `"${Buffer.from(fileDigest(file, 'sha256'), 'hex').toString('base64url')}"`;

/**
 * The bytes of `parts` (`size` in all) in `arena` when it is large enough (a long-lived builder reuses the memory of
 * its last registry.json: a fresh 100 MB costs more in page faults than the copy), else in a new
 * buffer with room to grow. Returns the arena and the bytes (a view of it).
 */
function assemble(parts: readonly Buffer[], size: number, arena: Buffer | undefined, shared: boolean): { arena: Buffer; bytes: Buffer } {
  const room = Math.ceil(size * 1.05) + 4096;
  // In shared memory for a brotli thread, which reads it where it is.
  const fits = arena !== undefined && arena.length >= size && (arena.buffer instanceof SharedArrayBuffer) === shared;
  const target = fits ? arena : shared ? sharedBuffer(room) : Buffer.allocUnsafe(room);
  let offset = 0;
  for (const part of parts) offset += part.copy(target, offset);
  return { arena: target, bytes: target.subarray(0, size) };
}

/** The lastUpdated of an index.json or registry.json; undefined when unreadable. */
function lastUpdatedOf(bytes: Buffer | undefined): string | undefined {
  if (!bytes) return undefined;
  try {
    const index = JSON.parse(bytes.toString('utf8')) as { lastUpdated?: unknown } | null;
    const value = index?.lastUpdated;
    return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** How many entries a registry.json lists; 0 when there is none or it cannot be read. */
function listedEntries(bytes: Buffer | undefined): number {
  if (!bytes) return 0;
  try {
    const previous = JSON.parse(bytes.toString('utf8')) as { templates?: unknown } | null;
    return Array.isArray(previous?.templates) ? previous.templates.length : 0;
  } catch {
    return 0; // an unreadable registry.json lists nothing worth keeping
  }
}

const isLegacyVariant = (name: string): boolean => /^templates\/[^/]+\.json\.(gz|br)$/.test(name);
const templateIdOf = (name: string): string | undefined => /^templates\/([^/]+)\.json(?:\.jws)?$/.exec(name)?.[1];

/** A template the build state says is unchanged: its record, and its entries as registry.json holds them. */
interface ReusedTemplate {
  state: StateTemplate;
  versions: Buffer;
  /** The comma before `versions` and `versions`, one view of the last registry.json, when the comma is there (not the first template). */
  commaAndVersions?: Buffer;
}

/** What the documents take from one template's entries (entries undefined for a reused template: not read). */
interface TemplateSummary {
  entries: TemplateEntry[] | undefined;
  count: number;
  line: IndexLine | null;
  categories: string[];
  tags: string[];
}

function summaryOf(id: string, entries: TemplateEntry[]): TemplateSummary {
  return {
    entries,
    count: entries.length,
    line: sparseIndexLine(id, entries),
    categories: [...new Set(entries.map((entry) => entry.category))].sort(compareText),
    tags: [...new Set(entries.flatMap((entry) => entry.tags ?? []))].sort(compareText),
  };
}


/** Files written at once: enough to keep the disk (or the network) busy, few enough to stay cheap. */
const WRITE_CONCURRENCY = 8;

/**
 * Templates read from the source at once by a builder that keeps nothing (`RegistrySource.byTemplate`):
 * a batch's manifests and entries are alive while it is made, and every young-generation collection
 * copies what is alive. Measured at 100,000 versions (10 per template): with 25 instead of 50 the
 * collections took half the time (about 330 ms against 630) and peak RSS was 230-260 MB against
 * 270-290; with 10 the build was slower (a query and a listing step per batch); with 100, 320 MB.
 */
export const LISTING_BATCH = 25;
/**
 * How many made batches may wait for their template files before the builder waits with them (100
 * templates' files in flight with LISTING_BATCH). A made batch holds only its files' bytes.
 */
const LISTING_LAG = 4;

/** What of registry.json must be written (its variants first, then itself) and the pieces its gzip was made of. */
type RegistryVariants = { files: OutputFile[]; gzip?: Awaited<ReturnType<typeof gzipPieces>> };

/** The versions of one template with their entries, in version order. */
type TemplateGroup = { entry: KnownEntry; version: SourceVersion }[];
/** The archives and provenance bundles a batch has in the output (by path). */
type BatchWritten = { archives: ReadonlySet<string>; attestations: ReadonlySet<string> };
/** A made batch: whether its template files are all written, and the step that lists it. */
type ListingStep = { written: () => boolean; list: () => Promise<void> };

/** A template's summary and, when the build keeps a state, its record (its place in registry.json set at the end). */
type Summarized = { summary: TemplateSummary; record?: Omit<StateTemplate, 'span'> };

export class RegistryBuilder {
  readonly output: RegistryOutput;
  #known = new Map<string, KnownEntry>();
  /** Each template file as the last build made it, with the entries it was made of. */
  #templateFiles = new Map<string, { group: TemplateGroup; entries: KnownEntry[]; page: string | undefined; file: OutputFile; versions: Buffer }>();
  /** The catalog page text of each template (JSON), and what it was read for (`pageKey`). */
  #pages = new Map<string, { key: string; json: string | undefined }>();
  /** Memory for registry.json, reused from build to build (see `assemble`). */
  #arena: Buffer | undefined;
  /** The registry.json this builder last wrote or kept: its lastUpdated, entries, rest and ETag. */
  #last: { lastUpdated: string; entries: readonly Buffer[]; rest: string; etag: string } | undefined;
  #options: BuildOptions;
  /** The signature of each signed file as this builder last wrote or found it. */
  #signatures = new Map<string, KnownSignature>();
  /** What the documents took from each template's entries in the last build, with the bytes of those entries. */
  #summaries = new Map<string, { versions: Buffer; summary: TemplateSummary }>();
  /** The pieces of the gzip of the last registry.json this builder made (gzip-pieces.ts), to reuse. */
  #gzipMade: MadePiece[] | undefined;
  /** Each template's versions with their entries as the last build grouped them (a builder that keeps them). */
  #groups: Map<string, TemplateGroup> | undefined;
  #brotli: BrotliThread | undefined;

  constructor(
    private readonly source: RegistrySource,
    options: BuildOptions,
  ) {
    this.#options = options;
    if (options.output) this.output = options.output;
    // A builder that keeps nothing (a build state instead) streams: its heap stays small, and the output's sync helper can wait until it writes many files.
    else if (options.outDir !== undefined) this.output = new FolderOutput(options.outDir, { syncHelper: options.state === true ? 'when-many' : 'now' });
    else throw new Error('buildRegistry needs an outDir or an output');
  }

  /** Releases the output when the builder made it (an output passed in is its owner's to close), and ends its brotli thread. */
  async close(): Promise<void> {
    await this.#brotli?.close();
    if (!this.#options.output) await this.output.close?.();
  }

  /** The brotli thread of a builder that keeps what it made (large documents held in memory), when one can run. */
  #brotliThread(): BrotliThread | undefined {
    if (!this.#retains()) return undefined;
    this.#brotli ??= new BrotliThread();
    return this.#brotli.ready() ? this.#brotli : undefined;
  }

  /**
   * Whether this builder keeps what it made for its next build (entries, template files, the bytes of
   * registry.json): the server's does. One that keeps a build state in its output (`state`,
   * `build-registry`) keeps nothing in memory: it reads the source a few templates at a time and never
   * holds every entry at once.
   */
  #retains(): boolean {
    return this.#options.state !== true;
  }

  /** Whether this build keeps a build state: asked for, and a source that can list what changed since one. */
  #stateKept(): boolean {
    return this.#options.state === true && this.source.templatesSince !== undefined && this.source.identity !== undefined;
  }

  /** What a build state must have been recorded with to be used: the source and every option that shapes the output. */
  #fingerprint(): string {
    return stateFingerprint([
      this.source.identity,
      this.#options.publicUrl ?? null,
      this.#options.catalog ?? true,
      this.#options.categories ?? null,
      (this.#options.signing ?? []).map((key) => key.kid).sort(compareText),
    ]);
  }

  /**
   * The versions to build and the templates to reuse, from the build state the output holds: a
   * template is reused when the source lists exactly the versions the state recorded for it, each
   * at the same revision, and the output holds its files as recorded; every other template is read
   * in full. Undefined (a full build; a notice says why when there was a state) when the state
   * cannot be used, or when this builder already built once (it knows its entries).
   */
  async #fromState(
    held: ReadonlyMap<string, HeldFile>,
    notices: string[],
  ): Promise<{ versions: SourceVersion[]; reused: Map<string, ReusedTemplate>; previous?: { registry: Buffer; gzip: BuildState['gzip'] } } | undefined> {
    const output = this.output;
    const templatesSince = this.source.templatesSince?.bind(this.source);
    if (!this.#stateKept() || this.#last !== undefined || this.#known.size > 0 || !templatesSince || !output.readState) return undefined;
    const full = (why: string): undefined => void notices.push(`the build state was not used (${why}): this build read every version, and records a new state`);
    const read = readBuildState(await output.readState(), this.#fingerprint(), output.digest);
    if (read === undefined) return undefined;
    if ('notice' in read) return full(read.notice);
    const state: BuildState = read.state;
    const registryHeld = held.get(REGISTRY_FILE);
    if (registryHeld?.size !== state.registry.size || (registryHeld.digest !== undefined && registryHeld.digest !== state.registry.digest)) {
      return full(`${output.location}/${REGISTRY_FILE} is not the one it was recorded with`);
    }
    const recorded = new Map(state.templates.map((template) => [template.id, template]));
    // A template the source lists as recorded is reused when its files are where the state says.
    const filesHeld = (id: string): boolean => {
      const template = recorded.get(id);
      if (!template) return false;
      const file = held.get(`${TEMPLATES_DIR}/${id}.json`);
      if (file?.size !== template.file[0] || file.digest !== template.file[1]) return false;
      if (this.#options.signing && this.#options.signing.length > 0 && output.digest !== 'sha256') return false;
      return template.versions.every((version, index) => {
        const flags = flagOf(template, index);
        return (!(flags & STATE_ARCHIVE) || held.get(staticArchivePath(id, version))?.digest !== undefined) && (!(flags & STATE_ATTESTATION) || held.has(staticAttestationPath(id, version)));
      });
    };
    // Read on the thread pool while the store and the output are asked what changed (10 MB at 10,000
    // versions: a third of that time); not awaited when nothing is reused.
    const registryRead = output.read(REGISTRY_FILE);
    registryRead.catch(() => undefined);
    let changes = await templatesSince(recorded);
    const reusedIds = new Set([...changes.unchanged].filter(filesHeld));
    // An unchanged template whose files are not as recorded is read in full (its entries are made again).
    if (reusedIds.size < changes.unchanged.size) {
      changes = await templatesSince(new Map([...reusedIds].map((id) => [id, recorded.get(id) as StateTemplate])));
      if (changes.unchanged.size !== reusedIds.size || [...reusedIds].some((id) => !changes.unchanged.has(id))) return full('the store changed during the build');
    }
    const reused = new Map<string, ReusedTemplate>();
    let previous: { registry: Buffer; gzip: BuildState['gzip'] } | undefined;
    if (reusedIds.size > 0) {
      const registry = await registryRead;
      if (registry?.length !== state.registry.size || (registryHeld.digest === undefined && partsDigest([registry], output.digest) !== state.registry.digest)) {
        return full(`${output.location}/${REGISTRY_FILE} is not the one it was recorded with`);
      }
      for (const id of [...reusedIds].sort(compareText)) {
        const template = recorded.get(id) as StateTemplate;
        const [start, length] = template.span;
        const commaAndVersions = start > 0 && registry[start - 1] === COMMA ? { commaAndVersions: registry.subarray(start - 1, start + length) } : {};
        reused.set(id, { state: template, versions: registry.subarray(start, start + length), ...commaAndVersions });
      }
      previous = { registry, gzip: state.gzip };
    }
    const { versions } = changes;
    return { versions, reused, ...(previous ? { previous } : {}) };
  }

  /**
   * The compressed pieces of registry.json.gz the last build made, to reuse: this builder's own, or
   * those its build state records when the output holds that registry.json.gz (by digest).
   */
  async #gzipReuse(previous: { registry: Buffer; gzip: BuildState['gzip'] } | undefined, held: ReadonlyMap<string, HeldFile>): Promise<PieceReuse | undefined> {
    if (this.#gzipMade) return reuseFromParts(this.#gzipMade);
    const record = previous?.gzip;
    const name = `${REGISTRY_FILE}.gz`;
    const current = held.get(name);
    if (!previous || !record || current?.size !== record.size || (current.digest !== undefined && current.digest !== record.digest)) return undefined;
    const gzip = this.output.readSync ? this.output.readSync(name) : await this.output.read(name);
    if (gzip?.length !== record.size || (current.digest === undefined && partsDigest([gzip], this.output.digest) !== record.digest)) return undefined;
    return reuseFrom(previous.registry, gzip, record.pieces);
  }

  /** The entry of `version`, from the last build when nothing it is made of changed. */
  #entryOf(version: SourceVersion, key: string): KnownEntry {
    const known = this.#known.get(key);
    if (known?.source === version) return known;
    // What an entry is made of besides the manifest is compared only when there is a last one.
    if (known && known.manifest === version.manifest && restOf(known.source) === restOf(version)) {
      known.source = version;
      return known;
    }
    const entry = toEntry(version);
    const made: KnownEntry = { source: version, manifest: version.manifest, entry, violations: entryViolations(entry) };
    if (this.#retains()) this.#known.set(key, made);
    return made;
  }

  /**
   * Entries of `versions`, grouped by id (each group in version order), checked one by one: a bad
   * version is left out and reported in `skipped`. Throws (RegistryBuildError) when a version
   * appears twice (`seen` holds the keys of the groups made before, for a build read in batches).
   */
  #grouped(versions: readonly SourceVersion[], seen: Set<string>, skipped: SkippedVersion[]): Map<string, TemplateGroup> {
    const byId = new Map<string, TemplateGroup>();
    const duplicates: RuleViolation[] = [];
    for (const version of versions) {
      const key = `${String(version.manifest.name)}@${String(version.manifest.version)}`;
      const known = this.#entryOf(version, key);
      if (known.violations.length > 0) {
        skipped.push({ id: String(known.entry.id), version: String(known.entry.version), violations: known.violations });
        continue;
      }
      if (seen.has(key)) {
        duplicates.push({ pointer: '/templates', message: `${key} appears more than once`, code: 'DUPLICATE' });
        continue;
      }
      seen.add(key);
      let group = byId.get(known.entry.id);
      if (!group) byId.set(known.entry.id, (group = []));
      group.push({ entry: known, version });
    }
    if (duplicates.length > 0) throw new RegistryBuildError(duplicates);
    for (const group of byId.values()) group.sort((a, b) => compareVersions(a.entry.entry.version, b.entry.entry.version));
    return byId;
  }

  /**
   * The groups of this build when the builder keeps what it made and its source can say what
   * changed: the last build's group of each template whose versions and revisions are as it listed
   * them, and the others read and grouped again (their keys added to `seen`), with every version
   * (for the archives kept) and the keys of the entries that may be gone (`stale`). Undefined for
   * the first build, or when a version had no revision.
   */
  async #sinceLastBuild(seen: Set<string>, skipped: SkippedVersion[]): Promise<{ groups: Map<string, TemplateGroup>; versions: SourceVersion[]; stale: string[] } | undefined> {
    const last = this.#groups;
    const templatesSince = this.source.templatesSince?.bind(this.source);
    if (!this.#retains() || last === undefined || !templatesSince) return undefined;
    const known = new Map<string, KnownTemplate>();
    for (const [id, group] of last) {
      const revisions: string[] = [];
      for (const { version } of group) {
        if (version.revision === undefined) return undefined;
        revisions.push(version.revision);
      }
      known.set(id, { versions: group.map(({ version }) => String(version.manifest.version)), revisions });
    }
    const changes = await templatesSince(known);
    const groups = this.#grouped(changes.versions, seen, skipped);
    const versions = [...changes.versions];
    for (const id of changes.unchanged) {
      if (groups.has(id)) continue;
      const group = last.get(id) as TemplateGroup;
      groups.set(id, group);
      for (const { version } of group) versions.push(version);
    }
    // The entries this builder may no longer need: those of the templates that changed or went.
    const stale: string[] = [];
    for (const [id, group] of last) if (!changes.unchanged.has(id)) for (const { version } of group) stale.push(`${String(version.manifest.name)}@${String(version.manifest.version)}`);
    return { groups, versions, stale };
  }

  async build(): Promise<BuildResult> {
    const staged: { discard(): Promise<void> }[] = [];
    try {
      return await this.#build(staged);
    } catch (error) {
      // A build that fails half-way leaves the output as it was: nothing staged becomes visible.
      await Promise.all(staged.map((document) => document.discard().catch(() => undefined)));
      throw error;
    }
  }

  /** The build; a document it streams is added to `staged` (discarded by `build` when this throws). */
  async #build(staged: { discard(): Promise<void> }[]): Promise<BuildResult> {
    const { now = () => new Date(), catalog = true } = this.#options;
    const output = this.output;
    const retains = this.#retains();
    /** What the build has to say that is no failure (an archive whose README could not be read, a build state not used). */
    const notices: string[] = [];
    const held = await output.inventory();
    // With a build state, the templates whose versions did not change are reused as the last build made them.
    const plan = await this.#fromState(held, notices);
    // A full build writes a file per template: the output gets ready for many while the heap is small.
    if (plan === undefined) output.expectMany?.();
    const reused = plan?.reused ?? new Map<string, ReusedTemplate>();
    // A full build by a builder that keeps nothing reads the source a few templates at a time and
    // lets each batch go once its files are written: it never holds every manifest and entry at once.
    const listing = plan === undefined && !retains && this.source.byTemplate ? await this.source.byTemplate() : undefined;
    const skipped: SkippedVersion[] = [];
    const seen = new Set<string>();
    const sinceLast = plan === undefined && listing === undefined ? await this.#sinceLastBuild(seen, skipped) : undefined;
    const everything = listing ? undefined : (sinceLast?.versions ?? plan?.versions ?? (await this.source.versions()));
    const single = sinceLast?.groups ?? (everything ? this.#grouped(everything, seen, skipped) : undefined);
    if (retains) this.#groups = single;
    const names = listing ? [...new Set(listing.names)].sort(compareText) : undefined;
    /** Each batch: the ids it builds (in listing order) and how to read its versions. */
    const batches: { ids: string[]; read: () => Promise<{ groups: Map<string, TemplateGroup>; versions: readonly SourceVersion[] }> }[] = [];
    if (listing && names) {
      for (let start = 0; start < names.length; start += LISTING_BATCH) {
        const some = names.slice(start, start + LISTING_BATCH);
        batches.push({
          ids: some,
          read: async () => {
            const versions = await listing.versionsOf(some);
            // A template is read in one batch only: a version can appear twice only within it (no key kept across batches).
            return { groups: this.#grouped(versions, new Set<string>(), skipped), versions };
          },
        });
      }
    } else {
      const groups = single as Map<string, TemplateGroup>;
      batches.push({ ids: [...groups.keys(), ...reused.keys()].sort(compareText), read: () => Promise.resolve({ groups, versions: everything as SourceVersion[] }) });
    }

    if (this.#options.allowEmpty === false && (names ? names.length === 0 : (single as Map<string, TemplateGroup>).size === 0 && reused.size === 0) && held.has(REGISTRY_FILE)) {
      const listed = listedEntries(await output.read(REGISTRY_FILE));
      if (listed > 0) {
        throw new RegistryBuildError([
          { pointer: '/templates', message: `would drop all ${listed} entries of ${output.location}/${REGISTRY_FILE}; nothing was written (allow it with --allow-empty)`, code: 'EMPTY_REGISTRY' },
        ]);
      }
    }

    const signing = this.#options.signing && this.#options.signing.length > 0 ? await this.#planSigning(held, now()) : undefined;
    if (!signing && held.has(KEYS_FILE)) {
      throw new RegistryBuildError([
        {
          pointer: '',
          message: `${output.location}/${KEYS_FILE} says this registry is signed: a build without a signing key would leave its documents unsigned, and every client that pinned its keys would refuse them; nothing was written (pass --sign-key, or remove ${KEYS_FILE} and its signature to stop signing)`,
          code: 'UNSIGNED_BUILD',
        },
      ], 'the registry cannot be built unsigned');
    }

    const written: string[] = [];
    const files: string[] = [];
    const put = async (file: OutputFile, options: { durable?: boolean } = {}): Promise<void> => {
      await output.put(file, options);
      written.push(file.name);
    };
    // A template whose files cannot be written is the problem of that template alone: it keeps its
    // previous output and every other template is built (so one upload can never stop the registry).
    const failures = new Map<string, string>();
    const fail = (id: string, what: string, error: unknown): void => {
      if (!failures.has(id)) failures.set(id, `${what}: ${errorMessage(error)}`);
    };

    // The keys first: a client that meets a document signed by a new key looks it up in keys.json.
    if (signing) {
      const keysFiles = await this.#keysFiles(signing, held, now());
      await output.putInOrder(keysFiles);
      written.push(...keysFiles.map((f) => f.name));
      files.push(KEYS_FILE, `${KEYS_FILE}${SIGNATURE_SUFFIX}`);
    }

    // A builder that keeps nothing writes registry.json as each batch's templates are made, into a
    // staged file with its variants (streamed-document.ts), where the output can stage files.
    const gzipReuse = await this.#gzipReuse(plan?.previous, held);
    const streamed = !retains && output.stage && output.readSync ? await StreamedDocument.open(output, REGISTRY_FILE, compressionOptions, ['sha256', output.digest]) : undefined;
    if (streamed) {
      streamed.reuse = gzipReuse;
      staged.push(streamed);
      await streamed.write([Buffer.from(REGISTRY_HEAD)]);
    }
    /** With `streamed`: how many bytes of entries each listed template wrote into registry.json. */
    const streamedLengths = new Map<string, number>();

    const ids: string[] = [];
    /** The ids whose entries this build made (not reused from a build state). */
    const madeIds = new Set<string>();
    const templateFiles = new Map<string, { versions: Buffer; file?: OutputFile; commaAndVersions?: Buffer }>();
    const failed: FailedTemplate[] = [];
    // Each template's entries, its index line, categories and tags: a reused template's as the state recorded them.
    const summaries = new Map<string, TemplateSummary>();
    /** The build state's record of each template made (its place in registry.json is set at the end). */
    const records = new Map<string, Omit<StateTemplate, 'span'>>();
    /** The archives and provenance bundles of every version of the source (with pruneArchives). */
    const keptArchives = new Set<string>();
    /**
     * A template's summary and build state record, made from its entries before its file is written
     * (kept by `keepSummary` once it is), so that the batch's versions and entries need not outlive
     * the making of its files. `group` undefined: a failed template, summarized from the entries of
     * the file it keeps.
     */
    const summarize = (id: string, listed: { versions: Buffer; file?: OutputFile }, group: TemplateGroup | undefined, written: BatchWritten): Summarized => {
      const entries = group ? group.map(({ entry }) => entry.entry) : (JSON.parse(`[${listed.versions.toString('utf8')}]`) as TemplateEntry[]);
      // The last build's summary when the template's entries are the very same bytes (a builder that keeps them).
      const last = this.#summaries.get(id);
      const made = last?.versions === listed.versions && group ? last.summary : summaryOf(id, entries);
      // A builder that keeps nothing lets the entries go: registry.json's bytes are all it needs of them.
      const summary = retains ? made : { ...made, entries: undefined };
      const file = listed.file;
      if (!this.#stateKept() || !group || !file || group.some(({ version }) => version.revision === undefined)) return { summary };
      const flags = (version: SourceVersion): number =>
        (written.archives.has(staticArchivePath(id, version.manifest.version)) ? STATE_ARCHIVE : 0) |
        (written.attestations.has(staticAttestationPath(id, version.manifest.version)) ? STATE_ATTESTATION : 0);
      const record = {
        id,
        file: [sizeOf(file), fileDigest(file, output.digest)] as [number, string],
        versions: group.map(({ version }) => version.manifest.version),
        revisions: compact(group.map(({ version }) => version.revision as string)),
        flags: compact(group.map(({ version }) => flags(version))),
        line: summary.line,
        categories: summary.categories,
        tags: summary.tags,
      };
      return { summary, record };
    };
    /** Keeps a listed template's summary and build state record (`summarize`). */
    const keepSummary = (id: string, listed: { versions: Buffer }, { summary, record }: Summarized): void => {
      if (retains) this.#summaries.set(id, { versions: listed.versions, summary });
      summaries.set(id, summary);
      if (!retains && !streamed) templateFiles.set(id, { versions: Buffer.from(listed.versions) });
      if (record) records.set(id, record);
    };
    /**
     * The step that lists a made batch (into registry.json, streamed) once its template files are
     * written. Made outside startBatch, so that it holds nothing of the batch's versions and entries.
     */
    const listingStep = (batchIds: readonly string[], templatesWritten: Promise<unknown>, written: BatchWritten): ListingStep => {
      // Awaited by the listing step; a failure before that is not taken for an unhandled one.
      let settled = false;
      templatesWritten.then(
        () => (settled = true),
        () => (settled = true),
      );
      const list = async (): Promise<void> => {
        await templatesWritten;
        // A failed template is listed as the output still has it (its previous template file), or not at all.
        for (const id of batchIds) {
          const message = failures.get(id);
          if (message === undefined) continue;
          this.#templateFiles.delete(id);
          const previous = await this.#previousTemplateFile(id, held);
          if (previous) templateFiles.set(id, previous);
          failed.push({ id, message, kept: previous !== undefined });
        }

        for (const id of batchIds) {
          const listed = templateFiles.get(id);
          if (!listed) continue;
          const kept = reused.get(id)?.state;
          if (kept && !failures.has(id)) {
            summaries.set(id, { entries: undefined, count: kept.versions.length, line: kept.line, categories: kept.categories, tags: kept.tags });
          } else if (failures.has(id)) {
            keepSummary(id, listed, summarize(id, listed, undefined, written));
          }
        }
        if (streamed) {
          // This batch's templates into registry.json, in document order; their bytes are let go.
          for (const id of batchIds) {
            const listed = templateFiles.get(id);
            if (!listed) continue;
            // A reused template's comma and entries as one view of the last registry.json: consecutive
            // reused templates reach the document as one run of its bytes, cut into pieces without a copy.
            const parts = streamedLengths.size === 0 ? [listed.versions] : listed.commaAndVersions ? [listed.commaAndVersions] : [JSON_COMMA, listed.versions];
            await streamed.write(parts, { key: id });
            streamedLengths.set(id, listed.versions.length);
            templateFiles.set(id, { versions: EMPTY });
          }
        }
      };
      return { written: () => settled, list };
    };
    /** Makes a batch and writes its files; answers the step that lists it (into registry.json, streamed). */
    const startBatch = async (batch: (typeof batches)[number]): Promise<ListingStep> => {
      const { groups, versions } = await batch.read();
      if (this.#options.pruneArchives === true) for (const { manifest } of versions) keptArchives.add(staticArchivePath(manifest.name, manifest.version)).add(staticAttestationPath(manifest.name, manifest.version));
      const batchIds = batch.ids.filter((id) => groups.has(id) || reused.has(id));
      ids.push(...batchIds);
      for (const id of groups.keys()) madeIds.add(id);

      // Archives first: nothing may name an archive that is not there yet.
      const archives = [...groups.values()].flatMap((group) => group.map(({ version }) => version)).filter((v) => v.openArchive);
      const archiveWritten = new Set<string>();
      await mapLimit(archives, WRITE_CONCURRENCY, async (version) => {
        const name = staticArchivePath(version.manifest.name, version.manifest.version);
        try {
          if (await this.#holdsArchive(version, name, held.get(name))) return void archiveWritten.add(name);
          await this.#publishArchive(version, name);
          archiveWritten.add(name);
          written.push(name);
        } catch (error) {
          fail(version.manifest.name, `the archive of ${version.manifest.name}@${version.manifest.version}`, error);
        }
      });
      files.push(...archives.map((version) => staticArchivePath(version.manifest.name, version.manifest.version)).filter((name) => archiveWritten.has(name)));
      for (const { state } of reused.values()) state.versions.forEach((version, index) => flagOf(state, index) & STATE_ARCHIVE && files.push(staticArchivePath(state.id, version)));
      const attestationWritten = new Set<string>();
      // Each provenance bundle beside its archive, before anything names it: immutable, written once.
      const attested = [...groups.values()].flatMap((group) => group.map(({ version }) => version)).filter((v) => v.readAttestation && !failures.has(v.manifest.name));
      await mapLimit(attested, WRITE_CONCURRENCY, async (version) => {
        const name = staticAttestationPath(version.manifest.name, version.manifest.version);
        try {
          if (!held.has(name)) {
            const data = await version.readAttestation?.();
            if (!data) throw new Error(`the provenance bundle of ${version.manifest.name}@${version.manifest.version} is missing from the store`);
            await put({ name, data, contentType: contentTypeOf(name), cacheControl: CACHE_CONTROL.immutable });
          }
          files.push(name);
          attestationWritten.add(name);
        } catch (error) {
          fail(version.manifest.name, `the provenance bundle of ${version.manifest.name}@${version.manifest.version}`, error);
        }
      });
      for (const { state } of reused.values()) state.versions.forEach((version, index) => flagOf(state, index) & STATE_ATTESTATION && files.push(staticAttestationPath(state.id, version)));

      // The template files (made again only when one of their entries changed), the batch's all asked
      // for at once: a writer thread gets them together and writes them while the builder goes on.
      const templatesWritten = mapLimit(
        batchIds.filter((id) => !failures.has(id)),
        LISTING_BATCH,
        async (id) => {
          const kept = reused.get(id);
          if (kept) {
            // Unchanged since the state: the output holds its file as recorded (checked in #fromState).
            try {
              if (signing) {
                const signature = await this.#signatureOf(`${TEMPLATES_DIR}/${id}.json`, kept.state.file[1], signing, held, now());
                if (signature) await put(signature);
              }
              templateFiles.set(id, kept);
            } catch (error) {
              fail(id, `${TEMPLATES_DIR}/${id}.json${SIGNATURE_SUFFIX}`, error);
            }
            return;
          }
          const group = groups.get(id) ?? [];
          // A builder that keeps nothing holds none of a template's versions and entries once it is made.
          if (!retains) groups.delete(id);
          // The very group the last build made this file of: its page and bytes are those it made.
          const lastMade = this.#templateFiles.get(id);
          const made =
            lastMade?.group === group
              ? lastMade
              : this.#templateFile(id, group, catalog ? await this.#pageOf(id, group, held, notices) : undefined);
          // Before the write, outside its try: what breaks here is the builder's fault, not the output's, and fails the build.
          const summarized = summarize(id, made, group, { archives: archiveWritten, attestations: attestationWritten });
          // What is kept of it while its file is written: the file and its bytes, not the group and entries it was made of.
          const listed = retains ? made : { versions: made.versions, file: made.file };
          const { file } = listed;
          try {
            if (!(await holds(output, held, file))) await put(file);
            if (signing) {
              const signature = await this.#signatureOf(file.name, fileDigest(file, 'sha256'), signing, held, now());
              if (signature) await put(signature);
            }
            templateFiles.set(id, listed);
          } catch (error) {
            this.#templateFiles.delete(id);
            fail(id, file.name, error);
            return;
          }
          keepSummary(id, listed, summarized);
        },
      );
      return listingStep(batchIds, templatesWritten, { archives: archiveWritten, attestations: attestationWritten });
    };
    // Batches are listed in order, each once its template files are written, while later batches are
    // made: the files are created (on the output's writer thread, where it has one) beside the
    // builder's work, and the builder waits for them only when LISTING_LAG batches are unlisted.
    const unlisted: ListingStep[] = [];
    for (const batch of batches) {
      unlisted.push(await startBatch(batch));
      while (unlisted[0] !== undefined && (unlisted[0].written() || unlisted.length > LISTING_LAG)) await (unlisted.shift() as ListingStep).list();
    }
    for (const step of unlisted.splice(0)) await step.list();
    if (sinceLast) {
      // The unchanged templates' entries stay; a version left out (skipped) is made again next time, as in a full build.
      for (const key of sinceLast.stale) if (!seen.has(key)) this.#known.delete(key);
      for (const { id, version } of skipped) this.#known.delete(`${id}@${version}`);
    } else {
      for (const key of this.#known.keys()) if (!seen.has(key)) this.#known.delete(key);
    }
    for (const id of this.#templateFiles.keys()) if (!madeIds.has(id)) this.#templateFiles.delete(id);
    for (const id of this.#pages.keys()) if (!madeIds.has(id)) this.#pages.delete(id);
    for (const id of this.#summaries.keys()) if (!madeIds.has(id)) this.#summaries.delete(id);

    const listedIds = ids.filter((id) => templateFiles.has(id));
    files.push(...listedIds.flatMap((id) => (signing ? [`${TEMPLATES_DIR}/${id}.json`, `${TEMPLATES_DIR}/${id}.json${SIGNATURE_SUFFIX}`] : [`${TEMPLATES_DIR}/${id}.json`])));
    // Empty when streamed: registry.json's entries were written batch by batch (their lengths kept).
    const templateBytes = streamed ? [] : listedIds.map((id) => (templateFiles.get(id) as { versions: Buffer }).versions);
    const summaryList = listedIds.map((id) => summaries.get(id) as TemplateSummary);
    const categories = buildCategories(
      listedIds.flatMap((id) => (summaries.get(id) as TemplateSummary).categories.map((category) => ({ id, category }))),
      this.#options.categories ?? DEFAULT_CATEGORIES,
    );
    const tags = [...new Set(summaryList.flatMap((summary) => summary.tags))].sort(compareText);
    const entryCount = summaryList.reduce((sum, summary) => sum + summary.count, 0);

    // lastUpdated stays when the content is what the output holds: known at a glance when this builder
    // made the last build (the same entry bytes, the same rest); else the bytes with the previous
    // lastUpdated are compared with the output's (read from index.json, or from registry.json alone,
    // as a Pages workflow restores it).
    const rest = JSON.stringify([categories, tags]);
    const last = this.#last;
    let lastUpdated = now().toISOString();
    let changed = true;
    if (last) {
      if (last.rest === rest && last.entries.length === templateBytes.length && last.entries.every((bytes, index) => bytes === templateBytes[index] || bytes.equals(templateBytes[index] as Buffer))) {
        lastUpdated = last.lastUpdated;
        changed = false;
      }
    } else {
      const previous = held.has(REGISTRY_FILE) ? lastUpdatedOf(await output.read(held.has(INDEX_FILE) ? INDEX_FILE : REGISTRY_FILE)) : undefined;
      const same = async (lastUpdated: string): Promise<boolean> =>
        streamed
          ? holdsStreamed(output, held, streamed, registryTail({ categories, tags, lastUpdated }))
          : holdsParts(output, held, REGISTRY_FILE, registryParts(templateBytes, { categories, tags, lastUpdated }));
      if (previous !== undefined && (await same(previous))) {
        lastUpdated = previous;
        changed = false;
      }
    }
    // The entries as objects (a builder that keeps nothing, or one with reused templates, reads them
    // from registry.json's bytes only when asked for).
    let parsed: TemplateEntry[] | undefined = retains && reused.size === 0 ? summaryList.flatMap((summary) => summary.entries ?? []) : undefined;
    const document: RegistryDocument = {
      get templates(): TemplateEntry[] {
        // Streamed: read back from the registry.json the build put (or kept) in the output.
        const read = (): TemplateEntry[] => (JSON.parse(output.readSync?.(REGISTRY_FILE)?.toString('utf8') ?? '{"templates":[]}') as RegistryDocument).templates;
        return (parsed ??= streamed ? read() : (JSON.parse(`[${templateBytes.join(',')}]`) as TemplateEntry[]));
      },
      set templates(value: TemplateEntry[]) {
        parsed = value;
      },
      categories,
      tags,
      lastUpdated,
    };
    // Entries were checked one by one; the rest of the document is checked before it is written.
    const violations = describeSchemaErrors(schemaErrors('registry-document', { templates: [], categories, tags, lastUpdated }));
    if (violations.length > 0) throw new RegistryBuildError(violations);
    const registryChunks = streamed ? [] : registryParts(templateBytes, { categories, tags, lastUpdated });
    const registryHeld = held.has(REGISTRY_FILE) && held.has(`${REGISTRY_FILE}.gz`) && held.has(`${REGISTRY_FILE}.br`);
    let registryFile: OutputFile | undefined;
    let registryStaged: StagedFile | undefined;
    // Held in memory: registry.json is compressed and hashed on the thread pool while the catalog page is made.
    let registryVariants: Promise<RegistryVariants> | undefined;
    if (!streamed && (changed || !registryHeld)) {
      if (retains) {
        const size = registryChunks.reduce((sum, part) => sum + part.length, 0);
        const assembled = assemble(registryChunks, size, this.#arena, size > LARGE_DOCUMENT && this.#brotliThread() !== undefined);
        this.#arena = assembled.arena;
        registryFile = documentFile(REGISTRY_FILE, assembled.bytes);
        if (output.stage && size > LARGE_DOCUMENT) {
          // Written beside its name (and flushed) while its variants are made: put in order below.
          registryStaged = await output.stage(REGISTRY_FILE);
          staged.push(registryStaged);
          registryStaged.stream.end(assembled.bytes);
        }
      } else {
        // Written, hashed and compressed from its parts: the 100 MB are never joined in memory.
        registryFile = { name: REGISTRY_FILE, parts: registryChunks, contentType: contentTypeOf(REGISTRY_FILE), cacheControl: CACHE_CONTROL.document };
      }
      const file = registryFile;
      const brotliThread = file.data && sizeOf(file) > LARGE_DOCUMENT ? this.#brotliThread() : undefined;
      registryVariants = Promise.all([
        this.#registryWithVariants(file, () => registryUnits(listedIds, templateBytes, registryChunks.at(-1) as Buffer), gzipReuse, held, brotliThread),
        // registry.json's SHA-256 (its ETag), beside its compression (the brotli thread takes it as it compresses).
        brotliThread ? undefined : digestOffThread(file),
      ]).then(async ([variants]) => {
        await digestOffThread(file);
        return variants;
      });
      // Awaited below; a build that fails before then must not leave it unhandled.
      registryVariants.catch(() => undefined);
    }

    // The host's headers file (a folder deployed as it is): the Cache-Control of each file.
    if (output.hostHeaders) {
      const headers: OutputFile = { name: HOST_HEADERS_FILE, data: Buffer.from(hostHeadersFile(), 'utf8'), contentType: 'text/plain; charset=utf-8', cacheControl: CACHE_CONTROL.document };
      files.push(HOST_HEADERS_FILE);
      if (!(await holds(output, held, headers))) await put(headers);
    }
    const sparseIndex = { formatVersion: 1 as const, lastUpdated, templatePath: TEMPLATE_FILE_PATTERN, templates: summaryList.flatMap((summary) => (summary.line ? [summary.line] : [])) };
    // The columns layout: a quarter smaller compressed than the lines (core/registry-index.ts).
    const index = documentFile(INDEX_FILE, Buffer.from(`${JSON.stringify(indexColumns(sparseIndex))}\n`, 'utf8'));
    // Compressed on the thread pool while the catalog page is made (written after it, as an entry point).
    const indexVariants = this.#withVariants([index], held);
    // Awaited below; a build that fails before then must not leave it unhandled.
    indexVariants.catch(() => undefined);
    if (catalog) {
      const page = documentFile(CATALOG_FILE, Buffer.from(renderCatalog(document, this.#options.publicUrl ? { publicUrl: this.#options.publicUrl } : {}, sparseIndex), 'utf8'));
      files.push(CATALOG_FILE, `${CATALOG_FILE}.gz`, `${CATALOG_FILE}.br`);
      const [write] = await this.#withVariants([page], held);
      for (const file of write ?? []) await put(file);
    }
    await output.barrier();

    // The entry points, each after what it names: index.json, then registry.json, variants first.
    // Streamed: ended now that its last bytes are known; its variants were compressed as it went.
    await streamed?.write([registryTail({ categories, tags, lastUpdated })], { alone: true });
    const streamedFiles = streamed ? await streamed.end({ contentType: contentTypeOf(REGISTRY_FILE), cacheControl: CACHE_CONTROL.document }) : undefined;
    if (streamedFiles && (changed || !registryHeld)) registryFile = streamedFiles.file;
    const [indexWrite, registryWrite] = await Promise.all([indexVariants, registryVariants, streamedFiles && registryFile ? digestOffThread(registryFile) : undefined]);
    // registry.json as staged (its bytes already written), or the staged copy let go when the output holds it.
    const registryFiles = registryWrite?.files.map((file) =>
      file === registryFile && registryStaged ? { name: file.name, staged: registryStaged, size: sizeOf(file), digests: file.digests ?? {}, contentType: file.contentType, cacheControl: file.cacheControl } : file,
    );
    if (registryStaged && !registryWrite?.files.includes(registryFile as OutputFile)) await registryStaged.discard();
    const toWrite: OutputFile[][] = [...indexWrite, ...(registryFiles ? [registryFiles] : [])];
    if (retains && registryWrite && registryWrite.files.length > 0) this.#gzipMade = registryWrite.gzip?.made;
    /** registry.json.gz in pieces as the output will hold it (for the build state), when known. */
    const gzipFile = streamedFiles && registryFile ? streamedFiles.variants[0] : registryWrite?.gzip ? registryWrite.files[0] : undefined;
    const gzipPieceTable = streamedFiles && registryFile ? streamedFiles.gzipPieces : registryWrite?.gzip?.pieces;
    const gzipRecord: BuildState['gzip'] =
      gzipFile && gzipPieceTable
        ? { size: sizeOf(gzipFile), digest: fileDigest(gzipFile, output.digest), pieces: gzipPieceTable }
        : !registryFile && plan?.previous?.gzip && held.get(`${REGISTRY_FILE}.gz`)?.digest === plan.previous.gzip.digest
          ? plan.previous.gzip
          : undefined;
    // The streamed registry.json when it is not what the output holds, its variants when one is missing.
    if (streamedFiles && registryFile) toWrite.push([...streamedFiles.variants, ...(changed ? [registryFile] : [])]);
    files.push(...[INDEX_FILE, REGISTRY_FILE].flatMap((name) => [name, `${name}.gz`, `${name}.br`, ...(signing ? [`${name}${SIGNATURE_SUFFIX}`] : [])]));
    const heldSha256 = output.digest === 'sha256' ? held.get(REGISTRY_FILE)?.digest : undefined;
    const etag = registryFile
      ? etagOf(registryFile)
      : streamedFiles
        ? etagOf(streamedFiles.file)
        : (last?.etag ?? (heldSha256 ? `"${Buffer.from(heldSha256, 'hex').toString('base64url')}"` : etagOf({ name: REGISTRY_FILE, parts: registryChunks, contentType: '', cacheControl: '' })));
    if (signing) {
      // Each signature right after its file: a reader sees the pair change within moments (and retries once).
      const indexSignature = await this.#signatureOf(INDEX_FILE, fileDigest(index, 'sha256'), signing, held, now());
      const registrySignature = await this.#signatureOf(REGISTRY_FILE, Buffer.from(etag.slice(1, -1), 'base64url').toString('hex'), signing, held, now());
      if (indexSignature) (toWrite[0] as OutputFile[]).push(indexSignature);
      if (registrySignature) (toWrite[1] ??= []).push(registrySignature);
    }
    await output.putInOrder(toWrite.flat());
    written.push(...toWrite.flat().map((f) => f.name));
    // What was staged and not put (registry.json the output already held).
    await streamed?.discard();
    if (retains) this.#last = { lastUpdated, entries: templateBytes, rest, etag };

    // Template files of ids that are gone, and the template-file variants older releases wrote.
    // Every version of the source keeps its archive, the ones left out of this build included.
    const kept = keptArchives;
    if (this.#options.pruneArchives === true) {
      for (const { state } of reused.values()) for (const version of state.versions) kept.add(staticArchivePath(state.id, version)).add(staticAttestationPath(state.id, version));
    }
    const listedAll = new Set(ids);
    const goneArchive = (name: string): boolean => this.#options.pruneArchives === true && name.startsWith('archives/') && !kept.has(name);
    const stale = [...held.keys()]
      .filter((name) => isLegacyVariant(name) || (templateIdOf(name) !== undefined && !listedAll.has(templateIdOf(name) as string)) || goneArchive(name))
      .sort(compareText);
    await output.remove(stale);
    for (const name of stale) this.#signatures.delete(name.replace(/\.jws$/, ''));
    if (this.#stateKept() && output.writeState) {
      const registryDigest = registryFile
        ? fileDigest(registryFile, output.digest)
        : streamedFiles
          ? fileDigest(streamedFiles.file, output.digest)
          : (held.get(REGISTRY_FILE)?.digest ?? partsDigest(registryChunks, output.digest));
      const stateTemplates: StateTemplate[] = [];
      let offset = REGISTRY_HEAD.length;
      for (const [position, id] of listedIds.entries()) {
        const length = streamed ? (streamedLengths.get(id) as number) : (templateBytes[position] as Buffer).length;
        const span: [number, number] = [offset, length];
        offset += length + JSON_COMMA.length;
        if (failures.has(id)) continue; // made again by the next build
        const kept = reused.get(id)?.state;
        const record = kept ?? records.get(id);
        if (record) stateTemplates.push({ ...record, span });
      }
      const registrySize = streamedFiles ? sizeOf(streamedFiles.file) : registryChunks.reduce((sum, part) => sum + part.length, 0);
      await output.writeState(
        buildStateBytes({ fingerprint: this.#fingerprint(), digest: output.digest, registry: { size: registrySize, digest: registryDigest }, ...(gzipRecord ? { gzip: gzipRecord } : {}), templates: stateTemplates }),
      );
    }
    await output.commit();
    return {
      document,
      changed,
      etag,
      counts: { entries: entryCount, templates: listedIds.length },
      files,
      written,
      removed: stale,
      skipped,
      failed,
      ...(notices.length > 0 ? { notices } : {}),
      ...(signing ? { signing: { kid: signing.signer.kid, keys: signing.published.map((key) => key.kid), warnings: signing.warnings } } : {}),
    };
  }

  /** Which key signs this build (signing.ts), from the keys and the keys.json the output holds. */
  async #planSigning(held: ReadonlyMap<string, HeldFile>, now: Date): Promise<SigningPlan> {
    const previous = held.has(KEYS_FILE) ? await this.output.read(KEYS_FILE) : undefined;
    try {
      return planSigning(this.#options.signing ?? [], previous, now);
    } catch (error) {
      throw new RegistryBuildError([{ pointer: '', code: 'SIGNING_KEY', message: errorMessage(error) }], 'the registry cannot be signed, nothing was written');
    }
  }

  /** keys.json and its signature, when they are not what the output holds (keys.json, then keys.json.jws). */
  async #keysFiles(signing: SigningPlan, held: ReadonlyMap<string, HeldFile>, now: Date): Promise<OutputFile[]> {
    const keys = documentFile(KEYS_FILE, keysFileBytes(signing.published));
    const signatureName = `${KEYS_FILE}${SIGNATURE_SUFFIX}`;
    const same = await holds(this.output, held, keys);
    if (same && held.has(signatureName)) {
      // Kept when it is signed by exactly the keys active now.
      const existing = await this.output.read(signatureName);
      const signers = existing ? await verifyKeysFileSignature(keys.data, existing.toString('utf8'), signing.published, now).then((v) => v.kids, () => []) : [];
      if (signers.length === signing.active.length && signing.active.every((key) => signers.includes(key.kid))) return [];
    }
    const jws = await signKeysFile(keys.data, signing.active, Math.floor(now.getTime() / 1000));
    return [...(same ? [] : [keys]), documentFile(signatureName, Buffer.from(jws, 'utf8'))];
  }

  /**
   * The signature file of `name` (whose SHA-256 is `sha256`) to write, or undefined when the output
   * holds one for the same bytes by the same signer (remembered, or read back once).
   */
  async #signatureOf(name: string, sha256: string, signing: SigningPlan, held: ReadonlyMap<string, HeldFile>, now: Date): Promise<OutputFile | undefined> {
    const signatureName = `${name}${SIGNATURE_SUFFIX}`;
    const kid = signing.signer.kid;
    const known = this.#signatures.get(name);
    if (known && known.sha256 === sha256 && known.kid === kid) return held.get(signatureName)?.size === known.file.data.length ? undefined : known.file;
    const existing = held.has(signatureName) ? await this.output.read(signatureName) : undefined;
    if (existing) {
      try {
        const read = readCompactSignature(existing.toString('utf8'), name);
        if (read.kid === kid && read.payload.path === name && read.payload.sha256 === sha256) {
          this.#signatures.set(name, { sha256, kid, file: documentFile(signatureName, existing) });
          return undefined;
        }
      } catch {
        // an unreadable signature is replaced
      }
    }
    const jws = await signFile({ path: name, sha256 }, signing.signer, Math.floor(now.getTime() / 1000));
    const file = documentFile(signatureName, Buffer.from(`${jws}\n`, 'utf8'));
    this.#signatures.set(name, { sha256, kid, file });
    return file;
  }

  /**
   * The template file of `id` as the output holds it (what a previous build wrote), when it is one
   * this generator could have written: the same id, and every entry within the rules.
   */
  async #previousTemplateFile(id: string, held: ReadonlyMap<string, HeldFile>): Promise<{ file: OutputFile; versions: Buffer } | undefined> {
    const name = `${TEMPLATES_DIR}/${id}.json`;
    if (!held.has(name)) return undefined;
    try {
      const data = await this.output.read(name);
      if (!data) return undefined;
      const parsed = JSON.parse(data.toString('utf8')) as { id?: unknown; versions?: unknown };
      if (parsed.id !== id || !Array.isArray(parsed.versions) || parsed.versions.length === 0) return undefined;
      const entries = parsed.versions as TemplateEntry[];
      if (entries.some((entry) => entry?.id !== id || entryViolations(entry).length > 0)) return undefined;
      const made = templateFileBytes(id, entries);
      return { file: documentFile(name, made.data), versions: made.versions };
    } catch {
      return undefined;
    }
  }

  /** The file of template `id` (and its joined entries): the last build's when it was made of the same entries. */
  #templateFile(id: string, group: TemplateGroup, page: string | undefined): { file: OutputFile; versions: Buffer } {
    const entries = group.map(({ entry }) => entry);
    const last = this.#templateFiles.get(id);
    if (last && last.page === page && last.entries.length === entries.length && last.entries.every((entry, index) => entry === entries[index])) {
      last.group = group;
      return last;
    }
    const { data, versions } = templateFileBytes(id, entries.map((known) => known.entry), page);
    const made = { group, entries, page, file: documentFile(`${TEMPLATES_DIR}/${id}.json`, data), versions };
    if (this.#retains()) this.#templateFiles.set(id, made);
    return made;
  }

  /**
   * The catalog page text of template `id` (README, questions, change log sections: page-text.ts)
   * as JSON, read from the archives of the version its page presents and of its highest version;
   * undefined when the source cannot open archives. Archives never change, so they are read again only
   * when those versions (or the number of versions) change: kept by this builder, and found again
   * in the template file the output holds (its `page.of`) by a builder in a fresh process.
   */
  async #pageOf(id: string, group: readonly { version: SourceVersion; entry: KnownEntry }[], held: ReadonlyMap<string, HeldFile>, notices: string[]): Promise<string | undefined> {
    const latest = selectLatest(group.map(({ entry }) => entry.entry), id);
    const presented = group.find(({ entry }) => entry.entry === latest)?.version;
    const highest = group.at(-1)?.version;
    if (!presented?.readArchive || !highest) return undefined;
    const key = `${presented.manifest.version}|${highest.manifest.version}|${group.length}`;
    const known = this.#pages.get(id);
    if (known?.key === key) return known.json;
    let json = known === undefined ? await this.#heldPage(id, key, held) : undefined;
    if (json === undefined) {
      const source = (version: SourceVersion): PageSource | undefined => (version.readArchive ? { manifest: version.manifest, readArchive: version.readArchive } : undefined);
      const page = await readTemplatePageText(
        source(presented) as PageSource,
        highest === presented ? undefined : source(highest),
        group.map(({ version }) => version.manifest.version),
        (message) => notices.push(message),
      );
      // Written even when there is nothing to show (or the archive could not be read): a builder in a
      // fresh process finds it and does not open the archives again.
      json = JSON.stringify({ ...(page ?? { version: presented.manifest.version }), of: key });
    }
    if (this.#retains()) this.#pages.set(id, { key, json });
    return json;
  }

  /** The page text of the template file the output holds for `id`, when it was read for `key`. */
  async #heldPage(id: string, key: string, held: ReadonlyMap<string, HeldFile>): Promise<string | undefined> {
    const name = `${TEMPLATES_DIR}/${id}.json`;
    if (!held.has(name)) return undefined;
    try {
      const file = JSON.parse((await this.output.read(name))?.toString('utf8') ?? 'null') as { page?: { of?: unknown } } | null;
      return file?.page?.of === key ? JSON.stringify(file.page) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * For each file, what must be written (its variants first, then the file) when its bytes or a
   * variant are not what the output holds; the variants of all of them are compressed at once.
   */
  async #withVariants(planned: readonly OutputFile[], held: ReadonlyMap<string, HeldFile>): Promise<OutputFile[][]> {
    return Promise.all(
      planned.map(async (file) => {
        const same = await holds(this.output, held, file);
        if (same && held.has(`${file.name}.gz`) && held.has(`${file.name}.br`)) return [];
        return [...(await variantsOf(file)), ...(same ? [] : [file])];
      }),
    );
  }

  /** registry.json (held) and its variants, what must be written of them (as `#withVariants`), and its gzip's pieces when made. */
  async #registryWithVariants(
    file: OutputFile,
    units: () => Iterable<DocumentUnit>,
    reuse: PieceReuse | undefined,
    held: ReadonlyMap<string, HeldFile>,
    brotliThread: BrotliThread | undefined,
  ): Promise<RegistryVariants> {
    const same = await holds(this.output, held, file);
    if (same && held.has(`${file.name}.gz`) && held.has(`${file.name}.br`)) return { files: [] };
    const variants = await unitVariants(file, units, reuse, brotliThread);
    return { files: [...variants.files, ...(same ? [] : [file])], ...(variants.gzip ? { gzip: variants.gzip } : {}) };
  }

  /**
   * Whether the output holds the archive of `version` intact: by size when the output vouches for
   * it (it published it, or an S3 store's ETag), else (changed since, or found without a record) by
   * reading it back against the version's integrity. An archive that is not intact is published again.
   */
  async #holdsArchive(version: SourceVersion, name: string, present: HeldFile | undefined): Promise<boolean> {
    if (!present || (version.size !== undefined && present.size !== version.size)) return false;
    if (present.digest !== undefined || present.checksummed === true || (version.integrity === undefined && version.sha256 === undefined)) return true;
    const bytes = await this.output.read(name);
    if (!bytes) return false;
    if (version.integrity?.startsWith('sha512-')) return `sha512-${createHash('sha512').update(bytes).digest('base64')}` === version.integrity;
    return version.sha256 !== undefined && createHash('sha256').update(bytes).digest('hex') === version.sha256;
  }

  async #publishArchive(version: SourceVersion, name: string): Promise<void> {
    const label = `${version.manifest.name}@${version.manifest.version}`;
    const archive = await version.openArchive?.();
    if (!archive) throw new RegistryBuildError([{ pointer: '', code: 'ARCHIVE_MISSING', message: `the archive of ${label} is missing from the store` }]);
    // Only the hash the check compares: each one more costs a pass of the CPU over the whole archive.
    const digest = new DigestStream(['sha512']);
    archive.stream.once('error', (error) => digest.destroy(error));
    await this.output.putArchive({
      name,
      size: archive.size,
      stream: archive.stream.pipe(digest),
      ...(archive.file !== undefined ? { file: archive.file } : {}),
      verify: () => {
        const { integrity } = digestOf(digest.result());
        if (version.integrity !== undefined && integrity !== version.integrity) {
          throw new RegistryBuildError([{ pointer: '', code: 'INTEGRITY', message: `the archive of ${label} in the store does not match its integrity` }]);
        }
      },
    });
  }
}

/**
 * Builds the registry of `source` into `options.output` (or the folder `options.outDir`): see the
 * module comment. Throws RegistryBuildError (before touching any file) when the document breaks
 * the registry-document schema.
 */
export async function buildRegistry(source: RegistrySource, options: BuildOptions): Promise<BuildResult> {
  const builder = new RegistryBuilder(source, options);
  try {
    return await builder.build();
  } finally {
    await builder.close();
  }
}
