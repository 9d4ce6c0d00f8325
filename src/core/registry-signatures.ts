/**
 * Signed registry documents: the one definition of the format, shared by the generator (which
 * signs), the client (which verifies) and the mirror (which checks and keeps the signatures).
 * Another implementation verifies with any JOSE library:
 *
 * - Each signed file F (`registry.json`, `index.json`, `templates/<id>.json`) has `F.jws` beside it:
 *   a JWS in compact serialization (RFC 7515, 7.1). Protected header
 *   `{"alg":"EdDSA"|"ES256","kid":"<key id>","typ":"template-registry-signature+json"}`; payload
 *   the UTF-8 JSON `{"path":"<F relative to the registry's root>","sha256":"<hex SHA-256 of F>","iat":<seconds>}`.
 *   F verifies when the signature verifies with the key `kid` names, `path` is the file fetched and
 *   `sha256` is the digest of the bytes received (after any Content-Encoding is undone).
 * - `keys.json`: `{"keys":[<public JWK>...]}`, each with `kid`, `alg`, `use: "sig"` and its window,
 *   `notBefore` and `notAfter` (ISO 8601; `null` for no bound). Never a private member.
 * - `keys.json.jws`: the same payload form (`"path":"keys.json"`) in the JWS JSON general
 *   serialization (RFC 7515, 7.2.1), one signature per key whose window holds the signing time:
 *   during a rotation the old key vouches for the new one.
 *
 * A key verifies a signature when `notBefore <= iat <= notAfter`, `now <= notAfter` (an expired key
 * verifies nothing, whatever `iat` it claims) and `iat` is at most five minutes in the future.
 * Keys are Ed25519 (`EdDSA`) or P-256 (`ES256`): no symmetric or unsigned algorithm is accepted.
 */
import { createHash } from 'node:crypto';

import type { CryptoKey, JWK } from 'jose';
import { loadJose } from './lazy/jose.load.js';
import { isRecord } from './is-record.js';

/** Beside each signed file: `registry.json` -> `registry.json.jws`. */
export const SIGNATURE_SUFFIX = '.jws';
/** The registry's public keys, at its root. */
export const KEYS_FILE = 'keys.json';
/** The `typ` of every signature's protected header. */
const SIGNATURE_TYPE = 'template-registry-signature+json';
/** The algorithms a key may have. */
export const SIGNATURE_ALGORITHMS = ['EdDSA', 'ES256'] as const;
export type SignatureAlgorithm = (typeof SIGNATURE_ALGORITHMS)[number];

/** The largest signature file read (a compact JWS is a few hundred bytes; keys.json.jws one signature per key). */
export const MAX_SIGNATURE_BYTES = 64 * 1024;
/** The largest keys.json read. */
export const MAX_KEYS_FILE_BYTES = 256 * 1024;
/** The most keys a keys.json (or a key file) may list. */
const MAX_KEYS = 32;
/** How far in the future a signature's `iat` may be (clocks differ). */
const MAX_CLOCK_SKEW_SECONDS = 300;

const KID_PATTERN = /^[A-Za-z0-9._:+=-]{1,128}$/;
const KID_RULE = 'must be 1 to 128 letters, digits and . _ : + = -';

/** A public key as keys.json lists it. */
export interface PublishedKey {
  kty: 'OKP' | 'EC';
  crv: 'Ed25519' | 'P-256';
  x: string;
  y?: string;
  kid: string;
  alg: SignatureAlgorithm;
  use: 'sig';
  /** ISO 8601; null: no lower bound. */
  notBefore: string | null;
  /** ISO 8601; null: the key does not expire. */
  notAfter: string | null;
}

/** A private key that signs, with the public key it publishes. */
export interface SigningKey {
  kid: string;
  alg: SignatureAlgorithm;
  /** The public part, window as the key file gives it (null where it gives none). */
  published: PublishedKey;
  privateKey: CryptoKey;
}

/** What every signature says about its file. */
export interface SignaturePayload {
  path: string;
  sha256: string;
  iat: number;
}

export type SignatureProblemReason = 'malformed' | 'unknown-key' | 'bad-signature' | 'wrong-file' | 'outside-window';

/** A signature that does not hold, and why (`reason`); the message names the file. */
export class SignatureProblem extends Error {
  override readonly name = 'SignatureProblem';
  constructor(
    readonly reason: SignatureProblemReason,
    message: string,
  ) {
    super(message);
  }
}

/** A key file or keys.json breaks a rule; the message names the file and the member. */
export class KeyFileError extends Error {
  override readonly name = 'KeyFileError';
}

const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');


/** A window bound: an ISO 8601 date-time, or null/absent for none. Returned as a normalized ISO string. */
function windowBound(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new KeyFileError(`${where} must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z (got ${JSON.stringify(value)})`);
  }
  return new Date(value).toISOString();
}

/** The public key of a JWK (private members dropped when `allowPrivate`, refused otherwise). */
function publicKeyOf(jwk: unknown, where: string, options: { allowPrivate: boolean }): PublishedKey {
  if (!isRecord(jwk)) throw new KeyFileError(`${where} must be a JSON Web Key (an object)`);
  const { kty, crv, x, y, kid, alg, use, d } = jwk;
  if (typeof kid !== 'string' || !KID_PATTERN.test(kid)) throw new KeyFileError(`${where}.kid is required and ${KID_RULE} (got ${JSON.stringify(kid)})`);
  if (d !== undefined && !options.allowPrivate) throw new KeyFileError(`${where} (kid ${kid}) holds a private key ("d"): only public keys may be listed`);
  let expected: SignatureAlgorithm;
  if (kty === 'OKP' && crv === 'Ed25519') expected = 'EdDSA';
  else if (kty === 'EC' && crv === 'P-256') expected = 'ES256';
  else throw new KeyFileError(`${where} (kid ${kid}) must be an Ed25519 key (kty "OKP", crv "Ed25519") or a P-256 key (kty "EC", crv "P-256") (got kty ${JSON.stringify(kty)}, crv ${JSON.stringify(crv)})`);
  if (alg !== undefined && alg !== expected && !(expected === 'EdDSA' && alg === 'Ed25519')) {
    throw new KeyFileError(`${where}.alg must be ${expected} for a ${String(crv)} key (got ${JSON.stringify(alg)})`);
  }
  if (use !== undefined && use !== 'sig') throw new KeyFileError(`${where}.use must be "sig" (got ${JSON.stringify(use)})`);
  const b64 = /^[A-Za-z0-9_-]+$/;
  if (typeof x !== 'string' || !b64.test(x)) throw new KeyFileError(`${where}.x must be the base64url public key`);
  if (kty === 'EC' && (typeof y !== 'string' || !b64.test(y))) throw new KeyFileError(`${where}.y must be the base64url public key's y coordinate`);
  const notBefore = windowBound(jwk.notBefore, `${where}.notBefore`);
  const notAfter = windowBound(jwk.notAfter, `${where}.notAfter`);
  if (notBefore !== null && notAfter !== null && Date.parse(notAfter) <= Date.parse(notBefore)) {
    throw new KeyFileError(`${where} (kid ${kid}): notAfter (${notAfter}) must be after notBefore (${notBefore})`);
  }
  return {
    kty,
    crv,
    x,
    ...(kty === 'EC' ? { y: y as string } : {}),
    kid,
    alg: expected,
    use: 'sig',
    notBefore,
    notAfter,
  };
}

/** The keys of a JWK or a JWK Set (`{"keys": [...]}`), each checked by `each`. */
function keysOf<T>(json: unknown, where: string, each: (jwk: unknown, where: string) => T): T[] {
  const list = isRecord(json) && Array.isArray(json.keys) ? json.keys : [json];
  const listed = isRecord(json) && Array.isArray(json.keys);
  if (list.length === 0) throw new KeyFileError(`${where} lists no key`);
  if (list.length > MAX_KEYS) throw new KeyFileError(`${where} lists ${list.length} keys, more than ${MAX_KEYS}`);
  const keys = list.map((jwk, index) => each(jwk, listed ? `${where} keys[${index}]` : where));
  const kids = keys.map((key) => (key as { kid: string }).kid);
  const duplicate = kids.find((kid, index) => kids.indexOf(kid) !== index);
  if (duplicate !== undefined) throw new KeyFileError(`${where} lists kid ${duplicate} more than once`);
  return keys;
}

/**
 * The public keys of a JWK or JWK Set someone pins (`--registry-key`, keys.json): Ed25519 or P-256,
 * `kid` required, windows optional. With `allowPrivate` a private JWK gives its public part.
 */
export function readPublicKeys(json: unknown, where: string, options: { allowPrivate?: boolean } = {}): PublishedKey[] {
  return keysOf(json, where, (jwk, at) => publicKeyOf(jwk, at, { allowPrivate: options.allowPrivate ?? false }));
}

/** keys.json's text as the generator writes it: one key per line, stable for the same keys. */
export function keysFileBytes(keys: readonly PublishedKey[]): Buffer {
  return Buffer.from(`{"keys":[\n${keys.map((key) => JSON.stringify(key)).join(',\n')}\n]}\n`, 'utf8');
}

/**
 * Whether `bytes` are meant as a keys.json (a JSON object with a `keys` array), right or wrong: a
 * host that answers every path with a page has no keys.json.
 */
export function looksLikeKeysFile(bytes: Uint8Array): boolean {
  try {
    const json = JSON.parse(Buffer.from(bytes).toString('utf8')) as { keys?: unknown } | null;
    return typeof json === 'object' && json !== null && Array.isArray(json.keys);
  } catch {
    return false;
  }
}

/** Parses a keys.json (its bytes), refusing one over the size cap, private keys and broken keys. */
export function parseKeysFile(bytes: Uint8Array, where = KEYS_FILE): PublishedKey[] {
  if (bytes.length > MAX_KEYS_FILE_BYTES) throw new KeyFileError(`${where} is ${bytes.length} bytes, more than ${MAX_KEYS_FILE_BYTES}`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (error) {
    throw new KeyFileError(`${where} is not JSON: ${(error as Error).message}`);
  }
  if (!isRecord(json) || !Array.isArray(json.keys)) throw new KeyFileError(`${where} must be {"keys": [...]}`);
  return readPublicKeys(json, where);
}

/**
 * The signing keys of a private JWK or a JWK Set of private keys (`--sign-key`): each with `kid`,
 * Ed25519 or P-256, and optionally `notBefore`/`notAfter` (ISO 8601). `where` names the source in errors.
 */
export async function readSigningKeys(json: unknown, where: string): Promise<SigningKey[]> {
  const checked = keysOf(json, where, (jwk, at) => {
    const published = publicKeyOf(jwk, at, { allowPrivate: true });
    if (typeof (jwk as { d?: unknown }).d !== 'string') throw new KeyFileError(`${at} (kid ${published.kid}) is a public key: signing needs the private key ("d")`);
    return { jwk: jwk as JWK, published };
  });
  return Promise.all(
    checked.map(async ({ jwk, published }) => {
      let privateKey: CryptoKey;
      try {
        const { kty, crv, x, y, d } = jwk;
        privateKey = (await loadJose().importJWK({ kty, crv, x, ...(y !== undefined ? { y } : {}), d }, published.alg)) as CryptoKey;
      } catch (error) {
        throw new KeyFileError(`${where} (kid ${published.kid}) cannot be used: ${(error as Error).message}`);
      }
      return { kid: published.kid, alg: published.alg, published, privateKey };
    }),
  );
}

/** Why `key` may not vouch for a signature made at `iat` (seconds) when checked at `now`; undefined when it may. */
function keyWindowProblem(key: PublishedKey, iat: number, now: Date): string | undefined {
  const at = new Date(iat * 1000).toISOString();
  if (iat * 1000 > now.getTime() + MAX_CLOCK_SKEW_SECONDS * 1000) return `it claims to be signed at ${at}, in the future`;
  if (key.notBefore !== null && iat * 1000 < Date.parse(key.notBefore)) return `it was signed at ${at}, before key ${key.kid} is valid (notBefore ${key.notBefore})`;
  if (key.notAfter !== null && iat * 1000 > Date.parse(key.notAfter)) return `it was signed at ${at}, after key ${key.kid} expired (notAfter ${key.notAfter})`;
  if (key.notAfter !== null && now.getTime() > Date.parse(key.notAfter)) return `key ${key.kid} expired at ${key.notAfter}`;
  return undefined;
}

/** Whether a key's window holds `at` (a signing time). */
export function keyActiveAt(key: Pick<PublishedKey, 'notBefore' | 'notAfter'>, at: Date): boolean {
  return (key.notBefore === null || Date.parse(key.notBefore) <= at.getTime()) && (key.notAfter === null || at.getTime() <= Date.parse(key.notAfter));
}

const payloadBytes = (payload: SignaturePayload): Uint8Array => new TextEncoder().encode(JSON.stringify({ path: payload.path, sha256: payload.sha256, iat: payload.iat }));

/** The compact JWS of the file at `path` whose SHA-256 (hex) is `sha256`, signed by `key` at `iat` (seconds). */
export async function signFile(file: { path: string; sha256: string }, key: SigningKey, iat: number): Promise<string> {
  const { CompactSign } = loadJose();
  return new CompactSign(payloadBytes({ path: file.path, sha256: file.sha256, iat }))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: SIGNATURE_TYPE })
    .sign(key.privateKey);
}

/** keys.json.jws: the JWS JSON general serialization of `bytes` (keys.json), one signature per key. */
export async function signKeysFile(bytes: Uint8Array, keys: readonly SigningKey[], iat: number): Promise<string> {
  const { GeneralSign } = loadJose();
  const jws = new GeneralSign(payloadBytes({ path: KEYS_FILE, sha256: sha256Hex(bytes), iat }));
  for (const key of keys) jws.addSignature(key.privateKey).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: SIGNATURE_TYPE });
  return `${JSON.stringify(await jws.sign())}\n`;
}

function parsePayload(payload: Uint8Array, what: string): SignaturePayload {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new SignatureProblem('malformed', `the signature of ${what} has a payload that is not JSON`);
  }
  if (!isRecord(json) || typeof json.path !== 'string' || typeof json.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(json.sha256) || typeof json.iat !== 'number' || !Number.isSafeInteger(json.iat)) {
    throw new SignatureProblem('malformed', `the signature of ${what} must carry {"path", "sha256" (64 hex digits), "iat" (seconds)}`);
  }
  return { path: json.path, sha256: json.sha256, iat: json.iat };
}

/** The header and payload of a compact JWS, unverified (the generator's check of what it wrote before). */
export function readCompactSignature(jws: string, what: string): { kid: string; alg: string; payload: SignaturePayload } {
  const parts = jws.trim().split('.');
  if (parts.length !== 3) throw new SignatureProblem('malformed', `the signature of ${what} is not a compact JWS`);
  let header: { kid?: unknown; alg?: unknown; typ?: unknown };
  let payload: SignaturePayload;
  try {
    header = loadJose().decodeProtectedHeader(jws.trim());
    payload = parsePayload(Buffer.from(parts[1] as string, 'base64url'), what);
  } catch (error) {
    if (error instanceof SignatureProblem) throw error;
    throw new SignatureProblem('malformed', `the signature of ${what} cannot be read: ${(error as Error).message}`);
  }
  if (typeof header.kid !== 'string' || typeof header.alg !== 'string') throw new SignatureProblem('malformed', `the signature of ${what} names no kid or alg`);
  if (header.typ !== SIGNATURE_TYPE) throw new SignatureProblem('malformed', `the signature of ${what} has typ ${JSON.stringify(header.typ)}, not ${SIGNATURE_TYPE}`);
  return { kid: header.kid, alg: header.alg, payload };
}

const publicJwk = (key: PublishedKey): JWK => ({ kty: key.kty, crv: key.crv, x: key.x, ...(key.y !== undefined ? { y: key.y } : {}) });

function checkPayload(payload: SignaturePayload, sha256: string, path: string, what: string): void {
  if (payload.path !== path) throw new SignatureProblem('wrong-file', `the signature of ${what} is the signature of ${JSON.stringify(payload.path)}`);
  if (payload.sha256 !== sha256) throw new SignatureProblem('wrong-file', `${what} is not the file its signature signs (its SHA-256 differs)`);
}

/**
 * Verifies `jws` (compact) as the signature of `bytes` (or of the bytes whose SHA-256 is
 * `{ sha256 }`), the file at `path`, against `keys` at `now`. Returns the signer and the signing
 * time; throws SignatureProblem saying what fails.
 */
export async function verifyFileSignature(
  bytes: Uint8Array | { sha256: string },
  path: string,
  jws: string,
  keys: readonly PublishedKey[],
  now: Date,
): Promise<{ kid: string; iat: number }> {
  const { kid, alg, payload } = readCompactSignature(jws, path);
  const key = keys.find((candidate) => candidate.kid === kid);
  if (!key) throw new SignatureProblem('unknown-key', `${path} is signed by key ${JSON.stringify(kid)}, which is not among the trusted keys (${keys.map((k) => k.kid).join(', ') || 'none'})`);
  if (alg !== key.alg) throw new SignatureProblem('bad-signature', `the signature of ${path} uses ${JSON.stringify(alg)}, key ${kid} is ${key.alg}`);
  try {
    const { compactVerify, importJWK } = loadJose();
    await compactVerify(jws.trim(), await importJWK(publicJwk(key), key.alg), { algorithms: [key.alg] });
  } catch {
    throw new SignatureProblem('bad-signature', `the signature of ${path} does not verify with key ${kid}`);
  }
  checkPayload(payload, bytes instanceof Uint8Array ? sha256Hex(bytes) : bytes.sha256, path, path);
  const window = keyWindowProblem(key, payload.iat, now);
  if (window !== undefined) throw new SignatureProblem('outside-window', `the signature of ${path} is refused: ${window}`);
  return { kid, iat: payload.iat };
}

/**
 * Verifies keys.json.jws (general serialization) as a signature of `bytes` (keys.json) by at least
 * one of `keys`, valid at `now`. Returns the keys that verified and the signing time.
 */
export async function verifyKeysFileSignature(bytes: Uint8Array, jws: string, keys: readonly PublishedKey[], now: Date): Promise<{ kids: string[]; iat: number }> {
  let general: { payload?: unknown; signatures?: unknown };
  try {
    general = JSON.parse(jws) as typeof general;
  } catch {
    throw new SignatureProblem('malformed', `${KEYS_FILE}${SIGNATURE_SUFFIX} is not a JWS in JSON serialization`);
  }
  if (!isRecord(general) || typeof general.payload !== 'string' || !Array.isArray(general.signatures) || general.signatures.length === 0 || general.signatures.length > MAX_KEYS) {
    throw new SignatureProblem('malformed', `${KEYS_FILE}${SIGNATURE_SUFFIX} must hold a payload and 1 to ${MAX_KEYS} signatures`);
  }
  const payload = parsePayload(Buffer.from(general.payload, 'base64url'), KEYS_FILE);
  checkPayload(payload, sha256Hex(bytes), KEYS_FILE, KEYS_FILE);
  const kids: string[] = [];
  const problems: string[] = [];
  for (const signature of general.signatures as unknown[]) {
    if (!isRecord(signature) || typeof signature.protected !== 'string') continue;
    let header: { kid?: unknown; alg?: unknown; typ?: unknown };
    try {
      header = JSON.parse(Buffer.from(signature.protected, 'base64url').toString('utf8')) as typeof header;
    } catch {
      continue;
    }
    const key = keys.find((candidate) => candidate.kid === header.kid);
    if (!key || header.alg !== key.alg || header.typ !== SIGNATURE_TYPE) continue;
    try {
      const { generalVerify, importJWK } = loadJose();
      await generalVerify({ payload: general.payload, signatures: [signature as { protected: string; signature: string }] }, await importJWK(publicJwk(key), key.alg), { algorithms: [key.alg] });
    } catch {
      problems.push(`the signature by key ${key.kid} does not verify`);
      continue;
    }
    const window = keyWindowProblem(key, payload.iat, now);
    if (window !== undefined) problems.push(window);
    else kids.push(key.kid);
  }
  if (kids.length === 0) {
    const signers = (general.signatures as unknown[]).map((s) => {
      try {
        return String((JSON.parse(Buffer.from((s as { protected: string }).protected, 'base64url').toString('utf8')) as { kid?: unknown }).kid);
      } catch {
        return '?';
      }
    });
    const reason = problems.length > 0 ? problems.join('; ') : `it is signed by ${signers.join(', ')}, none of them a trusted key (${keys.map((k) => k.kid).join(', ') || 'none'})`;
    throw new SignatureProblem(problems.length > 0 ? 'bad-signature' : 'unknown-key', `${KEYS_FILE} is refused: ${reason}`);
  }
  return { kids, iat: payload.iat };
}
