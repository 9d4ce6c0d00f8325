/**
 * Signing a static registry (the format: core/registry-signatures.ts): which of the operator's keys
 * signs, what keys.json lists, and reading the key file `--sign-key` (or the action's `sign-key`
 * input, the server's `--sign-key`) names.
 *
 * Rotation: the key file may hold a JWK Set of several private keys, each with its window
 * (`notBefore`, `notAfter`). The documents are signed by the key active now with the latest
 * `notBefore`; keys.json lists every key not yet expired (a next key may be listed before it signs
 * anything) and is signed by every key active now, so a client that pinned the old key accepts the
 * new one on the old key's word.
 */
import { readFile, stat } from 'node:fs/promises';

import {
  KeyFileError,
  keyActiveAt,
  MAX_KEYS_FILE_BYTES,
  parseKeysFile,
  readSigningKeys,
  type PublishedKey,
  type SigningKey,
} from '../core/registry-signatures.js';

export { KeyFileError, type SigningKey } from '../core/registry-signatures.js';

/** A build warns when the signing key expires sooner than this. */
export const KEY_EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;

/**
 * The signing keys of `value`: a private JWK or JWK Set given inline (JSON text, as a CI secret holds
 * it) or the path of a file holding one. `argument` names the flag or input in errors; the value of
 * an inline key is never shown.
 */
export async function loadSigningKeys(value: string, argument: string): Promise<SigningKey[]> {
  const text = value.trim();
  if (text === '') throw new KeyFileError(`${argument} is empty: give a private JWK (or JWK Set) file, or its JSON`);
  let json: unknown;
  let where: string;
  if (text.startsWith('{')) {
    where = argument;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new KeyFileError(`${argument} is not valid JSON: ${(error as Error).message}`);
    }
  } else {
    where = `${argument} ${text}`;
    let size: number;
    try {
      size = (await stat(text)).size;
    } catch (error) {
      throw new KeyFileError(`${where} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (size > MAX_KEYS_FILE_BYTES) throw new KeyFileError(`${where} is ${size} bytes, more than ${MAX_KEYS_FILE_BYTES}: not a key file`);
    try {
      json = JSON.parse(await readFile(text, 'utf8'));
    } catch (error) {
      throw new KeyFileError(`${where} is not a JSON Web Key: ${(error as Error).message}`);
    }
  }
  return readSigningKeys(json, where);
}

/** What a build signs with at one moment. */
export interface SigningPlan {
  /** The key that signs the documents. */
  signer: SigningKey;
  /** Every key active now: they sign keys.json. */
  active: SigningKey[];
  /** What keys.json lists, windows filled in. */
  published: PublishedKey[];
  /** Warnings (a key close to expiry, an expired key left out). */
  warnings: string[];
}

const seconds = (date: Date): string => new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString();

/**
 * The plan for a build at `now`: windows a key file leaves open start when the key was first listed
 * (kept from the output's keys.json, `previous`, else now); expired keys are left out; the signer is
 * the active key with the latest start. Throws KeyFileError when no key is active now.
 */
export function planSigning(keys: readonly SigningKey[], previous: Buffer | undefined, now: Date): SigningPlan {
  let listed: PublishedKey[] = [];
  try {
    listed = previous ? parseKeysFile(previous) : [];
  } catch {
    listed = []; // an unreadable keys.json is rewritten
  }
  const warnings: string[] = [];
  const resolved = keys.map((key) => {
    const before = listed.find((old) => old.kid === key.kid && old.x === key.published.x && old.y === key.published.y);
    const notBefore = key.published.notBefore ?? before?.notBefore ?? seconds(now);
    return { key, published: { ...key.published, notBefore } };
  });
  const current = resolved.filter(({ published }) => published.notAfter === null || now.getTime() <= Date.parse(published.notAfter));
  for (const { key, published } of resolved) if (!current.some((c) => c.key === key)) warnings.push(`signing key ${key.kid} expired at ${published.notAfter ?? ''}: it is left out of keys.json`);
  const active = current.filter(({ published }) => keyActiveAt(published, now));
  if (active.length === 0) {
    throw new KeyFileError(`no signing key is valid at ${now.toISOString()} (${resolved.map(({ published }) => `${published.kid}: ${published.notBefore ?? '-'} to ${published.notAfter ?? '-'}`).join('; ')})`);
  }
  const start = (published: PublishedKey): number => (published.notBefore === null ? Number.NEGATIVE_INFINITY : Date.parse(published.notBefore));
  const signer = active.reduce((best, candidate) => (start(candidate.published) > start(best.published) ? candidate : best));
  if (signer.published.notAfter !== null && Date.parse(signer.published.notAfter) - now.getTime() < KEY_EXPIRY_WARNING_MS) {
    const next = current.some(({ published }) => published !== signer.published && start(published) > start(signer.published));
    if (!next) warnings.push(`signing key ${signer.key.kid} expires at ${signer.published.notAfter} and no next key is listed: add one to the key file (see docs/registry-hosting.md, "Rotating keys")`);
  }
  return { signer: signer.key, active: active.map(({ key }) => key), published: current.map(({ published }) => published), warnings };
}
