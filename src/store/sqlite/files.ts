/**
 * Files staged by large uploads (`/files`): a row each in `staged_files`, the bytes in the blob
 * store at `files/<id>` (by default the file `files/<id>` of the store folder).
 * The capability that lets the bytes be uploaded without a token is kept as its SHA-256 only.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';

import type Database from 'better-sqlite3';

import { FILES_PREFIX, isStagedFileId, stagedFileKey } from '../blob-layout.js';
import { capabilityHolds, checkStagedBytes, checkStagedFiles } from '../records.js';
import { stagedFileOf as toFile, stagedUsageOf, type StagedFileRow as FileRow, type StagedUsageRow } from '../rows.js';
import { secretDigest } from '../secrets.js';
import { StagedQuotaError, type ArchiveReader, type BlobStore, type FileStore, type NewStagedFile, type StagedFile, type StagedUsage, type StoredStagedFile } from '../types.js';

export class SqliteFileStore implements FileStore {
  constructor(
    private readonly db: Database.Database,
    private readonly blobs: BlobStore,
  ) {}

  private row(id: string): FileRow | undefined {
    if (!isStagedFileId(id)) return undefined;
    return this.db.prepare('SELECT * FROM staged_files WHERE id = ?').get(id) as FileRow | undefined;
  }

  /** What a token has staged at `now`, leaving out the file `except`. */
  private usageOf(tokenId: string, now: Date, except = ''): StagedUsage {
    const row = this.db
      .prepare('SELECT COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes, MIN(expires_at) AS next FROM staged_files WHERE token_id = ? AND expires_at > ? AND id != ?')
      .get(tokenId, now.toISOString(), except) as StagedUsageRow;
    return stagedUsageOf(row);
  }

  usage(tokenId: string, now: Date = new Date()): Promise<StagedUsage> {
    return Promise.resolve(this.usageOf(tokenId, now));
  }

  createFile(options: NewStagedFile): Promise<{ file: StagedFile; capability: string }> {
    const now = options.now ?? new Date();
    const id = randomUUID();
    const capability = randomBytes(32).toString('base64url');
    // IMMEDIATE: the count and the insert in one write transaction, whatever other process shares the store.
    const create = this.db.transaction((): FileRow | undefined => {
      checkStagedFiles(this.usageOf(options.tokenId, now), options.maxFiles);
      this.db
        .prepare("INSERT INTO staged_files (id, token_id, filename, content_type, capability, state, created_at, expires_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)")
        .run(id, options.tokenId, options.filename, options.contentType, secretDigest(capability), now.toISOString(), options.expiresAt.toISOString());
      return this.row(id);
    });
    // A refusal is a rejected promise, as on every backend, never a throw.
    try {
      const row = create.immediate();
      if (!row) throw new Error(`staged file ${id} vanished`);
      return Promise.resolve({ file: toFile(row), capability });
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  getFile(id: string): Promise<StagedFile | undefined> {
    const row = this.row(id);
    return Promise.resolve(row ? toFile(row) : undefined);
  }

  checkCapability(id: string, capability: string, now: Date = new Date()): Promise<StagedFile | undefined> {
    const row = this.row(id);
    if (!row) return Promise.resolve(undefined);
    const file = toFile(row);
    return Promise.resolve(capabilityHolds(row.capability, secretDigest(capability), file.expiresAt, now) ? file : undefined);
  }

  /** The token's staged bytes with `size` more in place of the file `id`'s: a StagedQuotaError past `maxBytes`. */
  private checkBytes(row: FileRow, size: number, maxBytes: number | undefined): void {
    if (maxBytes === undefined) return;
    checkStagedBytes(this.usageOf(row.token_id, new Date(), row.id), size, maxBytes);
  }

  async storeContent(id: string, localFile: string, digests: { size: number; sha256: string; integrity: string }, maxBytes?: number): Promise<StoredStagedFile | undefined> {
    const row = this.row(id);
    if (!row || (row.state !== 'pending' && row.state !== 'uploaded')) return undefined;
    this.checkBytes(row, digests.size, maxBytes);
    const copyable = await this.blobs.putFile(stagedFileKey(id), localFile, { contentType: row.content_type });
    // A folder store moved the file in; a bucket copied it, and the copy in tmp/ is no longer wanted.
    await rm(localFile, { force: true });
    let changed: number;
    try {
      // Checked again with the change (IMMEDIATE): another upload of the token may have been stored meanwhile.
      changed = this.db
        .transaction((): number => {
          this.checkBytes(row, digests.size, maxBytes);
          return this.db
            .prepare("UPDATE staged_files SET state = 'uploaded', size = ?, sha256 = ?, integrity = ? WHERE id = ? AND state IN ('pending', 'uploaded')")
            .run(digests.size, digests.sha256, digests.integrity, id).changes;
        })
        .immediate();
    } catch (error) {
      if (!(error instanceof StagedQuotaError)) throw error;
      // The bytes just stored replaced any earlier ones: the file has none now.
      this.db.prepare("UPDATE staged_files SET state = 'pending', size = NULL, sha256 = NULL, integrity = NULL WHERE id = ? AND state IN ('pending', 'uploaded')").run(id);
      await this.blobs.delete(stagedFileKey(id));
      throw error;
    }
    if (changed === 0) {
      // Swept or confirmed meanwhile: the bytes just moved in are not wanted.
      if (!this.row(id)) await this.blobs.delete(stagedFileKey(id));
      return undefined;
    }
    const stored = await this.getFile(id);
    return stored && (copyable ? { ...stored, copyable } : stored);
  }

  confirmFile(id: string, expiresAt: Date): Promise<StagedFile | undefined> {
    const changed = this.db.prepare("UPDATE staged_files SET state = 'confirmed', expires_at = ? WHERE id = ? AND state = 'uploaded'").run(expiresAt.toISOString(), id).changes;
    return changed === 0 ? Promise.resolve(undefined) : this.getFile(id);
  }

  claimFile(id: string): Promise<StagedFile | undefined> {
    const changed = this.db.prepare("UPDATE staged_files SET state = 'claimed' WHERE id = ? AND state = 'confirmed'").run(id).changes;
    return changed === 0 ? Promise.resolve(undefined) : this.getFile(id);
  }

  releaseFile(id: string): Promise<void> {
    this.db.prepare("UPDATE staged_files SET state = 'confirmed' WHERE id = ? AND state = 'claimed'").run(id);
    return Promise.resolve();
  }

  async openFile(id: string): Promise<ArchiveReader | undefined> {
    if (!this.row(id)) return undefined;
    return this.blobs.open(stagedFileKey(id));
  }

  async deleteFile(id: string): Promise<boolean> {
    if (!isStagedFileId(id)) return false;
    const removed = this.db.prepare('DELETE FROM staged_files WHERE id = ?').run(id).changes > 0;
    await this.blobs.delete(stagedFileKey(id));
    return removed;
  }

  async sweepFiles(now: Date = new Date()): Promise<number> {
    const expired = this.db.prepare("SELECT id FROM staged_files WHERE expires_at <= ? AND state != 'claimed'").all(now.toISOString()) as { id: string }[];
    let count = 0;
    for (const { id } of expired) {
      if (this.db.prepare("DELETE FROM staged_files WHERE id = ? AND state != 'claimed'").run(id).changes > 0) count++;
      await this.blobs.delete(stagedFileKey(id));
    }
    return count;
  }

  /** At start (no publish running): claims a crash left are given back, bytes without a row removed. */
  async recover(): Promise<void> {
    this.db.prepare("UPDATE staged_files SET state = 'confirmed' WHERE state = 'claimed'").run();
    // A row is always written before its bytes, so at start no bytes without a row are wanted.
    for await (const { key } of this.blobs.list(FILES_PREFIX)) {
      if (!this.row(key.slice(FILES_PREFIX.length))) await this.blobs.delete(key);
    }
  }
}
