/**
 * What a folder output remembers of the files it holds (`.template-registry-build.json`), so that
 * the next build stats files instead of reading them.
 *
 * Most files are checked one by one (size and modification time). Files under `archives/` are never
 * replaced (immutable under their URL), so each of their folders is checked as a whole: a folder
 * whose modification time is as recorded had no file added, removed or renamed since, and its
 * files are taken as recorded, without a stat and without an object each until one is asked for.
 * An archive edited in place is not seen that way; clients check every archive's integrity.
 */
import { statSync, type Stats } from 'node:fs';

import type { HeldFile } from './output.js';

export interface KnownFile extends HeldFile {
  mtimeMs: number;
}

/** A folder of immutable files as recorded: its mtimeMs, then the name, size, mtimeMs and digest of each of its files. */
export type FolderRecord = readonly (string | number)[];

export interface InventoryState {
  formatVersion: 3;
  /** name -> [size, mtimeMs, digest]: each checked by its own stat. */
  files: Record<string, [number, number, string]>;
  /** folder -> its record: its files taken as recorded while the folder's mtime is the recorded one. */
  folders: Record<string, FolderRecord>;
}

/** Files under this prefix are written once and never replaced: archives and what is kept beside them. */
const IMMUTABLE_PREFIX = 'archives/';

/** The folder of an immutable file, checked as a whole (undefined for any other file). */
export function immutableFolderOf(name: string): string | undefined {
  if (!name.startsWith(IMMUTABLE_PREFIX)) return undefined;
  const slash = name.lastIndexOf('/');
  return slash > IMMUTABLE_PREFIX.length ? name.slice(0, slash) : undefined;
}

export function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** A name of one path segment: a recorded name never reaches outside its folder. */
function isPlainName(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value !== '.' && value !== '..' && !value.includes('/') && !value.includes('\\');
}

function isFolderRecord(value: unknown): value is FolderRecord {
  if (!Array.isArray(value) || typeof value[0] !== 'number' || (value.length - 1) % 4 !== 0) return false;
  for (let at = 1; at < value.length; at += 4) {
    if (!isPlainName(value[at]) || typeof value[at + 1] !== 'number' || typeof value[at + 2] !== 'number' || typeof value[at + 3] !== 'string') return false;
  }
  return true;
}

function isFolderName(folder: string): boolean {
  return folder.startsWith(IMMUTABLE_PREFIX) && folder.slice(IMMUTABLE_PREFIX.length).split('/').every(isPlainName);
}

/**
 * The inventory in `bytes` (an older release's format 2, with files only, is read too); undefined
 * when there is none or it cannot be used (the folder is then scanned). A folder whose record is
 * malformed is left out (its files are looked at again).
 */
export function parseInventoryState(bytes: Buffer | undefined): Omit<InventoryState, 'formatVersion'> | undefined {
  if (!bytes) return undefined;
  let state: { formatVersion?: unknown; files?: unknown; folders?: unknown } | null;
  try {
    state = JSON.parse(bytes.toString('utf8')) as typeof state;
  } catch {
    return undefined;
  }
  if ((state?.formatVersion !== 2 && state?.formatVersion !== 3) || typeof state.files !== 'object' || state.files === null) return undefined;
  const folders: Record<string, FolderRecord> = {};
  if (state.formatVersion === 3 && typeof state.folders === 'object' && state.folders !== null) {
    for (const [folder, record] of Object.entries(state.folders)) if (isFolderName(folder) && isFolderRecord(record)) folders[folder] = record;
  }
  const files: InventoryState['files'] = {};
  for (const [name, file] of Object.entries(state.files as Record<string, unknown>)) {
    if (Array.isArray(file) && typeof file[0] === 'number' && typeof file[1] === 'number' && typeof file[2] === 'string') files[name] = [file[0], file[1], file[2]];
  }
  return { files, folders };
}

/** The files of `record` by name, for a folder of many (a scan each would cost more than the index). */
const recordIndexes = new WeakMap<FolderRecord, Map<string, number>>();
const SCANNED_FILES = 32;

/** The file named `base` in `record`, or undefined. */
function lookUp(record: FolderRecord, base: string): KnownFile | undefined {
  let at: number | undefined;
  if (record.length > 1 + 4 * SCANNED_FILES) {
    let index = recordIndexes.get(record);
    if (!index) {
      index = new Map();
      for (let i = 1; i < record.length; i += 4) index.set(record[i] as string, i);
      recordIndexes.set(record, index);
    }
    at = index.get(base);
  } else {
    for (let i = 1; i < record.length; i += 4) {
      if (record[i] === base) {
        at = i;
        break;
      }
    }
  }
  return at === undefined ? undefined : { size: record[at + 1] as number, mtimeMs: record[at + 2] as number, digest: record[at + 3] as string };
}

/** Every file of `record`, named in full. */
export function* recordFiles(folder: string, record: FolderRecord): Generator<[string, KnownFile]> {
  for (let i = 1; i < record.length; i += 4) {
    yield [`${folder}/${record[i] as string}`, { size: record[i + 1] as number, mtimeMs: record[i + 2] as number, digest: record[i + 3] as string }];
  }
}

/** The record of a folder of `mtimeMs` holding `files` (name within the folder, file; each with its digest). */
export function folderRecord(mtimeMs: number, files: readonly [string, KnownFile][]): FolderRecord {
  const record: (string | number)[] = [mtimeMs];
  for (const [base, file] of files) record.push(base, file.size, file.mtimeMs, file.digest ?? '');
  return record;
}

/** The file `name` as one of `folders` records it, or undefined. */
export function recordedIn(folders: ReadonlyMap<string, FolderRecord>, name: string): KnownFile | undefined {
  const folder = immutableFolderOf(name);
  const record = folder === undefined ? undefined : folders.get(folder);
  return record && folder !== undefined ? lookUp(record, name.slice(folder.length + 1)) : undefined;
}

/**
 * The inventory a build is given: the files known one by one, and the folders taken as recorded,
 * looked up without making an entry for each of their files (a rebuild after one new version asks
 * about every archive once). Iterating its entries or changing it makes them entries first.
 */
export class HeldInventory extends Map<string, HeldFile> {
  #folders: Map<string, FolderRecord> | undefined;

  constructor(known: ReadonlyMap<string, HeldFile>, folders: ReadonlyMap<string, FolderRecord>) {
    super();
    for (const [name, file] of known) super.set(name, file);
    this.#folders = folders.size > 0 ? new Map(folders) : undefined;
  }

  #recorded(name: string): HeldFile | undefined {
    return this.#folders && recordedIn(this.#folders, name);
  }

  /** Makes an entry of every file of the recorded folders (a file known one by one stays as known). */
  #expand(): void {
    const folders = this.#folders;
    if (!folders) return;
    this.#folders = undefined;
    for (const [folder, record] of folders) for (const [name, file] of recordFiles(folder, record)) if (!super.has(name)) super.set(name, file);
  }

  override get(name: string): HeldFile | undefined {
    return super.get(name) ?? this.#recorded(name);
  }

  override has(name: string): boolean {
    return super.has(name) || this.#recorded(name) !== undefined;
  }

  /** Names only: the recorded folders' names are listed without an entry made for each. */
  override *keys(): MapIterator<string> {
    yield* super.keys();
    for (const [folder, record] of this.#folders ?? []) {
      for (let i = 1; i < record.length; i += 4) {
        const name = `${folder}/${record[i] as string}`;
        if (!super.has(name)) yield name;
      }
    }
  }

  override get size(): number {
    this.#expand();
    return super.size;
  }

  override set(name: string, file: HeldFile): this {
    this.#expand();
    return super.set(name, file);
  }

  override delete(name: string): boolean {
    this.#expand();
    return super.delete(name);
  }

  override clear(): void {
    this.#folders = undefined;
    super.clear();
  }

  override entries(): MapIterator<[string, HeldFile]> {
    this.#expand();
    return super.entries();
  }

  override values(): MapIterator<HeldFile> {
    this.#expand();
    return super.values();
  }

  override forEach(callback: (value: HeldFile, key: string, map: Map<string, HeldFile>) => void, thisArg?: unknown): void {
    this.#expand();
    super.forEach(callback, thisArg);
  }

  override [Symbol.iterator](): MapIterator<[string, HeldFile]> {
    this.#expand();
    return super[Symbol.iterator]();
  }
}
