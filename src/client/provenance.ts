/**
 * What a client accepts of a version's build provenance, after the archive's integrity was checked:
 *
 * - `off`: nothing is checked (and the lock's signer is kept as it is);
 * - `warn` (the default): a version whose entry names an attestation has it fetched and verified
 *   (the trusted root, the subject digest against the archive downloaded, the signer); a failing one
 *   is a warning. A version with none is taken silently (reported as `unsigned`), as npm installs a
 *   package without provenance: most registries publish none, and a warning on every command would
 *   teach users to ignore the one that matters;
 * - `require`: a missing or failing one is an error.
 *
 * Whatever the mode but `off`, a project whose lock pins a signer (the identity that signed the
 * version it was generated from or last updated to) refuses a version signed by another identity,
 * or not (validly) signed at all: a possible takeover of the template, named with both identities,
 * unless the user accepts the new signer (`--accept-new-signer`).
 */
import { describeSigner, ProvenanceError, publicGoodTrust, sameSigner, verifyProvenance, type ProvenanceSigner, type SigstoreTrust } from '../archive/provenance.js';
import type { TemplateEntry } from '../core/schema-types.js';

export type ProvenanceMode = 'off' | 'warn' | 'require';
export const PROVENANCE_MODES: readonly ProvenanceMode[] = ['off', 'warn', 'require'];

export interface ProvenancePolicy {
  mode: ProvenanceMode;
  /** The trusted root bundles are verified against; default the public-good root (shipped, read offline). */
  trust?: SigstoreTrust;
  /** The signer the project's lock pins: any other (or none) is refused, unless `acceptNewSigner`. */
  pinned?: ProvenanceSigner;
  /** Accept a version signed by another identity than `pinned`, or unsigned (the user said so). */
  acceptNewSigner?: boolean;
  /** Where the `warn` mode's warnings go. */
  onWarning?: (message: string) => void;
}

/** What the check of one version came to. */
export type ProvenanceOutcome =
  | { status: 'verified'; signer: ProvenanceSigner; predicateType: string; runUrl?: string }
  /** The entry names no attestation (accepted: `warn`, or `require` was not asked). */
  | { status: 'unsigned' }
  /** An attestation was named but did not verify (accepted in `warn` mode). */
  | { status: 'unverified'; reason: string }
  | { status: 'off' };

/** The version's provenance is missing or does not verify, and `require` was asked. */
export class ProvenanceCheckError extends Error {
  override readonly name = 'ProvenanceCheckError';
  /** MISSING, UNREACHABLE, or the verification's problem (INVALID, SIGNATURE, DIGEST, IDENTITY). */
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** A version is not signed by the identity the lock pins: a possible takeover of the template. */
export class SignerChangedError extends Error {
  override readonly name = 'SignerChangedError';
  readonly pinned: ProvenanceSigner;
  /** The identity that signed the version; undefined when it is not (validly) signed. */
  readonly found: ProvenanceSigner | undefined;

  constructor(label: string, pinned: ProvenanceSigner, found: ProvenanceSigner | undefined, why?: string) {
    const now = found ? `signed by ${describeSigner(found)}` : `not signed by anyone${why ? ` (${why})` : ''}`;
    super(
      `possible takeover: ${label} is ${now}, but the project's lock pins the signer ${describeSigner(pinned)}; ` +
        'if the template moved to a new repository or workflow on purpose, check that with its authors, then pass --accept-new-signer',
    );
    this.pinned = pinned;
    this.found = found;
  }
}

export type AttestedEntry = Pick<TemplateEntry, 'id' | 'version' | 'attestations'>;

/**
 * Checks the provenance of `entry`, whose archive (already verified against the entry) has the hex
 * SHA-256 `sha256`; `fetchBundle` reads the attestation's URL (bounded, as archives are). Throws
 * SignerChangedError or ProvenanceCheckError; returns what was found otherwise.
 */
export async function checkProvenance(entry: AttestedEntry, sha256: string, policy: ProvenancePolicy, fetchBundle: (url: string) => Promise<Buffer>): Promise<ProvenanceOutcome> {
  if (policy.mode === 'off') return { status: 'off' };
  const label = `${entry.id}@${entry.version}`;
  const pinned = policy.acceptNewSigner ? undefined : policy.pinned;
  const notVerified = (code: string, message: string): ProvenanceOutcome => {
    if (pinned) throw new SignerChangedError(label, pinned, undefined, message);
    if (policy.mode === 'require') throw new ProvenanceCheckError(code, `${message} (--provenance warn or off accepts it)`);
    if (code !== 'MISSING') policy.onWarning?.(message);
    return code === 'MISSING' ? { status: 'unsigned' } : { status: 'unverified', reason: message };
  };
  const url = entry.attestations?.url;
  if (typeof url !== 'string' || url === '') return notVerified('MISSING', `${label} has no build provenance: the registry names no attestation for it`);
  let bundle: Buffer;
  try {
    bundle = await fetchBundle(url);
  } catch (error) {
    return notVerified('UNREACHABLE', `the provenance of ${label} could not be read: ${(error as Error).message}`);
  }
  let verified;
  try {
    verified = await verifyProvenance(bundle, { sha256 }, policy.trust ?? (await publicGoodTrust()));
  } catch (error) {
    if (!(error instanceof ProvenanceError)) throw error;
    return notVerified(error.problem, `the provenance of ${label} does not verify: ${error.message}`);
  }
  if (pinned && !sameSigner(pinned, verified.signer)) throw new SignerChangedError(label, pinned, verified.signer);
  return { status: 'verified', signer: verified.signer, predicateType: verified.predicateType, ...(verified.runUrl ? { runUrl: verified.runUrl } : {}) };
}

/** The signer a lock pins after a version with `outcome` was taken: the one that signed it; without a verified one, the pin it had (dropped when the user accepted a new signer). */
export function nextPinnedSigner(outcome: ProvenanceOutcome | undefined, previous: ProvenanceSigner | undefined, acceptNewSigner = false): ProvenanceSigner | undefined {
  if (outcome?.status === 'verified') return outcome.signer;
  if (outcome && outcome.status !== 'off' && acceptNewSigner) return undefined;
  return previous;
}
