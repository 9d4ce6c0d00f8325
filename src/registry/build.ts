/**
 * The registry generator: turns the versions a `RegistrySource` knows into the static files of a
 * registry (registry.json, one file per template, the catalog page, precompressed variants).
 *
 * The output is deterministic: the same versions give the same bytes, and `lastUpdated` only moves
 * when the content does. Every file is replaced atomically (temp file + rename), the document is
 * validated before anything is touched, and registry.json is written last, so a reader never sees
 * a registry.json pointing at files that are not there yet.
 */
import { createWriteStream } from 'node:fs';
import { execFile } from 'node:child_process';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';

import { DigestStream, digestOf } from '../archive/index.js';
import { readIfExists, syncFile, TEMP_FILE_PATTERN, tempPathBeside, writeFileAtomic } from '../core/files.js';
import { staticArchivePath } from '../core/routes.js';
import { compareText } from '../core/listing.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { NAME_PATTERN } from '../core/versions.js';
import { renderCatalog } from './catalog.js';
import { buildDocument, buildSparseIndex, documentContent, INDEX_FILE, RegistryBuildError, serialize, strongEtag, type SkippedVersion } from './document.js';
import type { RegistrySource, SourceVersion } from './source.js';

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

export const REGISTRY_FILE = 'registry.json';
export const CATALOG_FILE = 'index.html';
export const TEMPLATES_DIR = 'templates';

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
  /**
   * Refuse (RegistryBuildError, nothing written) a build that would drop every template from an
   * existing registry.json that lists some; default true (`build-registry` sets it from --allow-empty).
   */
  allowEmpty?: boolean;
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
  /** Versions left out because their entry breaks the rules (each reported, none fails the build). */
  skipped: SkippedVersion[];
}

interface PlannedFile {
  /** Relative to outDir, `/`-separated. */
  name: string;
  data: Buffer;
  /** Also write `.gz` and `.br` variants beside it. */
  variants: boolean;
  /** Flush it to disk on its own before the next file (the entry points: index and registry.json). */
  durable?: boolean;
}

/**
 * Compression of the variants: gzip at level 6 and brotli at quality 5 compress a 10 MB registry
 * in a fraction of a second, where quality 11 takes more than ten (the variants are for static
 * hosts; a CDN that recompresses does better anyway). Small files get brotli quality 9.
 */
const GZIP_LEVEL = 6;
const brotliQuality = (size: number): number => (size > 256 * 1024 ? 5 : 9);

async function variantsOf(file: PlannedFile): Promise<{ name: string; data: Buffer }[]> {
  const [gz, br] = await Promise.all([
    gzipAsync(file.data, { level: GZIP_LEVEL }),
    brotliAsync(file.data, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: brotliQuality(file.data.length),
        [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: file.data.length,
      },
    }),
  ]);
  return [
    { name: `${file.name}.gz`, data: gz },
    { name: `${file.name}.br`, data: br },
  ];
}

const planFile = (name: string, text: string, durable = false): PlannedFile => ({ name, data: Buffer.from(text, 'utf8'), variants: true, ...(durable ? { durable } : {}) });

/** Replaces `target` by `data` atomically (temp file + rename); `durable` flushes it first. */
async function replaceFile(target: string, data: Buffer, durable: boolean): Promise<void> {
  if (durable) return writeFileAtomic(target, data);
  const temp = tempPathBeside(target);
  try {
    await writeFile(temp, data, { flag: 'wx' });
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Writes the files whose bytes differ from what is on disk, and their variants (compressed only
 * then, or when one is missing); returns the names written. Files that are not `durable` are not
 * flushed one by one: `flush` is called once before the first durable file, so that an entry point
 * is never on disk before the files it names.
 */
async function writeChanged(outDir: string, files: readonly PlannedFile[], flush: () => Promise<void>): Promise<string[]> {
  const written: string[] = [];
  let flushed = false;
  for (const file of files) {
    if (file.durable && !flushed) {
      await flush();
      flushed = true;
    }
    const target = path.join(outDir, ...file.name.split('/'));
    const current = await readIfExists(target);
    const same = current?.equals(file.data) ?? false;
    const missingVariant = file.variants && (!(await exists(`${target}.gz`)) || !(await exists(`${target}.br`)));
    if (same && !missingVariant) continue;
    await mkdir(path.dirname(target), { recursive: true });
    if (file.variants) {
      for (const variant of await variantsOf(file)) {
        await replaceFile(path.join(outDir, ...variant.name.split('/')), variant.data, file.durable ?? false);
        written.push(variant.name);
      }
    }
    if (!same) {
      await replaceFile(target, file.data, file.durable ?? false);
      written.push(file.name);
    }
  }
  return written;
}

const exists = (file: string): Promise<boolean> => stat(file).then(() => true, () => false);

/**
 * Publishes the archives of `versions` that have one to open at their immutable static paths. An
 * archive already there with the right size is left alone (published archives never change); a new
 * one is streamed to a temp file, checked against the version's integrity and renamed into place.
 */
async function publishArchives(outDir: string, versions: readonly SourceVersion[]): Promise<string[]> {
  const written: string[] = [];
  for (const version of versions) {
    if (!version.openArchive) continue;
    const name = staticArchivePath(version.manifest.name, version.manifest.version);
    const target = path.join(outDir, ...name.split('/'));
    const present = await stat(target).catch(() => undefined);
    if (present?.isFile() && (version.size === undefined || present.size === version.size)) continue;
    const archive = await version.openArchive();
    if (!archive) throw new RegistryBuildError([{ pointer: '', code: 'ARCHIVE_MISSING', message: `the archive of ${version.manifest.name}@${version.manifest.version} is missing from the store` }]);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = tempPathBeside(target);
    try {
      const digest = new DigestStream();
      await pipeline(archive.stream, digest, createWriteStream(temp, { flags: 'wx' }));
      const { integrity } = digestOf(digest.result());
      if (version.integrity !== undefined && integrity !== version.integrity) {
        throw new RegistryBuildError([{ pointer: '', code: 'INTEGRITY', message: `the archive of ${version.manifest.name}@${version.manifest.version} in the store does not match its integrity` }]);
      }
      await rename(temp, target);
    } finally {
      await rm(temp, { force: true });
    }
    written.push(name);
  }
  return written;
}

/**
 * Flushes what was written below `dir` to disk with one `sync -f` (syncfs), instead of one fsync
 * per file; where that command is missing, files are flushed one by one.
 */
async function flushFileSystem(dir: string): Promise<void> {
  const synced = await new Promise<boolean>((resolve) => execFile('sync', ['-f', dir], (error) => resolve(error === null)));
  if (synced) return;
  for (const name of await readdir(dir, { recursive: true })) {
    const file = path.join(dir, name);
    if ((await stat(file).catch(() => undefined))?.isFile()) await syncFile(file).catch(() => undefined);
  }
}

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
  for (const name of names.filter((n) => TEMP_FILE_PATTERN.test(n))) {
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
    const id = /^(.+)\.json(?:\.gz|\.br)?$/.exec(name)?.[1];
    if (id === undefined || !NAME_PATTERN.test(id) || ids.has(id)) continue;
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
  const skipped: SkippedVersion[] = [];
  const candidate = buildDocument(versions, {
    lastUpdated: now().toISOString(),
    ...(options.categories ? { categories: options.categories } : {}),
    onSkipped: (version) => skipped.push(version),
  });
  if (options.allowEmpty === false && candidate.templates.length === 0) await refuseEmptying(registryPath);

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
  for (const [id, entries] of byId) planned.push(planFile(`${TEMPLATES_DIR}/${id}.json`, serialize({ id, versions: entries })));
  if (catalog) planned.push(planFile(CATALOG_FILE, renderCatalog(document, options.publicUrl ? { publicUrl: options.publicUrl } : {})));
  // The index after the template files it points at, registry.json (its variants first) last:
  // readers never see either point at files not yet written, and both are flushed on their own.
  planned.push(planFile(INDEX_FILE, `${JSON.stringify(buildSparseIndex(document))}\n`, true));
  planned.push(planFile(REGISTRY_FILE, registryText, true));

  await mkdir(outDir, { recursive: true });
  // Archives first: registry.json must never point at an archive that is not there yet.
  const listed = new Set(document.templates.map((entry) => `${entry.id}@${entry.version}`));
  const archives = await publishArchives(outDir, versions.filter((v) => listed.has(`${v.manifest.name}@${v.manifest.version}`)));
  const written = [...archives, ...(await writeChanged(outDir, planned, () => flushFileSystem(outDir)))];
  const removed = await removeStale(outDir, new Set(byId.keys()));
  await removeLeftoverTemps(outDir);
  await removeLeftoverTemps(path.join(outDir, TEMPLATES_DIR));
  const archiveNames = versions.filter((v) => v.openArchive && listed.has(`${v.manifest.name}@${v.manifest.version}`)).map((v) => staticArchivePath(v.manifest.name, v.manifest.version));
  const files = [...archiveNames, ...planned.flatMap((f) => (f.variants ? [f.name, `${f.name}.gz`, `${f.name}.br`] : [f.name]))];
  return { document, changed, etag: strongEtag(registryText), files, written, removed, skipped };
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
  if (typeof lastUpdated !== 'string' || documentContent(previous) !== documentContent(candidate)) return undefined;
  return schemaErrors('registry-document', { ...candidate, lastUpdated }).length === 0 ? lastUpdated : undefined;
}

/** Throws when the registry.json at `file` lists templates: an empty build would drop them all. */
async function refuseEmptying(file: string): Promise<void> {
  const listed = listedEntries(await readIfExists(file));
  if (listed > 0) {
    throw new RegistryBuildError([
      { pointer: '/templates', message: `would drop all ${listed} entries of ${file}; nothing was written (allow it with --allow-empty)`, code: 'EMPTY_REGISTRY' },
    ]);
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
