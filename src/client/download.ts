/**
 * Downloads a template archive and unpacks it safely.
 *
 * 1. The archive is streamed to a private temp file (never held in memory), stopping as soon as it
 *    passes `limits.maxBytes`.
 * 2. Its integrity (SRI, else the hex sha256, and the size when known) is checked before anything is
 *    read from it. An entry with neither hash is refused unless `allowUnverified`.
 * 3. The archive scanner (archive/scan.ts) reads every tar header without writing anything:
 *    unsafe paths, links, special files, duplicates and archives over the entry or unpacked-size
 *    limits are refused (unpacked bytes are counted as they stream, so a gzip bomb stops at the limit).
 * 4. Only then archive/extract.ts writes the files and folders the scan listed, each created
 *    exclusively inside `dest`, modes 0644 / 0755. An archive whose entries all sit under one top
 *    folder (`package/...` or `./package/...`) is unpacked with that folder stripped.
 * Any failure leaves `dest` as it was found: removed when this call created it, else emptied.
 *
 * Where an archive may come from (every redirect hop included): `https:`, or plain `http:` only
 * when the registry itself is on loopback (`localhost`, 127.0.0.0/8, ::1). Its host must be, or
 * resolve only to, public addresses, or addresses of a kind the registry's own host has (a registry
 * on a private network may name private addresses; a registry on loopback may name anything): a
 * remote registry cannot send a download to this machine, its network or a metadata service. The
 * default transport resolves each host once, checks every address and connects to a checked one
 * (core/egress.ts), so a name that changes its answer gets nowhere refused. With a caller's own
 * `fetch`, host names are not resolved here (that fetch does the networking); literal addresses are
 * still checked.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

import { DigestStream, digestOf, IntegrityError, verifyIntegrity } from '../archive/integrity.js';
import { extractArchive } from '../archive/extract.js';
import { MAX_ATTESTATION_BYTES } from '../archive/provenance.js';
import { scanArchive, UnsafeArchiveError, type ArchiveLimits, type ArchiveScan } from '../archive/scan.js';
import { allowedAddresses, EgressRefusedError, egressPolicy, guardedRequest, resolveWithSystem, type EgressPolicy, type ResolveHost } from '../core/egress.js';
import { errorMessage } from '../core/errors.js';
import { addressKind, bareAddress, isIpAddress, type AddressKind } from '../core/ip-addresses.js';
import { DOWNLOAD_PURPOSE_HEADER } from '../core/routes.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { checkProvenance, type ProvenanceOutcome, type ProvenancePolicy } from './provenance.js';

export { IntegrityError } from '../archive/integrity.js';
export { UnsafeArchiveError } from '../archive/scan.js';

/** Default most bytes downloaded: 200 MiB. */
export const DEFAULT_MAX_DOWNLOAD_BYTES = 200 * 1024 * 1024;

export interface DownloadLimits {
  /** Most bytes downloaded (the compressed archive); default 200 MiB. */
  maxBytes?: number;
  /** Most entries (files, folders, links) in the archive; default 20,000. */
  maxEntries?: number;
  /** Most bytes the archive may unpack to (tar headers included); default 512 MiB. */
  maxUnpackedBytes?: number;
}

export interface DownloadOptions {
  fetch?: typeof globalThis.fetch;
  limits?: DownloadLimits;
  /** Called as bytes arrive; `total` is the expected size when known (entry size or Content-Length). */
  onProgress?: (received: number, total?: number) => void;
  /** Accept an entry with neither `integrity` nor `sha256` (the archive is then not verified). */
  allowUnverified?: boolean;
  /** Aborts the download. */
  signal?: AbortSignal;
  /**
   * The URL of the registry document the entry came from: where the registry is. Plain `http:` is
   * accepted only when it is on loopback, and the archive's host may lead only to public addresses
   * or addresses of the registry's own kind. Without it, the download URL itself stands for the
   * registry.
   */
  documentUrl?: string;
  /** Resolves host names for the default transport; default the system resolver (tests give a table). */
  resolve?: ResolveHost;
  /**
   * `inspect` for a download that only reads the template (`info` showing its questions): sent as
   * `X-Download-Purpose`, so a registry server does not count it as a use. Default `generate`.
   */
  purpose?: 'generate' | 'inspect';
  /**
   * The build provenance check made once the archive's integrity is verified, before it is
   * unpacked (client/provenance.ts): default `warn` against the public-good trusted root, no
   * signer pinned. A refusal (SignerChangedError, ProvenanceCheckError) unpacks nothing.
   */
  provenance?: ProvenancePolicy;
}

export type DownloadableEntry = Pick<TemplateEntry, 'id' | 'version' | 'downloadUrl' | 'attestations'> & {
  integrity?: string;
  sha256?: string;
  size?: number;
};

export interface DownloadResult {
  /** Absolute path of the folder the template was unpacked into. */
  dir: string;
  /** Unpacked files and links, relative to `dir`, `/`-separated, sorted. */
  files: string[];
  /** `sha512-<base64>` of the downloaded archive. */
  integrity: string;
  /** Bytes downloaded. */
  size: number;
  /** What the provenance check found (`verified` with the signer, `unsigned`, `unverified`, `off`). */
  provenance: ProvenanceOutcome;
}

/** The archive could not be downloaded (HTTP status, network, size limit). */
export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  readonly url: string;
  readonly status: number | undefined;

  constructor(url: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(`download of ${url} failed: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.url = url;
    this.status = options.status;
  }
}

// ---------------------------------------------------------------------------------------------
// Download
// ---------------------------------------------------------------------------------------------

/** Counts the bytes going through and stops past `maxBytes`. */
class ByteLimit extends Transform {
  received = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly onChunk: (received: number) => void,
    private readonly tooLarge: () => Error,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.maxBytes) {
      callback(this.tooLarge());
      return;
    }
    this.onChunk(this.received);
    callback(null, chunk);
  }
}

/** Most redirects followed for one archive. */
const MAX_REDIRECTS = 5;

/** True when `hostname` (a URL's) is this machine: a loopback address, `localhost` or a `*.localhost` name. */
function isLoopbackHost(hostname: string): boolean {
  const host = bareAddress(hostname).toLowerCase().replace(/\.$/, '');
  if (isIpAddress(host)) return addressKind(host) === 'loopback';
  return host === 'localhost' || host.endsWith('.localhost');
}

/** Where the registry is: the document's URL, else the download URL itself (the caller chose it). */
function registryLocation(url: string, documentUrl: string | undefined): URL | undefined {
  for (const candidate of [documentUrl, url]) {
    if (candidate === undefined) continue;
    try {
      return new URL(candidate);
    } catch {
      // the next one
    }
  }
  return undefined;
}

/**
 * Where an archive may come from: `https:`, or plain `http:` only when the registry (the document
 * `documentUrl` names, else the URL itself) is on loopback. `file:`, `data:`, `ftp:` and the rest
 * are refused, for the URL a registry names as for every redirect. Throws DownloadError naming the
 * URL and the rule. (The addresses a host leads to are checked when it is connected to.)
 */
export function checkDownloadUrl(url: string, documentUrl?: string): URL {
  return checkUrlOfRegistry(url, documentUrl, registryLocation(url, documentUrl));
}

/** `checkDownloadUrl` for a URL (a redirect's) of the registry at `registry`. */
function checkUrlOfRegistry(url: string, documentUrl: string | undefined, registry: URL | undefined): URL {
  let parsed: URL;
  try {
    // A static registry's URLs may be relative to the document they came from.
    parsed = documentUrl === undefined ? new URL(url) : new URL(url, documentUrl);
  } catch {
    throw new DownloadError(url, documentUrl === undefined ? 'it is not an absolute URL' : `it is not a URL, even relative to ${documentUrl}`);
  }
  if (parsed.protocol === 'https:') return parsed;
  if (parsed.protocol === 'http:') {
    if (registry && isLoopbackHost(registry.hostname)) return parsed;
    throw new DownloadError(url, 'plain http: is only accepted from a registry on loopback (localhost, 127.0.0.1, ::1); use https:');
  }
  throw new DownloadError(url, `the ${parsed.protocol} scheme is not accepted: archives are fetched over https: (or http: from a registry on loopback)`);
}

const ADDRESS_KINDS: readonly AddressKind[] = ['public', 'loopback', 'private', 'link-local', 'special'];

/** The kinds of address the registry's own host has (resolved with `resolve`; names unresolved without it). */
async function registryKinds(registry: URL | undefined, resolve: ResolveHost | undefined): Promise<Set<AddressKind>> {
  if (!registry) return new Set();
  const host = bareAddress(registry.hostname);
  if (isLoopbackHost(host)) return new Set(['loopback']);
  if (isIpAddress(host)) return new Set([addressKind(host)]);
  if (!resolve) return new Set();
  try {
    return new Set((await resolve(host)).map((entry) => addressKind(entry.address)));
  } catch {
    return new Set();
  }
}

/** The addresses an archive of this registry may come from: anything from a registry on loopback; else public ones and those of the registry's own kind. */
function downloadPolicy(kinds: ReadonlySet<AddressKind>): EgressPolicy {
  if (kinds.has('loopback')) return egressPolicy({ allowKinds: ADDRESS_KINDS });
  return egressPolicy({
    allowKinds: ['public', ...[...kinds].filter((kind) => kind !== 'special')],
    hint: 'a registry may send downloads only to public addresses, or to addresses of its own kind (a registry on loopback to any)',
  });
}

/** GETs `url`, following redirects only where checkDownloadUrl allows, connecting only where the registry's policy allows. */
async function fetchFollowingSafeRedirects(url: string, options: DownloadOptions, signal: AbortSignal): Promise<Response> {
  const registry = registryLocation(url, options.documentUrl);
  let current = checkUrlOfRegistry(url, options.documentUrl, registry).href;
  const resolve = options.fetch ? undefined : (options.resolve ?? resolveWithSystem);
  const policy = downloadPolicy(await registryKinds(registry, resolve));
  const send = options.fetch ?? guardedRequest(policy, resolve ? { resolve } : {});
  for (let hop = 0; ; hop++) {
    let response: Response;
    try {
      const host = new URL(current).hostname;
      // A caller's fetch resolves names itself; a literal address is checked here whatever the transport.
      if (isIpAddress(host)) await allowedAddresses(host, policy);
      response = await send(current, {
        headers: {
          accept: 'application/gzip, application/octet-stream;q=0.9, */*;q=0.1',
          // Some hosts refuse a request without one (fetch sends its own).
          'user-agent': 'template-registry',
          ...(options.purpose === 'inspect' ? { [DOWNLOAD_PURPOSE_HEADER]: 'inspect' } : {}),
        },
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      if (error instanceof EgressRefusedError) throw new DownloadError(current, error.message, { cause: error });
      throw new DownloadError(current, errorMessage(error), { cause: error });
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || location === null) return response;
    await response.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS) throw new DownloadError(url, `more than ${MAX_REDIRECTS} redirects`);
    let next: string;
    try {
      next = new URL(location, current).href;
    } catch {
      throw new DownloadError(current, `it redirects to ${JSON.stringify(location)}, which is not a URL`);
    }
    current = checkUrlOfRegistry(next, options.documentUrl, registry).href;
  }
}

async function fetchToFile(entry: DownloadableEntry, file: string, options: DownloadOptions, maxBytes: number): Promise<DigestStream> {
  const url = entry.downloadUrl;
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await fetchFollowingSafeRedirects(url, options, controller.signal);
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw new DownloadError(url, `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`, { status: response.status });
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      controller.abort();
      throw new DownloadError(url, `the archive is ${declared} bytes, more than the limit of ${maxBytes}`);
    }
    const total = entry.size ?? (Number.isFinite(declared) ? declared : undefined);
    const limit = new ByteLimit(
      maxBytes,
      (received) => options.onProgress?.(received, total),
      () => {
        controller.abort();
        return new DownloadError(url, `the archive is larger than the limit of ${maxBytes} bytes`);
      },
    );
    const digest = new DigestStream();
    try {
      await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), limit, digest, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      if (error instanceof DownloadError) throw error;
      throw new DownloadError(url, errorMessage(error), { cause: error });
    }
    return digest;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Reads a small file a registry names (a provenance bundle), with the archive's URL and address
 * rules, into memory, refusing more than `maxBytes`.
 */
async function fetchSmallFile(url: string, options: DownloadOptions, maxBytes: number): Promise<Buffer> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await fetchFollowingSafeRedirects(url, { ...options, purpose: 'inspect' }, controller.signal);
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw new DownloadError(url, `HTTP ${response.status}`, { status: response.status });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of Readable.fromWeb(response.body as WebReadableStream<Uint8Array>)) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        controller.abort();
        throw new DownloadError(url, `it is larger than the limit of ${maxBytes} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Checks a downloaded archive before anything is unpacked: the archive scanner's rules with the
 * download limits. Throws UnsafeArchiveError.
 */
export async function checkArchive(file: string, limits: { maxEntries?: number; maxUnpackedBytes?: number } = {}): Promise<ArchivePlan> {
  const scan = await scanArchive(file, archiveLimits(limits));
  return { strip: scan.strip, files: scan.files };
}

function archiveLimits(limits: { maxEntries?: number; maxUnpackedBytes?: number }): Partial<ArchiveLimits> {
  return {
    ...(limits.maxEntries === undefined ? {} : { maxEntries: limits.maxEntries }),
    ...(limits.maxUnpackedBytes === undefined ? {} : { maxUnpackedBytes: limits.maxUnpackedBytes }),
  };
}

/** What unpacking a checked archive does: the folder it strips and the files it writes. */
export type ArchivePlan = Pick<ArchiveScan, 'strip' | 'files'>;

// ---------------------------------------------------------------------------------------------
// Unpack
// ---------------------------------------------------------------------------------------------

async function prepareDestination(dest: string): Promise<{ created: boolean }> {
  try {
    const info = await stat(dest);
    if (!info.isDirectory()) throw new Error(`destination ${dest} exists and is not a folder`);
    if ((await readdir(dest)).length > 0) throw new Error(`destination ${dest} is not empty`);
    return { created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { created: true };
  }
}

async function emptyDestination(dest: string, created: boolean): Promise<void> {
  if (created) {
    await rm(dest, { recursive: true, force: true });
    return;
  }
  const names = await readdir(dest).catch(() => [] as string[]);
  await Promise.all(names.map((name) => rm(path.join(dest, name), { recursive: true, force: true })));
}

/**
 * Downloads `entry.downloadUrl`, verifies it against `entry.integrity` / `entry.sha256` (and
 * `entry.size`), checks every archive entry, and unpacks it into `dest` (which must be missing or
 * empty; it is created).
 */
export async function downloadTemplate(entry: DownloadableEntry, dest: string, options: DownloadOptions = {}): Promise<DownloadResult> {
  const dir = path.resolve(dest);
  const maxBytes = options.limits?.maxBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
  const label = `${entry.id}@${entry.version}`;
  if (entry.integrity === undefined && entry.sha256 === undefined && !options.allowUnverified) {
    throw new IntegrityError(`${label} has neither integrity nor sha256, so its archive cannot be verified (allowUnverified accepts it)`, '', '');
  }
  if (entry.size !== undefined && entry.size > maxBytes) {
    throw new DownloadError(entry.downloadUrl, `the archive is ${entry.size} bytes, more than the limit of ${maxBytes}`);
  }
  const { created } = await prepareDestination(dir);

  const temp = await mkdtemp(path.join(tmpdir(), 'tr-download-'));
  try {
    const archive = path.join(temp, 'archive.tgz');
    const digest = (await fetchToFile(entry, archive, options, maxBytes)).result();
    verifyIntegrity(entry, digest, label);
    const { integrity, size, sha256 } = digestOf(digest);
    const provenance = await checkProvenance(entry, sha256, options.provenance ?? { mode: 'warn' }, (url) => fetchSmallFile(url, options, MAX_ATTESTATION_BYTES));
    let plan: ArchiveScan;
    try {
      plan = await extractArchive(archive, dir, archiveLimits(options.limits ?? {}));
    } catch (error) {
      await emptyDestination(dir, created);
      if (error instanceof UnsafeArchiveError) throw error;
      throw new UnsafeArchiveError(`unpacking ${label} failed: ${errorMessage(error)}`);
    }
    return { dir, files: plan.files, integrity, size, provenance };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}
