/** Template archives as strangers send them: the one scanner, and integrity (SRI via ssri). */
export { extractArchive } from './extract.js';
export { scanArchive, isSafeArchivePath, normaliseEntryPath, UnsafeArchiveError, DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits, type ArchiveScan } from './scan.js';
export {
  computeIntegrity,
  verifyIntegrity,
  digestOf,
  DigestStream,
  IntegrityError,
  type ArchiveDigest,
  type ExpectedDigest,
} from './integrity.js';
