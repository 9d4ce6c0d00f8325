import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | undefined;

/** This package's version, from the nearest package.json named template-registry above this file. */
export function cliVersion(): string {
  if (version !== undefined) return version;
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'template-registry' && pkg.version) return (version = pkg.version);
    } catch {
      // no package.json here; keep climbing
    }
    if (path.dirname(dir) === dir) return (version = '0.0.0');
  }
}
