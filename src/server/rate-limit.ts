/**
 * Rate limits per client address and route group (reads, uploads), on @fastify/rate-limit.
 *
 * Every response carries X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (a Unix
 * timestamp in seconds; the plugin sends seconds-until-reset, converted here) and
 * X-RateLimit-Window (seconds). Past the limit: 429, Retry-After and the error envelope with
 * RATE_LIMIT_EXCEEDED and retryAfter. The plugin is not encapsulated, so its hooks apply to the
 * routes registered after it in the whole app, and to requests no route matches.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import type { ServerContext } from './context.js';
import { ApiError } from './envelope.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

export type RouteGroup = 'read' | 'upload';

/** The group a request is counted in: `POST /templates` is an upload, everything else a read. */
export function routeGroup(request: FastifyRequest): RouteGroup {
  if (request.method !== 'POST') return 'read';
  const route = request.routeOptions.url ?? request.url.split('?')[0] ?? '';
  const pathname = route.length > 1 ? route.replace(/\/+$/, '') : route;
  return pathname === '/templates' ? 'upload' : 'read';
}

/** Requests allowed per window for a request's group. */
export function groupLimit(context: Pick<ServerContext, 'limits'>, request: FastifyRequest): number {
  return routeGroup(request) === 'upload' ? context.limits.uploadPerMinute : context.limits.readPerMinute;
}

const resetConverted = new WeakSet<FastifyRequest>();

const plugin: FastifyPluginAsync<{ context: Pick<ServerContext, 'limits'> }> = async (app, { context }) => {
  await app.register(rateLimit, {
    global: true,
    max: (request: FastifyRequest) => groupLimit(context, request),
    timeWindow: RATE_LIMIT_WINDOW_MS,
    keyGenerator: (request: FastifyRequest) => `${routeGroup(request)}:${request.ip}`,
    // Thrown from the plugin's onRequest hook, so it reaches the app's error handler (the envelope).
    errorResponseBuilder: (_request, limit) => {
      const retryAfter = Math.max(0, Math.ceil(limit.ttl / 1000));
      return new ApiError(
        limit.statusCode,
        'RATE_LIMIT_EXCEEDED',
        `rate limit exceeded: at most ${limit.max} requests per minute; retry in ${limit.after}`,
        [],
        { 'Retry-After': String(retryAfter) },
        { retryAfter },
      );
    },
  });

  // `global` adds the limit to every route; a request no route matches is counted here instead.
  const limitUnmatched = app.rateLimit();
  app.addHook('onRequest', async function (request, reply) {
    if (request.is404) await limitUnmatched.call(this, request, reply);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const reset = reply.getHeader('x-ratelimit-reset');
    if (reset !== undefined && !resetConverted.has(request)) {
      resetConverted.add(request);
      void reply.header('X-RateLimit-Reset', String(Math.floor(Date.now() / 1000) + Number(reset)));
    }
    if (reply.hasHeader('x-ratelimit-limit')) void reply.header('X-RateLimit-Window', String(RATE_LIMIT_WINDOW_MS / 1000));
    // Errors are not cached unless their route said otherwise.
    if (reply.statusCode >= 400 && !reply.hasHeader('cache-control')) void reply.header('Cache-Control', 'no-store');
    return payload;
  });
};

// Not encapsulated: the hooks and the rate-limit plugin apply app-wide.
export const rateLimitPlugin = fastifyPlugin(plugin, { name: 'template-registry-rate-limit' });
