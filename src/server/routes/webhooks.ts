/**
 * Webhook management (admin tokens only): `POST /webhooks` registers the spec's webhook
 * registration record `{ url, events, secret, active }`, `GET /webhooks` and
 * `GET /webhooks/{id}` show them (never the secret), `PUT /webhooks/{id}` replaces one (the whole
 * record) and `PATCH /webhooks/{id}` changes some of its fields, both keeping its id and delivery
 * log (a new secret is a rotation: the replaced one keeps signing for `secretOverlapSeconds`),
 * `DELETE /webhooks/{id}` removes one, and `GET /webhooks/{id}/deliveries` lists its recent
 * delivery attempts.
 */
import type { AddressInfo } from 'node:net';

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import type { WebhookRegistration } from '../../core/schema-types.js';
import { schemas } from '../../core/schemas.js';
import type { StoredWebhook } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, type ErrorDetail } from '../envelope.js';
import { checkedListQuery } from '../list-route.js';
import { DELIVERY_LIST, runList, WEBHOOK_LIST } from '../query.js';
import type { WebhookTargets } from '../webhooks/targets.js';
import { DELIVERIES_KEPT, pointsAtSelf, publicDelivery, publicWebhook, WEBHOOK_EVENTS } from '../webhooks.js';
import { READS } from '../rate-limit.js';

const NO_STORE = 'no-store';
const ADMIN_ONLY = 'managing webhooks requires an admin token';

/** How long a replaced secret keeps signing deliveries beside the new one, unless the change says otherwise: one day. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 86_400;
/** The longest overlap a change may ask for: seven days. */
export const MAX_SECRET_OVERLAP_SECONDS = 604_800;

const OVERLAP = { type: 'integer', minimum: 0, maximum: MAX_SECRET_OVERLAP_SECONDS } as const;
/** The registration record's fields, as its schema says (one rule, in schemas/webhook-registration.schema.json). */
const REGISTRATION = schemas['webhook-registration'].$id;
const FIELDS = {
  url: { $ref: `${REGISTRATION}#/properties/url` },
  events: { $ref: `${REGISTRATION}#/properties/events` },
  secret: { $ref: `${REGISTRATION}#/properties/secret` },
  active: { $ref: `${REGISTRATION}#/properties/active` },
  secretOverlapSeconds: OVERLAP,
} as const;

/** `PUT /webhooks/{id}`: the whole registration record, and how long the replaced secret keeps signing. */
const REPLACE_BODY = {
  type: 'object',
  required: ['url', 'events', 'secret', 'active'],
  additionalProperties: false,
  properties: FIELDS,
} as const;

/** `PATCH /webhooks/{id}`: any of the record's fields (at least one). */
const PATCH_BODY = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: FIELDS,
} as const;

interface WebhookChange extends Partial<WebhookRegistration> {
  secretOverlapSeconds?: number;
}

/** What the schema cannot say of a registration: http(s) only, not this server, an address webhooks may reach, known events. */
async function registrationDetails(
  registration: Pick<WebhookRegistration, 'url' | 'events'>,
  publicUrl: string,
  selfAddresses: readonly (AddressInfo | string)[],
  targets: WebhookTargets,
): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  let url: URL | undefined;
  try {
    url = new URL(registration.url);
  } catch {
    details.push({ field: 'url', message: 'must be an absolute URL', code: 'FORMAT' });
  }
  if (url) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      details.push({ field: 'url', message: `must be an http or https URL (got ${url.protocol})`, code: 'UNSUPPORTED_SCHEME' });
    } else if (pointsAtSelf(url, publicUrl, selfAddresses)) {
      details.push({ field: 'url', message: 'must not point at this registry server', code: 'SELF_URL' });
    } else {
      const problem = await targets.registrationProblem(url);
      if (problem !== undefined) details.push({ field: 'url', message: `must lead to an address webhooks may reach: ${problem}`, code: 'ADDRESS_NOT_ALLOWED' });
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

interface IdParams {
  Params: { id: string };
}

export const webhooksRoute: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const admin = app.requireToken('admin', ADMIN_ONLY);
  const webhooks = context.storage.webhooks;
  const webhookOr404 = async (id: string): Promise<StoredWebhook> => {
    const webhook = await webhooks.getWebhook(id);
    if (!webhook) throw new ApiError(404, 'NOT_FOUND', `webhook ${id} not found`);
    return webhook;
  };

  app.post<{ Body: WebhookRegistration }>(
    '/webhooks',
    {
      preValidation: admin,
      schema: { body: { $ref: schemas['webhook-registration'].$id } },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON webhook registration: { url, events, secret, active }', invalid: 'the webhook registration is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const details = await registrationDetails(request.body, context.publicUrl, app.addresses(), context.webhooks.targets);
      if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the webhook registration is invalid', details);
      const webhook = await webhooks.createWebhook(request.body);
      return reply
        .code(201)
        .header('Location', `/webhooks/${webhook.id}`)
        .header('Cache-Control', NO_STORE)
        .send(envelope(request, publicWebhook(webhook)));
    },
  );

  // The two list routes: the list conventions of query.ts (page/limit, cursor, sort, fields).
  app.get('/webhooks', { preValidation: admin, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const query = checkedListQuery(WEBHOOK_LIST, request.query);
    const result = runList(WEBHOOK_LIST, (await webhooks.listWebhooks()).map(publicWebhook), query);
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, result.data, { pagination: result.pagination }));
  });

  app.get<IdParams>('/webhooks/:id', { preValidation: admin, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, publicWebhook(await webhookOr404(request.params.id))));
  });

  // PUT and PATCH: the same checks as a registration, on the record the change makes.
  const change = async (request: { params: { id: string }; body: WebhookChange }): Promise<StoredWebhook> => {
    const current = await webhookOr404(request.params.id);
    const { secretOverlapSeconds, ...fields } = request.body;
    const details = await registrationDetails({ url: fields.url ?? current.url, events: fields.events ?? current.events }, context.publicUrl, app.addresses(), context.webhooks.targets);
    if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the webhook change is invalid', details);
    const updated = await webhooks.updateWebhook(current.id, { ...fields, secretOverlapMs: (secretOverlapSeconds ?? DEFAULT_SECRET_OVERLAP_SECONDS) * 1000 }, context.webhooks.now());
    if (!updated) throw new ApiError(404, 'NOT_FOUND', `webhook ${request.params.id} not found`);
    // Switched on again: deliveries held back while it was off may be due.
    if (updated.active) context.webhooks.kick();
    return updated;
  };

  const changed = async (request: FastifyRequest<IdParams & { Body: WebhookChange }>, reply: FastifyReply): Promise<FastifyReply> =>
    reply.header('Cache-Control', NO_STORE).send(envelope(request, publicWebhook(await change(request))));

  app.put<IdParams & { Body: WebhookChange }>(
    '/webhooks/:id',
    {
      preValidation: admin,
      schema: { body: REPLACE_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON webhook registration: { url, events, secret, active, secretOverlapSeconds? }', invalid: 'the webhook registration is invalid', root: 'body' } },
    },
    changed,
  );

  app.patch<IdParams & { Body: WebhookChange }>(
    '/webhooks/:id',
    {
      preValidation: admin,
      schema: { body: PATCH_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object with some of: { url, events, secret, active, secretOverlapSeconds }', invalid: 'the webhook change is invalid', root: 'body' } },
    },
    changed,
  );

  app.delete<IdParams>('/webhooks/:id', { preValidation: admin, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    if (!(await webhooks.deleteWebhook(request.params.id))) throw new ApiError(404, 'NOT_FOUND', `webhook ${request.params.id} not found`);
    return reply.code(204).header('Cache-Control', NO_STORE).send();
  });

  app.get<IdParams>('/webhooks/:id/deliveries', { preValidation: admin, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const query = checkedListQuery(DELIVERY_LIST, request.query, request.params.id);
    const webhook = await webhookOr404(request.params.id);
    // Every attempt kept (newest first), then the page of them.
    const deliveries = (await webhooks.listDeliveries(webhook.id, DELIVERIES_KEPT)).map(publicDelivery);
    const result = runList(DELIVERY_LIST, deliveries, query);
    return reply.header('Cache-Control', NO_STORE).send(envelope(request, result.data, { pagination: result.pagination }));
  });

  return Promise.resolve();
};
