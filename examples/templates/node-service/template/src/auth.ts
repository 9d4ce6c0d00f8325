import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * True when the Authorization header is "Bearer <API_TOKEN>".
 * Both sides are hashed first so the comparison is constant-time and does not leak the token length.
 */
export function isAuthorized(header: string | undefined, token = process.env.API_TOKEN): boolean {
  if (!token || !header) return false;
  const presented = /^Bearer +(\S+) *$/i.exec(header)?.[1];
  if (!presented) return false;
  return timingSafeEqual(digest(presented), digest(token));
}
