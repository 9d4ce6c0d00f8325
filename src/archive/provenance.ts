/**
 * Provenance of an archive: a Sigstore bundle holding a DSSE-signed in-toto statement (SLSA
 * provenance v1, as GitHub's `actions/attest` makes it) whose subject is the archive's SHA-256,
 * signed with a short-lived certificate of a Fulcio-style CA naming the CI workflow that built it.
 *
 * The one verification both the registry server (at upload) and the client (at download) run:
 * the bundle's signature, certificate chain, transparency-log entries and timestamps against a
 * trusted root (`@sigstore/verify`); then the statement's subject digest against the archive's;
 * then the signer read from the certificate (the source repository, the workflow file that ran, the
 * OIDC issuer) against the identity expected. Pure apart from reading a trusted root file.
 */
import { readFile } from 'node:fs/promises';

import type { Bundle } from '@sigstore/bundle';
import type { X509Certificate } from '@sigstore/core';
import type { TrustMaterial } from '@sigstore/verify';

/** A dynamically imported CommonJS module's exports: its named exports, or those of its `default`. */
function commonJsExports(module: object): object {
  const fallback = (module as { default?: unknown }).default;
  return fallback !== null && typeof fallback === 'object' ? { ...fallback, ...module } : module;
}

/** Sigstore's packages, loaded at the first trusted root or verification, not with the API: they would be most of what importing it costs. */
async function loadSigstore(): Promise<{
  bundleFromJSON: typeof import('@sigstore/bundle').bundleFromJSON;
  TrustedRoot: typeof import('@sigstore/protobuf-specs').TrustedRoot;
  toSignedEntity: typeof import('@sigstore/verify').toSignedEntity;
  toTrustMaterial: typeof import('@sigstore/verify').toTrustMaterial;
  Verifier: typeof import('@sigstore/verify').Verifier;
}> {
  // CommonJS packages: as bundled, a dynamic import may give their exports under `default` only.
  const [bundle, specs, verify] = (await Promise.all([import('@sigstore/bundle'), import('@sigstore/protobuf-specs'), import('@sigstore/verify')])).map(commonJsExports) as [
    typeof import('@sigstore/bundle'),
    typeof import('@sigstore/protobuf-specs'),
    typeof import('@sigstore/verify'),
  ];
  return { bundleFromJSON: bundle.bundleFromJSON, TrustedRoot: specs.TrustedRoot, toSignedEntity: verify.toSignedEntity, toTrustMaterial: verify.toTrustMaterial, Verifier: verify.Verifier };
}

let sigstoreModules: ReturnType<typeof loadSigstore> | undefined;
const sigstore = (): ReturnType<typeof loadSigstore> => (sigstoreModules ??= loadSigstore());

/** Whether a bundle signs a DSSE envelope (an in-toto statement), not a bare message. */
const hasDsseEnvelope = (bundle: Bundle): bundle is Bundle & { content: { $case: 'dsseEnvelope' } } => bundle.content.$case === 'dsseEnvelope';

/** The predicate type of SLSA provenance v1 (what `actions/attest-build-provenance` attests). */
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
/** The in-toto statement a DSSE envelope of provenance carries. */
export const IN_TOTO_STATEMENT_V1 = 'https://in-toto.io/Statement/v1';
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

/**
 * The largest bundle accepted, from an upload or a download. A bundle with its certificate, one
 * log entry and a timestamp is 5 to 15 KiB; 128 KiB leaves room for certificate chains and several
 * entries, and bounds what a stranger can make a server or client parse.
 */
export const MAX_ATTESTATION_BYTES = 128 * 1024;

/** Who signed a provenance bundle, from its certificate: what a lock file pins and a trusted publisher is compared with. */
export interface ProvenanceSigner {
  /** `owner/name` of the source repository (`https://github.com/<owner>/<name>` in the certificate). */
  repository: string;
  /**
   * The workflow file that ran (below `.github/workflows/`, e.g. `publish.yml`), from the
   * certificate's build signer URI; a reusable workflow of another repository keeps its full path
   * (`other/repo/.github/workflows/build.yml`), so it never equals a workflow of the repository.
   */
  workflow: string;
  /** The OIDC issuer that vouched for the run (`https://token.actions.githubusercontent.com`). */
  issuer: string;
}

/** What a verified bundle says. */
export interface VerifiedProvenance {
  signer: ProvenanceSigner;
  /** The in-toto statement's predicate type (`https://slsa.dev/provenance/v1`). */
  predicateType: string;
  /** The run that built it (`https://github.com/<repo>/actions/runs/<id>/attempts/<n>`), when the certificate names it. */
  runUrl?: string;
}

/** Why a bundle was refused. */
export type ProvenanceProblem =
  /** Not a Sigstore bundle of a DSSE in-toto statement (not JSON, too large, another shape). */
  | 'INVALID'
  /** The signature, certificate chain, log entry or timestamp does not verify against the trusted root. */
  | 'SIGNATURE'
  /** The statement is not about these bytes. */
  | 'DIGEST'
  /** Signed by another identity than the one expected. */
  | 'IDENTITY';

export class ProvenanceError extends Error {
  override readonly name = 'ProvenanceError';
  readonly problem: ProvenanceProblem;

  constructor(problem: ProvenanceProblem, message: string) {
    super(message);
    this.problem = problem;
  }
}

/** The trust material a bundle is verified against, and where it came from (for messages). */
export interface SigstoreTrust {
  material: TrustMaterial;
  /** `the public-good Sigstore root` or the file it was read from. */
  source: string;
}

// Fulcio's certificate extensions (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md).
const OID_ISSUER_V1 = '1.3.6.1.4.1.57264.1.1';
const OID_GITHUB_REPOSITORY_V1 = '1.3.6.1.4.1.57264.1.5';
const OID_ISSUER_V2 = '1.3.6.1.4.1.57264.1.8';
const OID_BUILD_SIGNER_URI = '1.3.6.1.4.1.57264.1.9';
const OID_SOURCE_REPOSITORY_URI = '1.3.6.1.4.1.57264.1.12';
const OID_RUN_INVOCATION_URI = '1.3.6.1.4.1.57264.1.21';

const PUBLIC_GOOD = 'the public-good Sigstore trusted root shipped with @sigstore/tuf';

/** A trusted root (the JSON of `application/vnd.dev.sigstore.trustedroot+json`) as trust material; `source` names it in errors. */
async function parseTrustedRoot(text: string, source: string): Promise<SigstoreTrust> {
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${source} is not a Sigstore trusted root: not JSON (${(error as Error).message})`, { cause: error });
  }
  if (!json || typeof json !== 'object' || !Array.isArray((json as { certificateAuthorities?: unknown }).certificateAuthorities)) {
    throw new Error(`${source} is not a Sigstore trusted root: it has no certificateAuthorities list`);
  }
  const { toTrustMaterial, TrustedRoot } = await sigstore();
  try {
    return { material: toTrustMaterial(TrustedRoot.fromJSON(json)), source };
  } catch (error) {
    throw new Error(`${source} is not a usable Sigstore trusted root: ${(error as Error).message}`, { cause: error });
  }
}

let publicGood: Promise<SigstoreTrust> | undefined;

/** The public-good Sigstore trusted root as `@sigstore/tuf` ships it (read offline, never fetched). */
export function publicGoodTrust(): Promise<SigstoreTrust> {
  // The seeds (the trusted root inside) are read at the first verification, not at import.
  publicGood ??= import('@sigstore/tuf/seeds.json', { with: { type: 'json' } }).then(({ default: seeds }) => {
    const target = (seeds as Record<string, { targets?: Record<string, string> }>)['https://tuf-repo-cdn.sigstore.dev']?.targets?.['trusted_root.json'];
    if (target === undefined) throw new Error('@sigstore/tuf ships no trusted_root.json for the public-good instance');
    return parseTrustedRoot(Buffer.from(target, 'base64').toString('utf8'), PUBLIC_GOOD);
  });
  return publicGood;
}

/** The trusted root in `file` (an operator's own, e.g. for GitHub Enterprise Server or an air-gapped site); without one, the public-good root. */
export async function loadSigstoreTrust(file?: string): Promise<SigstoreTrust> {
  if (file === undefined || file === '') return publicGoodTrust();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the Sigstore trusted root ${file}: ${(error as Error).message}`, { cause: error });
  }
  return parseTrustedRoot(text, file);
}

/** The text of a DER UTF8String/IA5String extension value (Fulcio's v2 extensions), or the raw bytes (v1). */
function extensionText(certificate: X509Certificate, oid: string, der: boolean): string | undefined {
  const extension = certificate.extension(oid);
  if (!extension) return undefined;
  const value = der ? extension.valueObj.subs[0]?.value : extension.value;
  return value === undefined ? undefined : value.toString('utf8');
}

/** `owner/name` of a `https://<host>/<owner>/<name>` URI. */
function repositoryOfUri(uri: string): string | undefined {
  try {
    const parts = new URL(uri).pathname.split('/').filter((part) => part !== '');
    return parts.length === 2 ? `${parts[0]}/${parts[1]}` : undefined;
  } catch {
    return undefined;
  }
}

/** The workflow of a build signer URI `https://<host>/<owner>/<repo>/.github/workflows/<file>@<ref>` (see `ProvenanceSigner.workflow`). */
function workflowOfUri(uri: string, repository: string): string | undefined {
  let pathname: string;
  try {
    pathname = decodeURIComponent(new URL(uri).pathname);
  } catch {
    return undefined;
  }
  const match = /^\/([^/]+)\/([^/]+)\/\.github\/workflows\/([^@]+)@.+$/.exec(pathname);
  if (!match) return undefined;
  const [, owner, repo, file] = match as unknown as [string, string, string, string];
  return `${owner}/${repo}`.toLowerCase() === repository.toLowerCase() ? file : `${owner}/${repo}/.github/workflows/${file}`;
}

/** The signer a Fulcio certificate names; INVALID when it names no repository, workflow or issuer. */
function signerOfCertificate(certificate: X509Certificate): { signer: ProvenanceSigner; runUrl?: string } {
  const issuer = extensionText(certificate, OID_ISSUER_V2, true) ?? extensionText(certificate, OID_ISSUER_V1, false);
  const sourceUri = extensionText(certificate, OID_SOURCE_REPOSITORY_URI, true);
  const repository = (sourceUri === undefined ? undefined : repositoryOfUri(sourceUri)) ?? extensionText(certificate, OID_GITHUB_REPOSITORY_V1, false);
  const signerUri = extensionText(certificate, OID_BUILD_SIGNER_URI, true) ?? certificate.subjectAltName;
  const workflow = signerUri === undefined || repository === undefined ? undefined : workflowOfUri(signerUri, repository);
  if (issuer === undefined || repository === undefined || workflow === undefined) {
    throw new ProvenanceError('INVALID', 'the signing certificate names no CI workflow (its issuer, source repository or build signer is missing): not a build provenance certificate');
  }
  const runUrl = extensionText(certificate, OID_RUN_INVOCATION_URI, true);
  return { signer: { repository, workflow, issuer }, ...(runUrl ? { runUrl } : {}) };
}

/** Whether two signers are the same identity (repositories compared without regard to case, as GitHub does). */
export function sameSigner(a: ProvenanceSigner, b: ProvenanceSigner): boolean {
  return a.repository.toLowerCase() === b.repository.toLowerCase() && a.workflow === b.workflow && a.issuer === b.issuer;
}

/** `owner/name @ publish.yml (issuer)`: a signer as messages show it. */
export function describeSigner(signer: ProvenanceSigner): string {
  return `${signer.repository} @ ${signer.workflow} (${signer.issuer})`;
}

/** The bundle's JSON, parsed and shaped; INVALID when it is not one this verification takes. */
function parseBundle(bytes: Uint8Array | string, bundleFromJSON: typeof import('@sigstore/bundle').bundleFromJSON): Bundle {
  const size = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
  if (size > MAX_ATTESTATION_BYTES) throw new ProvenanceError('INVALID', `the attestation is ${size} bytes; at most ${MAX_ATTESTATION_BYTES} are accepted`);
  let json: unknown;
  try {
    json = JSON.parse(typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8')) as unknown;
  } catch (error) {
    throw new ProvenanceError('INVALID', `the attestation is not JSON: ${(error as Error).message}`);
  }
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON(json);
  } catch (error) {
    throw new ProvenanceError('INVALID', `the attestation is not a Sigstore bundle: ${(error as Error).message}`);
  }
  if (!hasDsseEnvelope(bundle)) throw new ProvenanceError('INVALID', 'the attestation is not a DSSE-signed in-toto statement (it signs a message, not a statement)');
  if (bundle.content.dsseEnvelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    throw new ProvenanceError('INVALID', `the attestation's payload is ${JSON.stringify(bundle.content.dsseEnvelope.payloadType)}, not an in-toto statement (${IN_TOTO_PAYLOAD_TYPE})`);
  }
  return bundle;
}

interface Statement {
  predicateType: string;
  digests: string[];
}

function statementOf(bundle: Bundle): Statement {
  if (!hasDsseEnvelope(bundle)) throw new ProvenanceError('INVALID', 'the attestation is not a DSSE-signed in-toto statement');
  let statement: unknown;
  try {
    statement = JSON.parse(Buffer.from(bundle.content.dsseEnvelope.payload).toString('utf8')) as unknown;
  } catch {
    throw new ProvenanceError('INVALID', 'the attestation\'s statement is not JSON');
  }
  const { _type: type, subject, predicateType } = (statement ?? {}) as { _type?: unknown; subject?: unknown; predicateType?: unknown };
  if (typeof type !== 'string' || !type.startsWith('https://in-toto.io/Statement/') || !Array.isArray(subject) || typeof predicateType !== 'string') {
    throw new ProvenanceError('INVALID', 'the attestation\'s statement is not an in-toto statement (_type, subject and predicateType)');
  }
  const digests = subject
    .map((item) => (item as { digest?: { sha256?: unknown } } | null)?.digest?.sha256)
    .filter((digest): digest is string => typeof digest === 'string')
    .map((digest) => digest.toLowerCase());
  return { predicateType, digests };
}

export interface ProvenanceExpectation {
  /** Hex SHA-256 of the archive the bundle must be about. */
  sha256: string;
  /** The identity that must have signed it; any identity the trusted root vouches for when absent. */
  signer?: ProvenanceSigner;
  /** What the expected signer is, for the message (`the trusted publisher`, `the signer the lock file pins`). */
  signerRole?: string;
}

/**
 * Verifies a bundle for an archive: signature, chain and timestamps against `trust`, the subject
 * digest against `expected.sha256`, the certificate's identity against `expected.signer`. Throws
 * ProvenanceError naming the problem; returns what the bundle says.
 */
export async function verifyProvenance(bytes: Uint8Array | string | Bundle, expected: ProvenanceExpectation, trust: SigstoreTrust): Promise<VerifiedProvenance> {
  const { bundleFromJSON, toSignedEntity, Verifier } = await sigstore();
  const bundle = typeof bytes === 'string' || bytes instanceof Uint8Array ? parseBundle(bytes, bundleFromJSON) : bytes;
  const statement = statementOf(bundle);
  let certificate: X509Certificate | undefined;
  try {
    const entity = toSignedEntity(bundle);
    if (entity.key.$case !== 'certificate') throw new ProvenanceError('INVALID', 'the attestation is signed with a bare key, not a certificate naming its workflow');
    certificate = entity.key.certificate;
    // A private repository's GitHub attestation has an RFC 3161 timestamp and no log entry: then none is required.
    const verifier = new Verifier(trust.material, { tlogThreshold: entity.tlogEntries.length > 0 ? 1 : 0, ctlogThreshold: 1, timestampThreshold: 1 });
    verifier.verify(entity);
  } catch (error) {
    if (error instanceof ProvenanceError) throw error;
    throw new ProvenanceError('SIGNATURE', `the attestation does not verify against ${trust.source}: ${(error as Error).message}`);
  }
  const wanted = expected.sha256.toLowerCase();
  if (!statement.digests.includes(wanted)) {
    const named = statement.digests.length === 0 ? 'no sha256 digest' : `sha256 ${statement.digests.join(', ')}`;
    throw new ProvenanceError('DIGEST', `the attestation is about other bytes (${named}), not this archive (sha256 ${wanted})`);
  }
  const { signer, runUrl } = signerOfCertificate(certificate);
  if (expected.signer && !sameSigner(signer, expected.signer)) {
    throw new ProvenanceError('IDENTITY', `the attestation was signed by ${describeSigner(signer)}, not by ${expected.signerRole ?? 'the expected identity'} ${describeSigner(expected.signer)}`);
  }
  return { signer, predicateType: statement.predicateType, ...(runUrl ? { runUrl } : {}) };
}
