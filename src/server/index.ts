export { createServer, type ServerOptions, type RegistryServer } from './app.js';
export { RegistryStore, storeSource, secretsEqual, type TokenRecord, type TokenRole, type StoredVersion } from './store.js';
export { DEFAULT_LIMITS, type ServerLimits, type ServerContext, type CurrentRegistry } from './context.js';
export { ApiError, type ErrorDetail } from './envelope.js';
