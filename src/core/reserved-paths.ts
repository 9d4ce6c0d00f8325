/**
 * Paths a template may never hold or write: version-control data (`.git` and its kin), compared as
 * every platform's file system compares names, so that no spelling reaches the real folder: case
 * folded (Windows, macOS), trailing dots and spaces dropped and `:stream` suffixes cut (NTFS),
 * 8.3 short names (`GIT~1`), and the code points HFS+ ignores (`.g\u200Cit`). The same rules as
 * git's own `is_ntfs_dotgit` and `is_hfs_dotgit`, applied to every version-control folder.
 *
 * Desktop junk (`.DS_Store`, `Thumbs.db`, ...) is not dangerous, only never wanted: `pack` leaves it
 * out and generation never writes it.
 */

/** Folders (or files) through which a version-control system is configured or run. */
const VERSION_CONTROL_NAMES: readonly string[] = ['.git', '.hg', '.svn', '.bzr', '_darcs', 'cvs', '.fossil', '.fslckout', '_fossil_', '.jj', '.pijul'];

/** NTFS short names of those folders (`GIT~1` is what Windows may call `.git`). */
const SHORT_NAME = /^(?:git|hg|svn|bzr|darcs|jj|pijul|fossil)~\d+$/;

/** Files an operating system's file manager leaves behind. */
const JUNK_NAMES: readonly string[] = ['.ds_store', 'thumbs.db', 'ehthumbs.db', 'desktop.ini', '.spotlight-v100', '.trashes', '.fseventsd', '.apdisk'];

/** Code points HFS+ leaves out when it compares names (git's `next_hfs_char`). */
const HFS_IGNORED = /[\u200C-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g;

/** A name as the most forgiving file system compares it. */
function comparableName(segment: string): string {
  return segment
    .normalize('NFC')
    .replace(HFS_IGNORED, '')
    .replace(/:.*$/s, '')
    .replace(/(?<=[^. ])[. ]+$/, '')
    .toLowerCase();
}

/** True when `segment` (one path segment) is, on some platform, a version-control folder or file. */
export function isVersionControlName(segment: string): boolean {
  const name = comparableName(segment);
  return VERSION_CONTROL_NAMES.includes(name) || SHORT_NAME.test(name);
}

/** True when `segment` is desktop junk (`.DS_Store`, `Thumbs.db`, AppleDouble `._*` files). */
export function isJunkName(segment: string): boolean {
  const name = comparableName(segment);
  return JUNK_NAMES.includes(name) || name.startsWith('._');
}

/** The segments of a relative path, split as both POSIX and Windows split them. */
function pathSegments(relativePath: string): string[] {
  return relativePath.split(/[\\/]+/).filter((segment) => segment !== '' && segment !== '.');
}

/** The first segment of `relativePath` that is version-control data, or undefined. */
export function versionControlSegment(relativePath: string): string | undefined {
  return pathSegments(relativePath).find(isVersionControlName);
}

/**
 * Why a template may not hold or write `relativePath`, or undefined when it may: a `.git` (or
 * other version-control) segment in any spelling a platform treats as that name.
 */
export function reservedPathProblem(relativePath: string): string | undefined {
  const segment = versionControlSegment(relativePath);
  if (segment === undefined) return undefined;
  return `${JSON.stringify(relativePath)} is inside version-control data (${JSON.stringify(segment)}): a template may never hold or write such a path`;
}

/** The error of a write into version-control data that got past every earlier check. */
export class ReservedPathError extends Error {
  override readonly name = 'ReservedPathError';
  constructor(
    readonly path: string,
    where: string,
  ) {
    super(`${where}: ${reservedPathProblem(path) ?? `${JSON.stringify(path)} is reserved`}`);
  }
}
