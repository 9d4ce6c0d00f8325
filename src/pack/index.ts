/** Deterministic template archives: what the publish action uploads. */
export { packTemplate, defaultOutDir, PackError, FIXED_MTIME, type PackOptions, type PackResult } from './pack.js';
export { computeIntegrity, type ArchiveDigest } from '../archive/integrity.js';
