import { createWriteStream } from 'node:fs';
import { chmod, copyFile, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

import picomatch from 'picomatch';
import { Pack, type WriteEntry } from 'tar';

import { DigestStream, digestOf } from '../archive/integrity.js';
import { tempPathBeside } from '../core/files.js';
import { isJunkName, isVersionControlName } from '../core/reserved-paths.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { isTemplateName, NAME_RULE, VERSION_PATTERN, VERSION_RULE } from '../core/versions.js';
import { isInside } from '../template/paths.js';
import { DEFAULT_CONTENT_FOLDER } from '../template/load.js';
import { MANIFEST_FILE } from '../template/validate.js';
import { ALWAYS_LEFT_OUT, GitignoreRules, isEnvFile, isOwnArchive, isSecretFile, LEFT_OUT_REASONS } from './ignore-rules.js';
import { errorMessage } from '../core/errors.js';

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

/** Byte order of the UTF-8 encodings (what `LC_ALL=C sort` gives), not UTF-16 code unit order. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

const normalisedMode = (mode: number): number => (mode & 0o111 ? 0o755 : 0o644);

async function readManifest(root: string, dir: string): Promise<Record<string, unknown>> {
  const file = path.join(root, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PackError(
      code === 'ENOENT' || code === 'ENOTDIR'
        ? `${MANIFEST_FILE} not found in ${dir}`
        : `cannot read ${MANIFEST_FILE} in ${dir}: ${errorMessage(error)}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new PackError(`${MANIFEST_FILE} in ${dir} is not valid JSON: ${errorMessage(error)}`);
  }
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
  return globs.length > 0 ? picomatch(globs, { dot: true }) : () => false;
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
  const matchers = globs.map((glob) => ({ glob, matches: picomatch(glob, { dot: true }) }));
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

interface WalkContext {
  realRoot: string;
  gitignore: GitignoreRules;
  leaveOut: LeaveOutTest;
  /** Real path of the archive being written, when it could lie inside the template. */
  outputReal: string | undefined;
  files: SourceFile[];
  leftOut: LeftOutFile[];
}

/**
 * Collects the regular files below `absoluteDir`, following links that stay inside the template,
 * and what is left out with its reason. `realDir` is the real path of `absoluteDir`; `ancestors`
 * the real paths of the folders being walked (a link back to one of them would never end).
 */
async function walk(
  context: WalkContext,
  absoluteDir: string,
  realDir: string,
  relativeDir: string,
  ancestors: ReadonlySet<string>,
): Promise<void> {
  await context.gitignore.load(absoluteDir, relativeDir);
  const names = (await readdir(absoluteDir)).sort(byteOrder);
  const leaveOut = (relative: string, reason: string, isDirectory: boolean): void => {
    context.leftOut.push({ path: isDirectory ? `${relative}/` : relative, reason });
  };
  for (const name of names) {
    const relative = relativeDir === '' ? name : `${relativeDir}/${name}`;
    const absolute = path.join(absoluteDir, name);
    let real = path.join(realDir, name);
    if (real === context.outputReal) {
      leaveOut(relative, LEFT_OUT_REASONS.ownArchive, false);
      continue;
    }
    let info = await lstat(absolute);
    if (info.isSymbolicLink()) {
      // An excluded name is skipped without looking where it leads.
      const asFile = context.leaveOut(relative, false);
      if (asFile !== undefined && context.leaveOut(relative, true) !== undefined) {
        leaveOut(relative, asFile, false);
        continue;
      }
      try {
        real = await realpath(absolute);
      } catch {
        throw new PackError(`symbolic link ${relative} points to a missing target`);
      }
      if (!isInside(context.realRoot, real)) {
        throw new PackError(`symbolic link ${relative} points outside the template folder (to ${real})`);
      }
      if (real === context.outputReal) {
        leaveOut(relative, LEFT_OUT_REASONS.ownArchive, false);
        continue;
      }
      info = await stat(absolute);
    }
    if (info.isDirectory()) {
      const reason = context.leaveOut(relative, true);
      if (reason !== undefined) {
        leaveOut(relative, reason, true);
        continue;
      }
      if (ancestors.has(real)) throw new PackError(`symbolic link ${relative} leads back to a folder that contains it`);
      await walk(context, absolute, real, relative, new Set([...ancestors, real]));
    } else if (info.isFile()) {
      const reason = context.leaveOut(relative, false);
      if (reason !== undefined) leaveOut(relative, reason, false);
      else context.files.push({ path: relative, source: absolute, mode: normalisedMode(info.mode) });
    } else {
      const reason = context.leaveOut(relative, false);
      if (reason === undefined) throw new PackError(`${relative} is not a regular file, folder or symbolic link (sockets, fifos and devices cannot be packed)`);
      leaveOut(relative, reason, false);
    }
  }
}

/** The template folder and its manifest, as pack reads them; PackError for a missing folder or a bad manifest. */
async function openTemplate(dir: string): Promise<{ root: string; source: Record<string, unknown> }> {
  const root = path.resolve(dir);
  let rootInfo;
  try {
    rootInfo = await stat(root);
  } catch {
    throw new PackError(`template folder ${dir} does not exist`);
  }
  if (!rootInfo.isDirectory()) throw new PackError(`${dir} is not a folder`);
  return { root, source: await readManifest(root, dir) };
}

/** Walks the template folder: the files to pack (sorted) and what is left out (sorted), or PackError. */
async function collect(dir: string, root: string, source: Record<string, unknown>, exclude: readonly string[], outputReal: string | undefined): Promise<{ files: SourceFile[]; leftOut: LeftOutFile[] }> {
  const gitignore = new GitignoreRules();
  const leaveOut = leaveOutTest(exclude, source, gitignore);
  const realRoot = await realpath(root);
  const context: WalkContext = { realRoot, gitignore, leaveOut, outputReal, files: [], leftOut: [] };
  await walk(context, root, realRoot, '', new Set([realRoot]));
  const files = context.files.sort((a, b) => byteOrder(a.path, b.path));
  if (!files.some((file) => file.path === MANIFEST_FILE)) {
    // template.json is read before, so it exists; it can only be missing here if it is not a regular file.
    throw new PackError(`${MANIFEST_FILE} in ${dir} must be a regular file`);
  }
  return { files, leftOut: context.leftOut.sort((a, b) => byteOrder(a.path, b.path)) };
}

/**
 * The files `packTemplate` would put in the archive of `dir` (with `exclude`), and those it would
 * leave out with the reason: what `test` generates from, so that what is tested is what is
 * published. Throws PackError as `packTemplate` does.
 */
export async function selectPackFiles(dir: string, options: Pick<PackOptions, 'exclude'> = {}): Promise<PackSelection> {
  const { root, source } = await openTemplate(dir);
  const { files, leftOut } = await collect(dir, root, source, options.exclude ?? [], undefined);
  return { root, files: files.map((file) => file.path), leftOut };
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
export async function packTemplate(dir: string, options: PackOptions = {}): Promise<PackResult> {
  const { root, source } = await openTemplate(dir);
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

  const { files, leftOut } = await collect(dir, root, source, options.exclude ?? [], path.join(await realpath(outDir), fileName));
  const modes = new Map(files.map((file) => [file.path, file.mode]));

  const staging = await mkdtemp(path.join(tmpdir(), 'template-pack-'));
  const temporary = tempPathBeside(outFile);
  try {
    await stage(staging, files, manifestText);
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
