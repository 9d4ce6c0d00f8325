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
import { ALWAYS_LEFT_OUT_FOLDERS, GitignoreRules, isEnvFile, isOwnArchive } from './ignore-rules.js';
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
  /** The manifest as packed (with the stamped version). */
  manifest: TemplateManifest;
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

type ExcludeTest = (relative: string, isDirectory: boolean) => boolean;

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

function excludeTest(globs: readonly string[], manifest: Record<string, unknown>, gitignore: GitignoreRules): ExcludeTest {
  for (const glob of globs) {
    if (typeof glob !== 'string' || glob.trim() === '') throw new PackError(`exclude globs must be non-empty strings (got ${quote(glob)})`);
  }
  const matches = globs.length > 0 ? picomatch([...globs], { dot: true }) : () => false;
  const envFiles = namedEnvFiles(manifest);
  const included = includedOnPurpose(manifest);
  const name = String(manifest.name);
  return (relative, isDirectory) => {
    if (relative === MANIFEST_FILE) return false; // always packed (stamped)
    const base = relative.slice(relative.lastIndexOf('/') + 1);
    if (ALWAYS_LEFT_OUT_FOLDERS.has(base) || isVersionControlName(base) || isJunkName(base)) return true;
    if (relative === '.github/workflows' || relative.startsWith('.github/workflows/')) return true;
    if (!isDirectory && isOwnArchive(base, name)) return true;
    if (!isDirectory && included(relative)) return matches(relative);
    if (!isDirectory && isEnvFile(base) && !envFiles.has(relative)) return true;
    if (gitignore.ignores(relative, isDirectory)) return true;
    return matches(relative) || (isDirectory && matches(`${relative}/`));
  };
}

interface WalkContext {
  realRoot: string;
  gitignore: GitignoreRules;
  excluded: ExcludeTest;
  /** Real path of the archive being written, when it could lie inside the template. */
  outputReal: string;
  files: SourceFile[];
}

/**
 * Collects the regular files below `absoluteDir`, following links that stay inside the template.
 * `realDir` is the real path of `absoluteDir`; `ancestors` the real paths of the folders being
 * walked (a link back to one of them would never end).
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
  for (const name of names) {
    const relative = relativeDir === '' ? name : `${relativeDir}/${name}`;
    const absolute = path.join(absoluteDir, name);
    let real = path.join(realDir, name);
    if (real === context.outputReal) continue;
    let info = await lstat(absolute);
    if (info.isSymbolicLink()) {
      // An excluded name is skipped without looking where it leads.
      if (context.excluded(relative, false) && context.excluded(relative, true)) continue;
      try {
        real = await realpath(absolute);
      } catch {
        throw new PackError(`symbolic link ${relative} points to a missing target`);
      }
      if (!isInside(context.realRoot, real)) {
        throw new PackError(`symbolic link ${relative} points outside the template folder (to ${real})`);
      }
      if (real === context.outputReal) continue;
      info = await stat(absolute);
    }
    if (info.isDirectory()) {
      if (context.excluded(relative, true)) continue;
      if (ancestors.has(real)) throw new PackError(`symbolic link ${relative} leads back to a folder that contains it`);
      await walk(context, absolute, real, relative, new Set([...ancestors, real]));
    } else if (info.isFile()) {
      if (context.excluded(relative, false)) continue;
      context.files.push({ path: relative, source: absolute, mode: normalisedMode(info.mode) });
    } else if (!context.excluded(relative, false)) {
      throw new PackError(`${relative} is not a regular file, folder or symbolic link (sockets, fifos and devices cannot be packed)`);
    }
  }
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
 * `.gitignore` files ignore, `.env` files (unless the manifest's `files` rules name them), its own
 * earlier archives and the `exclude` globs, with `template.json` carrying `version`. The folder
 * itself is never modified.
 */
export async function packTemplate(dir: string, options: PackOptions = {}): Promise<PackResult> {
  const root = path.resolve(dir);
  let rootInfo;
  try {
    rootInfo = await stat(root);
  } catch {
    throw new PackError(`template folder ${dir} does not exist`);
  }
  if (!rootInfo.isDirectory()) throw new PackError(`${dir} is not a folder`);

  const source = await readManifest(root, dir);
  const version = options.version ?? source.version;
  if (typeof version !== 'string' || !VERSION_PATTERN.test(version)) {
    throw new PackError(`version ${VERSION_RULE} (got ${quote(version)})`);
  }
  const manifest = stampVersion(source, version);
  const manifestText = `${JSON.stringify(manifest, null, 2)}\n`;
  const gitignore = new GitignoreRules();
  const excluded = excludeTest(options.exclude ?? [], source, gitignore);

  const outDir = path.resolve(options.outDir ?? defaultOutDir(root));
  await mkdir(outDir, { recursive: true });
  const fileName = `${manifest.name}-${version}.tgz`;
  const outFile = path.join(outDir, fileName);

  const realRoot = await realpath(root);
  const context: WalkContext = { realRoot, gitignore, excluded, outputReal: path.join(await realpath(outDir), fileName), files: [] };
  await walk(context, root, realRoot, '', new Set([realRoot]));
  const files = context.files.sort((a, b) => byteOrder(a.path, b.path));
  if (!files.some((file) => file.path === MANIFEST_FILE)) {
    // template.json is read above, so it exists; it can only be missing here if it is not a regular file.
    throw new PackError(`${MANIFEST_FILE} in ${dir} must be a regular file`);
  }
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
      manifest,
    };
  } finally {
    await rm(temporary, { force: true });
    await rm(staging, { recursive: true, force: true });
  }
}
