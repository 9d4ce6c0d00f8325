/**
 * Rate limits per client address and route group (reads, uploads).
 *
 * Each route declares its group in its own config, in the shape @fastify/rate-limit reads
 * (`config: { rateLimit: { groupId: 'read' } }`; `READS` and `UPLOADS` here), so renaming or moving
 * a route never changes its limit; a route registered without one is refused when it is
 * registered (the server does not start). A request no route matches is counted as a read.
 *
 * One synchronous onRequest hook counts every request (a callback hook: an async one would cost
 * every request a promise and a turn of the microtask queue, and the static files are read far
 * more often than anything else) in a `WindowCounter`, and sets X-RateLimit-Limit,
 * X-RateLimit-Remaining, X-RateLimit-Reset (a Unix timestamp in seconds: when the client's window
 * ends, rounded up, so one value for every answer of one window) and X-RateLimit-Window (seconds).
 * Past the limit: 429, Retry-After and the error envelope with RATE_LIMIT_EXCEEDED and retryAfter.
 */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import type { ServerContext } from './context.js';
import { ApiError } from './envelope.js';

const RATE_LIMIT_WINDOW_MS = 60_000;
const WINDOW_SECONDS = String(RATE_LIMIT_WINDOW_MS / 1000);

export type RouteGroup = 'read' | 'upload';

/** A route's rate limit: the group whose budget its requests spend (@fastify/rate-limit's `groupId`). */
export interface RouteRateLimit {
  groupId: RouteGroup;
}

/** Reads: every route that takes no archive bytes. */
export const READS: RouteRateLimit = Object.freeze({ groupId: 'read' });
/** Uploads: the routes that take an archive's bytes (`POST /templates`, `POST /files`, the PUT of a staged file). */
export const UPLOADS: RouteRateLimit = Object.freeze({ groupId: 'upload' });

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The rate-limit group of the route (required on every route; rate-limit.ts). */
    rateLimit?: RouteRateLimit;
  }
}

/** Requests counted in a key's window, and the milliseconds until the window ends. */
interface WindowCount {
  current: number;
  ttl: number;
  /** When the window ends, in ms since the epoch (the same for every request of the window). */
  endsAt: number;
}

/** X-RateLimit-Reset of a window: its end as a Unix timestamp in seconds, rounded up (never before the window ends). */
const resetOf = (count: Pick<WindowCount, 'endsAt'>): string => String(Math.ceil(count.endsAt / 1000));

/**
 * Requests per key in windows of `windowMs` that start at the key's first request, for at most `maxKeys` keys: past that, the window that started first is
 * dropped (the map stays in window-start order, so that is one deletion, never a sweep).
 */
class WindowCounter {
  readonly #windows = new Map<string, { current: number; start: number }>();

  constructor(
    readonly windowMs: number,
    readonly maxKeys = 10_000,
  ) {}

  hit(key: string, now = Date.now()): WindowCount {
    let window = this.#windows.get(key);
    if (window === undefined || window.start + this.windowMs <= now) {
      if (window !== undefined) this.#windows.delete(key);
      else if (this.#windows.size >= this.maxKeys) this.#windows.delete(this.#windows.keys().next().value as string);
      window = { current: 0, start: now };
      this.#windows.set(key, window);
    }
    window.current += 1;
    const endsAt = window.start + this.windowMs;
    return { current: window.current, ttl: endsAt - now, endsAt };
  }
}

/** The group a request is counted in: its route's (`config.rateLimit.groupId`); a request no route matches is a read. */
export function routeGroup(request: FastifyRequest): RouteGroup {
  return request.routeOptions.config.rateLimit?.groupId ?? 'read';
}

function exceeded(statusCode: number, max: number, ttl: number, after: string): ApiError {
  const retryAfter = Math.max(0, Math.ceil(ttl / 1000));
  return new ApiError(
    statusCode,
    'RATE_LIMIT_EXCEEDED',
    `rate limit exceeded: at most ${max} requests per minute; retry in ${after}`,
    [],
    { 'Retry-After': String(retryAfter) },
    { retryAfter },
  );
}

export interface RateLimitOptions {
  context: Pick<ServerContext, 'limits'>;
}

const plugin: FastifyPluginCallback<RateLimitOptions> = (app, { context }, done) => {
  const counter = new WindowCounter(RATE_LIMIT_WINDOW_MS);
  // Every route says which budget it spends: a route without a group is a mistake found at start-up.
  app.addHook('onRoute', (route) => {
    const group = route.config?.rateLimit?.groupId;
    if (group !== 'read' && group !== 'upload') {
      const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
      throw new Error(`route ${methods} ${route.url} declares no rate-limit group: give it config.rateLimit (READS or UPLOADS, src/server/rate-limit.ts)`);
    }
  });

  app.addHook('onRequest', (request, reply, done) => {
    const group = routeGroup(request);
    const max = group === 'upload' ? context.limits.uploadPerMinute : context.limits.readPerMinute;
    const count = counter.hit(`${group}:${request.ip}`);
    const ttl = count.ttl;
    void reply
      .header('X-RateLimit-Limit', String(max))
      .header('X-RateLimit-Remaining', String(Math.max(0, max - count.current)))
      .header('X-RateLimit-Reset', resetOf(count))
      .header('X-RateLimit-Window', WINDOW_SECONDS);
    if (count.current > max) done(exceeded(429, max, ttl, `${Math.ceil(ttl / 1000)} seconds`));
    else done();
  });
  done();
};

// Not encapsulated: the hooks apply app-wide, to the routes registered after it and to requests no route matches.
export const rateLimitPlugin = fastifyPlugin(plugin, { name: 'template-registry-rate-limit' });
