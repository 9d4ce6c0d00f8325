import { createWriteStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { WriteEntry } from 'tar';

import { DigestStream, digestOf } from '../archive/integrity.js';
import { tempPathBeside } from '../core/files.js';
import { loadPicomatch } from '../core/lazy/picomatch.load.js';
import { loadTar } from '../core/lazy/tar.load.js';
import { isJunkName, isVersionControlName } from '../core/reserved-paths.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { isTemplateName, NAME_RULE, VERSION_PATTERN, VERSION_RULE } from '../core/versions.js';
import { isInside } from '../template/paths.js';
import { DEFAULT_CONTENT_FOLDER } from '../template/load.js';
import { byteOrder, MANIFEST_FILE, templateTreeOf, type TemplateTree } from '../template/tree.js';
import { ALWAYS_LEFT_OUT, GitignoreRules, isEnvFile, isOwnArchive, isSecretFile, LEFT_OUT_REASONS } from './ignore-rules.js';

/** The mtime of every archive entry (the one npm uses), so that the archive does not depend on when it was made. */
export const FIXED_MTIME = new Date('1985-10-26T08:15:00.000Z');


export interface PackOptions {
  /** The version to stamp into the packed `template.json`; default: the manifest's own. */
  version?: string;
  /** Where to write `<name>-<version>.tgz`; default: the current folder, or the template's parent when that is inside the template. Created if needed. */
  outDir?: string;
  /** Extra picomatch globs (`dot: true`) matched against `/`-separated paths relative to the template folder. */
  exclude?: string[];
}

export interface PackResult {
  /** Absolute path of the `.tgz`. */
  file: string;
  /** Size of the archive in bytes. */
  size: number;
  /** Hex SHA-256 of the archive bytes. */
  sha256: string;
  /** Subresource-integrity string: `sha512-<base64>`. */
  integrity: string;
  /** Archive entry paths, sorted by byte order. */
  files: string[];
  /** What was left out and why, sorted by path (a folder left out whole once, its path ending in `/`). */
  leftOut: LeftOutFile[];
  /** The manifest as packed (with the stamped version). */
  manifest: TemplateManifest;
}

/** A file or folder of the template that `pack` leaves out of the archive. */
export interface LeftOutFile {
  /** Relative to the template folder, `/`-separated; a folder's ends in `/` (left out with all it holds). */
  path: string;
  /** Why, in words (`ignored by .gitignore`, `may hold credentials; ...`). */
  reason: string;
}

/** The files `pack` would put in the archive of a template folder, and those it would leave out. */
export interface PackSelection {
  /** The template folder, absolute. */
  root: string;
  /** Archive paths (relative to the template folder, `/`-separated), sorted by byte order; `template.json` among them. */
  files: string[];
  leftOut: LeftOutFile[];
}

/** A template that cannot be packed (bad manifest, bad version, a link out of the folder, ...). */
export class PackError extends Error {
  override readonly name = 'PackError';
}

interface SourceFile {
  /** Archive path, `/`-separated, relative to the template folder. */
  path: string;
  /** Absolute path to read the content from (a link's path; reading follows it). */
  source: string;
  /** 0o644 or 0o755. */
  mode: number;
}

const quote = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** The manifest as the tree read it (the one manifest reader), with a name pack can use; PackError else. */
async function readManifest(tree: TemplateTree, dir: string): Promise<Record<string, unknown>> {
  const read = await tree.manifest();
  const problem = read.problem;
  if (problem?.code === 'MISSING') throw new PackError(`${MANIFEST_FILE} not found in ${dir}`);
  if (problem?.code === 'NOT_A_FILE') throw new PackError(`${MANIFEST_FILE} in ${dir} must be a regular file`);
  if (problem?.code === 'INVALID_JSON') throw new PackError(`${MANIFEST_FILE} in ${dir} is not valid JSON: ${problem.message.replace(/^invalid JSON: /, '')}`);
  if (problem) throw new PackError(`${MANIFEST_FILE} in ${dir} ${problem.message}`);
  const value = read.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PackError(`${MANIFEST_FILE} in ${dir} must hold a JSON object`);
  }
  const manifest = value as Record<string, unknown>;
  if (typeof manifest.name !== 'string' || !isTemplateName(manifest.name)) {
    throw new PackError(`${MANIFEST_FILE} in ${dir}: name ${NAME_RULE} (got ${quote(manifest.name)})`);
  }
  return manifest;
}

/** The manifest with `version` replaced; an existing key keeps its place. */
function stampVersion(manifest: Record<string, unknown>, version: string): TemplateManifest {
  return { ...manifest, version } as unknown as TemplateManifest;
}

/** Why `relative` (a path relative to the template) is left out, or undefined when it is packed. */
type LeaveOutTest = (relative: string, isDirectory: boolean) => string | undefined;

/** The manifest's `include` globs: files packed although the rules below would leave them out. */
function includedOnPurpose(manifest: Record<string, unknown>): (relative: string) => boolean {
  const globs = Array.isArray(manifest.include) ? manifest.include.filter((glob): glob is string => typeof glob === 'string' && glob !== '') : [];
  return globs.length > 0 ? loadPicomatch().picomatch(globs, { dot: true }) : () => false;
}

/** The `.env*` files the manifest names in its `files` rules (paths relative to the content folder): packed on purpose. */
function namedEnvFiles(manifest: Record<string, unknown>): Set<string> {
  const content = typeof manifest.content === 'string' ? manifest.content.replace(/^\.\/|\/+$/g, '') : DEFAULT_CONTENT_FOLDER;
  const rules = Array.isArray(manifest.files) ? (manifest.files as unknown[]) : [];
  const named = new Set<string>();
  for (const rule of rules) {
    const file = typeof rule === 'object' && rule !== null ? (rule as { path?: unknown }).path : undefined;
    if (typeof file === 'string' && isEnvFile(file.slice(file.lastIndexOf('/') + 1))) named.add(`${content}/${file}`);
  }
  return named;
}

function leaveOutTest(globs: readonly string[], manifest: Record<string, unknown>, gitignore: GitignoreRules): LeaveOutTest {
  for (const glob of globs) {
    if (typeof glob !== 'string' || glob.trim() === '') throw new PackError(`exclude globs must be non-empty strings (got ${quote(glob)})`);
  }
  const matchers = globs.map((glob) => ({ glob, matches: loadPicomatch().picomatch(glob, { dot: true }) }));
  const excludedBy = (relative: string, isDirectory: boolean): string | undefined =>
    matchers.find(({ matches }) => matches(relative) || (isDirectory && matches(`${relative}/`)))?.glob;
  const envFiles = namedEnvFiles(manifest);
  const included = includedOnPurpose(manifest);
  const name = String(manifest.name);
  return (relative, isDirectory) => {
    if (relative === MANIFEST_FILE) return undefined; // always packed (stamped)
    const base = relative.slice(relative.lastIndexOf('/') + 1);
    if (isVersionControlName(base)) return LEFT_OUT_REASONS.versionControl;
    const always = ALWAYS_LEFT_OUT.get(base);
    if (always !== undefined) return always;
    if (isJunkName(base)) return LEFT_OUT_REASONS.junk;
    if (relative === '.github/workflows' || relative.startsWith('.github/workflows/')) return LEFT_OUT_REASONS.workflows;
    if (!isDirectory && isOwnArchive(base, name)) return LEFT_OUT_REASONS.ownArchive;
    const glob = excludedBy(relative, isDirectory);
    if (!isDirectory && included(relative)) return glob === undefined ? undefined : LEFT_OUT_REASONS.exclude(glob);
    if (!isDirectory && isSecretFile(relative)) return LEFT_OUT_REASONS.secret;
    if (!isDirectory && isEnvFile(base) && !envFiles.has(relative)) return LEFT_OUT_REASONS.envFile;
    const ignoredBy = gitignore.ignoredBy(relative, isDirectory);
    if (ignoredBy !== undefined) return LEFT_OUT_REASONS.gitignore(ignoredBy);
    return glob === undefined ? undefined : LEFT_OUT_REASONS.exclude(glob);
  };
}

/** The template folder and its manifest, as the tree read them; PackError for a missing folder, a bad manifest or an entry the reader refused. */
async function openTemplate(dir: string | TemplateTree): Promise<{ tree: TemplateTree; shown: string; source: Record<string, unknown> }> {
  const tree = await templateTreeOf(dir);
  const shown = tree.given;
  if (tree.rootKind === 'missing') throw new PackError(`template folder ${shown} does not exist`);
  if (tree.rootKind !== 'directory') throw new PackError(`${shown} is not a folder`);
  const source = await readManifest(tree, shown);
  // A link out of the folder, a broken or looping link, a fifo: refused wherever it is, as validate refuses it.
  if (tree.problems.length > 0) throw new PackError(tree.problems.map((problem) => problem.message).join('; '));
  return { tree, shown, source };
}

/**
 * The tree's files to pack (sorted) and what is left out (sorted), or PackError. A folder left out
 * is named once, with all it holds; `outputReal` is the archive being written, when it could lie
 * inside the template.
 */
async function collect(
  tree: TemplateTree,
  shown: string,
  source: Record<string, unknown>,
  exclude: readonly string[],
  outputReal: string | undefined,
): Promise<{ files: SourceFile[]; leftOut: LeftOutFile[] }> {
  const gitignore = new GitignoreRules();
  for (const entry of tree.entries) {
    if (entry.kind === 'file' && !entry.unread && (entry.path === '.gitignore' || entry.path.endsWith('/.gitignore'))) {
      const folder = entry.path.slice(0, -'.gitignore'.length).replace(/\/$/, '');
      gitignore.add(folder, (await tree.bytes(entry.path)).toString('utf8'));
    }
  }
  const leaveOutTestOf = leaveOutTest(exclude, source, gitignore);
  const files: SourceFile[] = [];
  const leftOut: LeftOutFile[] = [];
  const gone = new Set<string>();
  for (const entry of tree.entries) {
    const parent = entry.path.includes('/') ? entry.path.slice(0, entry.path.lastIndexOf('/')) : '';
    if (gone.has(parent)) {
      gone.add(entry.path);
      continue;
    }
    const isDirectory = entry.kind === 'directory';
    if (!isDirectory && entry.real === outputReal) {
      leftOut.push({ path: entry.path, reason: LEFT_OUT_REASONS.ownArchive });
      continue;
    }
    const reason = leaveOutTestOf(entry.path, isDirectory);
    if (reason !== undefined) {
      gone.add(entry.path);
      leftOut.push({ path: isDirectory ? `${entry.path}/` : entry.path, reason });
    } else if (entry.unread) {
      // Never read, so never packed (version-control data, installed dependencies): named all the same.
      gone.add(entry.path);
      leftOut.push({ path: isDirectory ? `${entry.path}/` : entry.path, reason: LEFT_OUT_REASONS.versionControl });
    } else if (!isDirectory) {
      files.push({ path: entry.path, source: entry.absolute, mode: await tree.mode(entry.path) });
    }
  }
  if (!files.some((file) => file.path === MANIFEST_FILE)) {
    throw new PackError(`${MANIFEST_FILE} in ${shown} must be a regular file`);
  }
  return { files: files.sort((a, b) => byteOrder(a.path, b.path)), leftOut: leftOut.sort((a, b) => byteOrder(a.path, b.path)) };
}

/**
 * The files `packTemplate` would put in the archive of `dir` (with `exclude`), and those it would
 * leave out with the reason: what `test` generates from, so that what is tested is what is
 * published. Throws PackError as `packTemplate` does.
 */
export async function selectPackFiles(dir: string | TemplateTree, options: Pick<PackOptions, 'exclude'> = {}): Promise<PackSelection> {
  const { tree, shown, source } = await openTemplate(dir);
  const { files, leftOut } = await collect(tree, shown, source, options.exclude ?? [], undefined);
  return { root: tree.root, files: files.map((file) => file.path), leftOut };
}

/** Fixes the gzip header's mtime (bytes 4-7) to 0 and its OS byte (byte 9) to 3 (Unix), whatever platform compressed it. */
class PortableGzipHeader extends Transform {
  private seen = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (let i = 0; this.seen + i < 10 && i < chunk.length; i++) {
      const offset = this.seen + i;
      if (offset >= 4 && offset <= 7) chunk[i] = 0;
      if (offset === 9) chunk[i] = 0x03;
    }
    this.seen += chunk.length;
    callback(null, chunk);
  }
}

/** Copies the files into `staging` with their archive paths, the stamped manifest and normalised modes. */
async function stage(staging: string, files: readonly SourceFile[], manifestText: string): Promise<void> {
  for (const file of files) {
    const target = path.join(staging, ...file.path.split('/'));
    await mkdir(path.dirname(target), { recursive: true });
    if (file.path === MANIFEST_FILE) await writeFile(target, manifestText);
    else await copyFile(file.source, target);
    await chmod(target, file.mode);
  }
}

/**
 * Where the archive goes without `outDir`: the current folder, unless that is the template folder
 * or inside it (an archive there would end up in the next pack): then the template's parent.
 */
export function defaultOutDir(templateRoot: string, cwd = process.cwd()): string {
  const here = path.resolve(cwd);
  return here === templateRoot || isInside(templateRoot, here) ? path.dirname(templateRoot) : here;
}

/**
 * Packs a template folder into `<name>-<version>.tgz`: a deterministic gzip tar of its regular
 * files at the archive root (sorted, fixed mtime, no owner, modes 0644/0755), without version
 * control data, installed dependencies and environments, workflow files, what the template's
 * `.gitignore` files ignore, `.env` files (unless the manifest's `files` rules name them), files
 * that may hold credentials (unless the manifest's `include` names them), its own earlier archives
 * and the `exclude` globs, with `template.json` carrying `version`. Every file or folder left out is
 * in `leftOut` with the reason. The folder itself is never modified.
 */
export async function packTemplate(dir: string | TemplateTree, options: PackOptions = {}): Promise<PackResult> {
  const { tree, shown, source } = await openTemplate(dir);
  const root = tree.root;
  const version = options.version ?? source.version;
  if (typeof version !== 'string' || !VERSION_PATTERN.test(version)) {
    throw new PackError(`version ${VERSION_RULE} (got ${quote(version)})`);
  }
  const manifest = stampVersion(source, version);
  const manifestText = `${JSON.stringify(manifest, null, 2)}\n`;

  const outDir = path.resolve(options.outDir ?? defaultOutDir(root));
  await mkdir(outDir, { recursive: true });
  const fileName = `${manifest.name}-${version}.tgz`;
  const outFile = path.join(outDir, fileName);

  const { files, leftOut } = await collect(tree, shown, source, options.exclude ?? [], path.join(await realpath(outDir), fileName));
  const modes = new Map(files.map((file) => [file.path, file.mode]));

  const staging = await mkdtemp(path.join(tmpdir(), 'template-pack-'));
  const temporary = tempPathBeside(outFile);
  try {
    await stage(staging, files, manifestText);
    const { Pack, createGzip } = loadTar();
    const pack = new Pack({
      cwd: staging,
      portable: true,
      mtime: FIXED_MTIME,
      noDirRecurse: true,
      strict: true,
      // chmod does not set execute bits everywhere (Windows): the header gets the mode decided above.
      onWriteEntry: (entry: WriteEntry) => {
        const mode = modes.get(entry.path);
        if (entry.stat && mode !== undefined) entry.stat.mode = (entry.stat.mode & ~0o7777) | mode;
      },
    });
    // Pack.add takes every path literally (tar.create would read `@name` as an archive to append).
    for (const file of files) pack.add(file.path);
    pack.end();
    const digest = new DigestStream();
    await pipeline(pack, createGzip({ level: 9 }), new PortableGzipHeader(), digest, createWriteStream(temporary, { flags: 'wx' }));
    await rename(temporary, outFile);
    const { size, sha256, integrity } = digestOf(digest.result());
    return {
      file: outFile,
      size,
      sha256,
      integrity,
      files: files.map((file) => file.path),
      leftOut,
      manifest,
    };
  } finally {
    await rm(temporary, { force: true });
    await rm(staging, { recursive: true, force: true });
  }
}
