/**
 * `GET /templates/{id}/analytics`: the analytics record of a template version (the latest one, as
 * `GET /templates/{id}` selects it, or `?version=`), as of the request, made from the store's
 * aggregates (registry/analytics.ts; formulas in docs/analytics.md): the version's totals, its
 * days of the record and its ratings, and every version's download total for the ranks. It reads
 * O(days + versions) rows, never the events.
 */
import type { FastifyPluginAsync } from 'fastify';

import { selectLatest } from '../../core/listing.js';
import { VERSION_PATTERN, VERSION_RULE } from '../../core/versions.js';
import { analyticsRecords, recordWindow } from '../../registry/analytics.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';
import { ENVELOPE_CACHE_CONTROL, ERROR_CACHE_CONTROL } from './read.js';
import { TEMPLATE_PARAMS } from '../params.js';
import { READS } from '../rate-limit.js';

const PARAMS = TEMPLATE_PARAMS;

const QUERY = {
  type: 'object',
  properties: { version: { type: 'string', pattern: VERSION_PATTERN.source, 'x-messages': { pattern: VERSION_RULE } } },
} as const;

// eslint-disable-next-line @typescript-eslint/require-await -- fastify plugins are async functions
export const analyticsRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (reply.statusCode >= 400) void reply.header('Cache-Control', ERROR_CACHE_CONTROL);
    done(null, payload);
  });

  app.get<{ Params: { id: string }; Querystring: { version?: string } }>(
    '/templates/:id/analytics',
    // `version` is the template version here, never the API version selector (api-version.ts).
    { schema: { params: PARAMS, querystring: QUERY }, config: { rateLimit: READS, cache: 'dynamic', versionQuery: 'template-version' } },
    async (request, reply) => {
      const { id } = request.params;
      const { version } = request.query;
      const { document } = context.registry();
      const entry = version === undefined ? selectLatest(document.templates, id) : document.templates.find((e) => e.id === id && e.version === version);
      if (!entry) throw new ApiError(404, 'NOT_FOUND', version === undefined ? `template ${id} not found` : `template ${id} version ${version} not found`);
      const now = new Date();
      const aggregates = await context.storage.events.analyticsAggregates({ versions: [{ templateId: id, version: entry.version }], ...recordWindow(now) });
      const [record] = analyticsRecords(aggregates, { now, registry: document, templateId: id, version: entry.version });
      return reply.header('Cache-Control', ENVELOPE_CACHE_CONTROL).send(envelope(request, record));
    },
  );
};
