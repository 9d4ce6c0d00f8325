/**
 * template-registry-server: the public library API of the server package (the registry server,
 * its stores, the static registry generator and its sources, the GitHub client); see
 * ARCHITECTURE.md, "Package faces". Its CLI is the full `template-registry` (`template-registry-server/cli`),
 * which the consumer package's CLI hands the server commands to.
 */

// Everything the consumer package exports, then the server's own.
export * from './index.js';

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
