/**
 * What `pack` leaves out beyond its fixed rules: the template's `.gitignore` files (git's rules:
 * `#` comments, `!` negation, a trailing `/` for folders only, a `/` elsewhere anchoring the
 * pattern to the file's folder, `**`; the last matching line wins, a deeper file after a
 * shallower one), secrets and environments that must never ship (`.env`, `.env.*`, `.venv`,
 * `__pycache__`), and archives `pack` itself wrote.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import picomatch from 'picomatch';

interface IgnoreLine {
  negate: boolean;
  directoryOnly: boolean;
  matches: (relative: string) => boolean;
}

/** The lines of one `.gitignore`, matched against paths relative to its folder. */
export function parseGitignore(text: string): IgnoreLine[] {
  const lines: IgnoreLine[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    line = line.replace(/^\\([#!])/, '$1');
    const directoryOnly = line.endsWith('/');
    if (directoryOnly) line = line.replace(/\/+$/, '');
    if (line === '') continue;
    const anchored = line.includes('/');
    const glob = anchored ? line.replace(/^\//, '') : `**/${line}`;
    const matcher = picomatch(glob, { dot: true });
    lines.push({ negate, directoryOnly, matches: (relative) => matcher(relative) });
  }
  return lines;
}

/** The `.gitignore` files found so far, by the folder (relative to the template, '' for its root) they sit in. */
export class GitignoreRules {
  readonly #byFolder = new Map<string, IgnoreLine[]>();

  /** Reads `<folder>/.gitignore` when there is one. */
  async load(absoluteFolder: string, relativeFolder: string): Promise<void> {
    const text = await readFile(path.join(absoluteFolder, '.gitignore'), 'utf8').catch(() => undefined);
    if (text !== undefined) this.#byFolder.set(relativeFolder, parseGitignore(text));
  }

  /** True when the `.gitignore` files say `relative` (a path relative to the template) is ignored. */
  ignores(relative: string, isDirectory: boolean): boolean {
    let ignored = false;
    const parts = relative.split('/');
    // Shallow files first, so that a deeper .gitignore has the last word.
    for (let depth = 0; depth < parts.length; depth++) {
      const folder = parts.slice(0, depth).join('/');
      const lines = this.#byFolder.get(folder);
      if (!lines) continue;
      const below = parts.slice(depth).join('/');
      for (const line of lines) {
        if (line.directoryOnly && !isDirectory) continue;
        if (line.matches(below)) ignored = !line.negate;
      }
    }
    return ignored;
  }
}

/** `.env`, `.env.local`, ...: secrets that must not ship unless the manifest names them. */
export const isEnvFile = (base: string): boolean => base === '.env' || base.startsWith('.env.');

/** Folders of local environments and caches that never belong in a template archive. */
export const ALWAYS_LEFT_OUT_FOLDERS: ReadonlySet<string> = new Set(['.git', 'node_modules', '.venv', '__pycache__']);

/** `<name>-<version>.tgz` for this template: an archive `pack` wrote earlier. */
export function isOwnArchive(base: string, name: string): boolean {
  if (!base.startsWith(`${name}-`) || !base.endsWith('.tgz')) return false;
  return /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.test(base.slice(name.length + 1, -'.tgz'.length));
}
