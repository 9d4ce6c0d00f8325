/**
 * Where a static registry is written: a folder (`folder-output.ts`) or an S3-compatible bucket
 * (`s3-output.ts`). The generator plans the files and asks the output what it already holds, so a
 * build rewrites only what changed; the output decides how a file is replaced atomically and how
 * what was written is made durable before the entry points (index.json, registry.json) name it.
 */
import { createHash } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';

/**
 * One file of the registry, with the HTTP metadata a static host should serve it with. Its bytes are
 * `data`, or the pieces `parts` in order (registry.json of a build that keeps nothing between builds:
 * its 100 MB are never joined in memory; `bytesOf` joins them where an output must).
 */
export type OutputFile = OutputFileHead & ({ data: Buffer; parts?: undefined; staged?: undefined } | { parts: readonly Buffer[]; data?: undefined; staged?: undefined } | StagedOutputFile);

/**
 * A file already written to the output's staging (`RegistryOutput.stage`), complete, with its size
 * and digests (streamed-document.ts: registry.json and its variants, never held in memory).
 */
export interface StagedOutputFile {
  staged: StagedFile;
  size: number;
  digests: Partial<Record<DigestAlgorithm, string>>;
  data?: undefined;
  parts?: undefined;
}

/** A file being written beside its name, invisible under it until `putInOrder` is given it (or discarded). */
export interface StagedFile {
  /** Takes the bytes in order; end it when they are all written. */
  readonly stream: Writable;
  /** Settles once `stream` was ended and every byte is in the staged file (rejects when writing failed). */
  readonly finished: Promise<void>;
  /** Removes the staged file (a build that failed, or bytes the output already holds). */
  discard(): Promise<void>;
}

/** A file whose bytes are one buffer. */
export type BytesFile = OutputFileHead & { data: Buffer; parts?: undefined };

export interface OutputFileHead {
  /** Relative to the registry's root, `/`-separated (`templates/api.json`). */
  name: string;
  contentType: string;
  cacheControl: string;
  /** Set on the precompressed variants (`registry.json.gz` is `gzip`). */
  contentEncoding?: 'gzip' | 'br';
  /** Digests of `data` already computed (hex), kept on the file so 100 MB is not hashed twice. */
  digests?: Partial<Record<DigestAlgorithm, string>>;
}

/** The digest an output compares files by: S3-compatible stores report MD5 ETags; a folder uses SHA-256 (faster, and it is registry.json's ETag too). */
export type DigestAlgorithm = 'md5' | 'sha256';

/** What an output knows of one file it holds. */
export interface HeldFile {
  size: number;
  /** The digest (hex, in the output's `digest` algorithm) when the output knows it surely and cheaply. */
  digest?: string;
  /**
   * The store keeps a checksum of the bytes that is not `digest` (a multipart upload's ETag, which
   * a large archive's upload completes only after its check): it vouches for an immutable archive
   * of the right size as `digest` does, without the archive being read back.
   */
  checksummed?: boolean;
}

/** An archive to publish at its immutable path. */
export interface OutputArchive {
  name: string;
  size: number;
  stream: Readable;
  /**
   * A local file holding the same bytes (the store's blob), which an output on the same file system
   * may hard-link instead of copying; `stream` is still read through (it is what `verify` checks).
   */
  file?: string;
  /**
   * Called once the whole stream was read and before the archive becomes visible; when it throws,
   * nothing is published (the generator checks the archive's integrity there).
   */
  verify(): void;
}

export interface RegistryOutput {
  /** A folder path or an `s3://bucket/prefix` URL, for messages. */
  readonly location: string;
  /** The algorithm of `HeldFile.digest`. */
  readonly digest: DigestAlgorithm;
  /** Every file the output holds now, by name. */
  inventory(): Promise<Map<string, HeldFile>>;
  /** The bytes of one file; undefined when there is none. */
  read(name: string): Promise<Buffer | undefined>;
  /**
   * Replaces (or creates) one file so that a reader sees either the old or the new bytes. With
   * `durable`, the file is on stable storage when the promise settles.
   */
  put(file: OutputFile, options?: { durable?: boolean }): Promise<void>;
  /**
   * Writes the entry points: each file becomes visible only after the ones before it, and all of
   * them are on stable storage when the promise settles (so none names a file a crash could lose).
   */
  putInOrder(files: readonly OutputFile[]): Promise<void>;
  /**
   * Starts writing `name` a piece at a time, beside it: it takes the place of `name` when `putInOrder`
   * is given it, and is never seen before (absent on an output that cannot: the builder then holds
   * the bytes until written).
   */
  stage?(name: string): Promise<StagedFile>;
  /** The bytes of one file now (the document a build that kept nothing is asked for); with `stage`. */
  readSync?(name: string): Buffer | undefined;
  /** Publishes an archive: written once, visible only after `archive.verify()` passed. */
  putArchive(archive: OutputArchive): Promise<void>;
  /** Makes every file put so far durable (the entry points are written after this). */
  barrier(): Promise<void>;
  /** Optional: told that this build will write many files (a full build), before it reads its source: what writing many files needs can start while the process is small. */
  expectMany?(): void;
  /** Removes files; missing ones are fine. */
  remove(names: readonly string[]): Promise<void>;
  /** Saves what the output needs to know the next build (after the entry points are written). */
  commit(): Promise<void>;
  /**
   * The generator's build state (build-state.ts), kept beside the files but never served as one of
   * them; absent on an output that keeps none (every build then reads every version).
   */
  readState?(): Promise<Buffer | undefined>;
  /** Replaces the build state atomically (after the entry points are written). */
  writeState?(data: Buffer): Promise<void>;
  /** Releases what the output holds open (a helper process, a client); it is not used after. */
  close?(): Promise<void>;
  /**
   * True when the files are deployed to a static host as they are (a folder: Netlify, Cloudflare
   * Pages, GitHub Pages): the build writes `_headers`, the Cache-Control of each file for the hosts
   * that read it. A bucket sets each object's Cache-Control itself.
   */
  readonly hostHeaders?: boolean;
}

/**
 * Cache lifetimes a static host (or a CDN in front of it) should serve the files with, and the
 * server its own copies of the same files (server/static-files.ts).
 */
export const CACHE_CONTROL = {
  /** Archives (and anything kept beside them, such as attestations) never change under their URL. */
  immutable: 'public, max-age=31536000, immutable',
  /** registry.json, the index, template files and the catalog: fresh within a minute, stale served while revalidating. */
  document: 'public, max-age=60, stale-while-revalidate=600',
} as const;

/** The Cache-Control of a registry file by its name: everything under `archives/` is immutable, the rest a document. */
export function cacheControlOf(name: string): string {
  return name.startsWith('archives/') ? CACHE_CONTROL.immutable : CACHE_CONTROL.document;
}

/** The host's file of headers per path (Netlify, Cloudflare Pages). */
export const HOST_HEADERS_FILE = '_headers';

/**
 * `_headers` for a static registry: each path's Cache-Control by `cacheControlOf`. The rules never
 * overlap (the hosts join the values of every rule a path matches): the archives, the template
 * files, and each entry point with its variants by name; the folder URL is the catalog page.
 */
export function hostHeadersFile(): string {
  const rule = (path: string, name: string): string => `${path}\n  Cache-Control: ${cacheControlOf(name)}\n`;
  const entryPoints = [
    ...['registry.json', 'index.json', 'index.html'].flatMap((name) => [name, `${name}.gz`, `${name}.br`]),
    // A signed registry's (templates/<id>.json.jws is under /templates/*).
    ...['keys.json', 'keys.json.jws', 'registry.json.jws', 'index.json.jws'],
  ];
  return [
    '# Cache-Control of the registry files (written by template-registry; Netlify and Cloudflare Pages read it)\n',
    rule('/archives/*', 'archives/'),
    rule('/templates/*', 'templates/'),
    rule('/', 'index.html'),
    ...entryPoints.map((name) => rule(`/${name}`, name)),
  ].join('');
}

const CONTENT_TYPES: Record<string, string> = {
  '.json': 'application/json; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.tgz': 'application/gzip',
  // A compact JWS (RFC 7515); keys.json.jws is in the JSON serialization.
  '.jws': 'application/jose',
};

/** The content type of a registry file by its name (variants take their base file's type). */
export function contentTypeOf(name: string): string {
  if (name === 'keys.json.jws') return 'application/jose+json';
  const base = name.replace(/\.(gz|br)$/, '');
  const extension = /\.[a-z]+$/.exec(base)?.[0] ?? '';
  return CONTENT_TYPES[extension] ?? 'application/octet-stream';
}

/** The MD5 (hex) of some bytes: what S3-compatible stores give as the ETag of a single-part object. A change detector, not a security check. */
export function md5Of(data: Buffer): string {
  return createHash('md5').update(data).digest('hex');
}

/** A digest (hex) of a file's bytes, computed once and kept on the file. */
export function fileDigest(file: OutputFile, algorithm: DigestAlgorithm): string {
  file.digests ??= {};
  if (file.digests[algorithm] === undefined) {
    const hash = createHash(algorithm);
    for (const part of partsOf(file)) hash.update(part);
    file.digests[algorithm] = hash.digest('hex');
  }
  return file.digests[algorithm];
}

/** The bytes of a file as pieces, in order. */
export function partsOf(file: OutputFile): readonly Buffer[] {
  if (file.staged) throw new Error(`${file.name} is staged: its bytes are not in memory`);
  return file.parts ?? [file.data];
}

/** How many bytes a file has. */
export const sizeOf = (file: OutputFile): number => (file.staged ? file.size : file.parts ? file.parts.reduce((sum, part) => sum + part.length, 0) : file.data.length);

/** The bytes of a file as one buffer (joined, for an output that takes nothing else). */
export const bytesOf = (file: OutputFile): Buffer => file.data ?? Buffer.concat(partsOf(file));

/** `parts` in pieces of about a megabyte (a write or a compression step per 10 KB piece costs more than the bytes). */
export function* pieces(parts: readonly Buffer[], size = 1024 * 1024): Generator<Buffer> {
  let pending: Buffer[] = [];
  let pendingSize = 0;
  for (const part of parts) {
    pending.push(part);
    pendingSize += part.length;
    if (pendingSize >= size) {
      yield pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingSize);
      pending = [];
      pendingSize = 0;
    }
  }
  if (pendingSize > 0) yield pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingSize);
}

/** Whether `bytes` are exactly the bytes of `file`, without joining its parts. */
export function sameBytes(bytes: Buffer, file: OutputFile): boolean {
  if (bytes.length !== sizeOf(file)) return false;
  let offset = 0;
  for (const part of partsOf(file)) {
    if (!bytes.subarray(offset, offset + part.length).equals(part)) return false;
    offset += part.length;
  }
  return true;
}
