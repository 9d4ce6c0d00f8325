import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** True when `target` is `root` itself or lies below it (both absolute, already resolved). */
export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Resolves a path that a template names (`changelog`, `migration.guide`, ...) against the template
 * root. Returns undefined when the path is absolute or climbs out of the root, including through a
 * symbolic link.
 */
export async function resolveInsideRoot(root: string, relativePath: string): Promise<string | undefined> {
  if (path.isAbsolute(relativePath) || path.win32.isAbsolute(relativePath)) return undefined;
  const absoluteRoot = path.resolve(root);
  const target = path.resolve(absoluteRoot, relativePath);
  if (!isInside(absoluteRoot, target)) return undefined;
  try {
    const [realRoot, realTarget] = await Promise.all([realpath(absoluteRoot), realpath(target)]);
    if (!isInside(realRoot, realTarget)) return undefined;
  } catch {
    // A path that does not exist cannot lead anywhere through a link; existence is checked elsewhere.
  }
  return target;
}
