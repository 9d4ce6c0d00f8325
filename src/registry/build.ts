/**
 * The registry generator: turns the versions a `RegistrySource` knows into the static files of a
 * registry (registry.json, one file per template, the catalog page, precompressed variants).
 *
 * The output is deterministic: the same versions give the same bytes, and `lastUpdated` only moves
 * when the content does. Every file is replaced atomically (temp file + rename), the document is
 * validated before anything is touched, and registry.json is written last, so a reader never sees
 * a registry.json pointing at files that are not there yet.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';

import { describeSchemaErrors, type RuleViolation } from '../manifest/messages.js';
import type { Category, RegistryDocument, TemplateEntry } from '../manifest/schema-types.js';
import { schemaErrors } from '../manifest/schemas.js';
import { compareVersions } from '../manifest/versions.js';
import { renderCatalog } from './catalog.js';
import type { RegistrySource, SourceVersion } from './source.js';

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

export const REGISTRY_FILE = 'registry.json';
export const CATALOG_FILE = 'index.html';
export const TEMPLATES_DIR = 'templates';

/** A template id must be usable as a file name: the manifest's name rule. */
const ID_PATTERN = /^[a-z][a-z0-9-]*$/;

/** The spec's listing order of stability values. */
export const STABILITY_ORDER = ['stable', 'beta', 'experimental', 'deprecated'] as const;

/** The five manifest categories, with a human name, a one-line description and an icon name. */
export const DEFAULT_CATEGORIES: readonly Readonly<Category>[] = [
  { id: 'frontend', name: 'Frontend', description: 'Web user interfaces: single-page apps, sites and component libraries.', icon: 'layout' },
  { id: 'backend', name: 'Backend', description: 'Servers, APIs, workers and command-line services.', icon: 'server' },
  { id: 'fullstack', name: 'Full stack', description: 'Applications with both a user interface and a server.', icon: 'layers' },
  { id: 'mobile', name: 'Mobile', description: 'Apps for phones and tablets.', icon: 'smartphone' },
  { id: 'desktop', name: 'Desktop', description: 'Apps for desktop operating systems.', icon: 'monitor' },
];

export interface BuildOptions {
  /** Folder the registry files are written into (created when missing). */
  outDir: string;
  /** Clock for `lastUpdated`; default `new Date()`. */
  now?: () => Date;
  /** Write the catalog page `index.html` (default true). */
  catalog?: boolean;
  /** Category definitions to use instead of the five defaults; their `templates` lists are recomputed. */
  categories?: Category[];
  /** Public base URL of the registry, shown on the catalog page. */
  publicUrl?: string;
}

export interface BuildResult {
  document: RegistryDocument;
  /** False when the content equals the registry.json already in outDir (its lastUpdated is kept). */
  changed: boolean;
  /** Strong ETag of registry.json: `"` + base64url sha256 of its bytes + `"`. */
  etag: string;
  /** Every file of the registry, relative to outDir (`/`-separated), in write order. */
  files: string[];
  /** The files this build actually (re)wrote; empty when everything was up to date. */
  written: string[];
  /** Files removed because their template is gone. */
  removed: string[];
}

/** The registry could not be built: the document breaks the schema (nothing was written). */
export class RegistryBuildError extends Error {
  override readonly name = 'RegistryBuildError';
  readonly violations: RuleViolation[];

  constructor(violations: RuleViolation[]) {
    super(
      `the registry document is invalid, nothing was written:\n${violations.map((v) => `  ${v.pointer || '/'}: ${v.message}`).join('\n')}`,
    );
    this.violations = violations;
  }
}

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

/** Code-unit order: the same on every machine, whatever the locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function stabilityRank(stability: string | undefined): number {
  const index = STABILITY_ORDER.indexOf((stability ?? '') as (typeof STABILITY_ORDER)[number]);
  return index === -1 ? STABILITY_ORDER.length : index;
}

/** The template entry of one published version. */
export function toEntry(version: SourceVersion): TemplateEntry {
  const { manifest, stats } = version;
  const methodology = manifest.methodologyVersion ?? '*';
  const node = manifest.dependencies?.node;
  const repositoryUrl = version.repositoryUrl ?? manifest.repository?.url ?? '';
  return {
    id: manifest.name,
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    category: manifest.category,
    stability: manifest.stability ?? 'stable',
    downloadUrl: version.downloadUrl,
    documentationUrl: version.documentationUrl ?? (repositoryUrl || ''),
    repositoryUrl,
    author: manifest.author ? { ...manifest.author } : { name: 'unknown' },
    license: manifest.license ?? '',
    tags: [...(manifest.keywords ?? [])],
    features: [...(manifest.features ?? [])],
    dependencies: { methodology, ...manifest.dependencies },
    compatibility: {
      methodologyVersions: [methodology],
      nodeVersions: node ? [node] : [],
      platforms: [],
      breaking: manifest.compatibility?.breaking ?? false,
      deprecated: [...(manifest.compatibility?.deprecated ?? [])],
      removed: [...(manifest.compatibility?.removed ?? [])],
    },
    stats: {
      downloads: stats.downloads,
      stars: stats.stars,
      forks: stats.forks,
      issues: stats.issues,
      ...(stats.lastDownload ? { lastDownload: stats.lastDownload } : {}),
    },
    createdAt: version.createdAt,
    updatedAt: version.updatedAt ?? version.createdAt,
    ...(version.integrity === undefined ? {} : { integrity: version.integrity }),
    ...(version.sha256 === undefined ? {} : { sha256: version.sha256 }),
    ...(version.size === undefined ? {} : { size: version.size }),
  };
}

/** Entries in document order: id ascending, then version ascending (numerically). */
function byIdThenVersion(a: TemplateEntry, b: TemplateEntry): number {
  return compareText(a.id, b.id) || compareVersions(a.version, b.version);
}

/**
 * The spec's "get template" rule without a version: the highest-version entry of `id` whose
 * stability is `stable`; if none is stable, the highest-version entry; null for an unknown id.
 */
export function selectLatest<T extends Pick<TemplateEntry, 'id' | 'version' | 'stability'>>(entries: readonly T[], id: string): T | null {
  let best: T | null = null;
  let bestStable: T | null = null;
  for (const entry of entries) {
    if (entry.id !== id) continue;
    if (best === null || compareVersions(entry.version, best.version) > 0) best = entry;
    if (entry.stability === 'stable' && (bestStable === null || compareVersions(entry.version, bestStable.version) > 0)) bestStable = entry;
  }
  return bestStable ?? best;
}

/**
 * The spec's "list templates" order: stability (stable, beta, experimental, deprecated), then
 * `stats.downloads` descending, then `name` ascending. Returns a new array; ties keep their order.
 */
export function sortEntries<T extends Pick<TemplateEntry, 'name' | 'stability' | 'stats'>>(entries: readonly T[]): T[] {
  return [...entries].sort(
    (a, b) =>
      stabilityRank(a.stability) - stabilityRank(b.stability) ||
      (b.stats?.downloads ?? 0) - (a.stats?.downloads ?? 0) ||
      compareText(a.name, b.name),
  );
}

/** One entry per id: the one `selectLatest` picks, in id order. */
export function latestEntries<T extends Pick<TemplateEntry, 'id' | 'version' | 'stability'>>(entries: readonly T[]): T[] {
  const ids = [...new Set(entries.map((e) => e.id))].sort(compareText);
  return ids.map((id) => selectLatest(entries, id)).filter((e): e is T => e !== null);
}

// ---------------------------------------------------------------------------------------------
// Document
// ---------------------------------------------------------------------------------------------

function buildCategories(entries: readonly TemplateEntry[], definitions: readonly Readonly<Category>[]): Category[] {
  const members = new Map<string, Set<string>>();
  for (const entry of entries) {
    let ids = members.get(entry.category);
    if (!ids) members.set(entry.category, (ids = new Set()));
    ids.add(entry.id);
  }
  const known = new Set(definitions.map((c) => c.id));
  const extra = [...members.keys()].filter((id) => !known.has(id)).sort(compareText);
  return [
    ...definitions.map((c) => ({ ...c })),
    ...extra.map((id): Category => ({ id, name: id, description: '', icon: 'folder' })),
  ].map((category) => ({ ...category, templates: [...(members.get(category.id) ?? [])].sort(compareText) }));
}

/** What is not a schema rule but would break the files: ids unusable as file names, duplicates. */
function structuralViolations(entries: readonly TemplateEntry[]): RuleViolation[] {
  const violations: RuleViolation[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    if (!ID_PATTERN.test(entry.id)) {
      violations.push({ pointer: `/templates/${index}/id`, message: `must match the pattern ${ID_PATTERN.source} (got ${JSON.stringify(entry.id)})`, code: 'PATTERN' });
    }
    const key = `${entry.id}@${entry.version}`;
    if (seen.has(key)) violations.push({ pointer: `/templates/${index}`, message: `${key} appears more than once`, code: 'DUPLICATE' });
    seen.add(key);
  });
  return violations;
}

/** Names the template behind a `/templates/N/...` pointer, so a message says which version is wrong. */
function withEntryLabels(violations: RuleViolation[], entries: readonly TemplateEntry[]): RuleViolation[] {
  return violations.map((violation) => {
    const index = /^\/templates\/(\d+)(?:\/|$)/.exec(violation.pointer)?.[1];
    const entry = index === undefined ? undefined : entries[Number(index)];
    if (!entry) return violation;
    return { ...violation, message: `${violation.message} [${String(entry.id)}@${String(entry.version)}]` };
  });
}

/** The registry document of `versions` (lastUpdated as given); throws RegistryBuildError when invalid. */
export function buildDocument(versions: readonly SourceVersion[], options: { lastUpdated: string; categories?: readonly Readonly<Category>[] }): RegistryDocument {
  const templates = versions.map(toEntry).sort(byIdThenVersion);
  const tags = [...new Set(templates.flatMap((t) => t.tags ?? []))].sort(compareText);
  const document: RegistryDocument = {
    templates,
    categories: buildCategories(templates, options.categories ?? DEFAULT_CATEGORIES),
    tags,
    lastUpdated: options.lastUpdated,
  };
  const violations = [...describeSchemaErrors(schemaErrors('registry-document', document)), ...structuralViolations(templates)];
  if (violations.length > 0) throw new RegistryBuildError(withEntryLabels(violations, templates));
  return document;
}

/** JSON with object keys sorted, to compare content whatever the key order of a file. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => compareText(a, b)))
      : v,
  );
}

function contentOf(document: unknown): string {
  if (!document || typeof document !== 'object' || Array.isArray(document)) return '';
  const { lastUpdated: _lastUpdated, ...rest } = document as Record<string, unknown>;
  return canonical(rest);
}

export function serialize(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Strong ETag of some bytes: `"` + base64url sha256 + `"`. */
export function strongEtag(bytes: Buffer | string): string {
  return `"${createHash('sha256').update(bytes).digest('base64url')}"`;
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/** A file's bytes, or undefined when it does not exist (other read errors are thrown). */
export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Writes `file` atomically: a temp file in the same folder, then a rename over the target. */
export async function writeFileAtomic(file: string, data: Buffer | string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(data);
      // On disk before the rename, so a crash leaves the old file or the whole new one.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

interface PlannedFile {
  /** Relative to outDir, `/`-separated. */
  name: string;
  data: Buffer;
}

async function withCompressed(name: string, text: string): Promise<PlannedFile[]> {
  const data = Buffer.from(text, 'utf8');
  const [gz, br] = await Promise.all([
    gzipAsync(data, { level: 9 }),
    brotliAsync(data, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: 11,
        [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: data.length,
      },
    }),
  ]);
  return [
    { name, data },
    { name: `${name}.gz`, data: gz },
    { name: `${name}.br`, data: br },
  ];
}

/** Writes the files whose bytes differ from what is on disk; returns the names written. */
async function writeChanged(outDir: string, files: readonly PlannedFile[]): Promise<string[]> {
  const written: string[] = [];
  for (const file of files) {
    const target = path.join(outDir, ...file.name.split('/'));
    const current = await readIfExists(target);
    if (current?.equals(file.data)) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFileAtomic(target, file.data);
    written.push(file.name);
  }
  return written;
}

/** Temp files of `writeFileAtomic`: `.<name>.<pid>.<12 hex>.tmp`. */
const TEMP_FILE = /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/;

/** A temp file older than this was left by a crashed build, not one in progress. */
const LEFTOVER_AGE_MS = 10 * 60 * 1000;

/** Removes temp files a crashed build left in `dir` (they would otherwise be deployed). */
async function removeLeftoverTemps(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const cutoff = Date.now() - LEFTOVER_AGE_MS;
  for (const name of names.filter((n) => TEMP_FILE.test(n))) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info?.isFile() && info.mtimeMs < cutoff) await rm(file, { force: true });
  }
}

/** Removes `templates/<id>.json` (and .gz/.br) of ids that are no longer in the registry. */
async function removeStale(outDir: string, ids: ReadonlySet<string>): Promise<string[]> {
  const dir = path.join(outDir, TEMPLATES_DIR);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  for (const name of names.sort(compareText)) {
    const id = /^([a-z][a-z0-9-]*)\.json(?:\.gz|\.br)?$/.exec(name)?.[1];
    if (id === undefined || ids.has(id)) continue;
    await rm(path.join(dir, name), { force: true });
    removed.push(`${TEMPLATES_DIR}/${name}`);
  }
  return removed;
}

/**
 * Builds the registry of `source` into `options.outDir`.
 *
 * Writes `templates/<id>.json` (`{ id, versions }`), `index.html` (unless `catalog: false`) and
 * finally `registry.json`, each with `.gz` and `.br` beside it; removes the template files of ids
 * that are gone. Files whose bytes are already right are not rewritten, so a build with unchanged
 * content rewrites nothing. Throws RegistryBuildError (before touching any file) when the
 * document breaks the registry-document schema.
 */
export async function buildRegistry(source: RegistrySource, options: BuildOptions): Promise<BuildResult> {
  const { outDir, now = () => new Date(), catalog = true } = options;
  const versions = await source.versions();
  const registryPath = path.join(outDir, REGISTRY_FILE);

  // Built and validated before anything is read or replaced: an invalid document changes no file.
  const candidate = buildDocument(versions, { lastUpdated: now().toISOString(), ...(options.categories ? { categories: options.categories } : {}) });

  const previousLastUpdated = await keptLastUpdated(registryPath, candidate);
  const changed = previousLastUpdated === undefined;
  const document: RegistryDocument = changed ? candidate : { ...candidate, lastUpdated: previousLastUpdated };
  const registryText = serialize(document);

  const planned: PlannedFile[] = [];
  const byId = new Map<string, TemplateEntry[]>();
  for (const entry of document.templates) {
    let list = byId.get(entry.id);
    if (!list) byId.set(entry.id, (list = []));
    list.push(entry);
  }
  for (const [id, entries] of byId) {
    planned.push(...(await withCompressed(`${TEMPLATES_DIR}/${id}.json`, serialize({ id, versions: entries }))));
  }
  if (catalog) {
    planned.push(...(await withCompressed(CATALOG_FILE, renderCatalog(document, options.publicUrl ? { publicUrl: options.publicUrl } : {}))));
  }
  // registry.json (then its variants) last: readers never see it point at files not yet written.
  planned.push(...(await withCompressed(REGISTRY_FILE, registryText)));

  await mkdir(outDir, { recursive: true });
  const written = await writeChanged(outDir, planned);
  const removed = await removeStale(outDir, new Set(byId.keys()));
  await removeLeftoverTemps(outDir);
  await removeLeftoverTemps(path.join(outDir, TEMPLATES_DIR));
  return { document, changed, etag: strongEtag(registryText), files: planned.map((f) => f.name), written, removed };
}

/**
 * The lastUpdated of the registry.json at `file` when its content (all but lastUpdated) equals
 * `candidate`'s and its timestamp is valid; undefined otherwise (missing, unreadable, different).
 */
async function keptLastUpdated(file: string, candidate: RegistryDocument): Promise<string | undefined> {
  const bytes = await readIfExists(file);
  if (!bytes) return undefined;
  let previous: unknown;
  try {
    previous = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined; // an unreadable registry.json is simply replaced
  }
  const lastUpdated = (previous as { lastUpdated?: unknown } | null)?.lastUpdated;
  if (typeof lastUpdated !== 'string' || contentOf(previous) !== contentOf(candidate)) return undefined;
  return schemaErrors('registry-document', { ...candidate, lastUpdated }).length === 0 ? lastUpdated : undefined;
}
