/** Signing keys for signed-registry tests: private JWKs as an operator keeps them, written to files. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { exportJWK, generateKeyPair, type JWK } from 'jose';

import { readSigningKeys, type SigningKey } from '../../src/core/registry-signatures.js';
import { tempDir } from './fixtures.js';

export interface KeyWindow {
  notBefore?: string;
  notAfter?: string;
}

/** A fresh private JWK (Ed25519 by default, or P-256) with `kid` and an optional window. */
export async function privateJwk(kid: string, options: KeyWindow & { alg?: 'EdDSA' | 'ES256' } = {}): Promise<JWK> {
  const { alg = 'EdDSA', ...window } = options;
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, ...window };
}

/** The public part of a private JWK (what a consumer is given). */
export function publicJwk(jwk: JWK): JWK {
  const { d: _d, ...rest } = jwk;
  return rest;
}

/** Writes a JWK (or a JWK Set) to a file of a fresh temp folder and returns its path. */
export async function keyFile(json: JWK | { keys: JWK[] }, name = 'key.jwk.json'): Promise<string> {
  const file = path.join(await tempDir('tr-keys-'), name);
  await writeFile(file, JSON.stringify(json, null, 2));
  return file;
}

/** The signing keys of private JWKs, as the builder takes them. */
export function signingKeys(...jwks: JWK[]): Promise<SigningKey[]> {
  return readSigningKeys(jwks.length === 1 ? jwks[0] : { keys: jwks }, 'test keys');
}
