/**
 * Room kept aside on the embedded store's disk: on a full disk, SQLite cannot even delete a row
 * (the deletion is written to its log first), so undoing a reservation would fail and leave the
 * version pending. A file of `SPACE_RESERVE_BYTES` is kept in the store folder while reservations
 * are made (none is made without it: a disk too full for it refuses the upload with nothing
 * stored), and removed to make room when an undo finds the disk full.
 */
import { rename, rm, stat, unlink } from 'node:fs/promises';

import { tempPathBeside, writeNewFileDurably } from '../../core/files.js';

/** The reserve's size: far more than the log needs to delete a pending row. */
export const SPACE_RESERVE_BYTES = 256 * 1024;
/** The reserve's name in the store folder. */
export const SPACE_RESERVE_FILE = '.space-reserve';

export class SpaceReserve {
  constructor(
    readonly file: string,
    readonly bytes: number = SPACE_RESERVE_BYTES,
  ) {}

  /** Makes the reserve when it is missing; throws (ENOSPC) when the disk has no room for it. */
  async ensure(): Promise<void> {
    if ((await stat(this.file).catch(() => undefined))?.size === this.bytes) return;
    const temp = tempPathBeside(this.file);
    try {
      await writeNewFileDurably(temp, Buffer.alloc(this.bytes), 0o600);
      await rename(temp, this.file);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  /** Gives the reserve's room back to the disk; false when there was none to give. */
  async release(): Promise<boolean> {
    try {
      await unlink(this.file);
      return true;
    } catch {
      return false;
    }
  }
}
