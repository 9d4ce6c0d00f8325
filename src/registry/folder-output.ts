/**
 * A static registry in a folder of the local file system (served by any static file server, or
 * uploaded as a GitHub Pages artifact).
 *
 * Every file is replaced atomically (a temp file beside it, then a rename). Files are not flushed
 * one by one: `barrier()` flushes the whole file system once (`sync -f`, falling back to one fsync
 * per file written), and the entry points are written `durable` after it, so after a crash
 * registry.json never names a file that did not reach the disk.
 *
 * What the folder holds is remembered in `.template-registry-build.json` (size, modification time
 * and SHA-256 of each file written): the next build stats the files instead of reading them. A file
 * whose size or modification time moved is treated as unknown (an archive is checked again against
 * its integrity, any other file compared and rewritten); without the state file the folder is scanned.
 * A folder of archives is checked as a whole (folder-inventory.ts).
 *
 * An archive whose bytes are a local file (the embedded store's blob) is hard-linked from it when
 * the file system allows, so publishing it writes no bytes; else it is copied.
 */
import { closeSync, createWriteStream, fstatSync, openSync, read as readFd, readFileSync, renameSync, rmSync, writeSync, type Stats } from 'node:fs';
import { chmod, link, lstat, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { readIfExists, removeLeftoverTemps, syncDirectory, TEMP_FILE_PATTERN, tempPathBeside, writeFileAtomic } from '../core/files.js';
import { FileSystemSync } from './file-system-sync.js';
import { FileWriterThread } from './file-writer-thread.js';
import { folderRecord, HeldInventory, immutableFolderOf, parseInventoryState, recordedIn, recordFiles, statOrUndefined, type FolderRecord, type InventoryState, type KnownFile } from './folder-inventory.js';
import { bytesOf, fileDigest, pieces, sizeOf, type HeldFile, type OutputArchive, type OutputFile, type RegistryOutput, type StagedFile } from './output.js';

export const BUILD_STATE_FILE = '.template-registry-build.json';
/** The generator's build state (registry/build-state.ts): which versions and templates the last build made. */
export const GENERATOR_STATE_FILE = '.template-registry-state.json';

/** A temp file whose owner cannot be told and older than this was left by a crashed build, not one in progress. */
const LEFTOVER_AGE_MS = 10 * 60 * 1000;

/**
 * A file up to this size is written with blocking calls (open, write, stat, close): 10,000 template
 * files through the thread pool cost four round trips each, more than the writes. Larger files (and
 * durable ones) go through the thread pool.
 */
const WRITE_NOW_LIMIT = 64 * 1024;

/**
 * The small files after this many go to a writer thread (file-writer-thread.ts), where creating
 * them runs beside the build: starting the thread costs some 30 ms, which a build of a few files
 * would only wait for.
 */
const WRITER_THREAD_AFTER = 32;
/**
 * A sync of the file system is started (not awaited) every this many bytes of small files, so that
 * the sync of the barrier finds little left to flush (FileSystemSync.early); the barrier still syncs
 * after the last file, so what it promises is unchanged.
 */
const EARLY_SYNC_BYTES = 16 * 1024 * 1024;

/** Reads `length` bytes of the file `fd` at `position` into `bytes` at the same offset: one call on the thread pool. */
function readAt(fd: number, bytes: Buffer, position: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => {
    readFd(fd, bytes, position, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead)));
  });
}

/** A name with an empty, `.` or `..` segment (or none at all): never one of a registry file. */
const UNSAFE_NAME = /(?:^|\/)\.{0,2}(?:\/|$)/;

/** Published archives are read-only: a hard-linked one shares its inode with the store's blob. */
const PUBLISHED_ARCHIVE_MODE = 0o444;

export class FolderOutput implements RegistryOutput {
  readonly location: string;
  readonly digest = 'sha256' as const;
  /** A folder is deployed to a static host as it is: the build writes `_headers` into it. */
  readonly hostHeaders = true;
  /** What the folder holds, as far as this process knows; loaded on the first `inventory()`. */
  #known: Map<string, KnownFile> | undefined;
  /** Written since the last barrier and not yet flushed. */
  #unflushed = new Set<string>();
  #folders = new Set<string>();
  /** The state file as last read or written: an unchanged state is not rewritten. */
  #savedState: string | undefined;
  /** Whether archives are hard-linked from the store (until the file system refuses once). */
  #linking = true;
  /** The temp file of each file staged by this output and not yet put or discarded. */
  #staged = new WeakMap<StagedFile, string>();
  /** Folders of immutable files whose listed files were all checked, with the mtime they had then; a write or removal in one drops it. */
  #checkedFolders = new Map<string, number>();
  /** Folders of immutable files taken as recorded (their mtime is); their files are not in `#known` until one is written or removed. */
  #taken = new Map<string, FolderRecord>();

  readonly #sync: FileSystemSync;
  readonly #writer = new FileWriterThread();
  /** How many small files this output wrote (WRITER_THREAD_AFTER). */
  #smallFiles = 0;
  /** The bytes of the small files this output wrote, and how many of them it had written at the last early sync (EARLY_SYNC_BYTES). */
  #smallBytes = 0;
  #syncedAt = 0;

  /** `dir` normalized, ending with a separator: the start of every file's path. */
  readonly #root: string;

  /**
   * `syncHelper`: `now` (the default) starts the helper that syncs the file system at once, while the
   * process's heap is small (a fork copies its page tables: a server's builder holds every entry
   * later); `when-many` starts it when a build says it will write many files (`expectMany`, a full
   * build, before it reads its source) or when a sync first needs it (an early sync, or a flush of
   * many files), for a process whose heap stays small (a build that streams, build-registry):
   * a rebuild that writes a few files then starts no process.
   */
  constructor(
    readonly dir: string,
    options: { syncHelper?: 'now' | 'when-many' } = {},
  ) {
    this.location = dir;
    const root = path.normalize(dir);
    this.#root = root === '.' || root === `.${path.sep}` ? '' : root.endsWith(path.sep) ? root : root + path.sep;
    this.#sync = new FileSystemSync(dir, options.syncHelper !== 'when-many');
  }

  #path(name: string): string {
    if (UNSAFE_NAME.test(name) || path.isAbsolute(name) || (path.sep === '\\' && name.includes('\\'))) throw new Error(`not a registry file name: ${JSON.stringify(name)}`);
    // Plain segments: joined as path.join would, without its normalizing pass (a rebuild asks for thousands).
    return this.#root + (path.sep === '/' ? name : name.replaceAll('/', path.sep));
  }

  /** The stat of `name`; undefined when there is no such file, or the name is not one of a registry file (a corrupt state). */
  #statOf(name: string): Stats | undefined {
    try {
      return statOrUndefined(this.#path(name));
    } catch {
      return undefined;
    }
  }

  async #folder(file: string): Promise<void> {
    const dir = path.dirname(file);
    if (this.#folders.has(dir)) return;
    await mkdir(dir, { recursive: true });
    this.#folders.add(dir);
  }

  async inventory(): Promise<Map<string, HeldFile>> {
    this.#known ??= await this.#load();
    return new HeldInventory(this.#known, this.#taken);
  }

  #holds(name: string): boolean {
    return this.#known?.has(name) === true || recordedIn(this.#taken, name) !== undefined;
  }

  async #load(): Promise<Map<string, KnownFile>> {
    const saved = await readIfExists(path.join(this.dir, BUILD_STATE_FILE));
    this.#savedState = saved?.toString('utf8');
    const state = parseInventoryState(saved);
    if (!state) return this.#scan();
    const known = new Map<string, KnownFile>();
    for (const [folder, record] of Object.entries(state.folders)) {
      const info = this.#statOf(folder);
      if (!info?.isDirectory()) continue;
      if (info.mtimeMs === record[0]) {
        this.#taken.set(folder, record);
        continue;
      }
      // Changed: each of its files is looked at (the folder stated first, as below).
      this.#checkedFolders.set(folder, info.mtimeMs);
      for (const [name, file] of recordFiles(folder, record)) {
        const current = this.#statOf(name);
        if (current?.isFile()) known.set(name, current.size === file.size && current.mtimeMs === file.mtimeMs ? file : { size: current.size, mtimeMs: current.mtimeMs });
      }
    }
    const listed = Object.entries(state.files);
    // Blocking calls: a stat of a cached inode takes microseconds, a trip through the thread pool
    // costs more than that (10,000 template files: 0.25 s through the pool, 0.05 s here).
    // A folder of immutable files is stated before its files, so a change during the checks shows next time.
    const folderChecked = new Set<string>();
    for (const [name, [size, mtimeMs, digest]] of listed) {
      const folder = immutableFolderOf(name);
      if (folder !== undefined && !folderChecked.has(folder) && !this.#taken.has(folder)) {
        folderChecked.add(folder);
        const info = this.#statOf(folder);
        if (info?.isDirectory()) this.#checkedFolders.set(folder, info.mtimeMs);
      }
      const info = this.#statOf(name);
      if (!info?.isFile()) continue;
      known.set(name, info.size === size && info.mtimeMs === mtimeMs ? { size, mtimeMs, digest } : { size: info.size, mtimeMs: info.mtimeMs });
    }
    // Files the state does not list (left by an older release, or by hand) are known by size only.
    for (const name of [...['registry.json', 'index.json', 'index.html'].flatMap((n) => [n, `${n}.gz`, `${n}.br`]), 'registry.json.jws', 'index.json.jws', 'keys.json', 'keys.json.jws']) {
      if (!known.has(name)) await this.#statInto(known, name);
    }
    for (const entry of await readdir(path.join(this.dir, 'templates')).catch(() => [] as string[])) {
      if (!known.has(`templates/${entry}`) && !TEMP_FILE_PATTERN.test(entry)) await this.#statInto(known, `templates/${entry}`);
    }
    return known;
  }

  async #scan(): Promise<Map<string, KnownFile>> {
    const known = new Map<string, KnownFile>();
    let names: string[];
    try {
      names = await readdir(this.dir, { recursive: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return known;
      throw error;
    }
    for (const name of names.map((n) => n.split(path.sep).join('/')).sort()) {
      if (name === BUILD_STATE_FILE || name === GENERATOR_STATE_FILE || TEMP_FILE_PATTERN.test(path.posix.basename(name))) continue;
      await this.#statInto(known, name);
    }
    return known;
  }

  async #statInto(known: Map<string, KnownFile>, name: string): Promise<void> {
    const info = await lstat(this.#path(name)).catch(() => undefined);
    if (info?.isFile()) known.set(name, { size: info.size, mtimeMs: info.mtimeMs });
  }

  /**
   * The file's bytes, read by one call on the thread pool into a buffer of its size: fs's readFile
   * reads in 512 KiB pieces, a round trip each (100 MB: 200 of them, slower than a blocking read).
   */
  async read(name: string): Promise<Buffer | undefined> {
    // Opened and stated with blocking calls (microseconds on a local disk), then read in one call on
    // the thread pool: a read that needed the event loop between its steps would wait for the
    // blocking work a build does meanwhile (a rebuild reads registry.json back beside its checks).
    let fd: number;
    try {
      fd = openSync(this.#path(name), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const { size } = fstatSync(fd);
      const bytes = Buffer.allocUnsafe(size);
      let filled = 0;
      while (filled < size) {
        const bytesRead = await readAt(fd, bytes, filled, size - filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      // Shorter than it was when stated (replaced meanwhile): what was read; a file that grew is read as it was.
      return filled === size ? bytes : bytes.subarray(0, filled);
    } finally {
      closeSync(fd);
    }
  }

  async put(file: OutputFile, options: { durable?: boolean } = {}): Promise<void> {
    const target = this.#path(file.name);
    await this.#folder(target);
    if (options.durable) {
      await writeFileAtomic(target, bytesOf(file));
      const info = await stat(target);
      this.#remember(file.name, { size: sizeOf(file), mtimeMs: info.mtimeMs, digest: fileDigest(file, 'sha256') });
      return;
    }
    if (file.data !== undefined && file.data.length <= WRITE_NOW_LIMIT) return this.#putSmall(file, file.data, target);
    // A file the folder does not hold yet is named by no entry point: it is written in place (a
    // torn one left by a crash is unknown to the next build, which compares and rewrites it).
    const fresh = !this.#holds(file.name);
    const temp = fresh ? target : tempPathBeside(target);
    let handle;
    try {
      handle = await open(temp, 'wx');
    } catch (error) {
      if (!fresh || (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      this.#known?.set(file.name, { size: -1, mtimeMs: 0 });
      return this.put(file, options);
    }
    try {
      let mtimeMs: number;
      try {
        await handle.writeFile(bytesOf(file));
        mtimeMs = (await handle.stat()).mtimeMs;
      } finally {
        await handle.close();
      }
      if (!fresh) await rename(temp, target);
      this.#remember(file.name, { size: sizeOf(file), mtimeMs, digest: fileDigest(file, 'sha256') });
      this.#unflushed.add(target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  /**
   * A temp file beside `name`'s, written through a stream: `putInOrder` renames it into place, as
   * the files it writes itself (so registry.json is never held in memory by a build that streams it).
   */
  async stage(name: string): Promise<StagedFile> {
    const target = this.#path(name);
    await this.#folder(target);
    const temp = tempPathBeside(target);
    // Flushed as it closes: on stable storage before `putInOrder` needs it, while the builder does other work.
    const stream = createWriteStream(temp, { flags: 'wx', flush: true });
    const finished = new Promise<void>((resolve, reject) => {
      stream.once('close', () => (stream.errored ? reject(stream.errored) : resolve()));
    });
    // A failure is reported to whoever awaits `finished` (or writes); never an unhandled rejection.
    finished.catch(() => undefined);
    const staged: StagedFile = {
      stream,
      finished,
      discard: async () => {
        this.#staged.delete(staged);
        stream.destroy();
        await finished.catch(() => undefined);
        await rm(temp, { force: true });
      },
    };
    this.#staged.set(staged, temp);
    return staged;
  }

  readSync(name: string): Buffer | undefined {
    try {
      return readFileSync(this.#path(name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** `put` of a small file (WRITE_NOW_LIMIT): on the writer thread when there is one and the build writes many, else with blocking calls. */
  async #putSmall(file: OutputFile, data: Buffer, target: string): Promise<void> {
    this.#smallBytes += data.length;
    if (this.#smallBytes - this.#syncedAt >= EARLY_SYNC_BYTES) {
      this.#syncedAt = this.#smallBytes;
      this.#sync.early();
    }
    if (++this.#smallFiles <= WRITER_THREAD_AFTER) return this.#putNow(file, data, target);
    const fresh = !this.#holds(file.name);
    const temp = fresh ? target : tempPathBeside(target);
    const writing = this.#writer.write(temp, data, fresh ? undefined : target);
    if (!writing) return this.#putNow(file, data, target);
    let mtimeMs: number;
    try {
      mtimeMs = await writing;
    } catch (error) {
      if (!fresh || (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A file this output did not know of: replaced as a held one is.
      this.#known?.set(file.name, { size: -1, mtimeMs: 0 });
      return this.#putSmall(file, data, target);
    }
    this.#remember(file.name, { size: data.length, mtimeMs, digest: fileDigest(file, 'sha256') });
    this.#unflushed.add(target);
  }

  /** `put` of a small file with blocking calls (WRITE_NOW_LIMIT): the same rules, in place when fresh, else a temp file renamed. */
  #putNow(file: OutputFile, data: Buffer, target: string): void {
    const { name } = file;
    const fresh = !this.#holds(name);
    const temp = fresh ? target : tempPathBeside(target);
    let fd: number;
    try {
      fd = openSync(temp, 'wx');
    } catch (error) {
      if (!fresh || (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      this.#known?.set(name, { size: -1, mtimeMs: 0 });
      return this.#putNow(file, data, target);
    }
    try {
      let mtimeMs: number;
      try {
        for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset, data.length - offset);
        mtimeMs = fstatSync(fd).mtimeMs;
      } finally {
        closeSync(fd);
      }
      if (!fresh) renameSync(temp, target);
      this.#remember(name, { size: data.length, mtimeMs, digest: fileDigest(file, 'sha256') });
      this.#unflushed.add(target);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }

  async putInOrder(files: readonly OutputFile[]): Promise<void> {
    if (files.length === 0) return;
    // Every temp file written, one flush for all of them, then the renames in order: a few
    // megabytes flushed once instead of one fsync per file.
    const staged: { file: OutputFile; target: string; temp: string }[] = [];
    try {
      for (const file of files) {
        const target = this.#path(file.name);
        await this.#folder(target);
        if (file.staged) {
          // Already written beside its name (stage).
          const temp = this.#staged.get(file.staged);
          if (temp === undefined) throw new Error(`${file.name} was not staged by this output, or was put or discarded already`);
          this.#staged.delete(file.staged);
          staged.push({ file, target, temp });
          await file.staged.finished;
          continue;
        }
        const temp = tempPathBeside(target);
        staged.push({ file, target, temp });
        await writeFile(temp, file.data ?? pieces(file.parts), { flag: 'wx' });
      }
      await this.#sync.flush(staged.map(({ temp }) => temp));
      for (const { file, target, temp } of staged) {
        await rename(temp, target);
        const info = await stat(target);
        this.#remember(file.name, { size: sizeOf(file), mtimeMs: info.mtimeMs, digest: fileDigest(file, 'sha256') });
      }
      for (const folder of new Set(staged.map(({ target }) => path.dirname(target)))) await syncDirectory(folder);
    } finally {
      await Promise.all(staged.map(({ temp }) => rm(temp, { force: true })));
    }
  }

  async putArchive(archive: OutputArchive): Promise<void> {
    const target = this.#path(archive.name);
    await this.#folder(target);
    const temp = tempPathBeside(target);
    try {
      if (archive.file !== undefined && (await this.#link(archive.file, temp))) {
        // The same bytes (the same inode): read through once for the integrity check, nothing written.
        await pipeline(archive.stream, new Writable({ write: (_chunk, _encoding, done) => done() }));
        archive.verify();
        // Readable by the static server, and by nobody writable in place: the inode is the store's blob too.
        await chmod(temp, PUBLISHED_ARCHIVE_MODE);
      } else {
        await pipeline(archive.stream, createWriteStream(temp, { flags: 'wx' }));
        archive.verify();
      }
      await rename(temp, target);
      const info = await stat(target);
      // '' for a digest: an archive this output published and verified (its integrity is the version's).
      this.#remember(archive.name, { size: info.size, mtimeMs: info.mtimeMs, digest: '' });
      this.#unflushed.add(target);
    } finally {
      await rm(temp, { force: true });
    }
  }

  /**
   * Hard-links `file` at `temp`; false (and no more tries by this output) where the file system
   * refuses (another device, links unsupported or not permitted), so the caller copies instead.
   */
  async #link(file: string, temp: string): Promise<boolean> {
    if (!this.#linking) return false;
    try {
      await link(file, temp);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EMLINK') return false;
      if (code === 'EXDEV' || code === 'EPERM' || code === 'EACCES' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
        this.#linking = false;
        return false;
      }
      throw error;
    }
  }

  #remember(name: string, file: KnownFile): void {
    this.#known ??= new Map();
    this.#release(name);
    this.#known.set(name, file);
  }

  /** Before a write or removal in a folder of immutable files: its files known one by one, its mtime to be checked again. */
  #release(name: string): void {
    const folder = immutableFolderOf(name);
    if (folder === undefined) return;
    this.#checkedFolders.delete(folder);
    const record = this.#taken.get(folder);
    if (!record) return;
    this.#taken.delete(folder);
    this.#known ??= new Map();
    for (const [file, known] of recordFiles(folder, record)) if (!this.#known.has(file)) this.#known.set(file, known);
  }

  /**
   * The inventory to record: each file this output wrote or verified, by folder for immutable ones.
   * A folder taken as recorded keeps its record; a folder checked at load keeps the mtime it had
   * then; a folder written since is stated again, then each of its files (the folder first, so that
   * a change after this check moves its mtime past the one recorded); one changed meanwhile has its
   * files recorded one by one.
   */
  #inventoryState(): InventoryState {
    const files: InventoryState['files'] = {};
    const byFolder = new Map<string, [string, KnownFile][]>();
    const known = this.#known ?? new Map<string, KnownFile>();
    // The default sort (UTF-16 code units): native, and the one order the state is written in.
    for (const name of [...known.keys()].sort()) {
      const file = known.get(name) as KnownFile;
      // Only what this output wrote (or verified) is worth remembering; the rest is looked at again.
      if (file.digest === undefined) continue;
      const folder = immutableFolderOf(name);
      if (folder === undefined) {
        files[name] = [file.size, file.mtimeMs, file.digest];
        continue;
      }
      const list = byFolder.get(folder);
      const entry: [string, KnownFile] = [name.slice(folder.length + 1), file];
      if (list) list.push(entry);
      else byFolder.set(folder, [entry]);
    }
    const folders: InventoryState['folders'] = {};
    for (const folder of [...new Set([...this.#taken.keys(), ...byFolder.keys()])].sort()) {
      const taken = this.#taken.get(folder);
      if (taken) {
        folders[folder] = taken;
        continue;
      }
      const entries = byFolder.get(folder) ?? [];
      let mtimeMs = this.#checkedFolders.get(folder);
      if (mtimeMs === undefined) {
        const info = this.#statOf(folder);
        const intact = info?.isDirectory() === true && entries.every(([base, file]) => {
          const current = this.#statOf(`${folder}/${base}`);
          return current?.isFile() === true && current.size === file.size && current.mtimeMs === file.mtimeMs;
        });
        if (intact) mtimeMs = info?.mtimeMs;
      }
      if (mtimeMs !== undefined) folders[folder] = folderRecord(mtimeMs, entries);
      else for (const [base, file] of entries) files[`${folder}/${base}`] = [file.size, file.mtimeMs, file.digest as string];
    }
    return { formatVersion: 3, files, folders };
  }

  expectMany(): void {
    // The sync helper is started now, before the build reads its source (a fork copies the page tables of what the process holds).
    this.#sync.start();
  }

  async barrier(): Promise<void> {
    if (this.#unflushed.size === 0) return;
    const written = [...this.#unflushed];
    this.#unflushed.clear();
    await this.#sync.flush(written);
  }

  async close(): Promise<void> {
    this.#sync.close();
    await this.#writer.close();
  }

  async remove(names: readonly string[]): Promise<void> {
    for (const name of names) {
      this.#release(name);
      await rm(this.#path(name), { force: true });
      this.#known?.delete(name);
    }
  }

  readState(): Promise<Buffer | undefined> {
    return readIfExists(path.join(this.dir, GENERATOR_STATE_FILE));
  }

  async writeState(data: Buffer): Promise<void> {
    // Not flushed: a state a crash tore is ignored (it is verified), and the next build is full.
    const target = path.join(this.dir, GENERATOR_STATE_FILE);
    await mkdir(this.dir, { recursive: true });
    const temp = tempPathBeside(target);
    try {
      await writeFile(temp, data, { flag: 'wx' });
      await rename(temp, target);
    } finally {
      await rm(temp, { force: true });
    }
  }

  async commit(): Promise<void> {
    const text = `${JSON.stringify(this.#inventoryState())}\n`;
    // Temp files a killed build left (they would otherwise be deployed); never a running build's.
    for (const dir of [this.dir, path.join(this.dir, 'templates')]) await removeLeftoverTemps(dir, { foreignAfterMs: LEFTOVER_AGE_MS });
    if (text === this.#savedState) return;
    const target = path.join(this.dir, BUILD_STATE_FILE);
    await this.#folder(target);
    const temp = tempPathBeside(target);
    try {
      const handle = await open(temp, 'wx');
      try {
        await handle.writeFile(text);
      } finally {
        await handle.close();
      }
      await rename(temp, target);
      this.#savedState = text;
    } finally {
      await rm(temp, { force: true });
    }
  }
}
