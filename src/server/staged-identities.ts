/**
 * What this server saw of a staged file's bytes as they arrived: their SHA-256, and the file they
 * were written to as it stood then (device, inode, size, mtime; a folder store renames that file
 * in, so it keeps them). A publish of the file on this server whose link to the stored file still
 * has that identity takes the recorded digest instead of reading the bytes once more for it, as
 * git's index trusts a file's stat; the bytes are still unpacked, in one pass, for the archive check.
 *
 * A cache, never the only way: without an identity here (another instance took the PUT, the server
 * restarted, the file's bytes went to a bucket), or when the file changed, the publish digests the
 * bytes as before. What a change behind the server's back that kept all four would slip past is the
 * stored copy, not a client: a version's integrity is the SHA-512 of the bytes as they arrived, and
 * clients check it on every download.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';

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
}

export const identityOf = (stats: Stats): FileIdentity => ({ dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs });

/** Whether `file` is still the file of `identity`, unchanged since. */
export async function sameFile(file: string, identity: FileIdentity): Promise<boolean> {
  const now = await stat(file).catch(() => undefined);
  return now !== undefined && now.dev === identity.dev && now.ino === identity.ino && now.size === identity.size && now.mtimeMs === identity.mtimeMs;
}

/** Default: the identities of the last 1,000 files staged (a hundred bytes each); older ones are forgotten. */
const STAGED_IDENTITIES_KEPT = 1000;

export class StagedIdentities {
  readonly #kept = new Map<string, StagedIdentity>();

  constructor(readonly capacity = STAGED_IDENTITIES_KEPT) {}

  /** Records the bytes of `fileId` (in place of earlier ones: its bytes were uploaded again). */
  keep(fileId: string, identity: StagedIdentity): void {
    this.#kept.delete(fileId);
    this.#kept.set(fileId, identity);
    for (const oldest of this.#kept.keys()) {
      if (this.#kept.size <= this.capacity) break;
      this.#kept.delete(oldest);
    }
  }

  /** The identity recorded for `fileId` when its bytes are `sha256`, else undefined. */
  get(fileId: string, sha256: string | undefined): StagedIdentity | undefined {
    const kept = this.#kept.get(fileId);
    return kept !== undefined && kept.sha256 === sha256 ? kept : undefined;
  }

  forget(fileId: string): void {
    this.#kept.delete(fileId);
  }
}
