import type { FastifyPluginAsync } from 'fastify';

import { describeSchemaErrors } from '../../core/messages.js';
import { schemaErrors } from '../../core/schemas.js';
import { errorDetails } from '../../core/validation.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';

interface IncomingEvent {
  type: string;
  templateId: string;
  version: string;
  timestamp: string;
  [field: string]: unknown;
}

/**
 * `POST /events`: analytics events (download, generation, feedback) sent by clients, such as the
 * generation event `template-registry create` sends. Only events of published versions are kept.
 */
// eslint-disable-next-line @typescript-eslint/require-await -- fastify plugins are async functions
export const eventsRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  app.post('/events', async (request, reply) => {
    if (typeof request.body !== 'object' || request.body === null) {
      throw new ApiError(400, 'BAD_REQUEST', 'the body must be a JSON analytics event');
    }
    const violations = describeSchemaErrors(schemaErrors('analytics-event', request.body));
    if (violations.length > 0) {
      throw new ApiError(422, 'VALIDATION_ERROR', 'the event is invalid', errorDetails(violations, 'event'));
    }
    const event = request.body as IncomingEvent;
    const known = context.registry().document.templates.some((e) => e.id === event.templateId && e.version === event.version);
    if (!known) throw new ApiError(404, 'NOT_FOUND', `no published version ${event.templateId}@${event.version}`);
    context.store.recordEvent(event);
    return reply.code(202).header('Cache-Control', 'no-store').send(envelope(request, { accepted: true, type: event.type }));
  });
};
