/**
 * The verification of a CI run's OIDC ID token (trusted publishing, `POST /api/oidc/token`): only
 * from an issuer the operator configured (GitHub Actions' by default; `serve --oidc-issuer`,
 * `REGISTRY_OIDC_ISSUERS` for GitHub Enterprise Server), signed with RS256 by a key of the issuer's
 * JWKS (found through its `/.well-known/openid-configuration`, fetched with bounded size and time),
 * for this registry's audience exactly, within its lifetime (60 s of clock tolerance), and carrying
 * the claims trusted publishing matches. Every refusal names the claim (or header field) at fault.
 *
 * jose checks the signature, `exp`, `nbf`, the issuer and that the audience is among `aud`; what
 * it leaves is checked here: `aud` must be this registry's alone (a token for several audiences
 * could be replayed against another of them), and `iat` may not be in the future (jose 6 only
 * checks it with `maxTokenAge`).
 */
import type { decodeProtectedHeader, FetchImplementation, JWTPayload, JWTVerifyGetKey } from 'jose';

import { loadJose } from '../core/lazy/jose.load.js';

import { GITHUB_ACTIONS_ISSUER } from '../core/trusted-publisher-fields.js';

export { GITHUB_ACTIONS_ISSUER };

/** Seconds a token's `exp`, `nbf` and `iat` may be off by (clocks of the runner, the issuer and this server differ). */
export const CLOCK_TOLERANCE_SECONDS = 60;

/** The longest ID token accepted (GitHub's are about 1.5 KB). */
export const MAX_ID_TOKEN_LENGTH = 16 * 1024;

/** Bounds of what is fetched from an issuer: its discovery document and its JWKS. */
export const ISSUER_FETCH_TIMEOUT_MS = 5000;
export const MAX_DISCOVERY_BYTES = 64 * 1024;
export const MAX_JWKS_BYTES = 256 * 1024;

/** How long an issuer's discovery document (its `jwks_uri`) is kept before it is read again. */
const DISCOVERY_CACHE_MS = 60 * 60 * 1000;

/** The audience the ID tokens presented to a registry must name, alone: `template-registry:<host of its public URL>`. */
export function registryAudience(publicUrl: string): string {
  return `template-registry:${new URL(publicUrl).host}`;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * An issuer as configured, checked: an https URL without query or fragment (no trailing slash, as
 * tokens spell it), or an http one on a loopback address (for tests). Throws naming the rule broken.
 */
export function checkIssuer(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new Error(`OIDC issuer ${JSON.stringify(value)} is not a URL`);
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error(`OIDC issuer ${JSON.stringify(value)} must be an https URL (http only on a loopback address, for tests)`);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new Error(`OIDC issuer ${JSON.stringify(value)} must have no query, fragment or credentials`);
  }
  return url.href.replace(/\/+$/, '');
}

/** The issuers a server trusts: GitHub Actions' and `extra` (checked), without repeats. */
export function trustedIssuers(extra: readonly string[] = []): string[] {
  return [...new Set([GITHUB_ACTIONS_ISSUER, ...extra.map(checkIssuer)])];
}

/** A presented ID token refused: `claim` names the claim (or header field) at fault. */
export class IdTokenRefusal extends Error {
  override readonly name = 'IdTokenRefusal';
  constructor(
    readonly claim: string,
    message: string,
  ) {
    super(message);
  }
}

/** The issuer's discovery document or keys could not be read: nothing is wrong with the token as far as is known. */
export class IssuerUnavailable extends Error {
  override readonly name = 'IssuerUnavailable';
  constructor(
    readonly issuer: string,
    message: string,
  ) {
    super(message);
  }
}

/** What trusted publishing reads of a verified GitHub Actions ID token. */
export interface VerifiedIdToken {
  issuer: string;
  jti: string;
  /** `exp`, as an instant. */
  expiresAt: Date;
  repository: string;
  repositoryOwnerId: string;
  jobWorkflowRef: string;
  ref: string;
  sha: string;
  runId: string;
  runAttempt?: string;
  environment?: string;
}

/** Reads a response's body, refusing more than `maxBytes`. */
export async function readBounded(response: Response, maxBytes: number, what: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '');
  if (Number.isFinite(declared) && declared > maxBytes) throw new Error(`${what} is larger than ${maxBytes} bytes`);
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early cancels the stream: nothing past the bound is read.
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new Error(`${what} is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** jose's fetch of a JWKS, with the size of the answer bounded (jose bounds its time). */
const boundedJwksFetch: FetchImplementation = async (url, options) => {
  const response = await fetch(url, options);
  const body = await readBounded(response, MAX_JWKS_BYTES, `the JWKS at ${url}`);
  return new Response(body, { status: response.status, headers: response.headers });
};

const isLoopback = (url: URL): boolean => LOOPBACK_HOSTS.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);

/** The `jwks_uri` of an issuer, from its discovery document (no redirects, bounded size and time). */
async function discoverJwksUri(issuer: string): Promise<URL> {
  const where = `${issuer}/.well-known/openid-configuration`;
  let response: Response;
  try {
    response = await fetch(where, { redirect: 'manual', signal: AbortSignal.timeout(ISSUER_FETCH_TIMEOUT_MS), headers: { accept: 'application/json' } });
  } catch (error) {
    throw new IssuerUnavailable(issuer, `could not read ${where}: ${(error as Error).message}`);
  }
  if (response.status !== 200) throw new IssuerUnavailable(issuer, `${where} answered ${response.status}`);
  let document: unknown;
  try {
    document = JSON.parse(await readBounded(response, MAX_DISCOVERY_BYTES, where)) as unknown;
  } catch (error) {
    throw new IssuerUnavailable(issuer, `could not read ${where}: ${(error as Error).message}`);
  }
  const { issuer: named, jwks_uri: jwksUri } = (document ?? {}) as { issuer?: unknown; jwks_uri?: unknown };
  if (typeof named !== 'string' || named.replace(/\/+$/, '') !== issuer) throw new IssuerUnavailable(issuer, `${where} names another issuer (${JSON.stringify(named)})`);
  let url: URL;
  try {
    url = new URL(String(jwksUri));
  } catch {
    throw new IssuerUnavailable(issuer, `${where} has no jwks_uri`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url) && isLoopback(new URL(issuer)))) {
    throw new IssuerUnavailable(issuer, `${where} gives a jwks_uri that is not https (${url.href})`);
  }
  return url;
}

export interface IdTokenVerifierOptions {
  /** The issuers trusted (`trustedIssuers`). */
  issuers: readonly string[];
  /** The audience tokens must name alone (`registryAudience`). */
  audience: string;
  /** The server's clock (tests). */
  now?: () => Date;
}

/** Verifies ID tokens against the trusted issuers, keeping each issuer's keys (jose refreshes them on an unknown `kid`). */
export class IdTokenVerifier {
  readonly issuers: readonly string[];
  readonly audience: string;
  readonly #now: () => Date;
  readonly #keys = new Map<string, { keys: Promise<JWTVerifyGetKey>; until: number }>();

  constructor(options: IdTokenVerifierOptions) {
    this.issuers = options.issuers;
    this.audience = options.audience;
    this.#now = options.now ?? (() => new Date());
  }

  /** The key getter of an issuer: discovered once an hour; a failed discovery is not kept. */
  #keysOf(issuer: string): Promise<JWTVerifyGetKey> {
    const cached = this.#keys.get(issuer);
    if (cached && cached.until > Date.now()) return cached.keys;
    const keys = discoverJwksUri(issuer).then((jwksUri) => {
      const { createRemoteJWKSet, customFetch, errors } = loadJose();
      const remote = createRemoteJWKSet(jwksUri, { timeoutDuration: ISSUER_FETCH_TIMEOUT_MS, [customFetch]: boundedJwksFetch });
      // A JWKS that cannot be read is the issuer's trouble, not the token's: told apart from a key not found.
      const getKey: JWTVerifyGetKey = async (header, token) => {
        try {
          return await remote(header, token);
        } catch (error) {
          if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
          throw new IssuerUnavailable(issuer, `could not read the JWKS at ${jwksUri.href}: ${(error as Error).message}`);
        }
      };
      return getKey;
    });
    this.#keys.set(issuer, { keys, until: Date.now() + DISCOVERY_CACHE_MS });
    keys.catch(() => {
      if (this.#keys.get(issuer)?.keys === keys) this.#keys.delete(issuer);
    });
    return keys;
  }

  /** The claims of a valid ID token; IdTokenRefusal naming the claim at fault, or IssuerUnavailable. */
  async verify(token: string): Promise<VerifiedIdToken> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    let unverified: JWTPayload;
    try {
      header = loadJose().decodeProtectedHeader(token);
      unverified = loadJose().decodeJwt(token);
    } catch {
      throw new IdTokenRefusal('token', 'the ID token is not a JWT (three base64url parts, a JSON header and claims)');
    }
    if (header.alg !== 'RS256') throw new IdTokenRefusal('alg', `the ID token is signed with ${JSON.stringify(header.alg ?? null)}; only RS256 is accepted`);
    const issuer = unverified.iss;
    if (typeof issuer !== 'string' || !this.issuers.includes(issuer)) {
      throw new IdTokenRefusal('iss', `the ID token's issuer ${JSON.stringify(issuer ?? null)} is not one this registry trusts (${this.issuers.join(', ')})`);
    }
    const now = this.#now();
    let payload: JWTPayload;
    try {
      ({ payload } = await loadJose().jwtVerify(token, await this.#keysOf(issuer), {
        algorithms: ['RS256'],
        issuer,
        audience: this.audience,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: now,
        requiredClaims: ['exp', 'iat', 'jti'],
      }));
    } catch (error) {
      throw refusalOf(error, this.audience);
    }
    if (typeof payload.aud !== 'string') {
      throw new IdTokenRefusal('aud', `the ID token's audience must be ${JSON.stringify(this.audience)} alone, not a list`);
    }
    const nowSeconds = Math.floor(now.getTime() / 1000);
    if (typeof payload.iat !== 'number' || payload.iat > nowSeconds + CLOCK_TOLERANCE_SECONDS) {
      throw new IdTokenRefusal('iat', `the ID token was issued in the future (iat ${String(payload.iat)}, now ${nowSeconds}, ${CLOCK_TOLERANCE_SECONDS} s of tolerance)`);
    }
    return {
      issuer,
      jti: stringClaim(payload, 'jti', 256),
      expiresAt: new Date((payload.exp ?? nowSeconds) * 1000),
      repository: stringClaim(payload, 'repository', 256),
      repositoryOwnerId: stringClaim(payload, 'repository_owner_id', 64),
      jobWorkflowRef: stringClaim(payload, 'job_workflow_ref', 1024),
      ref: stringClaim(payload, 'ref', 512),
      sha: stringClaim(payload, 'sha', 128),
      runId: stringClaim(payload, 'run_id', 64),
      ...optionalClaim(payload, 'run_attempt', 'runAttempt', 16),
      ...optionalClaim(payload, 'environment', 'environment', 255),
    };
  }
}

/** A required text claim (non-empty, at most `max` characters), or the refusal naming it. */
function stringClaim(payload: JWTPayload, claim: string, max: number): string {
  const value = payload[claim];
  if (typeof value !== 'string' || value === '') throw new IdTokenRefusal(claim, `the ID token has no ${claim} claim`);
  if (value.length > max) throw new IdTokenRefusal(claim, `the ID token's ${claim} claim is longer than ${max} characters`);
  return value;
}

function optionalClaim<K extends string>(payload: JWTPayload, claim: string, key: K, max: number): Partial<Record<K, string>> {
  const value = payload[claim];
  if (value === undefined || value === null || value === '') return {};
  if (typeof value !== 'string' || value.length > max) throw new IdTokenRefusal(claim, `the ID token's ${claim} claim must be text of at most ${max} characters`);
  return { [key]: value } as Partial<Record<K, string>>;
}

/** jose's refusal as the claim at fault. */
function refusalOf(error: unknown, audience: string): Error {
  if (error instanceof IdTokenRefusal || error instanceof IssuerUnavailable) return error;
  const { errors } = loadJose();
  if (error instanceof errors.JWTExpired) return new IdTokenRefusal('exp', `the ID token expired (exp ${String(error.payload.exp)}, ${CLOCK_TOLERANCE_SECONDS} s of tolerance)`);
  if (error instanceof errors.JWTClaimValidationFailed) {
    const { claim, reason } = error;
    if (claim === 'aud') return new IdTokenRefusal('aud', reason === 'missing' ? `the ID token has no audience; it must be ${JSON.stringify(audience)}` : `the ID token's audience is not ${JSON.stringify(audience)}`);
    if (claim === 'nbf') return new IdTokenRefusal('nbf', `the ID token is not valid yet (nbf ${String(error.payload.nbf)})`);
    if (reason === 'missing') return new IdTokenRefusal(claim, `the ID token has no ${claim} claim`);
    return new IdTokenRefusal(claim, `the ID token's ${claim} claim is not valid: ${error.message}`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return new IdTokenRefusal('alg', 'the ID token is not signed with RS256');
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return new IdTokenRefusal('kid', "no single key of the issuer's JWKS matches the ID token's kid");
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return new IdTokenRefusal('signature', "the ID token's signature does not verify with the issuer's key");
  if (error instanceof errors.JOSEError) return new IdTokenRefusal('token', `the ID token is not valid: ${error.message}`);
  return error instanceof Error ? error : new Error(String(error));
}
