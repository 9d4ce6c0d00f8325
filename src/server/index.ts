export { createServer, type ServerOptions, type RegistryServer } from './app.js';
export { RegistryStore, storeSource, secretsEqual, type TokenRecord, type TokenRole, type StoredVersion } from './store.js';
export { DEFAULT_LIMITS, type ServerLimits, type ServerContext, type CurrentRegistry } from './context.js';
export { ApiError, type ErrorDetail } from './envelope.js';
export { verifyWebhookSignature, signWebhookBody, WebhookDispatcher, WEBHOOK_EVENTS, type WebhookPayload } from './webhooks.js';
