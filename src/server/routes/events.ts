/**
 * `POST /events`: analytics events (download, generation, feedback) sent by clients, such as the
 * generation event `template-registry create` sends. Only events of published versions are kept;
 * the body must be the spec's event with no unknown field and capped strings
 * (schemas/analytics-event-submission.schema.json); a timestamp more than 5 minutes ahead of the
 * server's clock is refused. Every event is stored with when the server received it; a feedback
 * event, the one type whose `timestamp` is optional, is stamped with that time when it has none
 * (download and generation events must carry theirs).
 *
 * The body is checked against the schema of its own `type` only (EVENT_BODY): a generation event
 * missing `duration` is told about `duration`, not about the fields of downloads and feedback, as
 * the `oneOf` of the submission schema would list them.
 */
import type { FastifyPluginAsync } from 'fastify';

import submission from '../../../schemas/analytics-event-submission.schema.json' with { type: 'json' };
import type { AnalyticsEvent } from '../../core/schema-types.js';
import { schemas, type SchemaName } from '../../core/schemas.js';
import type { StoredEvent } from '../../store/types.js';
import { clientId } from '../client-id.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';
import { READS } from '../rate-limit.js';

/** How far ahead of the server's clock an event's timestamp may be (clocks drift a little). */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

/** The schema of each event type. */
const EVENT_SCHEMAS: Readonly<Record<AnalyticsEvent['type'], SchemaName>> = {
  download: 'analytics-download-event',
  generation: 'analytics-generation-event',
  feedback: 'analytics-feedback-event',
};

/**
 * The submission schema with its `oneOf` told apart by `type`: the event's own schema with the
 * submission's caps and no unknown field, chosen by `type` (a missing or unknown `type` is the one
 * problem named). The same rules as analytics-event-submission.schema.json, whose caps it reuses.
 */
export const EVENT_BODY = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: Object.keys(EVENT_SCHEMAS) } },
  allOf: Object.entries(EVENT_SCHEMAS).map(([type, name]) => ({
    if: { required: ['type'], properties: { type: { const: type } } },
    then: { $ref: schemas[name].$id, properties: submission.properties, unevaluatedProperties: false },
  })),
} as const;

// eslint-disable-next-line @typescript-eslint/require-await -- fastify plugins are async functions
export const eventsRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  app.post<{ Body: AnalyticsEvent }>(
    '/events',
    {
      schema: { body: EVENT_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON analytics event', invalid: 'the event is invalid', root: 'event' } },
    },
    async (request, reply) => {
      const receivedAt = new Date();
      const event = request.body;
      if (event.timestamp !== undefined && Date.parse(event.timestamp) > receivedAt.getTime() + MAX_CLOCK_SKEW_MS) {
        throw new ApiError(422, 'VALIDATION_ERROR', 'the event is invalid', [
          { field: 'timestamp', code: 'IN_THE_FUTURE', message: `must not be more than 5 minutes ahead of the server's clock (got ${event.timestamp})` },
        ]);
      }
      const known = context.registry().document.templates.some((e) => e.id === event.templateId && e.version === event.version);
      if (!known) throw new ApiError(404, 'NOT_FOUND', `no published version ${event.templateId}@${event.version}`);
      const stored = { ...event, timestamp: event.timestamp ?? receivedAt.toISOString() } as StoredEvent;
      await context.storage.events.recordEvent(stored, { client: clientId(request), receivedAt });
      if (stored.type === 'download') context.downloadRecorded?.();
      return reply.code(202).header('Cache-Control', 'no-store').send(envelope(request, { accepted: true, type: event.type }));
    },
  );
};
