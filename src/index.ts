/**
 * template-registry: the public library API. The CLI (`template-registry`) and the two actions
 * are thin shells over it. Sub-paths load less: `template-registry/client` (no server, no SQLite),
 * `/server`, `/template`, `/registry`, `/migrate`.
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
export {
  createGitHubClient,
  octokitReleaseApi,
  publishRelease,
  GitHubApiError,
  InputError,
  requestIdToken,
  IdTokenRequestError,
  type GitHubClient,
  type ReleaseApi,
  type GitHubRelease,
  type GitHubReleaseAsset,
  type PublishedRelease,
} from './github/index.js';

// The registry: generator, storage, server.
export * from './registry/index.js';
export * from './server/index.js';
export { eventMatches, StagedQuotaError, StoreVersionError, StoreNotFoundError, SCHEMA_VERSION, tokenState, LAST_USED_PRECISION_MS, type SqliteStorage } from './store/index.js';
export {
  openStorage,
  openPostgresStorage,
  migratePostgres,
  copyStore,
  openBlobStore,
  FolderBlobStore,
  S3BlobStore,
  PostgresSchemaError,
  BuildLockTimeoutError,
  StorageLocationError,
  StoreCopyError,
  BlobKeyError,
  S3BlobError,
  type StorageLocation,
  type OpenedStorage,
  type PostgresStorage,
  type PostgresStorageOptions,
  type BlobStore,
  type AccountStore,
  type UserRecord,
  type CopySummary,
} from './store/index.js';
export type {
  TokenStore,
  VersionStore,
  EventStore,
  WebhookStore,
  StoredWebhook,
  DeliveryRecord,
  StoredEvent,
  RecordedEvent,
  EventFilter,
  PurgedVersion,
  Reservation,
  ArchiveReader,
  PublishedVersion,
  TokenState,
  TokenCheck,
  Revocation,
} from './store/index.js';

// Consumers: the registry client, compatibility, migrations, project workflows.
export * from './client/index.js';
export * from './compat/index.js';
export * from './migrate/index.js';
export * from './project/index.js';

export { runCli } from './cli/index.js';
