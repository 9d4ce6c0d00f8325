/**
 * Files staged by large uploads (`/files`): a row each in `staged_files`, the bytes in the blob store
 * at `files/<id>`. The capability that lets the bytes be uploaded without a token is kept as its
 * SHA-256 only.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

import type pg from 'pg';

import { FILES_PREFIX, isStagedFileId, stagedFileKey } from '../blob-layout.js';
import { secretDigest } from '../secrets.js';
import type { ArchiveReader, BlobStore, FileStore, NewStagedFile, StagedFile } from '../types.js';
import { int, iso } from './database.js';

interface FileRow {
  id: string;
  token_id: string;
  filename: string;
  content_type: string;
  capability: Buffer;
  state: StagedFile['state'];
  size: string | null;
  sha256: string | null;
  integrity: string | null;
  created_at: Date;
  expires_at: Date;
}

const toFile = (row: FileRow): StagedFile => ({
  id: row.id,
  tokenId: row.token_id,
  filename: row.filename,
  contentType: row.content_type,
  state: row.state,
  ...(row.size === null ? {} : { size: int(row.size) }),
  ...(row.sha256 === null ? {} : { sha256: row.sha256 }),
  ...(row.integrity === null ? {} : { integrity: row.integrity }),
  createdAt: iso(row.created_at),
  expiresAt: iso(row.expires_at),
});


export class PostgresFileStore implements FileStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly blobs: BlobStore,
  ) {}

  private async row(id: string): Promise<FileRow | undefined> {
    if (!isStagedFileId(id)) return undefined;
    return (await this.pool.query<FileRow>('SELECT * FROM staged_files WHERE id = $1', [id])).rows[0];
  }

  async createFile(options: NewStagedFile): Promise<{ file: StagedFile; capability: string }> {
    const now = options.now ?? new Date();
    const id = randomUUID();
    const capability = randomBytes(32).toString('base64url');
    const { rows } = await this.pool.query<FileRow>(
      "INSERT INTO staged_files (id, token_id, filename, content_type, capability, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7) RETURNING *",
      [id, options.tokenId, options.filename, options.contentType, secretDigest(capability), now.toISOString(), options.expiresAt.toISOString()],
    );
    if (!rows[0]) throw new Error(`staged file ${id} vanished`);
    return { file: toFile(rows[0]), capability };
  }

  async getFile(id: string): Promise<StagedFile | undefined> {
    const row = await this.row(id);
    return row ? toFile(row) : undefined;
  }

  async checkCapability(id: string, capability: string, now: Date = new Date()): Promise<StagedFile | undefined> {
    const row = await this.row(id);
    if (!row) return undefined;
    const presented = secretDigest(capability);
    const matches = presented.length === row.capability.length && timingSafeEqual(presented, row.capability);
    if (!matches || row.expires_at.getTime() <= now.getTime()) return undefined;
    return toFile(row);
  }

  async storeContent(id: string, localFile: string, digests: { size: number; sha256: string; integrity: string }): Promise<StagedFile | undefined> {
    const row = await this.row(id);
    if (!row || (row.state !== 'pending' && row.state !== 'uploaded')) return undefined;
    // The bytes first, the row after: a row says `uploaded` only when its bytes are stored.
    await this.blobs.putFile(stagedFileKey(id), localFile, { contentType: row.content_type });
    const { rows } = await this.pool.query<FileRow>(
      "UPDATE staged_files SET state = 'uploaded', size = $1, sha256 = $2, integrity = $3 WHERE id = $4 AND state IN ('pending', 'uploaded') RETURNING *",
      [digests.size, digests.sha256, digests.integrity, id],
    );
    if (!rows[0]) {
      // Swept or confirmed meanwhile: the bytes just stored are not wanted (unless the row still uses them).
      if (!(await this.row(id))) await this.blobs.delete(stagedFileKey(id));
      return undefined;
    }
    return toFile(rows[0]);
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
