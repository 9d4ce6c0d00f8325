/**
 * The one rule for blob keys, shared by every BlobStore: a key is made by the store, so anything
 * else is a bug or an attack, and is refused before it reaches a file system or a bucket.
 */
import { TEMP_FILE_PATTERN } from '../../core/files.js';

/** A key (or a list prefix) breaks the rule; the message names it. */
export class BlobKeyError extends Error {
  constructor(key: string, rule: string) {
    super(`not a blob key: ${JSON.stringify(key)} (${rule})`);
    this.name = 'BlobKeyError';
  }
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function segmentProblem(segment: string): string | undefined {
  if (segment === '') return 'empty segment: no leading, trailing or doubled "/"';
  if (segment === '.' || segment === '..') return '"." and ".." segments are refused';
  // The folder store's temp files carry this shape; a key of that shape could be swept or hidden.
  if (TEMP_FILE_PATTERN.test(segment)) return 'segment has the shape of a temp file';
  return undefined;
}

/** Returns `key` when it is a relative, `/`-separated path that stays inside its store; throws BlobKeyError else. */
export function checkBlobKey(key: string): string {
  if (typeof key !== 'string' || key === '') throw new BlobKeyError(String(key), 'empty');
  if (key.includes('\\')) throw new BlobKeyError(key, 'backslashes are refused: segments are separated by "/"');
  if (CONTROL.test(key)) throw new BlobKeyError(key, 'NUL and control characters are refused');
  if (key.startsWith('/')) throw new BlobKeyError(key, 'absolute: a key is relative to its store');
  if (Buffer.byteLength(key) > 900) throw new BlobKeyError(key, 'longer than 900 bytes');
  for (const segment of key.split('/')) {
    const problem = segmentProblem(segment);
    if (problem !== undefined) throw new BlobKeyError(key, problem);
  }
  return key;
}

/** Returns `prefix` when it is '' or a key followed by `/`; throws BlobKeyError else. */
export function checkBlobPrefix(prefix: string): string {
  if (prefix === '') return prefix;
  if (!prefix.endsWith('/')) throw new BlobKeyError(prefix, 'a list prefix is "" or ends with "/"');
  checkBlobKey(prefix.slice(0, -1));
  return prefix;
}
