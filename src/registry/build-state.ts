/**
 * The build state `build-registry` keeps in its output (`.template-registry-state.json`), so that a
 * build in a fresh process reads only what changed: for each template, the revision of each version
 * (what the source says its entry is made of besides the manifest), where its entries sit in
 * registry.json, its template file's digest, and what the documents take from it (its index.json
 * line, categories and tags). A template whose versions all kept their revision, and whose files
 * the output still holds as recorded, is reused as it is; the others are made again.
 *
 * The state is a cache, never a source of truth: it is used only when it was recorded for the same
 * source and options (`fingerprint`), in this format, and for the registry.json the output holds;
 * anything else (a corrupt file, another store, another --public-url or key) makes a full build,
 * with a notice saying why.
 */
import { createHash } from 'node:crypto';

import type { IndexLine } from '../core/registry-index.js';
import { GZIP_END_SIZE, GZIP_HEADER_SIZE, type PieceTable } from './gzip-pieces.js';
import type { DigestAlgorithm } from './output.js';

const BUILD_STATE_FORMAT = 'template-registry-build-state';
const BUILD_STATE_VERSION = 1;

/** Flags of a version in the state: the build published its archive, its provenance bundle. */
export const STATE_ARCHIVE = 1;
export const STATE_ATTESTATION = 2;

export interface StateTemplate {
  id: string;
  /** The template file: size and digest (the output's algorithm). */
  file: [number, string];
  /** Where its entries (joined by commas) sit in registry.json: offset and length in bytes. */
  span: [number, number];
  /** Its versions in document order. */
  versions: string[];
  /** The revision of each version (what its source said it is made of besides the manifest); one value when all are the same. */
  revisions: string | string[];
  /** STATE_ARCHIVE | STATE_ATTESTATION of each version; one value when all are the same. */
  flags: number | number[];
  /** Its line of index.json; null when no version is selectable (all yanked). */
  line: IndexLine | null;
  categories: string[];
  tags: string[];
}

export interface BuildState {
  format: typeof BUILD_STATE_FORMAT;
  formatVersion: typeof BUILD_STATE_VERSION;
  /** SHA-256 of the source's identity and every option that shapes the output. */
  fingerprint: string;
  /** The output's digest algorithm, which `file` and `registry.digest` use. */
  digest: DigestAlgorithm;
  /** registry.json as this build wrote it. */
  registry: { size: number; digest: string };
  /** registry.json.gz when it was made in pieces (gzip-pieces.ts): its size, digest and pieces, which the next build reuses. */
  gzip?: { size: number; digest: string; pieces: PieceTable };
  templates: StateTemplate[];
}

/** One value when all are the same (the common case: a state of 100,000 versions stays small). */
export function compact<T extends string | number>(values: readonly T[]): T | T[] {
  const first = values[0] as T;
  return values.every((value) => value === first) ? first : [...values];
}


/** The flags of the `index`th version of `template`. */
export const flagOf = (template: StateTemplate, index: number): number => (typeof template.flags === 'number' ? template.flags : (template.flags[index] as number));

/** What shapes the output besides the source's versions: a state recorded with other values is not used. */
export function stateFingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);

function isStateTemplate(value: unknown): value is StateTemplate {
  if (typeof value !== 'object' || value === null) return false;
  const t = value as Record<string, unknown>;
  const file = t.file as unknown[];
  const span = t.span as unknown[];
  return (
    isString(t.id) &&
    Array.isArray(file) && file.length === 2 && isCount(file[0]) && isString(file[1]) &&
    Array.isArray(span) && span.length === 2 && isCount(span[0]) && isCount(span[1]) &&
    isStrings(t.versions) && t.versions.length > 0 &&
    (isString(t.revisions) || (isStrings(t.revisions) && t.revisions.length === t.versions.length)) &&
    (isCount(t.flags) || (Array.isArray(t.flags) && t.flags.length === t.versions.length && t.flags.every(isCount))) &&
    (t.line === null || (typeof t.line === 'object' && !Array.isArray(t.line) && (t.line as { id?: unknown }).id === t.id)) &&
    isStrings(t.categories) && isStrings(t.tags)
  );
}

/** A gzip record whose pieces add up to the registry.json recorded and to its own size. */
function isGzipRecord(value: unknown, registrySize: number | undefined): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const gzip = value as Partial<NonNullable<BuildState['gzip']>>;
  const pieces = gzip.pieces as unknown;
  if (!isCount(gzip.size) || !isString(gzip.digest) || !Array.isArray(pieces)) return false;
  let size = 0;
  let deflated = GZIP_HEADER_SIZE + GZIP_END_SIZE;
  for (const piece of pieces as unknown[]) {
    // [size, deflatedSize] or, since the CRC-32 of each piece is recorded, [size, deflatedSize, crc].
    if (!Array.isArray(piece) || (piece.length !== 2 && piece.length !== 3) || !isCount(piece[0]) || !isCount(piece[1])) return false;
    if (piece.length === 3 && !(isCount(piece[2]) && piece[2] <= 0xffffffff)) return false;
    size += piece[0];
    deflated += piece[1];
  }
  return size === registrySize && deflated === gzip.size;
}

/**
 * The state in `bytes` when it can be used for a build with `fingerprint` on an output of `digest`;
 * else why not (undefined when there is no state at all: a first build has nothing to say).
 */
export function readBuildState(bytes: Buffer | undefined, fingerprint: string, digest: DigestAlgorithm): { state: BuildState } | { notice: string } | undefined {
  if (bytes === undefined) return undefined;
  let value: Partial<BuildState> | null;
  try {
    value = JSON.parse(bytes.toString('utf8')) as Partial<BuildState> | null;
  } catch {
    return { notice: 'the build state is not valid JSON' };
  }
  if (value?.format !== BUILD_STATE_FORMAT || value.formatVersion !== BUILD_STATE_VERSION) return { notice: 'the build state is of another format or version' };
  if (value.fingerprint !== fingerprint) return { notice: 'the build state was recorded for another source or other options (store, --public-url, signing keys, categories, catalog)' };
  const registry = value.registry as Partial<BuildState['registry']> | undefined;
  const ids = new Set<string>();
  const valid =
    value.digest === digest &&
    (value.gzip === undefined || isGzipRecord(value.gzip, registry?.size)) &&
    isCount(registry?.size) &&
    isString(registry?.digest) &&
    Array.isArray(value.templates) &&
    value.templates.every((t) => isStateTemplate(t) && !ids.has(t.id) && ids.add(t.id) && t.span[0] + t.span[1] <= (registry?.size ?? 0));
  return valid ? { state: value as BuildState } : { notice: 'the build state is corrupt' };
}

export function buildStateBytes(state: Omit<BuildState, 'format' | 'formatVersion'>): Buffer {
  return Buffer.from(`${JSON.stringify({ format: BUILD_STATE_FORMAT, formatVersion: BUILD_STATE_VERSION, ...state })}\n`, 'utf8');
}
