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
  ArchiveReader,
  StoredEvent,
  EventOrigin,
  RecordedEvent,
  EventFilter,
  VersionUsage,
  StoredWebhook,
  NewWebhook,
  DeliveryRecord,
} from './types.js';
export { eventMatches, tokenState, LAST_USED_PRECISION_MS } from './types.js';
export { openSqliteStorage, SCHEMA_VERSION, StoreVersionError, StoreNotFoundError, type SqliteStorage, type OpenStorageOptions } from './sqlite/index.js';
export { storeSource } from './source.js';
export { secretsEqual } from './secrets.js';
