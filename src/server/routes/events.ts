/**
 * `POST /events`: analytics events (download, generation, feedback) sent by clients, such as the
 * generation event `template-registry create` sends. Only events of published versions are kept;
 * the body must be the spec's event with no unknown field and capped strings
 * (schemas/analytics-event-submission.schema.json); a timestamp more than 5 minutes ahead of the
 * server's clock is refused, and an event without one (feedback) gets the server's time.
 */
import type { FastifyPluginAsync } from 'fastify';

import type { AnalyticsEvent } from '../../core/schema-types.js';
import { schemas } from '../../core/schemas.js';
import type { StoredEvent } from '../../store/types.js';
import { clientId } from '../client-id.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';

/** How far ahead of the server's clock an event's timestamp may be (clocks drift a little). */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

// eslint-disable-next-line @typescript-eslint/require-await -- fastify plugins are async functions
export const eventsRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  app.post<{ Body: AnalyticsEvent }>(
    '/events',
    {
      schema: { body: { $ref: schemas['analytics-event-submission'].$id } },
      config: { body: { shape: 'a JSON analytics event', invalid: 'the event is invalid', root: 'event' } },
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
