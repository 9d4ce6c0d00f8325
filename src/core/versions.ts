/**
 * The spec's version rules: the manifest's name and version patterns, version comparison, and
 * version ranges (semver).
 */
import { loadSemver } from './lazy/semver.load.js';

/** The manifest's name rule (also every template id): lower-case letters, digits and hyphens, starting with a letter. */
export const NAME_PATTERN = /^[a-z][a-z0-9-]*$/;

/**
 * The version rule: MAJOR.MINOR.PATCH, strict SemVer numbers (no leading zero, so each version has
 * one spelling and a yanked one cannot come back as `01.0.0`), each at most MAX_VERSION_DIGITS
 * digits (below Number.MAX_SAFE_INTEGER, so every number compares exactly).
 */
export const VERSION_PATTERN = /^(?:0|[1-9]\d{0,14})\.(?:0|[1-9]\d{0,14})\.(?:0|[1-9]\d{0,14})$/;

/** The most digits of each number of a version (999999999999999 at most). */
const MAX_VERSION_DIGITS = 15;

/** The version rule in words, for messages. */
export const VERSION_RULE = `must be MAJOR.MINOR.PATCH without leading zeros, each number at most ${MAX_VERSION_DIGITS} digits`;

/**
 * The spec's looser version pattern, which registry documents and stores written before strict
 * versions may hold (`01.0.0`): such a version is read past (skipped and reported), never written.
 */
const LOOSE_VERSION_PATTERN = /^\d+\.\d+\.\d+$/;

/**
 * The longest name (and template id): npm's limit. A name becomes a file name in every registry
 * (`templates/<name>.json`, temp files beside it), which a longer one would push past the 255
 * bytes file systems allow.
 */
export const MAX_NAME_LENGTH = 214;

/** The name rule in words, for messages. */
export const NAME_RULE = `must match the pattern ${NAME_PATTERN.source} and be at most ${MAX_NAME_LENGTH} characters`;

/** True when `name` follows the manifest's name rule. */
export function isTemplateName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= MAX_NAME_LENGTH && NAME_PATTERN.test(name);
}

/** True when `version` follows the manifest's version rule. */
export function isTemplateVersion(version: unknown): version is string {
  return typeof version === 'string' && VERSION_PATTERN.test(version);
}

/** True when `version` follows the spec's looser pattern (every version does; so may `01.0.0`): safe as a file or key name. */
export function isLooseVersion(version: unknown): version is string {
  return typeof version === 'string' && LOOSE_VERSION_PATTERN.test(version);
}

/** True when `version` follows the spec's looser pattern but not the version rule (`01.0.0`, 16 digits). */
export function isLooseOnlyVersion(version: unknown): version is string {
  return isLooseVersion(version) && !VERSION_PATTERN.test(version);
}

/** Where the leading digits of the segment of `version` at `start` end. */
function digitsEnd(version: string, start: number): number {
  let end = start;
  while (end < version.length) {
    const code = version.charCodeAt(end);
    if (code < 48 || code > 57) break;
    end++;
  }
  return end;
}

/** The value of the leading digits `version.slice(start, end)`: exact below 16 digits, else as Number reads them. */
function digitsValue(version: string, start: number, end: number): number {
  if (end - start > 15) return Number(version.slice(start, end));
  let value = 0;
  for (let index = start; index < end; index++) value = value * 10 + (version.charCodeAt(index) - 48);
  return value;
}

/**
 * Compares two versions the way the spec says: split on `.`, compare numerically segment by
 * segment, a missing segment counts as 0. Returns -1, 0 or 1.
 * A segment's value is its leading digits: one that does not start with digits (`beta`) counts as 0,
 * as a missing one does, and `0-beta` as 0. Read in place, without splitting: a build sorts and
 * selects among 100,000 versions with it.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 {
  // The start of the next segment of each; past the end (length + 1) once its segments are used up.
  let left = 0;
  let right = 0;
  while (left <= a.length || right <= b.length) {
    let x = 0;
    if (left <= a.length) {
      const end = digitsEnd(a, left);
      x = digitsValue(a, left, end);
      const dot = a.indexOf('.', end);
      left = dot < 0 ? a.length + 1 : dot + 1;
    }
    let y = 0;
    if (right <= b.length) {
      const end = digitsEnd(b, right);
      y = digitsValue(b, right, end);
      const dot = b.indexOf('.', end);
      right = dot < 0 ? b.length + 1 : dot + 1;
    }
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

/** Answers of isValidRange: a registry repeats a handful of ranges over 100,000 entries. Bounded. */
const rangeValidity = new Map<string, boolean>();
const MAX_REMEMBERED_RANGES = 10_000;

/** True when `range` is a version range `semver` understands (`>=1.0.0 <2`, `^20`, `1.x`, `*`). */
export function isValidRange(range: string): boolean {
  const remembered = rangeValidity.get(range);
  if (remembered !== undefined) return remembered;
  const valid = range.trim() !== '' && loadSemver().validRange(range) !== null;
  if (range.length <= 256) {
    if (rangeValidity.size >= MAX_REMEMBERED_RANGES) rangeValidity.clear();
    rangeValidity.set(range, valid);
  }
  return valid;
}

/** True when `version` lies inside the semver `range`; false for an invalid range or version. */
export function satisfiesRange(version: string, range: string): boolean {
  const { coerce, satisfies, valid } = loadSemver();
  const coerced = valid(version) ?? coerce(version)?.version;
  if (!coerced) return false;
  try {
    return satisfies(coerced, range, { includePrerelease: false });
  } catch {
    return false;
  }
}
