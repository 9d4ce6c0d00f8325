/**
 * The rules of a version's life in the store, one place for both backends (the SQLite and the
 * PostgreSQL stores call these and only run the SQL): what a version row becomes, when a commit
 * may go ahead, the order its bytes are written in before its row is completed, what a lifecycle
 * change makes of the row, and what a restart does with a pending version a crash left.
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';

import type { TemplateManifest } from '../core/schema-types.js';
import { isLooseVersion, isTemplateName } from '../core/versions.js';
import { archiveKey, attestationKey, manifestKey, manifestText } from './blob-layout.js';
import { versionOwner } from './records.js';
import { jsonOf, timeOf, type JsonColumn, type TimeColumn } from './rows.js';
import type { ArchiveReader, ArchiveToStore, BlobStore, LifecycleChange, NewVersion, PublisherRun, StoredAttestation, StoredVersion, TokenRecord, VersionLifecycle, VersionStability } from './types.js';

/** Every column of a version row but the manifest (which only a registry build needs), in both schemas. */
export const VERSION_COLUMNS = 'name, version, state, integrity, sha256, size, owner, created_at, stability, deprecation_message, yanked_at, publisher, attestation';

/**
 * A row read as an array of `VERSION_COLUMNS`, then `manifest` (better-sqlite3's `raw()`): the driver
 * makes a row object property by property, which at a full build's 100,000 rows took longer than
 * reading them (about 600 ms against 400 for the same rows as arrays).
 */
export function versionRowOf(values: readonly unknown[]): VersionRow & { manifest: string | null } {
  const [name, version, state, integrity, sha256, size, owner, created_at, stability, deprecation_message, yanked_at, publisher, attestation, manifest] = values as [
    VersionRow['name'],
    VersionRow['version'],
    VersionRow['state'],
    VersionRow['integrity'],
    VersionRow['sha256'],
    VersionRow['size'],
    VersionRow['owner'],
    VersionRow['created_at'],
    VersionRow['stability'],
    VersionRow['deprecation_message'],
    VersionRow['yanked_at'],
    VersionRow['publisher'],
    VersionRow['attestation'],
    string | null,
  ];
  return { name, version, state, integrity, sha256, size, owner, created_at, stability, deprecation_message, yanked_at, publisher, attestation, manifest };
}

/** The lifecycle columns of a version row, as the rules read them (times as ISO 8601). */
export interface LifecycleColumns {
  stability: VersionStability | null;
  deprecationMessage: string | null;
  yankedAt: string | null;
}

/** A version row (the columns of `VERSION_COLUMNS`) as either driver reads it. */
export interface VersionRow {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  integrity: string;
  sha256: string;
  /** pg reads a bigint as text. */
  size: number | string;
  owner: string;
  created_at: TimeColumn;
  stability: VersionStability | null;
  deprecation_message: string | null;
  yanked_at: TimeColumn | null;
  publisher: JsonColumn<PublisherRun> | null;
  attestation: JsonColumn<StoredAttestation> | null;
}

/** The lifecycle columns of a row. */
export const lifecycleColumns = (row: Pick<VersionRow, 'stability' | 'deprecation_message' | 'yanked_at'>): LifecycleColumns => ({
  stability: row.stability,
  deprecationMessage: row.deprecation_message,
  yankedAt: row.yanked_at ? timeOf(row.yanked_at) : null,
});

/** The lifecycle of a row, as the optional fields of a version (a column left empty is no field). */
export function lifecycleOf(columns: LifecycleColumns): VersionLifecycle {
  return {
    ...(columns.stability ? { stability: columns.stability } : {}),
    ...(columns.deprecationMessage !== null ? { deprecationMessage: columns.deprecationMessage } : {}),
    ...(columns.yankedAt ? { yankedAt: columns.yankedAt } : {}),
  };
}

/** What a version row is to the rest of the server. */
export function versionOf(row: VersionRow): StoredVersion {
  return {
    name: row.name,
    version: row.version,
    state: row.state,
    integrity: row.integrity,
    sha256: row.sha256,
    size: Number(row.size),
    owner: row.owner,
    createdAt: timeOf(row.created_at),
    ...lifecycleOf(lifecycleColumns(row)),
    ...(row.publisher ? { publisher: jsonOf(row.publisher) } : {}),
    ...(row.attestation ? { attestation: jsonOf(row.attestation) } : {}),
  };
}

/** The columns a reservation writes (a pending row; its manifest comes with the commit), as both schemas name them. */
export interface ReservedColumns {
  integrity: string;
  sha256: string;
  size: number;
  owner: string;
  created_at: string;
  publisher: string | null;
  attestation: string | null;
}

/** When a reservation is recorded as made: the version's own time when it brings one (a copy, a test), else now. */
export const reservedAt = (version: NewVersion, now: Date = new Date()): string => version.createdAt ?? now.toISOString();

/**
 * What reserving `version` for `token` writes, on a name whose owners are `owners` (before its
 * claim): the digests, the owner it is recorded with (`versionOwner`), when (`reservedAt`), the
 * run of a token minted for trusted publishing, and what its provenance bundle says.
 */
export function reservedColumns(version: NewVersion, token: TokenRecord, owners: readonly string[], createdAt: string): ReservedColumns {
  return {
    integrity: version.integrity,
    sha256: version.sha256,
    size: version.size,
    owner: versionOwner(token, owners),
    created_at: createdAt,
    publisher: token.publisher ? JSON.stringify(token.publisher) : null,
    attestation: version.attestation ? JSON.stringify(version.attestation) : null,
  };
}

/**
 * The lifecycle columns after `change`, and whether they changed. The stability is stored only when
 * it differs from the manifest's (an undone deprecation leaves no trace); a message only while the
 * version is deprecated; a yank is never undone and keeps its first time.
 */
export function nextLifecycle(current: LifecycleColumns, manifestStability: VersionStability | undefined, change: LifecycleChange): { columns: LifecycleColumns; changed: boolean } {
  const published = manifestStability ?? 'stable';
  const effective = change.stability ?? current.stability ?? published;
  const stability = effective === published ? null : effective;
  const message = effective !== 'deprecated' ? null : change.deprecationMessage === undefined ? current.deprecationMessage : change.deprecationMessage;
  const yankedAt = current.yankedAt ?? (change.yanked ? (change.now ?? new Date()).toISOString() : null);
  const changed = stability !== current.stability || message !== current.deprecationMessage || yankedAt !== current.yankedAt;
  return { columns: { stability, deprecationMessage: message, yankedAt }, changed };
}

/** What a commit reads of the reservation (a backend's row as it is). */
export interface Reserved {
  name: string;
  version: string;
  state: 'pending' | 'complete';
  attestation?: JsonColumn<StoredAttestation> | null;
}

/**
 * Whether the reservation `reserved` may be committed (with `attestation`, the provenance bundle):
 * only a pending version, never a complete one (its bytes are not overwritten, nothing is told
 * again) nor one never reserved; one reserved with an attestation only with its bundle. Throws
 * before any byte is written.
 */
export function checkCommit<Row extends Reserved>(name: string, version: string, reserved: Row | undefined, attestation: string | undefined): asserts reserved is Row {
  if (!reserved) throw new Error(`version ${name}@${version} is not reserved: nothing to commit`);
  if (reserved.state !== 'pending') throw new Error(`version ${name}@${version} is already complete`);
  if (reserved.attestation && attestation === undefined) throw new Error(`version ${name}@${version} was reserved with an attestation: commit it with its bundle`);
}

/**
 * Writes a committed version's bytes, all before its row is completed (a put resolves once the bytes
 * and their names are durable: 201 means stored, and no version is ever listed without its archive).
 * The order: the provenance bundle (when the version was reserved with one), the manifest, then the
 * archive, so that a version whose archive is stored has all its bytes, which is what `pendingIsWhole`
 * checks after a crash. The upload's temp file goes after (a folder moved it in; a bucket copied it).
 */
export async function writeVersionBytes(
  blobs: BlobStore,
  reserved: Reserved,
  archive: ArchiveToStore,
  manifest: TemplateManifest,
  attestation: string | undefined,
): Promise<void> {
  const { name, version } = reserved;
  if (reserved.attestation && attestation !== undefined) await blobs.putBytes(attestationKey(name, version), attestation, { contentType: 'application/json' });
  await blobs.putBytes(manifestKey(name, version), manifestText(manifest), { contentType: 'application/json' });
  const file = typeof archive === 'string' ? archive : archive.file;
  // Bytes the store holds (a staged file) are copied within it; the local file when it cannot.
  const copied = typeof archive !== 'string' && blobs.copy !== undefined && (await blobs.copy(archive.copyOf, archiveKey(name, version), { contentType: 'application/gzip' }));
  if (!copied) await blobs.putFile(archiveKey(name, version), file, { contentType: 'application/gzip' });
  await rm(file, { force: true });
}

/** Whether name@version can have bytes at all (keys are made only of valid names and versions). */
export const hasVersionKeys = (name: string, version: string): boolean => isTemplateName(name) && isLooseVersion(version);

/** The archive of name@version; undefined when there is none (and for a name or version no key is made of). */
export function openVersionArchive(blobs: BlobStore, name: string, version: string): Promise<ArchiveReader | undefined> {
  return hasVersionKeys(name, version) ? blobs.open(archiveKey(name, version)) : Promise.resolve(undefined);
}

/** The provenance bundle of name@version (`stored`: its row), kept only for a version reserved with one; undefined else. */
export function readVersionBundle(blobs: BlobStore, stored: Pick<StoredVersion, 'attestation'> | undefined, name: string, version: string): Promise<Buffer | undefined> {
  return stored?.attestation && hasVersionKeys(name, version) ? blobs.readBytes(attestationKey(name, version)) : Promise.resolve(undefined);
}

/**
 * Removes the bytes of a version that was never completed (an aborted upload, an abandoned
 * reservation), each tried whatever the others did; none of them fails the caller: such bytes are
 * listed nowhere, and the next upload of the version replaces them.
 */
export async function removePendingBytes(blobs: BlobStore, name: string, version: string): Promise<void> {
  if (!hasVersionKeys(name, version)) return;
  await Promise.allSettled([archiveKey, manifestKey, attestationKey].map((key) => blobs.delete(key(name, version))));
}

/**
 * After a crash: the manifest of a pending version whose bytes are whole (its manifest is this
 * version's and its archive has the size and sha256 it was reserved with: its commit stored them and
 * died before its row was completed), undefined when they are not (missing, garbled, other bytes).
 * A blob store that cannot be read throws: a version is never taken for incomplete, and its bytes
 * removed, because the store could not be asked.
 */
export async function pendingIsWhole(blobs: BlobStore, row: Pick<StoredVersion, 'name' | 'version' | 'size' | 'sha256'>): Promise<TemplateManifest | undefined> {
  if (!hasVersionKeys(row.name, row.version)) return undefined;
  const bytes = await blobs.readBytes(manifestKey(row.name, row.version));
  if (!bytes) return undefined;
  let manifest: TemplateManifest | null;
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as TemplateManifest | null;
  } catch {
    return undefined;
  }
  if (manifest?.name !== row.name || manifest.version !== row.version) return undefined;
  const key = archiveKey(row.name, row.version);
  if ((await blobs.stat(key))?.size !== row.size) return undefined;
  const reader = await blobs.open(key);
  if (!reader) return undefined;
  const hash = createHash('sha256');
  for await (const chunk of reader.stream) hash.update(chunk as Buffer);
  return hash.digest('hex') === row.sha256 ? manifest : undefined;
}

/** What a backend does with a pending version at its recovery: its SQL only. */
export interface PendingRecovery {
  /** Marks the version complete with its manifest (it is whole). */
  complete(manifest: TemplateManifest): Promise<void>;
  /** Removes the row and its bytes, when the backend may (no live upload holds it), in the order its concurrency needs. */
  abandon(): Promise<void>;
}

/**
 * The recovery of one pending version a crash may have left: completed when its bytes are whole,
 * abandoned when not. A blob store that cannot be read fails the recovery, leaving row and bytes
 * for the next one.
 */
export async function recoverPending(blobs: BlobStore, row: Pick<StoredVersion, 'name' | 'version' | 'size' | 'sha256'>, backend: PendingRecovery): Promise<'completed' | 'abandoned'> {
  const manifest = await pendingIsWhole(blobs, row);
  if (manifest) {
    await backend.complete(manifest);
    return 'completed';
  }
  await backend.abandon();
  return 'abandoned';
}
