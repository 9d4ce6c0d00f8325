/**
 * Which content files are rendered as Liquid: text that is valid UTF-8. Everything else (binary
 * files, text in another encoding such as Latin-1 or Shift-JIS) is copied byte for byte, since
 * decoding it as UTF-8 would replace every byte it cannot read with U+FFFD.
 */
import { isUtf8 } from 'node:buffer';

import { globMatcher } from '../core/glob.js';

/** How much of a file's head tells whether it is binary. */
export const BINARY_HEAD_BYTES = 8192;

/** A file is binary when its first 8 KiB hold a NUL byte, as git decides. */
export function isBinary(content: Buffer): boolean {
  return content.subarray(0, BINARY_HEAD_BYTES).includes(0);
}

/**
 * The file's text when it is rendered as Liquid (not binary, valid UTF-8), else undefined. A
 * byte-order mark is kept, so that the file keeps it too.
 */
export function liquidTextOf(content: Buffer): string | undefined {
  return isOpaqueBytes(content) ? undefined : content.toString('utf8');
}

/** True for bytes that are copied, compared and merged only as bytes: binary, or not valid UTF-8. */
export function isOpaqueBytes(content: Buffer): boolean {
  return isBinary(content) || !isUtf8(content);
}

/** True when bytes that are not rendered hold Liquid markers (`{{` or `{%`), which then reach the project as they are. */
export function holdsLiquidMarkers(content: Buffer): boolean {
  return content.includes('{{') || content.includes('{%');
}

/** The manifest's `verbatim` globs as a function: true for a content path (as stored, `/`-separated) copied byte for byte, never parsed. */
export function verbatimRule(globs: readonly string[] | undefined): (source: string) => boolean {
  // A template's globs: matched in linear time (a backtracking matcher can be made to hang).
  const matchers = (globs ?? []).map(globMatcher);
  return matchers.length > 0 ? (source) => matchers.some((matches) => matches(source)) : () => false;
}
