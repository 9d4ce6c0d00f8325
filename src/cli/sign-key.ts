import { KeyFileError, loadSigningKeys, type SigningKey } from '../registry/signing.js';
import { UsageError } from './io.js';

/** The environment variable `--sign-key` falls back to (build-registry and serve). */
export const SIGN_KEY_ENV = 'REGISTRY_SIGN_KEY';

/**
 * The signing keys of `--sign-key` (or $REGISTRY_SIGN_KEY): a private JWK or JWK Set, as a file or
 * inline JSON; none when neither is given. A key that cannot be used is a UsageError naming the flag.
 */
export async function signingKeysFrom(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): Promise<SigningKey[] | undefined> {
  const fromEnv = env[SIGN_KEY_ENV]?.trim() ? env[SIGN_KEY_ENV] : undefined;
  const value = flag ?? fromEnv;
  if (value === undefined) return undefined;
  try {
    return await loadSigningKeys(value, flag !== undefined ? '--sign-key' : `$${SIGN_KEY_ENV}`);
  } catch (error) {
    if (error instanceof KeyFileError) throw new UsageError(error.message);
    throw error;
  }
}
