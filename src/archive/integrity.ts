/**
 * Integrity of archives, as the registry states it: an SRI string (`sha512-<base64>`, parsed and
 * matched by `ssri` with the SRI rules: the strongest algorithm listed decides), the hex SHA-256
 * and the size.
 */
import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';

import type { Integrity } from 'ssri';
import { loadSsri } from '../core/lazy/ssri.load.js';

/** The algorithms an archive is hashed with: every one an SRI string may name. */
const ALGORITHMS = ['sha512', 'sha384', 'sha256'];

export interface ArchiveDigest {
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  /** Subresource-integrity string of the bytes: `sha512-<base64>`. */
  integrity: string;
  /** Number of bytes. */
  size: number;
}

/** What a registry entry says the archive is: any of an SRI string, a hex SHA-256, a size. */
export interface ExpectedDigest {
  integrity?: string;
  sha256?: string;
  size?: number;
}

/** The archive is not the one the registry described (or could not be verified). */
export class IntegrityError extends Error {
  override readonly name = 'IntegrityError';
  readonly expected: string;
  readonly actual: string;

  constructor(message: string, expected: string, actual: string) {
    super(message);
    this.expected = expected;
    this.actual = actual;
  }
}

/** A pass-through stream that hashes what flows through it; `digest()` once it has ended. */
export class DigestStream extends Transform {
  #hasher;
  #size = 0;

  /** `algorithms`: the hashes worked out (default every one an SRI string may name); fewer cost less on a large archive. */
  constructor(algorithms: readonly ('sha512' | 'sha384' | 'sha256')[] = ALGORITHMS as ('sha512' | 'sha384' | 'sha256')[]) {
    super();
    this.#hasher = loadSsri().create({ algorithms: [...algorithms] });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hasher.update(chunk);
    this.#size += chunk.length;
    callback(null, chunk);
  }

  /** Every hash of the bytes seen (as an ssri Integrity) and their count. */
  result(): { hashes: Integrity; size: number } {
    return { hashes: this.#hasher.digest(), size: this.#size };
  }
}

function sha256Hex(hashes: Integrity): string {
  return Buffer.from(hashes.sha256?.[0]?.digest ?? '', 'base64').toString('hex');
}

function sha512Sri(hashes: Integrity): string {
  return `sha512-${hashes.sha512?.[0]?.digest ?? ''}`;
}

/** The digest of bytes hashed by a DigestStream. */
export function digestOf(result: { hashes: Integrity; size: number }): ArchiveDigest {
  return { sha256: sha256Hex(result.hashes), integrity: sha512Sri(result.hashes), size: result.size };
}

/** SHA-256 (hex), SRI integrity (`sha512-<base64>`) and size of a file, read as a stream. */
export async function computeIntegrity(file: string): Promise<ArchiveDigest> {
  const hasher = loadSsri().create({ algorithms: ['sha512', 'sha256'] });
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hasher.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  const hashes = hasher.digest();
  return { sha256: sha256Hex(hashes), integrity: sha512Sri(hashes), size };
}

/**
 * Throws IntegrityError unless bytes with these `hashes` and `size` are what `expected` says
 * (`label` names them in the message). SRI: of the algorithms listed, the strongest one counts and
 * any of its digests may match.
 */
export function verifyIntegrity(expected: ExpectedDigest, actual: { hashes: Integrity; size: number }, label: string): void {
  if (expected.size !== undefined && expected.size !== actual.size) {
    throw new IntegrityError(`size mismatch for ${label}: expected ${expected.size} bytes, got ${actual.size}`, String(expected.size), String(actual.size));
  }
  if (expected.integrity !== undefined) {
    const wanted = loadSsri().parse(expected.integrity, { strict: true });
    const algorithm = wanted.isEmpty() ? null : wanted.pickAlgorithm();
    if (algorithm === null) throw new IntegrityError(`integrity of ${label} has no supported hash: ${expected.integrity}`, expected.integrity, '');
    const found = `${algorithm}-${actual.hashes[algorithm]?.[0]?.digest ?? ''}`;
    if (!wanted.match(found)) {
      const shown = (wanted[algorithm] ?? []).map((hash) => `${algorithm}-${hash.digest}`).join(' ');
      throw new IntegrityError(`integrity mismatch for ${label}: expected ${shown}, got ${found}`, shown, found);
    }
  }
  const sha256 = sha256Hex(actual.hashes);
  if (expected.sha256 !== undefined && expected.sha256.toLowerCase() !== sha256) {
    throw new IntegrityError(`sha256 mismatch for ${label}: expected ${expected.sha256}, got ${sha256}`, expected.sha256, sha256);
  }
}
