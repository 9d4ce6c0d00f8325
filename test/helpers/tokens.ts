import type { TokenRecord, TokenStore } from '../../src/store/types.js';

/** The record of an active token as `checkToken` reads it (its use recorded); undefined for an unknown, expired or revoked one. */
export async function activeToken(tokens: TokenStore, token: string, now?: Date): Promise<TokenRecord | undefined> {
  const check = await tokens.checkToken(token, now);
  return check.valid ? check.record : undefined;
}
