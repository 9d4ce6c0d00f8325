/**
 * The spec's rules and the helpers every other folder shares: schemas and their plain-words
 * messages, JSON with positions, versions and names, the listing order and selection rule, the
 * search and filter rules, canonical JSON, atomic files, validation problems, backoff.
 * It imports nothing else from src/.
 */
export {
  NAME_PATTERN,
  NAME_RULE,
  MAX_NAME_LENGTH,
  VERSION_PATTERN,
  VERSION_RULE,
  isTemplateName,
  isTemplateVersion,
  compareVersions,
  satisfiesRange,
  isValidRange,
} from './versions.js';
export { schemas, getValidator, schemaErrors, createAjv, SCHEMA_BASE, type SchemaName } from './schemas.js';
export { describeSchemaErrors, type RuleViolation } from './messages.js';
export {
  parseJsonWithPositions,
  nearestPosition,
  escapePointerSegment,
  pointerSegments,
  JsonSyntaxError,
  type ParsedJson,
  type SourcePosition,
} from './json-source.js';
export {
  STABILITY_ORDER,
  compareText,
  stabilityRank,
  sortEntries,
  selectLatest,
  latestEntries,
  versionsOf,
  isYanked,
  type Stability,
  type SelectOptions,
} from './listing.js';
export {
  SEARCH_FIELDS,
  searchText,
  searchTerms,
  matchesTerms,
  matchesSearch,
  matchesFilters,
  type SearchField,
  type TemplateFilters,
} from './search.js';
export { canonicalJson } from './canonical-json.js';
export { writeFileAtomic, writeNewFileDurably, syncFile, syncDirectory, readIfExists, tempPathBeside, TEMP_FILE_PATTERN } from './files.js';
export { errorMessage, firstLine } from './errors.js';
export {
  formatValidationError,
  formatValidationErrorAt,
  locateViolations,
  checkJsonText,
  type CheckedJson,
  errorDetails,
  type ValidationProblem,
  type ErrorDetail,
} from './validation.js';
export { retryDelay, parseRetryAfter, type BackoffLimits } from './retry.js';
export { versionUrl, archiveUrl } from './routes.js';
export type {
  TemplateManifest,
  TemplateVariables,
  TemplatePrompts,
  RegistryDocument,
  TemplateEntry,
  Category,
  CompatibilityMatrix,
  CompatibilityEnvironment,
  CompatibilityResult,
  FileChange,
  DownloadEvent,
  GenerationEvent,
  FeedbackEvent,
  AnalyticsEvent,
  AnalyticsRecord,
  SuccessEnvelope,
  ErrorEnvelope,
  OffsetPaginatedResponse,
  CursorPaginatedResponse,
  WebhookRegistration,
} from './schema-types.js';
export {
  isVersionControlName,
  isJunkName,
  versionControlSegment,
  reservedPathProblem,
  ReservedPathError,
} from './reserved-paths.js';
export { addressKind, clientPrefix, parseAddressRanges, type AddressKind, type AddressRange } from './ip-addresses.js';
export { egressPolicy, guardedRequest, EgressRefusedError, type EgressPolicy, type GuardedRequest, type ResolveHost } from './egress.js';
export { globMatcher, GlobError } from './glob.js';
export {
  SIGNATURE_SUFFIX,
  KEYS_FILE,
  readPublicKeys,
  readSigningKeys,
  parseKeysFile,
  verifyFileSignature,
  verifyKeysFileSignature,
  SignatureProblem,
  KeyFileError,
  type PublishedKey,
  type SigningKey,
  type SignaturePayload,
} from './registry-signatures.js';
export { REGISTRY_URL_ENV, REGISTRY_TOKEN_ENV, REGISTRY_KEY_ENV } from './env-names.js';
