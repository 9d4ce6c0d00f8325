/**
 * `store copy`: everything of one store into another, empty one, whatever the backends (embedded
 * SQLite + files, PostgreSQL + a folder or a bucket): tokens as their hashes (they keep working),
 * owners and co-owners, versions with their lifecycle and manifests, archives, events with their
 * origin, webhooks with their secrets, the outbox and its delivery attempts, accounts with their
 * password hashes, sessions, the settings (the access-token signing key, so access tokens stay
 * valid), trusted publishers and the ID tokens already exchanged. Staged large uploads are not copied (see `StoreDump`).
 *
 * Only into an empty target: its rows and its blob store (no archive, manifest or staged file) are
 * checked before anything is written; then the target is claimed for this copy (its rows by the
 * backend: an advisory lock, a lock file; its bytes: store/blob/claim.ts) and checked again under
 * the claims, so of two copies into one target one only writes, and the other is refused.
 *
 * Order, so that nothing half-copied is ever listed: the source's rows are read in one snapshot;
 * every archive is read from the source, its size, sha256 and SRI integrity recomputed from the bytes
 * and checked against its version row, and written to the target's blob store with its manifest;
 * only when every archive is there are all the rows written, in one transaction. A failure before
 * that (an archive that does not match, a missing one) leaves no row in the target, and the blobs
 * already written are removed.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import ssri, { type Integrity } from 'ssri';

import type { StoreCounts, StoreDumper, DumpVersion } from './dump-types.js';
import { countsOfDump } from './dump-format.js';
import { archiveKey, attestationKey, FILES_PREFIX, manifestKey } from './blob-layout.js';
import { claimBlobStore, type Claimable, type CopyClaim } from './blob/claim.js';
import type { RegistryStorage } from './types.js';

export type { StoreDump, StoreDumper, StoreCounts } from './dump-types.js';

/** Why a copy stopped. `version` names the version (`name@version`) at fault, when one is. */
export class StoreCopyError extends Error {
  override readonly name = 'StoreCopyError';
  constructor(
    readonly code: 'TARGET_NOT_EMPTY' | 'INTEGRITY_MISMATCH' | 'ARCHIVE_MISSING' | 'MANIFEST_MISSING' | 'MANIFEST_INVALID' | 'ATTESTATION_MISSING' | 'NO_DUMP' | 'INCOMPLETE',
    message: string,
    readonly version?: string,
  ) {
    super(message);
  }
}

/** What a copy reports while it runs. */
export type CopyProgress =
  | { step: 'read'; counts: StoreCounts }
  | { step: 'archive'; name: string; version: string; index: number; total: number; size: number }
  | { step: 'pending-skipped'; name: string; version: string; reason: string }
  | { step: 'rows' }
  | { step: 'done' };

/** What was copied, by kind. */
export interface CopySummary {
  from: { backend: string; location: string; storage: string };
  to: { backend: string; location: string; storage: string };
  tokens: number;
  owners: number;
  coOwners: number;
  versions: number;
  completeVersions: number;
  pendingVersions: number;
  /** Archives copied and verified (every complete version's, and the pending ones' that were whole). */
  archives: number;
  archiveBytes: number;
  manifests: number;
  events: number;
  webhooks: number;
  outboxDeliveries: number;
  deliveryAttempts: number;
  users: number;
  sessions: number;
  settings: number;
  /** Trusted publishers of template names (pending ones included). */
  trustedPublishers: number;
  /** ID tokens already exchanged, kept until they expire: still refused as replays by the target. */
  usedIdTokens: number;
  /** Staged large uploads of the source, not copied (short-lived: an upload is retried). */
  stagedFilesSkipped: number;
  durationMs: number;
}

export interface CopyOptions {
  onProgress?: (progress: CopyProgress) => void;
  /** How the user named the target, for messages: its rows (`--to`) and its bytes (`--storage-to`). Default: the locations alone. */
  targetNames?: TargetNames;
}

export interface TargetNames {
  rows?: string;
  bytes?: string;
}

/** The dumper of an opened storage (its `dump` hook); StoreCopyError when its backend has none. */
export function dumperOf(storage: RegistryStorage, role: string): StoreDumper {
  if (!storage.dump) throw new StoreCopyError('NO_DUMP', `the ${role} storage cannot be copied: its backend gives no dump (RegistryStorage.dump)`);
  return storage.dump;
}

const KIND_NAMES: Record<keyof StoreCounts, [string, string]> = {
  versions: ['version', 'versions'],
  tokens: ['token', 'tokens'],
  owners: ['owned name', 'owned names'],
  coOwners: ['co-owner', 'co-owners'],
  users: ['account', 'accounts'],
  sessions: ['session', 'sessions'],
  webhooks: ['webhook', 'webhooks'],
  outbox: ['outbox delivery', 'outbox deliveries'],
  deliveryAttempts: ['delivery attempt', 'delivery attempts'],
  events: ['event', 'events'],
  analytics: ['version with analytics', 'versions with analytics'],
  stagedFiles: ['staged file', 'staged files'],
  settings: ['setting', 'settings'],
  trustedPublishers: ['trusted publisher', 'trusted publishers'],
  usedIdTokens: ['exchanged ID token', 'exchanged ID tokens'],
  purgedVersions: ['purged version', 'purged versions'],
};

const named = (location: string, name: string | undefined): string => (name === undefined ? location : `${location} (${name})`);

/** The prefixes of a store's own bytes in its blob store; anything below them belongs to a store. */
const STORE_PREFIXES = ['archives/', 'manifests/', FILES_PREFIX];

/** The first key of a store's bytes in `blobs`, or undefined when it holds none. */
async function firstStoreKey(blobs: StoreDumper['blobs']): Promise<string | undefined> {
  for (const prefix of STORE_PREFIXES) {
    for await (const { key } of blobs.list(prefix)) return key;
  }
  return undefined;
}

/**
 * Refuses a target holding anything but settings (a store opened once may have made its signing
 * key; the source's replaces it), or whose blob store holds archives, manifests or staged files (a
 * store in use may keep its rows elsewhere, in another database, with its bytes there): a copy never
 * merges into, nor overwrites, a store in use. Writes nothing.
 */
export async function assertEmptyTarget(target: StoreDumper, names: TargetNames = {}): Promise<void> {
  const counts = await target.counts();
  const held = (Object.keys(KIND_NAMES) as (keyof StoreCounts)[])
    .filter((kind) => kind !== 'settings' && counts[kind] > 0)
    .map((kind) => `${counts[kind]} ${KIND_NAMES[kind][counts[kind] === 1 ? 0 : 1]}`);
  if (held.length > 0) {
    throw new StoreCopyError(
      'TARGET_NOT_EMPTY',
      `the target ${named(target.location, names.rows)} is not empty (it holds ${held.join(', ')}): store copy writes only into an empty store, so that it never merges into or overwrites one in use`,
    );
  }
  const key = await firstStoreKey(target.blobs);
  if (key !== undefined) {
    throw new StoreCopyError(
      'TARGET_NOT_EMPTY',
      `the target's storage ${named(target.blobs.location, names.bytes)} is not empty (it holds ${key}, maybe of a store whose rows are elsewhere): store copy writes only into an empty folder or prefix, so that it never overwrites the archives of a store in use`,
    );
  }
}

/**
 * Claims the target's rows (when its backend can) and its blob store for this copy, in that order;
 * a target another copy holds is refused as not empty, saying so.
 */
async function claimTarget(target: StoreDumper & Partial<Claimable>, names: TargetNames): Promise<CopyClaim> {
  const held: CopyClaim[] = [];
  const release = async (): Promise<void> => {
    // A claim left behind (a marker that could not be deleted) blocks a later copy, which says where it is: never worth failing a copy for.
    for (const claim of held.splice(0).reverse()) await claim.release().catch(() => undefined);
  };
  try {
    if (typeof target.claim === 'function') {
      const rows = await target.claim();
      if ('busy' in rows) throw new StoreCopyError('TARGET_NOT_EMPTY', `the target ${named(target.location, names.rows)} is taken: ${rows.busy}`);
      held.push(rows.claimed);
    }
    const bytes = await claimBlobStore(target.blobs);
    if ('busy' in bytes) throw new StoreCopyError('TARGET_NOT_EMPTY', `the target's storage ${named(target.blobs.location, names.bytes)} is taken: ${bytes.busy}`);
    held.push(bytes.claimed);
  } catch (error) {
    await release();
    throw error;
  }
  return { release };
}

const manifestText = (manifest: unknown): string => `${JSON.stringify(manifest, null, 2)}\n`;

/** Copies `source` into the empty `target`; see the file's comment for the order and the guarantees. */
export async function copyStore(source: StoreDumper, target: StoreDumper & Partial<Claimable>, options: CopyOptions = {}): Promise<CopySummary> {
  const started = Date.now();
  const names = options.targetNames ?? {};
  // Checked before the claims too: a store in use is refused without even a lock file written into it.
  await assertEmptyTarget(target, names);
  const claim = await claimTarget(target, names);
  try {
    // Again under the claims: a copy that finished between the first check and the claims is seen now.
    await assertEmptyTarget(target, names);
    return await copyClaimed(source, target, options, started);
  } finally {
    await claim.release();
  }
}

async function copyClaimed(source: StoreDumper, target: StoreDumper, options: CopyOptions, started: number): Promise<CopySummary> {
  const report = options.onProgress ?? (() => undefined);
  const dump = await source.read();
  const counts = countsOfDump(dump);
  report({ step: 'read', counts });

  const written: string[] = [];
  const scratch = await mkdtemp(path.join(tmpdir(), 'tr-store-copy-'));
  let archives = 0;
  let archiveBytes = 0;
  let manifests = 0;
  try {
    const complete = dump.versions.filter((version) => version.state === 'complete');
    let index = 0;
    for (const version of dump.versions) {
      if (version.state === 'complete') {
        index++;
        const size = await copyArchive(source, target, version, scratch, written);
        report({ step: 'archive', name: version.name, version: version.version, index, total: complete.length, size });
        archives++;
        archiveBytes += size;
        await copyManifest(source, target, version, written);
        manifests++;
        await copyAttestation(source, target, version, written);
        continue;
      }
      // A pending version is an upload in progress or one a crash left: its row is copied as pending,
      // its bytes only when they are whole (the target's recover() then completes it, as the
      // source's would have); otherwise the target's recover() removes it.
      try {
        const size = await copyArchive(source, target, version, scratch, written);
        await copyManifest(source, target, version, written);
        await copyAttestation(source, target, version, written);
        archives++;
        archiveBytes += size;
        manifests++;
      } catch (error) {
        if (!(error instanceof StoreCopyError)) throw error;
        report({ step: 'pending-skipped', name: version.name, version: version.version, reason: error.message });
        // Whatever of it was written goes: a half pair must not let recover() complete it.
        await removeKeys(target, [archiveKey(version.name, version.version), manifestKey(version.name, version.version), attestationKey(version.name, version.version)], written);
      }
    }
    report({ step: 'rows' });
    await target.load(dump);
  } catch (error) {
    // Nothing of a failed copy stays: the rows were not written (or rolled back), the blobs go.
    await Promise.allSettled(written.map((key) => target.blobs.delete(key)));
    throw error;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  report({ step: 'done' });
  return {
    from: { backend: source.backend, location: source.location, storage: source.blobs.location },
    to: { backend: target.backend, location: target.location, storage: target.blobs.location },
    ...summaryCounts(counts),
    completeVersions: dump.versions.filter((version) => version.state === 'complete').length,
    pendingVersions: dump.versions.filter((version) => version.state === 'pending').length,
    archives,
    archiveBytes,
    manifests,
    stagedFilesSkipped: dump.stagedFilesSkipped,
    durationMs: Date.now() - started,
  };
}

/** The counts a copy's summary reports of the rows it wrote, as the summary names them. */
function summaryCounts({ outbox, analytics: _analytics, purgedVersions: _purged, stagedFiles: _staged, ...same }: StoreCounts): Omit<StoreCounts, 'outbox' | 'analytics' | 'purgedVersions' | 'stagedFiles'> & { outboxDeliveries: number } {
  return { ...same, outboxDeliveries: outbox };
}

/** The algorithms an SRI string may name (the same set archive/integrity.ts hashes with; store/ may not import archive/). */
const SRI_ALGORITHMS = ['sha512', 'sha384', 'sha256'];

/** A pass-through that hashes what flows through it with every SRI algorithm, and counts it. */
class Hashing extends Transform {
  readonly #hasher = ssri.create({ algorithms: SRI_ALGORITHMS });
  size = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hasher.update(chunk);
    this.size += chunk.length;
    callback(null, chunk);
  }

  /** Every hash of the bytes seen (call once, when they have all flowed). */
  hashes(): Integrity {
    return this.#hasher.digest();
  }
}

/**
 * Why bytes of `size` with `hashes` are not the archive a version row describes, or undefined when
 * they are: its size, its SRI `integrity` (the strongest algorithm listed decides, any of its digests
 * may match, as archive/integrity.ts `verifyIntegrity` rules) and its hex sha256.
 */
export function archiveMismatch(row: Pick<DumpVersion, 'size' | 'sha256' | 'integrity'>, hashes: Integrity, size: number): string | undefined {
  if (size !== row.size) return `size mismatch: the row says ${row.size} bytes, the source holds ${size}`;
  let wanted: ReturnType<typeof ssri.parse>;
  try {
    wanted = ssri.parse(row.integrity, { strict: true });
  } catch {
    return `the row's integrity is not an SRI string: ${row.integrity}`;
  }
  const algorithm = wanted.isEmpty() ? null : wanted.pickAlgorithm();
  if (algorithm === null) return `the row's integrity has no supported hash: ${row.integrity}`;
  const found = `${algorithm}-${hashes[algorithm]?.[0]?.digest ?? ''}`;
  if (!wanted.match(found)) return `integrity mismatch: the row says ${row.integrity}, the bytes are ${found}`;
  const sha256 = Buffer.from(hashes.sha256?.[0]?.digest ?? '', 'base64').toString('hex');
  if (row.sha256.toLowerCase() !== sha256) return `sha256 mismatch: the row says ${row.sha256}, the bytes are ${sha256}`;
  return undefined;
}

/**
 * Reads a version's archive from the source into a scratch file, hashing it on the way; checks its
 * size, sha256 and SRI integrity against the version row; writes it to the target. Returns its size.
 */
async function copyArchive(source: StoreDumper, target: StoreDumper, version: DumpVersion, scratch: string, written: string[]): Promise<number> {
  const label = `${version.name}@${version.version}`;
  const key = archiveKey(version.name, version.version);
  const reader = await source.blobs.open(key);
  if (!reader) throw new StoreCopyError('ARCHIVE_MISSING', `the archive of ${label} is missing from the source (${key} in ${source.blobs.location})`, label);
  const file = path.join(scratch, 'archive.tgz');
  const hashing = new Hashing();
  await pipeline(reader.stream, hashing, createWriteStream(file, { mode: 0o600 }));
  const mismatch = archiveMismatch(version, hashing.hashes(), hashing.size);
  if (mismatch !== undefined) {
    throw new StoreCopyError('INTEGRITY_MISMATCH', `${label}: the archive in the source does not match its version row (${mismatch}): nothing was copied`, label);
  }
  written.push(key);
  await target.blobs.putFile(key, file, { contentType: 'application/gzip' });
  await rm(file, { force: true });
  return hashing.size;
}

/** Copies a version's manifest file (or writes it from the row); fills the row's manifest when it had none. */
async function copyManifest(source: StoreDumper, target: StoreDumper, version: DumpVersion, written: string[]): Promise<void> {
  const label = `${version.name}@${version.version}`;
  const key = manifestKey(version.name, version.version);
  const bytes = await source.blobs.readBytes(key);
  let text: string | Buffer;
  if (bytes) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8')) as unknown;
    } catch {
      throw new StoreCopyError('MANIFEST_INVALID', `${label}: its manifest in the source (${key} in ${source.blobs.location}) is invalid: not JSON`, label);
    }
    const problem = manifestProblem(parsed, version);
    if (problem !== undefined) {
      throw new StoreCopyError('MANIFEST_INVALID', `${label}: its manifest in the source (${key} in ${source.blobs.location}) is invalid: ${problem}`, label);
    }
    version.manifest ??= parsed;
    text = bytes;
  } else if (version.manifest !== null) {
    text = manifestText(version.manifest);
  } else {
    throw new StoreCopyError('MANIFEST_MISSING', `${label}: its manifest is missing from the source (${key} in ${source.blobs.location}, and not in its row)`, label);
  }
  written.push(key);
  await target.blobs.putBytes(key, text, { contentType: 'application/json' });
}

/** Copies the provenance bundle of a version uploaded with one, as it is (it was verified at upload, and is never rewritten). */
async function copyAttestation(source: StoreDumper, target: StoreDumper, version: DumpVersion, written: string[]): Promise<void> {
  if (version.attestation === null || version.attestation === undefined) return;
  const key = attestationKey(version.name, version.version);
  const bytes = await source.blobs.readBytes(key);
  if (!bytes) {
    const label = `${version.name}@${version.version}`;
    throw new StoreCopyError('ATTESTATION_MISSING', `${label}: its provenance bundle is missing from the source (${key} in ${source.blobs.location})`, label);
  }
  written.push(key);
  await target.blobs.putBytes(key, bytes, { contentType: 'application/json' });
}

/** Why parsed manifest bytes are not `version`'s manifest, or undefined when they are (its name and version; the rest was checked at upload). */
function manifestProblem(parsed: unknown, version: DumpVersion): string | undefined {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `not a JSON object, so not ${version.name}@${version.version}'s`;
  const { name, version: itsVersion } = parsed as { name?: unknown; version?: unknown };
  const shown = (field: string, value: unknown): string => (value === undefined ? `no "${field}"` : `"${field}" ${JSON.stringify(value)}`);
  if (name === version.name && itsVersion === version.version) return undefined;
  return `it has ${shown('name', name)} and ${shown('version', itsVersion)}, not those of ${version.name}@${version.version}`;
}

async function removeKeys(target: StoreDumper, keys: string[], written: string[]): Promise<void> {
  for (const key of keys) {
    const at = written.indexOf(key);
    if (at === -1) continue;
    written.splice(at, 1);
    await target.blobs.delete(key);
  }
}
