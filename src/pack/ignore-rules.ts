/**
 * What `pack` leaves out beyond its fixed rules, and why (each file or folder left out is named
 * with one of the reasons below): the template's `.gitignore` files, matched as git matches them by
 * the `ignore` package (`#` comments, `!` negation, a trailing `/` for folders only, a `/` elsewhere
 * anchoring the pattern to the file's folder, `**`, `\` escapes, trailing spaces; the last
 * matching line wins, a deeper file after a shallower one), secrets and environments that must
 * never ship (`.env`, `.env.*`, credentials such as `.npmrc` or `id_rsa`, `.venv`, `__pycache__`),
 * and archives `pack` itself wrote.
 */
import type { Ignore } from 'ignore';
import { loadIgnore } from '../core/lazy/ignore.load.js';

interface IgnoreLine {
  negate: boolean;
  directoryOnly: boolean;
  /** True when the line's pattern (its `!` aside) matches a path relative to the file's folder (a folder's ending in `/`). */
  matches: (relative: string) => boolean;
}

/** The lines of one `.gitignore` (comments and blank lines left out), each matched as git matches it. */
export function parseGitignore(text: string): IgnoreLine[] {
  const lines: IgnoreLine[] = [];
  for (const raw of text.split(/\r?\n/)) {
    // A comment or a blank line is no rule.
    if (raw.trim() === '' || raw.startsWith('#')) continue;
    const negate = raw.startsWith('!');
    const pattern = negate ? raw.slice(1) : raw;
    const matcher = loadIgnore().ignore().add(pattern);
    lines.push({ negate, directoryOnly: /(?<!\\)\/\s*$/.test(pattern), matches: (relative) => matcher.ignores(relative) });
  }
  return lines;
}

/** The `.gitignore` files found so far, by the folder (relative to the template, '' for its root) they sit in. */
export class GitignoreRules {
  readonly #byFolder = new Map<string, Ignore>();

  /** The text of `<folder>/.gitignore` (folder relative to the template, '' for its root). */
  add(relativeFolder: string, text: string): void {
    this.#byFolder.set(relativeFolder, loadIgnore().ignore().add(text));
  }

  /**
   * The `.gitignore` (its path relative to the template) that ignores `relative` (a path relative
   * to the template), or undefined when the `.gitignore` files keep it.
   */
  ignoredBy(relative: string, isDirectory: boolean): string | undefined {
    let by: string | undefined;
    const parts = relative.split('/');
    // Shallow files first, so that a deeper .gitignore has the last word.
    for (let depth = 0; depth < parts.length; depth++) {
      const folder = parts.slice(0, depth).join('/');
      const rules = this.#byFolder.get(folder);
      if (!rules) continue;
      const result = rules.test(`${parts.slice(depth).join('/')}${isDirectory ? '/' : ''}`);
      if (result.ignored) by = folder === '' ? '.gitignore' : `${folder}/.gitignore`;
      else if (result.unignored) by = undefined;
    }
    return by;
  }

  /** True when the `.gitignore` files say `relative` (a path relative to the template) is ignored. */
  ignores(relative: string, isDirectory: boolean): boolean {
    return this.ignoredBy(relative, isDirectory) !== undefined;
  }
}

/** `.env`, `.env.local`, ...: secrets that must not ship unless the manifest names them. */
export const isEnvFile = (base: string): boolean => base === '.env' || base.startsWith('.env.');

/** Files that hold credentials more often than not: left out unless the manifest's `include` names them. */
const SECRET_FILES: readonly string[] = ['.npmrc', '.pypirc', '.netrc', '_netrc'];
/** Folders whose files are credentials: left out unless the manifest's `include` names them. */
const SECRET_FOLDERS: readonly string[] = ['.aws', '.ssh'];

/**
 * True when `relative` (a file's path relative to the template) may hold credentials: `.npmrc`,
 * `.pypirc`, `.netrc`, SSH keys (`id_rsa*`, `id_ed25519*`), `*.pem`, `*.key`, or anything inside
 * an `.aws/` or `.ssh/` folder. Names are compared case-insensitively (as on Windows and macOS).
 */
export function isSecretFile(relative: string): boolean {
  const parts = relative.toLowerCase().split('/');
  const base = parts.at(-1) ?? '';
  if (parts.slice(0, -1).some((folder) => SECRET_FOLDERS.includes(folder))) return true;
  return SECRET_FILES.includes(base) || base.startsWith('id_rsa') || base.startsWith('id_ed25519') || base.endsWith('.pem') || base.endsWith('.key');
}

/** Why `pack` left a file or folder out: what `pack` and `publish` print beside its path. */
export const LEFT_OUT_REASONS = {
  versionControl: 'version-control data',
  dependencies: 'installed dependencies',
  environment: 'a local environment or cache',
  junk: 'desktop junk',
  workflows: 'workflow files',
  ownArchive: 'an archive pack wrote',
  secret: 'may hold credentials; list it in the manifest\'s "include" to pack it',
  envFile: 'an .env file; packed only when the manifest\'s "files" rules or "include" name it',
  gitignore: (file: string): string => `ignored by ${file}`,
  exclude: (glob: string): string => `matches the exclude glob ${JSON.stringify(glob)}`,
} as const;

/**
 * Installed dependencies, local environments and caches: never in a template archive, by name
 * (version-control data is `core/reserved-paths.ts`'s `isVersionControlName`).
 */
export const ALWAYS_LEFT_OUT: ReadonlyMap<string, string> = new Map([
  ['node_modules', LEFT_OUT_REASONS.dependencies],
  ['.venv', LEFT_OUT_REASONS.environment],
  ['__pycache__', LEFT_OUT_REASONS.environment],
]);

/** `<name>-<version>.tgz` for this template: an archive `pack` wrote earlier. */
export function isOwnArchive(base: string, name: string): boolean {
  if (!base.startsWith(`${name}-`) || !base.endsWith('.tgz')) return false;
  return /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.test(base.slice(name.length + 1, -'.tgz'.length));
}
