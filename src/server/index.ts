/** The registry server (fastify) over a storage: upload, read, events and webhook routes, rate limits, OpenAPI. */
export { createServer, type ServerOptions, type RegistryServer } from './app.js';
export { DEFAULT_LIMITS, type ServerLimits, type ServerContext, type CurrentRegistry } from './context.js';
export { ApiError, type ErrorDetail } from './envelope.js';
export {
  AccountInputError,
  createAccount,
  checkCredentials,
  issueTokenPair,
  refreshTokenPair,
  verifyAccessToken,
  ACCESS_TOKEN_SECONDS,
  REFRESH_TOKEN_SECONDS,
  SESSION_SECONDS,
  SESSION_COOKIE,
  MIN_PASSWORD_LENGTH,
  type NewAccount,
  type TokenPair,
} from './accounts.js';
export { hashPassword, verifyPassword, scryptHasher, type PasswordHasher } from './passwords.js';
export { publishVersion, type ReceivedArchive, type PublishedVersion } from './upload-service.js';
export {
  verifyWebhookSignature,
  signWebhookPayload,
  signWebhookBody,
  WebhookDispatcher,
  WEBHOOK_EVENTS,
  type WebhookEvent,
  type WebhookPayload,
  type WebhookDispatcherOptions,
  type VerifyWebhookOptions,
} from './webhooks.js';
export {
  IdTokenVerifier,
  IdTokenRefusal,
  IssuerUnavailable,
  trustedIssuers,
  registryAudience,
  GITHUB_ACTIONS_ISSUER,
  type VerifiedIdToken,
  type IdTokenVerifierOptions,
} from './oidc.js';
export { grantOf, workflowOf, refMatches, EXCHANGED_TOKEN_LIFETIME_MS, type Grant, type Mismatch } from './trusted-publishing.js';
export { githubAccountId, OwnerLookupError, DEFAULT_GITHUB_API_URL } from './github-accounts.js';
export { openSqliteStorage, storeSource, secretsEqual, type RegistryStorage, type TokenRecord, type TokenRole, type StoredVersion } from '../store/index.js';
