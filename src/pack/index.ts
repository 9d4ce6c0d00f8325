/** Deterministic template archives: what the publish action uploads. */
export {
  packTemplate,
  selectPackFiles,
  defaultOutDir,
  PackError,
  FIXED_MTIME,
  type PackOptions,
  type PackResult,
  type PackSelection,
  type LeftOutFile,
} from './pack.js';
export { LEFT_OUT_REASONS } from './ignore-rules.js';
export { computeIntegrity, type ArchiveDigest } from '../archive/integrity.js';
