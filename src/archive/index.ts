/** Template archives as strangers send them: the one scanner, and integrity (SRI via ssri). */
export { extractArchive } from './extract.js';
export { scanArchive, scanArchiveStream, normaliseEntryPath, UnsafeArchiveError, DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits, type ArchiveScan } from './scan.js';
export {
  computeIntegrity,
  verifyIntegrity,
  digestOf,
  DigestStream,
  IntegrityError,
  type ArchiveDigest,
  type ExpectedDigest,
} from './integrity.js';
export {
  describeSigner,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_V1,
  loadSigstoreTrust,
  MAX_ATTESTATION_BYTES,
  ProvenanceError,
  publicGoodTrust,
  sameSigner,
  SLSA_PROVENANCE_V1,
  verifyProvenance,
  type ProvenanceExpectation,
  type ProvenanceProblem,
  type ProvenanceSigner,
  type SigstoreTrust,
  type VerifiedProvenance,
} from './provenance.js';
export { ArchiveUnpacker, unpackArchive, type HeadOnly, type UnpackedArchive, type UnpackOptions } from './unpack.js';
