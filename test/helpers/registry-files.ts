import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** Every file of a registry folder (the output's bookkeeping aside), by name, in name order. */
export async function filesOf(dir: string): Promise<Map<string, Buffer>> {
  const names = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const files = new Map<string, Buffer>();
  for (const entry of names) {
    const name = path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (name.startsWith('.template-registry-')) continue;
    files.set(name, await readFile(path.join(dir, name)));
  }
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)));
}
