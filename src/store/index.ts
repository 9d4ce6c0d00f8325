/** The registry server's storage: interfaces by concern, the embedded SQLite + files implementation. */
export type {
  RegistryStorage,
  TokenStore,
  VersionStore,
  EventStore,
  WebhookStore,
  TokenRecord,
  TokenRole,
  NewToken,
  TokenState,
  TokenCheck,
  Revocation,
  Permission,
  StoredVersion,
  PublishedVersion,
  NewVersion,
  Reservation,
  VersionLifecycle,
  LifecycleChange,
  LifecycleEvents,
  VersionStability,
  ArchiveReader,
  StoredEvent,
  EventOrigin,
  RecordedEvent,
  EventFilter,
  VersionUsage,
  StoredWebhook,
  NewWebhook,
  DeliveryRecord,
  WebhookEventRecord,
  OutboxDelivery,
  OutboxState,
  OutboxUpdate,
  FileStore,
  StagedFile,
  NewStagedFile,
  OwnerChange,
  AccountStore,
  UserRecord,
  NewUser,
  UserCreation,
  SessionKind,
  NewSession,
  SessionCheck,
  SessionRotation,
  BlobStore,
} from './types.js';
export { eventMatches, tokenState, LAST_USED_PRECISION_MS } from './types.js';
export { openSqliteStorage, SCHEMA_VERSION, StoreVersionError, StoreNotFoundError, type SqliteStorage, type OpenStorageOptions } from './sqlite/index.js';
export { storeSource, lifecycleFields } from './source.js';
export { secretsEqual } from './secrets.js';
export { FolderBlobStore, S3BlobStore, S3BlobError, BlobKeyError, openBlobStore, type S3BlobStoreOptions, type S3BlobSettings } from './blob/index.js';
export {
  openPostgresStorage,
  migratePostgres,
  PostgresSchemaError,
  BuildLockTimeoutError,
  POSTGRES_SCHEMA_VERSION,
  type PostgresStorage,
  type PostgresStorageOptions,
  type MigrationResult,
} from './postgres/index.js';
export {
  openStorage,
  checkDatabaseUrl,
  describeStorage,
  StorageLocationError,
  DEFAULT_STORE_DIR,
  describeDatabase,
  type StorageLocation,
  type StorageOpening,
  type StorageDescription,
  type OpenedStorage,
} from './open.js';
export { copyStore, assertEmptyTarget, dumperOf, StoreCopyError, type CopySummary, type CopyProgress, type CopyOptions } from './copy.js';
export type { StoreDump, StoreDumper, StoreCounts } from './dump-types.js';
export { sqliteDumper } from './sqlite/dump.js';
export { postgresDumper } from './postgres/dump.js';
