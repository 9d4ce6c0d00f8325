/**
 * Build provenance of a packed archive, as GitHub's `actions/attest-build-provenance` makes it: an
 * in-toto statement (SLSA provenance v1, GitHub's workflow build type) whose subject is the
 * archive's SHA-256, DSSE-signed with an ephemeral key certified by Fulcio for the job's OIDC ID
 * token, logged in Rekor and/or timestamped by a timestamp authority; the result is a Sigstore
 * bundle (JSON). Signed with `@sigstore/sign` directly (what `@actions/attest` uses underneath),
 * because `@actions/attest` cannot be pointed at other Fulcio, Rekor or timestamp-authority URLs:
 * GitHub Enterprise Server, an air-gapped Sigstore, tests.
 */
import type { Witness } from '@sigstore/sign';

import { loadJose } from '../core/lazy/jose.load.js';
import { IN_TOTO_PAYLOAD_TYPE, IN_TOTO_STATEMENT_V1, SLSA_PROVENANCE_V1 } from '../archive/provenance.js';

/** GitHub's build type of a workflow run (the one `@actions/attest` writes). */
export const GITHUB_WORKFLOW_BUILD_TYPE = 'https://actions.github.io/buildtypes/workflow/v1';

/** The audience Fulcio takes ID tokens for. */
export const SIGSTORE_AUDIENCE = 'sigstore';

/** Where the certificate, the log entry and the timestamp come from. */
export interface SigstoreEndpoints {
  /** Fulcio's base URL (`https://fulcio.sigstore.dev`). */
  fulcioUrl: string;
  /** Rekor's base URL; absent: no transparency-log entry (then a timestamp authority is required). */
  rekorUrl?: string;
  /** An RFC 3161 timestamp authority's URL (`.../api/v1/timestamp`); absent: the log entry's time is the timestamp. */
  tsaUrl?: string;
}

/** The public-good Sigstore instance (what `@actions/attest` uses for a public repository). */
export const PUBLIC_GOOD_ENDPOINTS: SigstoreEndpoints = { fulcioUrl: 'https://fulcio.sigstore.dev', rekorUrl: 'https://rekor.sigstore.dev' };

export interface AttestOptions {
  /** What the statement is about: the archive's file name and hex SHA-256. */
  subject: { name: string; sha256: string };
  /** The job's OIDC ID token for the audience `sigstore` (asked for once). */
  idToken: () => Promise<string>;
  endpoints: SigstoreEndpoints;
  /** `GITHUB_SERVER_URL` (default `https://github.com`): the host of the URLs the predicate names. */
  serverUrl?: string;
  /** Per request to Fulcio, Rekor and the timestamp authority (default 30 s). */
  timeoutMs?: number;
}

/** A signed attestation: the Sigstore bundle as JSON text, and its predicate type. */
export interface Attestation {
  bundle: string;
  predicateType: string;
}

/** The attestation could not be made (no ID token, Fulcio or Rekor refused or could not be reached). */
export class AttestationError extends Error {
  override readonly name = 'AttestationError';
}

const text = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '');

/** The SLSA provenance v1 predicate of the run an ID token describes, as `@actions/attest` builds it. */
export function provenancePredicate(claims: Record<string, unknown>, serverUrl = 'https://github.com'): Record<string, unknown> {
  const server = serverUrl.replace(/\/+$/, '');
  const repository = text(claims.repository);
  // owner/repo/.github/workflows/main.yml@refs/heads/main -> .github/workflows/main.yml, refs/heads/main
  const [workflowPath = '', workflowRef = ''] = text(claims.workflow_ref).replace(`${repository}/`, '').split('@');
  return {
    buildDefinition: {
      buildType: GITHUB_WORKFLOW_BUILD_TYPE,
      externalParameters: { workflow: { ref: workflowRef, repository: `${server}/${repository}`, path: workflowPath } },
      internalParameters: {
        github: {
          event_name: text(claims.event_name),
          repository_id: text(claims.repository_id),
          repository_owner_id: text(claims.repository_owner_id),
          runner_environment: text(claims.runner_environment),
        },
      },
      resolvedDependencies: [{ uri: `git+${server}/${repository}@${text(claims.ref)}`, digest: { gitCommit: text(claims.sha) } }],
    },
    runDetails: {
      builder: { id: `${server}/${text(claims.job_workflow_ref)}` },
      metadata: { invocationId: `${server}/${repository}/actions/runs/${text(claims.run_id)}/attempts/${text(claims.run_attempt)}` },
    },
  };
}

/** The in-toto statement of provenance for `subject`. */
export function provenanceStatement(subject: { name: string; sha256: string }, predicate: Record<string, unknown>): Record<string, unknown> {
  return {
    _type: IN_TOTO_STATEMENT_V1,
    subject: [{ name: subject.name, digest: { sha256: subject.sha256.toLowerCase() } }],
    predicateType: SLSA_PROVENANCE_V1,
    predicate,
  };
}

/** Checks an endpoint URL given as an input or variable: http(s), named in the error. */
function checkedUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AttestationError(`${name} must be an http(s) URL (got ${JSON.stringify(value)})`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AttestationError(`${name} must be an http(s) URL (got ${url.protocol})`);
  return value.replace(/\/+$/, '');
}

/**
 * Signs build provenance of `subject` for the run of the ID token: Fulcio certifies an ephemeral
 * key for the token, the statement is DSSE-signed with it, then logged in Rekor and/or timestamped.
 */
export async function attestProvenance(options: AttestOptions): Promise<Attestation> {
  const fulcioBaseURL = checkedUrl('the Fulcio URL', options.endpoints.fulcioUrl);
  const rekorBaseURL = options.endpoints.rekorUrl ? checkedUrl('the Rekor URL', options.endpoints.rekorUrl) : undefined;
  const tsaBaseURL = options.endpoints.tsaUrl ? checkedUrl('the timestamp authority URL', options.endpoints.tsaUrl) : undefined;
  if (!rekorBaseURL && !tsaBaseURL) throw new AttestationError('an attestation needs a transparency log (Rekor) or a timestamp authority: give at least one');
  const timeout = options.timeoutMs ?? 30_000;

  let idToken: string;
  try {
    idToken = await options.idToken();
  } catch (error) {
    throw new AttestationError(`could not get an OIDC ID token to sign the attestation: ${(error as Error).message}`);
  }
  let claims: Record<string, unknown>;
  try {
    claims = loadJose().decodeJwt(idToken);
  } catch {
    throw new AttestationError('the OIDC ID token is not a JWT');
  }

  const statement = provenanceStatement(options.subject, provenancePredicate(claims, options.serverUrl));
  // Loaded here, when a signature is made: the signer and its HTTP stack are most of what importing the package's API would cost.
  const [{ bundleToJSON }, { DSSEBundleBuilder, FulcioSigner, RekorWitness, TSAWitness }] = await Promise.all([import('@sigstore/bundle'), import('@sigstore/sign')]);
  const witnesses: Witness[] = [
    ...(rekorBaseURL ? [new RekorWitness({ rekorBaseURL, entryType: 'dsse', retry: 2, timeout })] : []),
    ...(tsaBaseURL ? [new TSAWitness({ tsaBaseURL, retry: 2, timeout })] : []),
  ];
  const builder = new DSSEBundleBuilder({
    signer: new FulcioSigner({ fulcioBaseURL, identityProvider: { getToken: () => Promise.resolve(idToken) }, retry: 2, timeout }),
    witnesses,
  });
  try {
    const bundle = await builder.create({ data: Buffer.from(JSON.stringify(statement)), type: IN_TOTO_PAYLOAD_TYPE });
    return { bundle: JSON.stringify(bundleToJSON(bundle)), predicateType: SLSA_PROVENANCE_V1 };
  } catch (error) {
    // @sigstore/sign's errors may quote the identity token: never in a message.
    const message = ((error as Error).message ?? String(error)).split(idToken).join('***');
    throw new AttestationError(`signing the attestation failed: ${message}`);
  }
}
