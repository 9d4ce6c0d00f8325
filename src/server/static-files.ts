/**
 * The static registry files the server answers from memory: registry.json, the sparse index, the
 * per-template files and the catalog page, each with the .gz/.br variants the build wrote beside
 * it, and with everything an answer needs computed once per build (strong ETags per coding,
 * Last-Modified, Content-Length, the header lists of a 200 and of a 304).
 *
 * A snapshot is immutable and belongs to one build: the server swaps it whole (with the document
 * it was built with), so a reader never sees files of two builds. Loading one after a build
 * re-reads only what that build wrote and keeps the rest from the previous snapshot. Memory: every
 * file the server answers, each coding once (no parsed copy; the build's document is the server's).
 *
 * Also here: which coding a request gets and whether its copy is current (the routes in
 * routes/read.ts answer with them).
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';

import { readIfExists } from '../core/files.js';
import { isTemplateName } from '../core/versions.js';
import { CACHE_CONTROL } from '../registry/output.js';

export type ContentCoding = 'br' | 'gzip' | 'identity';

/** The static files' Cache-Control: the static registry's own rule for them (registry/output.ts), short with stale-while-revalidate. */
export const DOCUMENT_CACHE_CONTROL = CACHE_CONTROL.document;

/** The files of the static registry the server answers (relative to its public folder, `/`-separated). */
export const REGISTRY_FILE = 'registry.json';
export const INDEX_FILE = 'index.json';
export const CATALOG_FILE = 'index.html';

/** The name of a template's file: `templates/<id>.json`. */
export function templateFileName(id: string): string {
  return `templates/${id}.json`;
}

const TEMPLATE_FILE = /^templates\/([^/]+)\.json$/;

/** True for the files the server answers: the entry points and `templates/<id>.json` of a valid id. */
export function isServedFile(name: string): boolean {
  if (name === REGISTRY_FILE || name === INDEX_FILE || name === CATALOG_FILE) return true;
  const id = TEMPLATE_FILE.exec(name)?.[1];
  return id !== undefined && isTemplateName(id);
}

const CONTENT_TYPES: Record<string, string> = {
  '.json': 'application/json; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

const SUFFIX: Record<ContentCoding, string> = { br: '.br', gzip: '.gz', identity: '' };
const CODINGS: readonly ContentCoding[] = ['identity', 'br', 'gzip'];
const VARIANTS: readonly ContentCoding[] = ['br', 'gzip'];

/** One coding of a file, with the headers of its answers. */
export interface StaticRepresentation {
  coding: ContentCoding;
  bytes: Buffer;
  /** Strong tag: `"<tag>"` for identity, `"<tag>-br"` / `"<tag>-gzip"` for the variants (RFC 9110 8.8.3). */
  etag: string;
  /**
   * Headers of a 200 (and HEAD): validators, caching, type, length, coding; as name/value pairs in
   * one flat list, the form node's `writeHead` takes without walking an object's keys.
   */
  headerPairs: readonly string[];
  /** Headers of a 304 (validators and caching), likewise. */
  notModifiedHeaderPairs: readonly string[];
}

export interface StaticFile {
  /** Relative to the public folder. */
  name: string;
  lastModified: Date;
  /** `lastModified` as an HTTP date. */
  lastModifiedText: string;
  identity: StaticRepresentation;
  br?: StaticRepresentation;
  gzip?: StaticRepresentation;
  /** The opaque tags of every coding: If-None-Match matches any of them. */
  tags: ReadonlySet<string>;
  /** The tag the codings' tags derive from (sha256 of the identity bytes, or the build's tag). */
  tag: string;
}

/** The files of one build. */
export interface StaticFiles {
  get(name: string): StaticFile | undefined;
  /** The names served, sorted. */
  names(): string[];
  /** Bytes held (every coding of every file). */
  bytes: number;
}

/** A tag without its quotes (and without `W/`). */
export function opaqueTag(tag: string): string {
  const strong = tag.trim().replace(/^W\//, '');
  return strong.startsWith('"') && strong.endsWith('"') && strong.length >= 2 ? strong.slice(1, -1) : strong;
}

/** The quoted tag of one coding of a representation whose (identity) tag is `tag`. */
export function codingEtag(tag: string, coding: ContentCoding): string {
  const opaque = opaqueTag(tag);
  return coding === 'identity' ? `"${opaque}"` : `"${opaque}-${coding}"`;
}

// ---------------------------------------------------------------------------------------------
// Content negotiation and conditional requests
// ---------------------------------------------------------------------------------------------

/** True when the If-None-Match `header` names one of the opaque `tags` (weak comparison) or is `*`. */
function matchesAnyTag(header: string, tags: ReadonlySet<string>): boolean {
  // Entity tags may contain commas only inside quotes; split on commas outside them.
  const candidates = header.match(/(?:W\/)?"[^"]*"|[^,\s]+/g) ?? [];
  return candidates.some((candidate) => candidate.trim() === '*' || tags.has(opaqueTag(candidate)));
}

/**
 * True when `If-None-Match` names one of `etags` (weak comparison, as RFC 9110 asks for
 * If-None-Match) or is `*`. A list may mix weak and strong tags.
 */
export function ifNoneMatchMatches(header: string | undefined, etags: readonly string[]): boolean {
  return header !== undefined && matchesAnyTag(header, new Set(etags.map(opaqueTag)));
}

/** True when `If-Modified-Since` is a valid date at or after `lastModified` (HTTP dates have whole seconds). */
export function notModifiedSince(header: string | undefined, lastModified: Date): boolean {
  if (header === undefined) return false;
  const since = Date.parse(header);
  if (Number.isNaN(since)) return false;
  return Math.floor(lastModified.getTime() / 1000) * 1000 <= since;
}

/**
 * The codings to try, best first, from `Accept-Encoding`: br and gzip by their q-values (br
 * first on a tie, `*` standing in for an unnamed one, `q=0` ruling one out), then identity.
 */
export function negotiateEncoding(header: string | undefined): ContentCoding[] {
  if (header === undefined || header.trim() === '') return ['identity'];
  const q = new Map<string, number>();
  for (const part of header.split(',')) {
    const [token = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (token === '') continue;
    let value = 1;
    for (const param of params) {
      const match = /^q\s*=\s*([0-9.]+)$/.exec(param);
      if (match) value = Math.min(1, Math.max(0, Number(match[1]) || 0));
    }
    const name = token === 'x-gzip' ? 'gzip' : token;
    q.set(name, Math.max(value, q.get(name) ?? -1));
  }
  const star = q.get('*');
  const weight = (coding: 'br' | 'gzip'): number => q.get(coding) ?? star ?? 0;
  const compressed = (['br', 'gzip'] as const)
    .filter((coding) => weight(coding) > 0)
    .sort((a, b) => weight(b) - weight(a)); // stable: br stays first on a tie
  return [...compressed, 'identity'];
}

const IDENTITY_ONLY: readonly ContentCoding[] = ['identity'];
const NEGOTIATED_CACHE_SIZE = 64;
const negotiated = new Map<string, readonly ContentCoding[]>();

/** negotiateEncoding, remembered for the few Accept-Encoding values clients actually send. */
function acceptedCodings(header: string | undefined): readonly ContentCoding[] {
  if (header === undefined) return IDENTITY_ONLY;
  let codings = negotiated.get(header);
  if (codings === undefined) {
    codings = negotiateEncoding(header);
    if (negotiated.size >= NEGOTIATED_CACHE_SIZE) negotiated.clear();
    negotiated.set(header, codings);
  }
  return codings;
}

/** The first coding of `file` the client accepts (identity last). */
export function chooseRepresentation(file: StaticFile, acceptEncoding: string | undefined): StaticRepresentation {
  for (const coding of acceptedCodings(acceptEncoding)) {
    const representation = file[coding];
    if (representation) return representation;
  }
  return file.identity;
}

/**
 * Whether the client's copy is current: If-None-Match naming any coding's tag (weak comparison)
 * or, without If-None-Match, If-Modified-Since at or after Last-Modified.
 */
export function isNotModified(file: StaticFile, chosen: StaticRepresentation, ifNoneMatch: string | undefined, ifModifiedSince: string | undefined): boolean {
  if (ifNoneMatch !== undefined) return ifNoneMatch === chosen.etag || matchesAnyTag(ifNoneMatch, file.tags);
  return ifModifiedSince !== undefined && (ifModifiedSince === file.lastModifiedText || notModifiedSince(ifModifiedSince, file.lastModified));
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

function representation(coding: ContentCoding, bytes: Buffer, tag: string, contentType: string, lastModified: string): StaticRepresentation {
  const etag = codingEtag(tag, coding);
  const notModifiedHeaders = { etag, 'last-modified': lastModified, 'cache-control': DOCUMENT_CACHE_CONTROL, vary: 'Accept-Encoding' };
  const headers: Record<string, string> = { ...notModifiedHeaders, 'content-type': contentType, 'content-length': String(bytes.length) };
  if (coding !== 'identity') headers['content-encoding'] = coding;
  return { coding, bytes, etag, headerPairs: Object.freeze(Object.entries(headers).flat()), notModifiedHeaderPairs: Object.freeze(Object.entries(notModifiedHeaders).flat()) };
}


/** Given validators of a file (registry.json: the build's tag and the document's lastUpdated). */
export interface KnownValidators {
  etag?: string;
  lastModified?: Date;
}

/**
 * Reads `name` and its `variants` (those that exist) from `dir`. Its tag is `known.etag` when given (the build's tag of
 * registry.json, the sha256 of the same bytes), else the sha256 of the identity bytes; its
 * Last-Modified is `known.lastModified`, else the identity file's modification time.
 */
export async function loadStaticFile(dir: string, name: string, known: KnownValidators = {}, variants: readonly ContentCoding[] = ['br', 'gzip']): Promise<StaticFile | undefined> {
  const file = path.join(dir, ...name.split('/'));
  const identity = await readIfExists(file);
  if (!identity) return undefined;
  const variant = (coding: ContentCoding): Promise<Buffer | undefined> => (variants.includes(coding) ? readIfExists(file + SUFFIX[coding]) : Promise.resolve(undefined));
  const [br, gzip, info] = await Promise.all([variant('br'), variant('gzip'), known.lastModified ? undefined : stat(file)]);
  const tag = opaqueTag(known.etag ?? createHash('sha256').update(identity).digest('base64url'));
  const lastModified = known.lastModified ?? (info as { mtime: Date }).mtime;
  const lastModifiedText = lastModified.toUTCString();
  const contentType = CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream';
  const codings = { identity, br, gzip };
  const present = CODINGS.filter((coding) => codings[coding] !== undefined);
  const made = Object.fromEntries(present.map((coding) => [coding, representation(coding, codings[coding] as Buffer, tag, contentType, lastModifiedText)]));
  return {
    name,
    lastModified,
    lastModifiedText,
    identity: made.identity as StaticRepresentation,
    ...(made.br ? { br: made.br } : {}),
    ...(made.gzip ? { gzip: made.gzip } : {}),
    tag,
    tags: new Set(present.map((coding) => opaqueTag(codingEtag(tag, coding)))),
  };
}

function snapshot(files: Map<string, StaticFile>): StaticFiles {
  let bytes = 0;
  for (const file of files.values()) for (const coding of CODINGS) bytes += file[coding]?.bytes.length ?? 0;
  return {
    get: (name) => files.get(name),
    names: () => [...files.keys()].sort(),
    bytes,
  };
}

/** What a build reports that loading needs (a `BuildResult` has it). */
export interface BuiltFiles {
  /** Every file of the build, relative to its folder. */
  files: readonly string[];
  /** The files it (re)wrote. */
  written: readonly string[];
}

/** How many files are read at once. */
const READ_CONCURRENCY = 16;

/**
 * The served files of the build in `dir`: those `build.files` lists that the server answers, with
 * the variants it lists beside them (`<name>.br`, `<name>.gz`). With
 * `previous` (the snapshot of the build before, in the same folder), a file none of whose codings
 * `build.written` lists, and whose given validators are unchanged, is kept from it instead of read.
 */
export async function loadStaticFiles(
  dir: string,
  build: BuiltFiles,
  options: { previous?: StaticFiles; known?: Readonly<Record<string, KnownValidators>> } = {},
): Promise<StaticFiles> {
  const written = new Set(build.written);
  const listed = new Set(build.files);
  const names = [...listed].filter(isServedFile);
  const files = new Map<string, StaticFile>();
  const toRead: string[] = [];
  for (const name of names) {
    const kept = options.previous?.get(name);
    const known = options.known?.[name];
    const rewritten = CODINGS.some((coding) => written.has(name + SUFFIX[coding]));
    const sameValidators =
      kept !== undefined &&
      (known?.etag === undefined || opaqueTag(known.etag) === kept.tag) &&
      (known?.lastModified === undefined || known.lastModified.getTime() === kept.lastModified.getTime());
    if (kept && !rewritten && sameValidators) files.set(name, kept);
    else toRead.push(name);
  }
  for (let i = 0; i < toRead.length; i += READ_CONCURRENCY) {
    const batch = toRead.slice(i, i + READ_CONCURRENCY);
    const loaded = await Promise.all(batch.map((name) => loadStaticFile(dir, name, options.known?.[name], VARIANTS.filter((coding) => listed.has(name + SUFFIX[coding])))));
    loaded.forEach((file) => file && files.set(file.name, file));
  }
  return snapshot(files);
}

