/**
 * template-registry: the public library API of the consumer package (templates, packing and
 * publishing, the registry client, compatibility, migrations, project workflows). The CLI
 * (`template-registry`) and the actions are thin shells over it. Sub-paths load less:
 * `template-registry/client`, `/template`, `/migrate`. The server, its stores, the static registry
 * generator and the GitHub client are the `template-registry-server` package's (src/server-package.ts).
 */

// The spec's shapes and rules.
export {
  NAME_PATTERN,
  MAX_NAME_LENGTH,
  ReservedPathError,
  GlobError,
  reservedPathProblem,
  EgressRefusedError,
  SignatureProblem,
  readPublicKeys,
  verifyFileSignature,
  verifyKeysFileSignature,
  type PublishedKey,
  VERSION_PATTERN,
  VERSION_RULE,
  compareVersions,
  satisfiesRange,
  isValidRange,
  schemas,
  getValidator,
  schemaErrors,
  describeSchemaErrors,
  parseJsonWithPositions,
  JsonSyntaxError,
  STABILITY_ORDER,
  sortEntries,
  selectLatest,
  latestEntries,
  versionsOf,
  searchText,
  searchTerms,
  matchesSearch,
  matchesFilters,
  formatValidationError,
  type SchemaName,
  type RuleViolation,
  type ParsedJson,
  type SourcePosition,
  type Stability,
  type SearchField,
  type TemplateFilters,
  type ValidationProblem,
  type ErrorDetail,
  type TemplateManifest,
  type TemplateVariables,
  type TemplatePrompts,
  type RegistryDocument,
  type TemplateEntry,
  type Category,
  type CompatibilityMatrix,
  type CompatibilityEnvironment,
  type CompatibilityResult,
  type FileChange,
  type DownloadEvent,
  type GenerationEvent,
  type FeedbackEvent,
  type AnalyticsEvent,
  type AnalyticsRecord,
  type SuccessEnvelope,
  type ErrorEnvelope,
  type OffsetPaginatedResponse,
  type CursorPaginatedResponse,
  type WebhookRegistration,
} from './core/index.js';

// Template folders.
export * from './template/index.js';

// Archives, packing and publishing.
export { UnsafeArchiveError, IntegrityError, computeIntegrity, type ArchiveDigest } from './archive/index.js';
export { packTemplate, selectPackFiles, PackError, FIXED_MTIME, type PackOptions, type PackResult, type PackSelection, type LeftOutFile } from './pack/index.js';
export * from './publish/index.js';
// Consumers: the registry client, compatibility, migrations, project workflows.
export * from './client/index.js';
export * from './compat/index.js';
export * from './migrate/index.js';
export * from './project/index.js';

export { runCli } from './cli/index.js';
