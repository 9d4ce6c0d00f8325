import type { AnySchema } from 'ajv';

import registryDocument from '../../schemas/registry-document.schema.json' with { type: 'json' };
import templateEntry from '../../schemas/template-entry.schema.json' with { type: 'json' };
import registryIndex from '../../schemas/registry-index.schema.json' with { type: 'json' };
import category from '../../schemas/category.schema.json' with { type: 'json' };
import compatibilityMatrix from '../../schemas/compatibility-matrix.schema.json' with { type: 'json' };
import compatibilityEnvironment from '../../schemas/compatibility-environment.schema.json' with { type: 'json' };
import compatibilityResult from '../../schemas/compatibility-result.schema.json' with { type: 'json' };
import migrationStep from '../../schemas/migration-step.schema.json' with { type: 'json' };
import migrationContext from '../../schemas/migration-context.schema.json' with { type: 'json' };
import migrationResult from '../../schemas/migration-result.schema.json' with { type: 'json' };
import fileChange from '../../schemas/file-change.schema.json' with { type: 'json' };
import analyticsDownloadEvent from '../../schemas/analytics-download-event.schema.json' with { type: 'json' };
import analyticsGenerationEvent from '../../schemas/analytics-generation-event.schema.json' with { type: 'json' };
import analyticsFeedbackEvent from '../../schemas/analytics-feedback-event.schema.json' with { type: 'json' };
import analyticsEvent from '../../schemas/analytics-event.schema.json' with { type: 'json' };
import analyticsEventSubmission from '../../schemas/analytics-event-submission.schema.json' with { type: 'json' };
import analyticsRecord from '../../schemas/analytics-record.schema.json' with { type: 'json' };
import successEnvelope from '../../schemas/success-envelope.schema.json' with { type: 'json' };
import errorEnvelope from '../../schemas/error-envelope.schema.json' with { type: 'json' };
import offsetPagination from '../../schemas/offset-pagination.schema.json' with { type: 'json' };
import cursorPagination from '../../schemas/cursor-pagination.schema.json' with { type: 'json' };
import webhookRegistration from '../../schemas/webhook-registration.schema.json' with { type: 'json' };

/**
 * Schemas other than the three template files, registered by short name (the file name without
 * `.schema.json`). They refer to each other by absolute `$id`, so they must all be added to one Ajv.
 */
export const extraSchemas = {
  'registry-document': registryDocument,
  'template-entry': templateEntry,
  'registry-index': registryIndex,
  category,
  'compatibility-matrix': compatibilityMatrix,
  'compatibility-environment': compatibilityEnvironment,
  'compatibility-result': compatibilityResult,
  'migration-step': migrationStep,
  'migration-context': migrationContext,
  'migration-result': migrationResult,
  'file-change': fileChange,
  'analytics-download-event': analyticsDownloadEvent,
  'analytics-generation-event': analyticsGenerationEvent,
  'analytics-feedback-event': analyticsFeedbackEvent,
  'analytics-event': analyticsEvent,
  'analytics-event-submission': analyticsEventSubmission,
  'analytics-record': analyticsRecord,
  'success-envelope': successEnvelope,
  'error-envelope': errorEnvelope,
  'offset-pagination': offsetPagination,
  'cursor-pagination': cursorPagination,
  'webhook-registration': webhookRegistration,
} satisfies Record<string, AnySchema & { $id: string }>;
