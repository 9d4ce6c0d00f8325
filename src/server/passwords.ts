/**
 * Password hashes: scrypt (node:crypto), a random salt per password, the parameters kept in the
 * hash so they can be raised later without breaking stored ones:
 * `scrypt$<N>$<r>$<p>$<salt base64url>$<key base64url>`.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** One of OWASP's equivalent scrypt minimums (N = 2^17, p = 1 at 128 MiB; or this: 32 MiB, p = 3): about 0.3 s of one core per hash. */
const PARAMETERS = { N: 32_768, r: 8, p: 3 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** Stored hashes are trusted only this far: a hash asking for more memory or work is refused, not computed. */
const MAX = { N: 1 << 20, r: 32, p: 16 } as const;

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  const maxmem = 256 * (options.N ?? 0) * (options.r ?? 0) + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, KEY_BYTES, { ...options, maxmem }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** The parts of a stored hash; undefined when it is not one this module made (or asks too much). */
function parseHash(hash: string): { options: ScryptOptions; salt: Buffer; key: Buffer } | undefined {
  const [scheme, n, r, p, salt, key, ...rest] = hash.split('$');
  if (scheme !== 'scrypt' || rest.length > 0 || salt === undefined || key === undefined) return undefined;
  const [N, R, P] = [Number(n), Number(r), Number(p)];
  if (![N, R, P].every(Number.isSafeInteger) || N < 2 || N > MAX.N || (N & (N - 1)) !== 0 || R < 1 || R > MAX.r || P < 1 || P > MAX.p) return undefined;
  const keyBytes = Buffer.from(key, 'base64url');
  if (keyBytes.length !== KEY_BYTES) return undefined;
  return { options: { N, r: R, p: P }, salt: Buffer.from(salt, 'base64url'), key: keyBytes };
}

/** A hash of a random password, checked when an e-mail is unknown so that a login takes as long either way. */
let decoy: Promise<string> | undefined;

/** Whether `password` is the one `hash` was made from (compared in constant time); with no hash, a decoy check of the same cost answers false. */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  const parsed = parseHash(hash ?? (await decoy));
  if (!parsed) return false;
  const key = await scrypt(password, parsed.salt, parsed.options);
  return timingSafeEqual(key, parsed.key) && hash !== undefined;
}

/** What hashes and checks passwords: scrypt (`scryptHasher`), or a test's stand-in. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Whether `password` is the one `hash` was made from; with no hash, the same work answering false. */
  verify(password: string, hash: string | undefined): Promise<boolean>;
}

export const scryptHasher: PasswordHasher = { hash: hashPassword, verify: verifyPassword };
