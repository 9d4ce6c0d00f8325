/**
 * Files staged by large uploads (`/files`): a row each in `staged_files`, the bytes in the blob store
 * at `files/<id>`. The capability that lets the bytes be uploaded without a token is kept as its
 * SHA-256 only.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';

import type pg from 'pg';

import { FILES_PREFIX, isStagedFileId, stagedFileKey } from '../blob-layout.js';
import { secretDigest } from '../secrets.js';
import { capabilityHolds, checkStagedBytes, checkStagedFiles } from '../records.js';
import { stagedFileOf as toFile, stagedUsageOf, type StagedFileRow as FileRow, type StagedUsageRow } from '../rows.js';
import { StagedQuotaError, type ArchiveReader, type BlobStore, type FileStore, type NewStagedFile, type StagedFile, type StagedUsage, type StoredStagedFile } from '../types.js';
import { transaction, type Queryable } from './database.js';

export class PostgresFileStore implements FileStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly blobs: BlobStore,
  ) {}

  private async row(id: string): Promise<FileRow | undefined> {
    if (!isStagedFileId(id)) return undefined;
    return (await this.pool.query<FileRow>('SELECT * FROM staged_files WHERE id = $1', [id])).rows[0];
  }

  /** What a token has staged at `now`, leaving out the file `except`. */
  private async usageOf(db: Queryable, tokenId: string, now: Date, except = ''): Promise<StagedUsage> {
    const { rows } = await db.query<StagedUsageRow>(
      'SELECT count(*) AS files, COALESCE(sum(size), 0) AS bytes, min(expires_at) AS next FROM staged_files WHERE token_id = $1 AND expires_at > $2 AND id != $3',
      [tokenId, now.toISOString(), except],
    );
    return stagedUsageOf(rows[0]);
  }

  usage(tokenId: string, now: Date = new Date()): Promise<StagedUsage> {
    return this.usageOf(this.pool, tokenId, now);
  }

  /** Runs `work` in a transaction that holds the token's staging lock: the quota checks of one token (on any instance) queue. */
  private withTokenLock<T>(tokenId: string, work: (client: Queryable) => Promise<T>): Promise<T> {
    return transaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`staged-files:${tokenId}`]);
      return work(client);
    });
  }

  async createFile(options: NewStagedFile): Promise<{ file: StagedFile; capability: string }> {
    const now = options.now ?? new Date();
    const id = randomUUID();
    const capability = randomBytes(32).toString('base64url');
    const rows = await this.withTokenLock(options.tokenId, async (client) => {
      checkStagedFiles(await this.usageOf(client, options.tokenId, now), options.maxFiles);
      const inserted = await client.query<FileRow>(
        "INSERT INTO staged_files (id, token_id, filename, content_type, capability, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7) RETURNING *",
        [id, options.tokenId, options.filename, options.contentType, secretDigest(capability), now.toISOString(), options.expiresAt.toISOString()],
      );
      return inserted.rows;
    });
    if (!rows[0]) throw new Error(`staged file ${id} vanished`);
    return { file: toFile(rows[0]), capability };
  }

  /** The token's staged bytes with `size` more in place of the file `row`'s: a StagedQuotaError past `maxBytes`. */
  private async checkBytes(db: Queryable, row: FileRow, size: number, maxBytes: number | undefined): Promise<void> {
    if (maxBytes === undefined) return;
    checkStagedBytes(await this.usageOf(db, row.token_id, new Date(), row.id), size, maxBytes);
  }

  async getFile(id: string): Promise<StagedFile | undefined> {
    const row = await this.row(id);
    return row ? toFile(row) : undefined;
  }

  async checkCapability(id: string, capability: string, now: Date = new Date()): Promise<StagedFile | undefined> {
    const row = await this.row(id);
    if (!row) return undefined;
    const file = toFile(row);
    return capabilityHolds(row.capability, secretDigest(capability), file.expiresAt, now) ? file : undefined;
  }

  async storeContent(id: string, localFile: string, digests: { size: number; sha256: string; integrity: string }, maxBytes?: number): Promise<StoredStagedFile | undefined> {
    const row = await this.row(id);
    if (!row || (row.state !== 'pending' && row.state !== 'uploaded')) return undefined;
    await this.checkBytes(this.pool, row, digests.size, maxBytes);
    // The bytes first, the row after: a row says `uploaded` only when its bytes are stored.
    const copyable = await this.blobs.putFile(stagedFileKey(id), localFile, { contentType: row.content_type });
    // A folder store moved the file in; a bucket copied it, and the local copy is no longer wanted.
    await rm(localFile, { force: true });
    let rows: FileRow[];
    try {
      // Checked again with the change, under the token's lock: another upload of the token may have been stored meanwhile.
      rows = await this.withTokenLock(row.token_id, async (client) => {
        await this.checkBytes(client, row, digests.size, maxBytes);
        const updated = await client.query<FileRow>(
          "UPDATE staged_files SET state = 'uploaded', size = $1, sha256 = $2, integrity = $3 WHERE id = $4 AND state IN ('pending', 'uploaded') RETURNING *",
          [digests.size, digests.sha256, digests.integrity, id],
        );
        return updated.rows;
      });
    } catch (error) {
      if (!(error instanceof StagedQuotaError)) throw error;
      // The bytes just stored replaced any earlier ones: the file has none now.
      await this.pool.query("UPDATE staged_files SET state = 'pending', size = NULL, sha256 = NULL, integrity = NULL WHERE id = $1 AND state IN ('pending', 'uploaded')", [id]);
      await this.blobs.delete(stagedFileKey(id));
      throw error;
    }
    if (!rows[0]) {
      // Swept or confirmed meanwhile: the bytes just stored are not wanted (unless the row still uses them).
      if (!(await this.row(id))) await this.blobs.delete(stagedFileKey(id));
      return undefined;
    }
    return copyable ? { ...toFile(rows[0]), copyable } : toFile(rows[0]);
  }

  async confirmFile(id: string, expiresAt: Date): Promise<StagedFile | undefined> {
    if (!isStagedFileId(id)) return undefined;
    const { rows } = await this.pool.query<FileRow>("UPDATE staged_files SET state = 'confirmed', expires_at = $1 WHERE id = $2 AND state = 'uploaded' RETURNING *", [
      expiresAt.toISOString(),
      id,
    ]);
    return rows[0] ? toFile(rows[0]) : undefined;
  }

  async claimFile(id: string): Promise<StagedFile | undefined> {
    if (!isStagedFileId(id)) return undefined;
    // One conditional update: of concurrent claims (from any instance) one finds it confirmed.
    const { rows } = await this.pool.query<FileRow>("UPDATE staged_files SET state = 'claimed', claimed_at = now() WHERE id = $1 AND state = 'confirmed' RETURNING *", [id]);
    return rows[0] ? toFile(rows[0]) : undefined;
  }

  async releaseFile(id: string): Promise<void> {
    if (!isStagedFileId(id)) return;
    await this.pool.query("UPDATE staged_files SET state = 'confirmed', claimed_at = NULL WHERE id = $1 AND state = 'claimed'", [id]);
  }

  async openFile(id: string): Promise<ArchiveReader | undefined> {
    if (!(await this.row(id))) return undefined;
    return this.blobs.open(stagedFileKey(id));
  }

  async deleteFile(id: string): Promise<boolean> {
    if (!isStagedFileId(id)) return false;
    const removed = ((await this.pool.query('DELETE FROM staged_files WHERE id = $1', [id])).rowCount ?? 0) > 0;
    await this.blobs.delete(stagedFileKey(id));
    return removed;
  }

  async sweepFiles(now: Date = new Date()): Promise<number> {
    const { rows } = await this.pool.query<{ id: string }>("DELETE FROM staged_files WHERE expires_at <= $1 AND state != 'claimed' RETURNING id", [now.toISOString()]);
    for (const { id } of rows) await this.blobs.delete(stagedFileKey(id));
    return rows.length;
  }

  /**
   * At start. Other instances may be publishing with claimed files right now, so only claims older
   * than `graceMs` (by the database's clock) are given back; bytes whose row is gone are removed
   * (a row is always written before its bytes, so no live upload has bytes without a row).
   */
  async recover(graceMs: number): Promise<void> {
    await this.pool.query("UPDATE staged_files SET state = 'confirmed', claimed_at = NULL WHERE state = 'claimed' AND claimed_at < now() - make_interval(secs => $1)", [graceMs / 1000]);
    for await (const { key } of this.blobs.list(FILES_PREFIX)) {
      const id = key.slice(FILES_PREFIX.length);
      if (!(await this.row(id))) await this.blobs.delete(key).catch(() => undefined);
    }
  }
}
