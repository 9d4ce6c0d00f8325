/**
 * Trust in a signed registry (the format: core/registry-signatures.ts): which keys the client
 * believes, and the check of every document before it is accepted.
 *
 * - Keys are pinned from the start (`keys`: `--registry-key`, TEMPLATE_REGISTRY_KEY), or on first
 *   use (`pinOnFirstUse`): the first time a document of the registry is fetched, its keys.json is
 *   read (it must be signed by a key it lists) and kept in the cache folder, one file per registry.
 *   A registry that publishes no keys.json is unsigned and its documents are accepted as they are,
 *   until it publishes one.
 * - Once keys are pinned, every document must come with `<file>.jws`, a signature by a pinned key
 *   inside its window, over exactly the bytes received and the file's own path. A document without
 *   one, with a signature that does not verify, or signed by an unknown key is refused with a
 *   `RegistryTrustError` ("possible man in the middle"), never answered from a stale copy and never
 *   a reason to try another registry.
 * - A key rotation: a document signed by a key not pinned makes the client read keys.json again;
 *   when a pinned key signed it (and it is not older than the one pinned), its keys replace the pins
 *   (given keys stay trusted beside them), and the document is checked again.
 * - A document and its signature are two files: a reader between the writes of a build can get a
 *   new document with the old signature. A digest mismatch is therefore checked once more, both
 *   files fetched again past caches (`retryable`), before it is refused.
 *
 * Every fetch here is bounded in size (core's caps) and time (the client's timeout).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { REGISTRY_KEY_ENV } from '../core/env-names.js';
import { writeFileAtomic } from '../core/files.js';
import { readBodyCapped } from '../core/response-body.js';
import {
  KEYS_FILE,
  looksLikeKeysFile,
  MAX_KEYS_FILE_BYTES,
  MAX_SIGNATURE_BYTES,
  parseKeysFile,
  SIGNATURE_SUFFIX,
  SignatureProblem,
  verifyFileSignature,
  verifyKeysFileSignature,
  type PublishedKey,
} from '../core/registry-signatures.js';

/** A document of a signed registry is refused: possibly an attacker between the client and the registry. */
export class RegistryTrustError extends Error {
  override readonly name = 'RegistryTrustError';
  constructor(
    /** The base URL of the registry that served the document. */
    readonly registry: string,
    /** The file refused, relative to the registry (`registry.json`). */
    readonly file: string,
    /** What is wrong with it. */
    readonly reason: string,
    /** A document and its signature that differ may be a build caught half-way: worth one more look. */
    readonly retryable = false,
    hint = '',
  ) {
    super(`the registry ${registry} served ${file} ${reason}: possible man in the middle, refusing it${hint}`);
  }
}

/** How the client trusts signed registries. */
export interface SignatureOptions {
  /**
   * Public keys (JWKs with `kid`) the registry must sign with, pinned from the start: a registry
   * that does not sign, or signs with another key, is refused from the first request.
   */
  keys?: readonly PublishedKey[];
  /** Pin the keys a registry publishes on its first use (default true; ignored when `keys` are given). */
  pinOnFirstUse?: boolean;
}

export interface RegistryTrustOptions extends SignatureOptions {
  /** The registry the pins belong to (its base URL): the first of a list of registries that stand for one another. */
  registry: string;
  /** Where pins are kept (`keys-<sha256 of the registry>.json`); without it, for this client's life only. */
  cacheDir?: string;
  fetch: typeof globalThis.fetch;
  timeoutMs: number;
  now: () => number;
}

/** What a pin file holds. */
interface PinRecord {
  registry: string;
  pinnedAt: string;
  /** The `iat` of the keys.json the pins came from: an older one never replaces them. */
  keysIat: number;
  keys: PublishedKey[];
}

type TrustState = { kind: 'pinned'; keys: PublishedKey[]; keysIat: number; given: boolean } | { kind: 'unsigned' } | { kind: 'unknown' };

/** The pin file of `registry` in `cacheDir`. */
export function pinFileFor(cacheDir: string, registry: string): string {
  return path.join(cacheDir, `keys-${createHash('sha256').update(registry).digest('hex')}.json`);
}

/** A 404 (or 410): the file is not published. */
class Missing extends Error {}

/** Why a small file could not be fetched; not a refusal (an outage is not an attack). */
class TrustFetchFailure extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

function readSmall(response: Response, max: number, url: string): Promise<Buffer> {
  return readBodyCapped(response, max, (declared) =>
    new SignatureProblem('malformed', declared === undefined ? `${url} is more than the ${max} bytes it may have` : `${url} is ${declared} bytes, more than the ${max} it may have`),
  );
}

/** The folder of a document URL (where keys.json and the relative paths start), without query or fragment. */
function folderOf(documentUrl: string): URL {
  const folder = new URL('.', documentUrl);
  folder.search = '';
  folder.hash = '';
  return folder;
}

/** `url`'s path relative to the registry's folder (`templates/api.json`); the whole URL when it is elsewhere. */
function signedPath(url: string, documentUrl: string): string {
  const target = new URL(url);
  const folder = folderOf(documentUrl);
  if (target.origin === folder.origin && target.pathname.startsWith(folder.pathname)) return decodeURIComponent(target.pathname.slice(folder.pathname.length));
  return `${target.origin}${target.pathname}`;
}

/** The URL of a file's signature: its path with `.jws` (the query kept). */
function signatureUrl(url: string): string {
  const target = new URL(url);
  target.hash = '';
  target.pathname = `${target.pathname}${SIGNATURE_SUFFIX}`;
  return target.href;
}

/** The HTTP failure of a signature or keys fetch, for the cache to report as a failed fetch; undefined for anything else. */
export function trustFetchFailure(error: unknown): { message: string; status?: number } | undefined {
  return error instanceof TrustFetchFailure ? { message: error.message, ...(error.status !== undefined ? { status: error.status } : {}) } : undefined;
}

export class RegistryTrust {
  readonly #options: RegistryTrustOptions;
  #state: Promise<TrustState> | undefined;
  /** One look at keys.json at a time (first use or rotation). */
  #keysLookup: Promise<void> | undefined;

  constructor(options: RegistryTrustOptions) {
    this.#options = options;
  }

  get #pinFile(): string | undefined {
    return this.#options.cacheDir === undefined ? undefined : pinFileFor(this.#options.cacheDir, this.#options.registry);
  }

  #hint(): string {
    if (this.#options.keys && this.#options.keys.length > 0) return ` (its keys were given with --registry-key or ${REGISTRY_KEY_ENV})`;
    const file = this.#pinFile;
    return file === undefined
      ? ''
      : ` (its keys were pinned on first use in ${file}; if the registry really changed its keys without a rotation, check with its operator, then remove that file or pass --registry-key)`;
  }

  #load(): Promise<TrustState> {
    this.#state ??= (async (): Promise<TrustState> => {
      const given = this.#options.keys;
      if (given && given.length > 0) return { kind: 'pinned', keys: [...given], keysIat: 0, given: true };
      const file = this.#pinFile;
      if (file === undefined) return { kind: 'unknown' };
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'unknown' };
        throw new Error(`the pinned keys of the registry ${this.#options.registry} cannot be read from ${file}: ${(error as Error).message}`, { cause: error });
      }
      try {
        const record = JSON.parse(text) as Partial<PinRecord>;
        if (record.registry !== this.#options.registry || typeof record.keysIat !== 'number') throw new Error('it is not a pin file of this registry');
        return { kind: 'pinned', keys: parseKeysFile(Buffer.from(JSON.stringify({ keys: record.keys })), file), keysIat: record.keysIat, given: false };
      } catch (error) {
        // Refused rather than ignored: ignoring it would pin whatever the network says next.
        throw new Error(`the pinned keys of the registry ${this.#options.registry} in ${file} cannot be used (${(error as Error).message}): remove the file to pin the registry's keys again`, { cause: error });
      }
    })();
    return this.#state;
  }

  /** Whether the client holds keys for this registry (so every document must be signed). */
  async pinned(): Promise<boolean> {
    return (await this.#load()).kind === 'pinned';
  }

  /** Whether a cached copy signed by `signedBy` (undefined: accepted unsigned) may answer: when keys are held, only one a held key signed. */
  async trustsCached(signedBy: string | undefined): Promise<boolean> {
    const state = await this.#load();
    return state.kind !== 'pinned' || (signedBy !== undefined && state.keys.some((key) => key.kid === signedBy));
  }

  async #fetch(url: string, max: number, fresh: boolean): Promise<Buffer> {
    const headers: Record<string, string> = fresh ? { 'cache-control': 'no-cache', pragma: 'no-cache' } : {};
    const response = await this.#options.fetch(url, { headers, signal: AbortSignal.timeout(this.#options.timeoutMs) });
    if (response.status === 404 || response.status === 410) {
      await response.body?.cancel().catch(() => undefined);
      throw new Missing(url);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new TrustFetchFailure(`${url}: HTTP ${response.status}`, response.status);
    }
    return readSmall(response, max, url);
  }

  /** keys.json and its signature from the registry of `documentUrl`; undefined when it publishes none. */
  async #keysOf(documentUrl: string, fresh: boolean): Promise<{ bytes: Buffer; jws: string } | undefined> {
    const url = new URL(KEYS_FILE, folderOf(documentUrl)).href;
    let bytes: Buffer;
    try {
      bytes = await this.#fetch(url, MAX_KEYS_FILE_BYTES, fresh);
    } catch (error) {
      if (error instanceof Missing) return undefined;
      throw error;
    }
    try {
      return { bytes, jws: (await this.#fetch(signatureUrl(url), MAX_SIGNATURE_BYTES, fresh)).toString('utf8') };
    } catch (error) {
      if (error instanceof Missing) return { bytes, jws: '' };
      throw error;
    }
  }

  #registryOf(documentUrl: string): string {
    return folderOf(documentUrl).href.replace(/\/$/, '');
  }

  /** First use: pins what keys.json says (signed by a key it lists), or learns the registry is unsigned. */
  async #firstUse(documentUrl: string): Promise<void> {
    const registry = this.#registryOf(documentUrl);
    let published: { bytes: Buffer; jws: string } | undefined;
    try {
      published = await this.#keysOf(documentUrl, false);
    } catch (error) {
      if (error instanceof SignatureProblem) throw new RegistryTrustError(registry, KEYS_FILE, `that cannot be trusted on first use (${error.message})`);
      throw error;
    }
    // No keys.json, or a host answering every path with a page (not a keys document): unsigned.
    if (!published || !looksLikeKeysFile(published.bytes)) {
      this.#state = Promise.resolve({ kind: 'unsigned' });
      return;
    }
    let keys: PublishedKey[];
    let iat: number;
    try {
      keys = parseKeysFile(published.bytes);
      if (published.jws === '') throw new SignatureProblem('malformed', `${KEYS_FILE}${SIGNATURE_SUFFIX} is missing`);
      iat = (await verifyKeysFileSignature(published.bytes, published.jws, keys, new Date(this.#options.now()))).iat;
    } catch (error) {
      throw new RegistryTrustError(registry, KEYS_FILE, `that cannot be trusted on first use (${(error as Error).message})`);
    }
    const state: TrustState = { kind: 'pinned', keys, keysIat: iat, given: false };
    this.#state = Promise.resolve(state);
    await this.#save(keys, iat);
  }

  async #save(keys: PublishedKey[], keysIat: number): Promise<void> {
    const file = this.#pinFile;
    if (file === undefined) return;
    const record: PinRecord = { registry: this.#options.registry, pinnedAt: new Date(this.#options.now()).toISOString(), keysIat, keys };
    try {
      await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`);
    } catch {
      // The pins hold for this client's life; the next one pins again.
    }
  }

  /**
   * A rotation: keys.json read again, accepted when a pinned key signed it and it is not older than
   * the pins. Returns whether the pins changed.
   */
  async #rotate(documentUrl: string, state: Extract<TrustState, { kind: 'pinned' }>): Promise<boolean> {
    let published: { bytes: Buffer; jws: string } | undefined;
    try {
      published = await this.#keysOf(documentUrl, true);
    } catch (error) {
      if (error instanceof SignatureProblem) return false;
      throw error;
    }
    if (!published || published.jws === '') return false;
    let listed: PublishedKey[];
    let iat: number;
    try {
      listed = parseKeysFile(published.bytes);
      iat = (await verifyKeysFileSignature(published.bytes, published.jws, state.keys, new Date(this.#options.now()))).iat;
    } catch {
      return false; // not vouched for by a pinned key: the document stays refused
    }
    if (iat < state.keysIat) return false;
    const keys = state.given ? [...state.keys, ...listed.filter((key) => !state.keys.some((pinned) => pinned.kid === key.kid))] : listed;
    const changed = JSON.stringify(keys) !== JSON.stringify(state.keys);
    this.#state = Promise.resolve({ kind: 'pinned', keys, keysIat: iat, given: state.given });
    if (!state.given) await this.#save(keys, iat);
    return changed;
  }

  /** One look at keys.json at a time; callers that wait see its outcome in the state. */
  #lookup(task: () => Promise<unknown>): Promise<void> {
    this.#keysLookup ??= task()
      .then(() => undefined)
      .finally(() => {
        this.#keysLookup = undefined;
      });
    return this.#keysLookup;
  }

  /**
   * Checks a document before it is accepted: `body` as received from `url`, a file of the registry
   * whose document is `documentUrl`. `fresh` asks past caches (the second look of a retry). Throws
   * RegistryTrustError (refused), or TrustFetchFailure / a network error (the signature could not
   * be had: an outage).
   */
  async verify(resource: { url: string; documentUrl: string; body: Uint8Array; fresh?: boolean }): Promise<string | undefined> {
    const { url, documentUrl, body, fresh = false } = resource;
    let state = await this.#load();
    if (state.kind === 'unknown') {
      if (this.#options.pinOnFirstUse === false) return undefined;
      await this.#lookup(() => this.#firstUse(documentUrl));
      state = await this.#load();
    }
    if (state.kind !== 'pinned') return undefined;
    const registry = this.#registryOf(documentUrl);
    const file = signedPath(url, documentUrl);
    let jws: string;
    try {
      jws = (await this.#fetch(signatureUrl(url), MAX_SIGNATURE_BYTES, fresh)).toString('utf8');
    } catch (error) {
      if (error instanceof Missing) throw new RegistryTrustError(registry, file, `without a signature (${file}${SIGNATURE_SUFFIX} is missing) though its keys are pinned`, false, this.#hint());
      if (error instanceof SignatureProblem) throw new RegistryTrustError(registry, file, `with a signature that cannot be read (${error.message})`, false, this.#hint());
      throw error;
    }
    const check = async (keys: readonly PublishedKey[]): Promise<string> => (await verifyFileSignature(body, file, jws, keys, new Date(this.#options.now()))).kid;
    try {
      return await check(state.keys);
    } catch (error) {
      if (!(error instanceof SignatureProblem)) throw error;
      let problem = error;
      if (problem.reason === 'unknown-key') {
        const pinned = state;
        await this.#lookup(() => this.#rotate(documentUrl, pinned));
        const rotated = await this.#load();
        if (rotated.kind === 'pinned') {
          try {
            return await check(rotated.keys);
          } catch (again) {
            if (!(again instanceof SignatureProblem)) throw again;
            problem = again;
          }
        }
      }
      const reason =
        problem.reason === 'unknown-key' ? `${problem.message.replace(/^\S+ is /, 'that is ')}, nor listed in a keys.json a pinned key signed` : `that fails its signature check (${problem.message})`;
      throw new RegistryTrustError(registry, file, reason, problem.reason === 'wrong-file', this.#hint());
    }
  }
}
