export { compareVersions, satisfiesRange, isValidRange, VERSION_PATTERN } from './versions.js';
export { schemas, getValidator, schemaErrors, type SchemaName } from './schemas.js';
export { describeSchemaErrors, type RuleViolation } from './messages.js';
export { parseJsonWithPositions, JsonSyntaxError, type ParsedJson, type SourcePosition } from './json-source.js';
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
