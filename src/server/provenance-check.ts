/**
 * What build provenance uploaded with a version must be: a Sigstore bundle that verifies against
 * the server's trusted root, whose in-toto statement is about the archive received (its SHA-256),
 * and whose signing certificate names the CI workflow that authenticated the upload: the run of a
 * token minted for trusted publishing, or else (a stored token) one of the template's trusted
 * publishers when it has any. Any other bundle is refused with 422 PROVENANCE_MISMATCH, before the
 * version is reserved.
 */
import { describeSigner, ProvenanceError, sameSigner, verifyProvenance, type ProvenanceSigner, type SigstoreTrust } from '../archive/index.js';
import type { RegistryStorage, StoredAttestation, TokenRecord } from '../store/types.js';
import { ApiError } from './envelope.js';

function mismatch(problem: string, message: string): ApiError {
  return new ApiError(422, 'PROVENANCE_MISMATCH', `the attestation does not prove this archive was built by the trusted publisher: ${message}`, [
    { field: 'attestation', code: problem, message },
  ]);
}

/** The identities an upload's attestation may be signed by; undefined: any the trusted root vouches for. */
async function allowedSigners(storage: Pick<RegistryStorage, 'trustedPublishers'>, token: TokenRecord, name: string): Promise<{ signers: ProvenanceSigner[]; role: string } | undefined> {
  if (token.publisher) {
    const { repository, workflow, issuer } = token.publisher;
    return { signers: [{ repository, workflow, issuer }], role: 'the trusted publisher that authenticated the upload' };
  }
  const trusted = await storage.trustedPublishers.listTrustedPublishers(name);
  if (trusted.length === 0) return undefined;
  return { signers: trusted.map(({ repository, workflow, issuer }) => ({ repository, workflow, issuer })), role: `a trusted publisher of ${name}` };
}

/**
 * Verifies the attestation uploaded with `name`'s archive (hex `sha256`) for `token`; returns what
 * the version keeps of it. Throws ApiError 422 PROVENANCE_MISMATCH naming the problem.
 */
export async function checkUploadedProvenance(
  trust: SigstoreTrust,
  storage: Pick<RegistryStorage, 'trustedPublishers'>,
  token: TokenRecord,
  name: string,
  sha256: string,
  bundle: string,
): Promise<StoredAttestation> {
  const allowed = await allowedSigners(storage, token, name);
  let verified;
  try {
    verified = await verifyProvenance(bundle, { sha256 }, trust);
  } catch (error) {
    if (error instanceof ProvenanceError) throw mismatch(error.problem, error.message);
    throw error;
  }
  if (allowed && !allowed.signers.some((signer) => sameSigner(signer, verified.signer))) {
    const wanted = allowed.signers.map(describeSigner).join(' or ');
    throw mismatch('IDENTITY', `it was signed by ${describeSigner(verified.signer)}, not by ${allowed.role} (${wanted})`);
  }
  return { predicateType: verified.predicateType, signer: verified.signer, ...(verified.runUrl ? { runUrl: verified.runUrl } : {}) };
}
