import path from 'node:path';

/** True when `target` is `root` itself or lies below it (both absolute, already resolved). */
export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}
