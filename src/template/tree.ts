/**
 * The one reader of a template folder: `readTemplateTree(dir)` walks it once, and validate, lint,
 * load/render/generate, test and pack all take what it read, so that they agree on which files a
 * template has and what each one is.
 *
 * Symbolic links: a link whose target (links resolved) lies inside the template folder is followed
 * and counts as the file or folder it leads to; a link that leaves the folder, points to nothing, or
 * leads back to a folder that holds it is refused, and so is anything that is neither a file nor a
 * folder (sockets, fifos, devices). A refused entry is a problem naming its path (`problems`), never
 * read. Version-control data and installed dependencies or environments (`.git`, `node_modules`,
 * `.venv`, `__pycache__`, ...) are listed by name but never opened: they are no part of a template,
 * and their links are nobody's business here.
 *
 * Text or binary: `text-files.ts` (`liquidTextOf`), the one rule. JSON documents (the manifest
 * first among them) are read and parsed once, with their positions, by `json()`; the manifest is
 * `manifest()`.
 */
import { lstat, open, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

import { errorMessage } from '../core/errors.js';
import { JsonSyntaxError, parseJsonWithPositions, type SourcePosition } from '../core/json-source.js';
import { isVersionControlName } from '../core/reserved-paths.js';
import { isInside } from './paths.js';
import { BINARY_HEAD_BYTES, isBinary, liquidTextOf } from './text-files.js';

/** The manifest's file name, at the template's root. */
export const MANIFEST_FILE = 'template.json';
/** The largest JSON file of a template (as the server takes a manifest part). */
export const MAX_JSON_FILE_BYTES = 1024 * 1024;

/**
 * Folders (or files) that are never part of a template and never opened: installed dependencies and
 * local environments (pack names them as left out, with its reasons: `pack/ignore-rules.ts` `ALWAYS_LEFT_OUT`).
 */
export const UNREAD_NAMES: ReadonlySet<string> = new Set(['node_modules', '.venv', '__pycache__']);

/** True for a name the reader lists but never opens (version-control data, installed dependencies, environments). */
export const isUnreadName = (base: string): boolean => isVersionControlName(base) || UNREAD_NAMES.has(base);

export interface TreeEntry {
  /** Relative to the template folder, `/`-separated. */
  path: string;
  kind: 'file' | 'directory';
  /** Where to read it (a link's own path: reading follows it). */
  absolute: string;
  /** Its real path, links resolved. */
  real: string;
  /** Reached through a symbolic link (itself one, or below one). */
  link: boolean;
  /** Listed by name only, never opened or followed (see `isUnreadName`); nothing below it is listed. */
  unread: boolean;
}

export type TreeProblemCode = 'LINK_OUTSIDE_TEMPLATE' | 'LINK_BROKEN' | 'LINK_LOOP' | 'SPECIAL_FILE' | 'UNREADABLE';

/** An entry the reader refuses, by its path. */
export interface TreeProblem {
  path: string;
  code: TreeProblemCode;
  /** What is wrong, without the path: `is a symbolic link that points outside the template folder (to /tmp/secret.txt)`. */
  reason: string;
  /** The same, naming the path: `symbolic link template/leak.txt points outside the template folder (to /tmp/secret.txt)`. */
  message: string;
}

/** A JSON document of the template as read: its text, parsed value and positions, or why there is none. */
export interface JsonRead {
  file: string;
  text?: string;
  value?: unknown;
  positions?: Map<string, SourcePosition>;
  /**
   * Why there is no value: `MISSING` (no such file in the tree), `NOT_A_FILE`, `FILE_TOO_LARGE`
   * (over MAX_JSON_FILE_BYTES), `UNREADABLE`, `INVALID_JSON` (with the position of the mistake).
   */
  problem?: { code: 'MISSING' | 'NOT_A_FILE' | 'FILE_TOO_LARGE' | 'UNREADABLE' | 'INVALID_JSON'; message: string; line?: number; column?: number };
}

/** What the template folder itself is. */
export type RootKind = 'directory' | 'file' | 'missing';

/** Byte order of the UTF-8 encodings (what `LC_ALL=C sort` gives): the order of `entries`. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A path as a template names it (`./config/vars.json`, `docs\\guide.md`), as the tree keys it; undefined for one that leaves the folder. */
export function treePath(relative: string): string | undefined {
  if (path.isAbsolute(relative) || path.win32.isAbsolute(relative)) return undefined;
  const normal = path.posix.normalize(relative.replace(/\\/g, '/')).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) return undefined;
  return normal === '.' ? '' : normal;
}

/** A template folder as read once: every entry, the refused ones, and reads of file contents (each file read once). */
export class TemplateTree {
  readonly #byPath: Map<string, TreeEntry>;
  readonly #bytes = new Map<string, Promise<Buffer>>();
  readonly #binary = new Map<string, Promise<boolean>>();
  readonly #modes = new Map<string, Promise<number>>();
  readonly #json = new Map<string, Promise<JsonRead>>();

  constructor(
    /** The template folder, absolute. */
    readonly root: string,
    /** Its real path ('' when it is not a folder). */
    readonly realRoot: string,
    readonly rootKind: RootKind,
    /** Every file and folder, sorted by byte order of their paths; refused entries are not among them. */
    readonly entries: readonly TreeEntry[],
    /** Entries refused by the symbolic-link and special-file rules, sorted by path. */
    readonly problems: readonly TreeProblem[],
    /** The folder as the caller named it, for messages. */
    readonly given: string = root,
  ) {
    this.#byPath = new Map(entries.map((entry) => [entry.path, entry]));
  }

  get isFolder(): boolean {
    return this.rootKind === 'directory';
  }

  /** The entry at a path as a template names it; undefined when there is none (or the path leaves the folder). */
  entry(relative: string): TreeEntry | undefined {
    const key = treePath(relative);
    return key === undefined || key === '' ? undefined : this.#byPath.get(key);
  }

  /** The kind of what a template path names: `directory` for the folder itself. */
  kindOf(relative: string): 'file' | 'directory' | 'missing' {
    const key = treePath(relative);
    if (key === '') return this.isFolder ? 'directory' : 'missing';
    const entry = key === undefined ? undefined : this.#byPath.get(key);
    return entry === undefined || entry.unread ? 'missing' : entry.kind;
  }

  /** The problem that refused a path or a folder on its way, when one did. */
  problemAt(relative: string): TreeProblem | undefined {
    const key = treePath(relative);
    if (key === undefined) return undefined;
    return this.problems.find((problem) => problem.path === key || key.startsWith(`${problem.path}/`));
  }

  /** The entries below a folder (not the folder itself), their paths relative to it; empty for a folder not in the tree. */
  below(folder: string): TreeEntry[] {
    const key = treePath(folder);
    if (key === undefined) return [];
    if (key === '') return [...this.entries];
    if (this.#byPath.get(key)?.kind !== 'directory') return [];
    const prefix = `${key}/`;
    return this.entries.filter((entry) => entry.path.startsWith(prefix)).map((entry) => ({ ...entry, path: entry.path.slice(prefix.length) }));
  }

  /** A file's bytes, read once. */
  bytes(relative: string): Promise<Buffer> {
    const entry = this.#file(relative);
    let read = this.#bytes.get(entry.path);
    if (!read) {
      read = readFile(entry.absolute);
      this.#bytes.set(entry.path, read);
    }
    return read;
  }

  /** Whether a file is binary (`text-files.ts`), told by its head: a binary file's bulk is not read for it. */
  binary(relative: string): Promise<boolean> {
    const entry = this.#file(relative);
    let read = this.#binary.get(entry.path);
    if (!read) {
      read = (this.#bytes.get(entry.path) ?? readHead(entry.absolute, BINARY_HEAD_BYTES)).then(isBinary);
      this.#binary.set(entry.path, read);
    }
    return read;
  }

  /** A file's text when it is rendered as Liquid (`text-files.ts`: UTF-8 text, not binary), else undefined. */
  async liquidText(relative: string): Promise<string | undefined> {
    if (await this.binary(relative)) return undefined;
    return liquidTextOf(await this.bytes(relative));
  }

  /** A file's mode as a template's files have it: 0o755 when it is executable, else 0o644. */
  mode(relative: string): Promise<number> {
    const entry = this.#file(relative);
    let mode = this.#modes.get(entry.path);
    if (!mode) {
      mode = stat(entry.absolute).then((info) => (info.mode & 0o111 ? 0o755 : 0o644));
      this.#modes.set(entry.path, mode);
    }
    return mode;
  }

  /** A JSON document of the template, read and parsed once (at most MAX_JSON_FILE_BYTES). */
  json(relative: string): Promise<JsonRead> {
    const key = treePath(relative) ?? relative;
    let read = this.#json.get(key);
    if (!read) {
      read = this.#readJson(relative);
      this.#json.set(key, read);
    }
    return read;
  }

  /** The manifest, `template.json`: the one manifest reader. */
  manifest(): Promise<JsonRead> {
    return this.json(MANIFEST_FILE);
  }

  #file(relative: string): TreeEntry {
    const entry = this.entry(relative);
    if (entry?.kind !== 'file' || entry.unread) throw new Error(`${relative} is not a file of the template`);
    return entry;
  }

  async #readJson(file: string): Promise<JsonRead> {
    const entry = this.entry(file);
    if (entry === undefined || entry.unread) return { file, problem: { code: 'MISSING', message: 'does not exist' } };
    if (entry.kind !== 'file') return { file, problem: { code: 'NOT_A_FILE', message: 'must be a file' } };
    let text: string;
    try {
      const size = (await stat(entry.absolute)).size;
      if (size > MAX_JSON_FILE_BYTES) {
        return { file, problem: { code: 'FILE_TOO_LARGE', message: `is ${size} bytes; a template's JSON files are at most ${MAX_JSON_FILE_BYTES} bytes (1 MiB) each` } };
      }
      text = (await this.bytes(file)).toString('utf8');
    } catch (error) {
      return { file, problem: { code: 'UNREADABLE', message: `cannot be read: ${errorMessage(error)}` } };
    }
    try {
      const parsed = parseJsonWithPositions(text);
      return { file, text, value: parsed.value, positions: parsed.positions };
    } catch (error) {
      if (!(error instanceof JsonSyntaxError)) throw error;
      return { file, text, problem: { code: 'INVALID_JSON', message: `invalid JSON: ${error.message}`, ...error.position } };
    }
  }
}

/** The first `length` bytes of a file (all of a shorter one). */
async function readHead(file: string, length: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(length);
    let filled = 0;
    for (let read = -1; read !== 0 && filled < length; filled += read) read = (await handle.read(head, filled, length - filled, filled)).bytesRead;
    return head.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/** A refused entry: its reason (without the path, for a problem listed under the path) and the message naming it. */
function problem(relative: string, code: TreeProblemCode, reason: string, message: string): TreeProblem {
  return { path: relative, code, reason, message };
}

const problemOf = {
  outside: (relative: string, real: string): TreeProblem =>
    problem(relative, 'LINK_OUTSIDE_TEMPLATE', `is a symbolic link that points outside the template folder (to ${real})`, `symbolic link ${relative} points outside the template folder (to ${real})`),
  broken: (relative: string): TreeProblem =>
    problem(relative, 'LINK_BROKEN', 'is a symbolic link that points to a missing target', `symbolic link ${relative} points to a missing target`),
  loop: (relative: string): TreeProblem =>
    problem(relative, 'LINK_LOOP', 'is a symbolic link that leads back to a folder that contains it', `symbolic link ${relative} leads back to a folder that contains it`),
  special: (relative: string): TreeProblem => {
    const reason = 'is not a regular file, folder or symbolic link (sockets, fifos and devices cannot be part of a template)';
    return problem(relative, 'SPECIAL_FILE', reason, `${relative} ${reason}`);
  },
  unreadable: (relative: string, error: unknown): TreeProblem => {
    const reason = `cannot be read: ${errorMessage(error)}`;
    return problem(relative, 'UNREADABLE', reason, `${relative} ${reason}`);
  },
};

async function rootKindOf(root: string): Promise<RootKind> {
  try {
    return (await stat(root)).isDirectory() ? 'directory' : 'file';
  } catch {
    return 'missing';
  }
}

/**
 * Reads a template folder once: every file and folder below it (sorted by byte order), links
 * followed inside it, refused entries as problems (see the module's comment). Contents are read on
 * demand, once. A missing folder, or a file, gives an empty tree with that `rootKind`; the only
 * errors thrown are I/O failures the reader cannot explain.
 */
export async function readTemplateTree(dir: string): Promise<TemplateTree> {
  const root = path.resolve(dir);
  const rootKind = await rootKindOf(root);
  if (rootKind !== 'directory') return new TemplateTree(root, '', rootKind, [], [], dir);
  const realRoot = await realpath(root);
  const entries: TreeEntry[] = [];
  const problems: TreeProblem[] = [];

  const walk = async (absoluteDir: string, realDir: string, relativeDir: string, viaLink: boolean, ancestors: ReadonlySet<string>): Promise<void> => {
    let dirents;
    try {
      dirents = await readdir(absoluteDir, { withFileTypes: true });
    } catch (error) {
      problems.push(problemOf.unreadable(relativeDir === '' ? '.' : relativeDir, error));
      return;
    }
    for (const dirent of dirents.sort((a, b) => byteOrder(a.name, b.name))) {
      const relative = relativeDir === '' ? dirent.name : `${relativeDir}/${dirent.name}`;
      const absolute = path.join(absoluteDir, dirent.name);
      let real = path.join(realDir, dirent.name);
      let link = viaLink;
      if (isUnreadName(dirent.name)) {
        // Listed, never opened: what it is matters only for how it is named (a folder or a file).
        entries.push({ path: relative, kind: dirent.isDirectory() ? 'directory' : 'file', absolute, real, link, unread: true });
        continue;
      }
      let isDirectory = dirent.isDirectory();
      let isFile = dirent.isFile();
      if (dirent.isSymbolicLink()) {
        link = true;
        try {
          real = await realpath(absolute);
        } catch {
          problems.push(problemOf.broken(relative));
          continue;
        }
        if (!isInside(realRoot, real)) {
          problems.push(problemOf.outside(relative, real));
          continue;
        }
        const info = await stat(absolute);
        isDirectory = info.isDirectory();
        isFile = info.isFile();
      } else if (!isDirectory && !isFile && !dirent.isFIFO() && !dirent.isSocket() && !dirent.isBlockDevice() && !dirent.isCharacterDevice()) {
        // Some file systems do not give the type in readdir: ask.
        const info = await lstat(absolute);
        isDirectory = info.isDirectory();
        isFile = info.isFile();
      }
      if (isDirectory) {
        if (ancestors.has(real)) {
          problems.push(problemOf.loop(relative));
          continue;
        }
        entries.push({ path: relative, kind: 'directory', absolute, real, link, unread: false });
        await walk(absolute, real, relative, link, new Set([...ancestors, real]));
      } else if (isFile) {
        entries.push({ path: relative, kind: 'file', absolute, real, link, unread: false });
      } else {
        problems.push(problemOf.special(relative));
      }
    }
  };
  await walk(root, realRoot, '', false, new Set([realRoot]));
  entries.sort((a, b) => byteOrder(a.path, b.path));
  problems.sort((a, b) => byteOrder(a.path, b.path));
  return new TemplateTree(root, realRoot, rootKind, entries, problems, dir);
}

/** A tree as given, or the folder's tree read now: what every reader of a template takes. */
export async function templateTreeOf(source: string | TemplateTree): Promise<TemplateTree> {
  return typeof source === 'string' ? readTemplateTree(source) : source;
}
