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
  Permission,
  StoredVersion,
  NewVersion,
  Reservation,
  ArchiveReader,
  StoredEvent,
  VersionUsage,
  StoredWebhook,
  NewWebhook,
  DeliveryRecord,
} from './types.js';
export { eventMatches } from './types.js';
export { openSqliteStorage, SCHEMA_VERSION, StoreVersionError, type SqliteStorage } from './sqlite/index.js';
export { storeSource } from './source.js';
export { secretsEqual } from './secrets.js';
