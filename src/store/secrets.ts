import { createHash, timingSafeEqual } from 'node:crypto';

/** The sha256 of a secret: what is stored and compared instead of the secret. */
export function secretDigest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Compares two secrets in constant time (through their digests, so lengths may differ). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(secretDigest(a), secretDigest(b));
}
