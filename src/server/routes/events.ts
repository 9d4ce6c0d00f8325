/**
 * `POST /events`: analytics events (download, generation, feedback) sent by clients, such as the
 * generation event `template-registry create` sends. Only events of published versions are kept.
 */
import type { FastifyPluginAsync } from 'fastify';

import type { AnalyticsEvent } from '../../core/schema-types.js';
import { schemas } from '../../core/schemas.js';
import type { StoredEvent } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';

// eslint-disable-next-line @typescript-eslint/require-await -- fastify plugins are async functions
export const eventsRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  app.post<{ Body: AnalyticsEvent }>(
    '/events',
    {
      schema: { body: { $ref: schemas['analytics-event'].$id } },
      config: { body: { shape: 'a JSON analytics event', invalid: 'the event is invalid', root: 'event' } },
    },
    async (request, reply) => {
      const event = request.body;
      const known = context.registry().document.templates.some((e) => e.id === event.templateId && e.version === event.version);
      if (!known) throw new ApiError(404, 'NOT_FOUND', `no published version ${event.templateId}@${event.version}`);
      await context.storage.events.recordEvent(event as StoredEvent);
      return reply.code(202).header('Cache-Control', 'no-store').send(envelope(request, { accepted: true, type: event.type }));
    },
  );
};
