/**
 * Claims that let one `store copy` at a time write into a target (store/copy.ts): a lock file
 * created exclusively (O_EXCL) for a local folder, a marker object for a bucket. Each backend
 * claims its rows its own way (PostgreSQL: an advisory lock; SQLite: a lock file beside the
 * database) and the target's blob store is claimed here, so two copies into one target, or into two
 * targets sharing one folder or prefix, never both write bytes.
 *
 * A claim is taken only after the target was found empty, and the copy checks it empty again while
 * holding it: a claim of a store in use is never attempted, and its marker is all a claim writes.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';

import type { BlobStore } from '../types.js';

import { FolderBlobStore } from './folder.js';

/** A claim held: `release` gives it up (idempotent). */
export interface CopyClaim {
  release(): Promise<void>;
}

/** What claiming gave: the claim, or why another copy holds it (in words, for the error). */
export type ClaimResult = { claimed: CopyClaim } | { busy: string };

/** Something whose rows a copy can claim (the dumpers of both backends). */
export interface Claimable {
  claim(): Promise<ClaimResult>;
}

/** Who holds a claim: written into its lock file or marker, so that the refused copy can say who. */
interface Holder {
  pid: number;
  host: string;
  startedAt: string;
}

const holderText = (): string => `${JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() } satisfies Holder)}\n`;

function parseHolder(bytes: Buffer | string | undefined): Holder | undefined {
  if (bytes === undefined) return undefined;
  try {
    const value = JSON.parse(bytes.toString()) as Partial<Holder>;
    return typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.startedAt === 'string' ? (value as Holder) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process of this machine is gone (a crashed copy's claim stays behind: the user is told so). */
function deadHere(holder: Holder): boolean {
  if (holder.host !== hostname()) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** The words of a refusal: who holds the claim, and what to remove if that copy is gone. */
function busyText(holder: Holder | undefined, where: string): string {
  if (holder === undefined) return `another store copy is running into it (its claim ${where} names no process; if no copy is running, remove it)`;
  const who = `pid ${holder.pid} on ${holder.host}, started ${holder.startedAt}`;
  if (deadHere(holder)) return `a store copy (${who}) claimed it and is no longer running: it was interrupted, so the target may hold part of a copy; empty the target and remove ${where}, then copy again`;
  return `another store copy is running into it (${who}; if it is not running any more, remove ${where})`;
}

/**
 * Creates `file` exclusively (O_EXCL) with this process as its holder. Never taken over, even from a
 * holder known dead: two copies reclaiming one stale file at once could both win, and the copy that
 * died left its target half-written anyway.
 */
export async function claimLockFile(file: string): Promise<ClaimResult> {
  let handle;
  try {
    handle = await open(file, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { busy: busyText(parseHolder(await readFile(file).catch(() => undefined)), file) };
  }
  try {
    await handle.writeFile(holderText());
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { claimed: releasedOnce(() => rm(file, { force: true })) };
}

/** A claim whose `release` runs `release` the first time only. */
export function releasedOnce(release: () => Promise<void>): CopyClaim {
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await release();
    },
  };
}

/** The lock file of a folder blob store (a key no backend uses: archives, manifests and files live below their folders). */
export const FOLDER_CLAIM_FILE = 'copy.lock';
/** Where a bucket's claim markers live, one object per copy. */
export const CLAIMS_PREFIX = 'copy-claims/';

/**
 * Claims a blob store for one copy. A folder: `copy.lock` in it, created exclusively. A bucket (or
 * any other store): a marker object of its own below `copy-claims/`, then a listing of them: the
 * copy goes on only if its marker is the only one, else it removes it and gives way. This needs no
 * conditional write (some S3-compatible stores ignore them), only that a listing shows the objects
 * written before it (S3's read-after-write consistency): of two copies claiming at once, at most
 * one sees only its own marker; both may see both and both give way, which writes nothing.
 */
export async function claimBlobStore(blobs: BlobStore): Promise<ClaimResult> {
  if (blobs instanceof FolderBlobStore) {
    await mkdir(blobs.location, { recursive: true, mode: 0o700 });
    return claimLockFile(path.join(blobs.location, FOLDER_CLAIM_FILE));
  }
  const mine = `${CLAIMS_PREFIX}${randomUUID()}.json`;
  await blobs.putBytes(mine, holderText(), { contentType: 'application/json' });
  let other: string | undefined;
  try {
    for await (const { key } of blobs.list(CLAIMS_PREFIX)) {
      if (key !== mine) {
        other = key;
        break;
      }
    }
  } catch (error) {
    await blobs.delete(mine).catch(() => undefined);
    throw error;
  }
  if (other !== undefined) {
    await blobs.delete(mine);
    const holder = parseHolder(await blobs.readBytes(other).catch(() => undefined));
    return { busy: busyText(holder, `${blobs.location.replace(/\/?$/, '/')}${other}`) };
  }
  return { claimed: releasedOnce(() => blobs.delete(mine)) };
}
