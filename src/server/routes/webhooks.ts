/**
 * Webhook management (admin tokens only): `POST /webhooks` registers the spec's webhook
 * registration record `{ url, events, secret, active }`, `GET /webhooks` and
 * `GET /webhooks/{id}` show them (never the secret), `DELETE /webhooks/{id}` removes one, and
 * `GET /webhooks/{id}/deliveries` lists its recent delivery attempts.
 *
 * The plugin also gives the server its WebhookDispatcher (`context.webhooks`, which the upload
 * route calls after a publish) and stops it when the server closes.
 */
import type { AddressInfo } from 'node:net';

import type { FastifyPluginAsync, FastifyRequest } from 'fastify';

import { describeSchemaErrors } from '../../core/messages.js';
import type { WebhookRegistration } from '../../core/schema-types.js';
import { schemaErrors } from '../../core/schemas.js';
import { errorDetails } from '../../core/validation.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, type ErrorDetail } from '../envelope.js';
import type { StoredWebhook } from '../store.js';
import { authenticate } from '../upload.js';
import { pointsAtSelf, publicDelivery, publicWebhook, WEBHOOK_EVENTS, WebhookDispatcher } from '../webhooks.js';

const NO_STORE = 'no-store';
const DEFAULT_DELIVERIES = 20;
const MAX_DELIVERIES = 100;

/** The bearer token must be an admin's: 401 without a valid token, 403 with another role's. */
function requireAdmin(request: FastifyRequest, context: ServerContext): void {
  const token = authenticate(request, context);
  if (token.role !== 'admin') throw new ApiError(403, 'FORBIDDEN', 'managing webhooks requires an admin token');
}

/** What is wrong with a registration: the schema's rules, then http(s) only, not this server, known events. */
function registrationDetails(body: unknown, context: ServerContext, selfAddresses: () => readonly (AddressInfo | string)[]): ErrorDetail[] {
  const details: ErrorDetail[] = errorDetails(describeSchemaErrors(schemaErrors('webhook-registration', body)), 'body');
  if (details.length > 0) return details;
  const registration = body as WebhookRegistration;
  let url: URL | undefined;
  try {
    url = new URL(registration.url);
  } catch {
    details.push({ field: 'url', message: 'must be an absolute URL', code: 'FORMAT' });
  }
  if (url) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      details.push({ field: 'url', message: `must be an http or https URL (got ${url.protocol})`, code: 'UNSUPPORTED_SCHEME' });
    } else if (pointsAtSelf(url, context.publicUrl, selfAddresses())) {
      details.push({ field: 'url', message: 'must not point at this registry server', code: 'SELF_URL' });
    }
  }
  registration.events.forEach((event, index) => {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(event)) {
      details.push({
        field: `events.${index}`,
        message: `is not an event this registry sends (${WEBHOOK_EVENTS.join(', ')}) (got ${JSON.stringify(event)})`,
        code: 'UNKNOWN_EVENT',
      });
    }
  });
  return details;
}

function webhookOr404(context: ServerContext, id: string): StoredWebhook {
  const webhook = context.store.getWebhook(id);
  if (!webhook) throw new ApiError(404, 'NOT_FOUND', `webhook ${id} not found`);
  return webhook;
}

function deliveryLimit(value: string | undefined): number {
  if (value === undefined) return DEFAULT_DELIVERIES;
  const limit = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERIES) {
    throw new ApiError(400, 'VALIDATION_ERROR', 'invalid querystring', [
      { field: 'limit', message: `must be an integer from 1 to ${MAX_DELIVERIES}`, code: 'RANGE' },
    ]);
  }
  return limit;
}

interface IdParams {
  Params: { id: string };
}

export const webhooksRoute: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const selfAddresses = (): (AddressInfo | string)[] => app.addresses();
  context.webhooks ??= new WebhookDispatcher({ store: context.store, publicUrl: context.publicUrl, selfAddresses, logger: app.log });
  // Before the store closes (an onClose hook of the app): finish or cancel deliveries in flight.
  app.addHook('preClose', async () => {
    await context.webhooks?.close();
  });

  app.post('/webhooks', async (request, reply) => {
    requireAdmin(request, context);
    if (typeof request.body !== 'object' || request.body === null || Array.isArray(request.body)) {
      throw new ApiError(400, 'BAD_REQUEST', 'the body must be a JSON webhook registration: { url, events, secret, active }');
    }
    const details = registrationDetails(request.body, context, selfAddresses);
    if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the webhook registration is invalid', details);
    const registration = request.body as WebhookRegistration;
    const webhook = context.store.createWebhook(registration);
    return reply
      .code(201)
      .header('Location', `/webhooks/${webhook.id}`)
      .header('Cache-Control', NO_STORE)
      .send(envelope(request, publicWebhook(webhook)));
  });

  app.get('/webhooks', async (request, reply) => {
    requireAdmin(request, context);
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, context.store.listWebhooks().map(publicWebhook)));
  });

  app.get<IdParams>('/webhooks/:id', async (request, reply) => {
    requireAdmin(request, context);
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, publicWebhook(webhookOr404(context, request.params.id))));
  });

  app.delete<IdParams>('/webhooks/:id', async (request, reply) => {
    requireAdmin(request, context);
    if (!context.store.deleteWebhook(request.params.id)) throw new ApiError(404, 'NOT_FOUND', `webhook ${request.params.id} not found`);
    return reply.code(204).header('Cache-Control', NO_STORE).send();
  });

  app.get<IdParams & { Querystring: { limit?: string } }>('/webhooks/:id/deliveries', async (request, reply) => {
    requireAdmin(request, context);
    const webhook = webhookOr404(context, request.params.id);
    const limit = deliveryLimit(request.query.limit);
    const deliveries = context.store.listDeliveries(webhook.id, limit).map(publicDelivery);
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, deliveries));
  });

  return Promise.resolve();
};
