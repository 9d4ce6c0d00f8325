/**
 * What this server saw of a staged file's bytes as they arrived: their SHA-256, and the file they
 * were written to as it stood then (device, inode, size, mtime; a folder store renames that file
 * in, so it keeps them). A publish of the file on this server whose link to the stored file still
 * has that identity takes the recorded digest instead of reading the bytes once more for it, as
 * git's index trusts a file's stat; the bytes are still unpacked, in one pass, for the archive check.
 *
 * Bytes that went to a bucket leave a local copy here (a second link to the file that was
 * uploaded), with where the bucket put them (key and ETag): their publish reads the copy instead of
 * downloading what was just uploaded, and the bucket copies its object (only while it is still that
 * ETag; else the checked local copy is stored). The copies are bounded in count and bytes, removed
 * when their file is published, uploaded again or swept (expired), and named after this process (a
 * start removes what a killed one left).
 *
 * The bytes were also unpacked as they arrived, for the archive check (into a private folder, with
 * binary files as their heads alone): the few most recent such folders are kept with their
 * identities, and a publish of the unchanged file takes one instead of reading and inflating the
 * bytes again. A folder is taken once (the publish removes it), and removed with its identity.
 *
 * A cache, never the only way: without an identity here (another instance took the PUT, the server
 * restarted), or when the file changed, the publish digests the bytes as before. What a change
 * behind the server's back that kept all four would slip past is the stored copy, not a client: a
 * version's integrity is the SHA-512 of the bytes as they arrived, and clients check it on every download.
 */
import { rmSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';

import type { UnpackedArchive } from '../archive/index.js';
import type { BlobCopySource } from '../store/index.js';

export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface StagedIdentity {
  /** The SHA-256 of the bytes as they arrived. */
  sha256: string;
  file: FileIdentity;
  /** Bytes stored in a bucket: the local copy kept of them (a link to `file`), and where they are in the bucket. */
  local?: { path: string; copyable: BlobCopySource };
  /** The bytes as unpacked while they arrived, for the archive check: the folder they are in, and what it holds. */
  unpacked?: KeptUnpack;
}

export interface KeptUnpack {
  dir: string;
  archive: UnpackedArchive;
}

export const identityOf = (stats: Stats): FileIdentity => ({ dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs });

/** Whether `file` is still the file of `identity`, unchanged since. */
export async function sameFile(file: string, identity: FileIdentity): Promise<boolean> {
  const now = await stat(file).catch(() => undefined);
  return now !== undefined && now.dev === identity.dev && now.ino === identity.ino && now.size === identity.size && now.mtimeMs === identity.mtimeMs;
}

/** Default: the identities of the last 1,000 files staged (a hundred bytes each); older ones are forgotten. */
const STAGED_IDENTITIES_KEPT = 1000;
/** Default: the local copies of bytes stored in a bucket take at most 2 GiB of disk; the oldest go first. */
const LOCAL_COPY_BYTES_KEPT = 2 * 1024 ** 3;
/** Default: the unpacked folders of the last 4 files staged are kept (each within the check's unpack limits); older ones are removed. */
const UNPACKED_KEPT = 4;

const removeFolder = (dir: string): void => rmSync(dir, { recursive: true, force: true });

export class StagedIdentities {
  readonly #kept = new Map<string, StagedIdentity>();
  #localBytes = 0;

  constructor(
    readonly capacity = STAGED_IDENTITIES_KEPT,
    readonly localBytesCapacity = LOCAL_COPY_BYTES_KEPT,
    readonly unpackedCapacity = UNPACKED_KEPT,
  ) {}

  /** Records the bytes of `fileId` (in place of earlier ones: its bytes were uploaded again); `identity.local` and `identity.unpacked` are this cache's to remove from now on. */
  keep(fileId: string, identity: StagedIdentity): void {
    this.forget(fileId);
    this.#kept.set(fileId, identity);
    if (identity.local) this.#localBytes += identity.file.size;
    for (const oldest of this.#kept.keys()) {
      if (this.#kept.size <= this.capacity && this.#localBytes <= this.localBytesCapacity) break;
      this.forget(oldest);
    }
    const unpacked = [...this.#kept.values()].filter((kept) => kept.unpacked !== undefined);
    for (const oldest of unpacked.slice(0, Math.max(0, unpacked.length - this.unpackedCapacity))) {
      removeFolder((oldest.unpacked as KeptUnpack).dir);
      delete oldest.unpacked;
    }
  }

  /**
   * The unpacked folder recorded for `fileId` when its bytes are `sha256`, handed over: the caller
   * removes it from now on, and it is not given again. Undefined when there is none.
   */
  takeUnpacked(fileId: string, sha256: string | undefined): KeptUnpack | undefined {
    const kept = this.get(fileId, sha256);
    const unpacked = kept?.unpacked;
    if (kept) delete kept.unpacked;
    return unpacked;
  }

  /** The identity recorded for `fileId` when its bytes are `sha256`, else undefined. */
  get(fileId: string, sha256: string | undefined): StagedIdentity | undefined {
    const kept = this.#kept.get(fileId);
    return kept !== undefined && kept.sha256 === sha256 ? kept : undefined;
  }

  /** Forgets `fileId`, removing its local copy. */
  forget(fileId: string): void {
    const kept = this.#kept.get(fileId);
    if (kept === undefined) return;
    this.#kept.delete(fileId);
    if (kept.unpacked !== undefined) removeFolder(kept.unpacked.dir);
    if (kept.local === undefined) return;
    this.#localBytes -= kept.file.size;
    // Synchronous, so that no copy outlives its entry (an unlink, not a read of its bytes).
    rmSync(kept.local.path, { force: true });
  }

  /** The files recorded, oldest first. */
  fileIds(): string[] {
    return [...this.#kept.keys()];
  }

  /** Forgets every file (the server is closing). */
  clear(): void {
    for (const fileId of [...this.#kept.keys()]) this.forget(fileId);
  }
}
