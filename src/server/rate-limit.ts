/**
 * Rate limits per client address and route group (reads, uploads), on @fastify/rate-limit.
 *
 * Every response carries X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (a Unix
 * timestamp in seconds: when the client's window ends, rounded up, so one value for every answer
 * of one window; the plugin sends seconds-until-reset, replaced here) and X-RateLimit-Window
 * (seconds). Past the limit: 429, Retry-After and the error envelope with
 * RATE_LIMIT_EXCEEDED and retryAfter. The plugin is not encapsulated, so its hooks apply to the
 * routes registered after it in the whole app, and to requests no route matches.
 *
 * The static files of the registry (registry.json, the index, the catalog) are read far more often
 * than anything else: their routes opt out of the plugin's hook (`config: { rateLimit: false }`)
 * and call `app.limitRead(request, reply)` instead, a synchronous check of the same counter (the
 * plugin's store is a `WindowCounter` shared with it), with the same headers and the same 429; the
 * server's fast path (static-front.ts) counts in the same counter with `countRead`.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import type { ServerContext } from './context.js';
import { ApiError } from './envelope.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts `request` as a read of its client, sets the X-RateLimit-* headers, and throws the 429
     * ApiError past the limit: the plugin's check, synchronous, for routes that opt out of its hook.
     */
    limitRead(request: FastifyRequest, reply: FastifyReply): void;
  }
}

/** Requests counted in a key's window, and the milliseconds until the window ends. */
export interface WindowCount {
  current: number;
  ttl: number;
  /** When the window ends, in ms since the epoch (the same for every request of the window). */
  endsAt: number;
}

/** X-RateLimit-Reset of a window: its end as a Unix timestamp in seconds, rounded up (never before the window ends). */
export const resetOf = (count: Pick<WindowCount, 'endsAt'>): string => String(Math.ceil(count.endsAt / 1000));

/**
 * Requests per key in windows of `windowMs` that start at the key's first request (as the plugin's
 * own store counts), for at most `maxKeys` keys: past that, the window that started first is
 * dropped (the map stays in window-start order, so that is one deletion, never a sweep).
 */
export class WindowCounter {
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

  /** The count of a key's current window without counting (0 when it has none). */
  peek(key: string, now = Date.now()): WindowCount {
    const window = this.#windows.get(key);
    if (window === undefined || window.start + this.windowMs <= now) return { current: 0, ttl: 0, endsAt: now };
    const endsAt = window.start + this.windowMs;
    return { current: window.current, ttl: endsAt - now, endsAt };
  }

  /** Forgets a key's window. */
  reset(key: string): void {
    this.#windows.delete(key);
  }
}

export type RouteGroup = 'read' | 'upload';

/** The routes that take an archive's bytes: counted as uploads. */
const UPLOAD_ROUTES: ReadonlySet<string> = new Set(['POST /templates', 'POST /files', 'PUT /files/:fileId/content']);

/** The group a request is counted in: what takes an archive's bytes (`POST /templates`, `POST /files`, the PUT of a staged file) is an upload, everything else a read. */
export function routeGroup(request: FastifyRequest): RouteGroup {
  if (request.method !== 'POST' && request.method !== 'PUT') return 'read';
  const route = request.routeOptions.url ?? request.url.split('?')[0] ?? '';
  const pathname = route.length > 1 ? route.replace(/\/+$/, '') : route;
  return UPLOAD_ROUTES.has(`${request.method} ${pathname}`) ? 'upload' : 'read';
}

/** Requests allowed per window for a request's group. */
export function groupLimit(context: Pick<ServerContext, 'limits'>, request: FastifyRequest): number {
  return routeGroup(request) === 'upload' ? context.limits.uploadPerMinute : context.limits.readPerMinute;
}

const resetConverted = new WeakSet<FastifyRequest>();

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

/** A read counted against a client's budget: the X-RateLimit-* values, and whether it is past the limit. */
export interface ReadCount {
  exceeded: boolean;
  /** Milliseconds until the window ends. */
  ttl: number;
  limit: string;
  remaining: string;
  /** When the window ends: a Unix timestamp in seconds. */
  reset: string;
}

/** Counts a read of the client at `ip` in `counter` (the key the plugin uses for reads). */
export function countRead(counter: WindowCounter, ip: string, max: number, now = Date.now()): ReadCount {
  const count = counter.hit(`read:${ip}`, now);
  return {
    exceeded: count.current > max,
    ttl: count.ttl,
    limit: String(max),
    remaining: String(Math.max(0, max - count.current)),
    reset: resetOf(count),
  };
}

export interface RateLimitOptions {
  context: Pick<ServerContext, 'limits'>;
  /** The counter of every request (the plugin's store); give one to share it (the server's fast path does). */
  counter?: WindowCounter;
}

const plugin: FastifyPluginAsync<RateLimitOptions> = async (app, { context, counter = new WindowCounter(RATE_LIMIT_WINDOW_MS) }) => {
  // The plugin's store: the one counter, so that limitRead and the plugin draw on one budget.
  class SharedStore {
    incr(key: string, callback: (error: Error | null, result?: WindowCount) => void): void {
      callback(null, counter.hit(key));
    }
    child(): SharedStore {
      return this;
    }
  }
  await app.register(rateLimit, {
    store: SharedStore,
    global: true,
    max: (request: FastifyRequest) => groupLimit(context, request),
    timeWindow: RATE_LIMIT_WINDOW_MS,
    keyGenerator: (request: FastifyRequest) => `${routeGroup(request)}:${request.ip}`,
    // Thrown from the plugin's onRequest hook, so it reaches the app's error handler (the envelope).
    errorResponseBuilder: (_request, limit) => exceeded(limit.statusCode, limit.max, limit.ttl, limit.after),
  });

  app.decorate('limitRead', (request: FastifyRequest, reply: FastifyReply): void => {
    const max = context.limits.readPerMinute;
    const count = countRead(counter, request.ip, max);
    resetConverted.add(request);
    void reply.header('X-RateLimit-Limit', count.limit).header('X-RateLimit-Remaining', count.remaining).header('X-RateLimit-Reset', count.reset);
    if (count.exceeded) throw exceeded(429, max, count.ttl, `${Math.ceil(count.ttl / 1000)} seconds`);
  });

  // `global` adds the limit to every route; a request no route matches is counted here instead.
  const limitUnmatched = app.rateLimit();
  // Hooks in callback style: an async hook costs every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', function (request, reply, done) {
    if (!request.is404) return done();
    limitUnmatched.call(this, request, reply).then(() => done(), done);
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    const reset = reply.getHeader('x-ratelimit-reset');
    if (reset !== undefined && !resetConverted.has(request)) {
      resetConverted.add(request);
      // The end of the window the plugin counted the request in (its header is seconds-until, rounded).
      const now = Date.now();
      const window = counter.peek(`${routeGroup(request)}:${request.ip}`, now);
      void reply.header('X-RateLimit-Reset', window.current > 0 ? resetOf(window) : String(Math.ceil(now / 1000) + Number(reset)));
    }
    if (reply.hasHeader('x-ratelimit-limit')) void reply.header('X-RateLimit-Window', String(RATE_LIMIT_WINDOW_MS / 1000));
    // Errors are not cached unless their route said otherwise.
    if (reply.statusCode >= 400 && !reply.hasHeader('cache-control')) void reply.header('Cache-Control', 'no-store');
    done(null, payload);
  });
};

// Not encapsulated: the hooks and the rate-limit plugin apply app-wide.
export const rateLimitPlugin = fastifyPlugin(plugin, { name: 'template-registry-rate-limit' });
