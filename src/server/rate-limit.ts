/**
 * Rate limits per client address and route group (reads, uploads).
 *
 * Each route declares its group in its own config, in the shape @fastify/rate-limit reads
 * (`config: { rateLimit: { groupId: 'read' } }`; `READS` and `UPLOADS` here), so renaming or moving
 * a route never changes its limit; a route registered without one is refused when it is
 * registered (the server does not start). A request no route matches is counted as a read.
 *
 * A synchronous onRequest hook counts every request (a callback hook: an async one would cost
 * every request a promise and a turn of the microtask queue, and the static files are read far
 * more often than anything else) in its group's `WindowCounter`: each route gets its own, bound to
 * its group when it is registered (a route-level hook, put before the route's own onRequest hooks,
 * so that the route's config is never looked up per request), and one app-wide hook counts the
 * requests no route matches. It records where the request stands (`request.rateLimit`), and every
 * answer carries it as it goes out (an onSend hook; the static files' answer, written straight to
 * the response, adds them itself): X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (a
 * Unix timestamp in seconds: when the client's window ends, rounded up, so one value for every
 * answer of one window) and X-RateLimit-Window (seconds). Setting them on the reply one by one in
 * the hook cost the hottest answers (304s of registry.json) about 5% of their rate.
 * Past the limit: 429, Retry-After and the error envelope with RATE_LIMIT_EXCEEDED and retryAfter.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
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
  interface FastifyRequest {
    /** Where the request stands in its client's window, once counted: its answer's X-RateLimit-* headers. */
    rateLimit: RateLimitState | null;
  }
}

/** What a counted request's answer says of its window (X-RateLimit-Limit, -Remaining, -Reset). */
export interface RateLimitState {
  limit: string;
  remaining: number;
  reset: string;
}

/** Appends the X-RateLimit-* headers of `state` to `pairs`, a flat list of names and values (node's `writeHead` takes them so: routes/read.ts). */
export function appendRateLimitHeaders(pairs: string[], state: RateLimitState): void {
  pairs.push('x-ratelimit-limit', state.limit, 'x-ratelimit-remaining', String(state.remaining), 'x-ratelimit-reset', state.reset, 'x-ratelimit-window', WINDOW_SECONDS);
}

/** One key's window: its count, and what its answers say about it. */
interface Window {
  current: number;
  /** When the window ends, in ms since the epoch (a window starts at its key's first request). */
  endsAt: number;
  /** X-RateLimit-Reset: the end as a Unix timestamp in seconds, rounded up (never before the window ends; one value for every answer of the window). */
  reset: string;
}

/**
 * Requests per key in windows of `windowMs` that start at the key's first request, for at most `maxKeys` keys: past that, the window that started first is
 * dropped (the map stays in window-start order, so that is one deletion, never a sweep).
 */
class WindowCounter {
  readonly #windows = new Map<string, Window>();

  constructor(
    readonly windowMs: number,
    readonly maxKeys = 10_000,
  ) {}

  /** Counts a request of `key`; the window it was counted in (the counter's own object: read it before the next hit). */
  hit(key: string, now = Date.now()): Readonly<Window> {
    let window = this.#windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      if (window !== undefined) this.#windows.delete(key);
      else if (this.#windows.size >= this.maxKeys) this.#windows.delete(this.#windows.keys().next().value as string);
      const endsAt = now + this.windowMs;
      window = { current: 0, endsAt, reset: String(Math.ceil(endsAt / 1000)) };
      this.#windows.set(key, window);
    }
    window.current += 1;
    return window;
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

/** The hooks of a route of `group` (a route-level onRequest hook, put before the route's own). */
type CountHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

const plugin: FastifyPluginCallback<RateLimitOptions> = (app, { context }, done) => {
  // One counter per group, keyed by client address: a read and an upload of one client never share a window.
  const counters: Record<RouteGroup, WindowCounter> = { read: new WindowCounter(RATE_LIMIT_WINDOW_MS), upload: new WindowCounter(RATE_LIMIT_WINDOW_MS) };
  const maxOf = (group: RouteGroup): number => (group === 'upload' ? context.limits.uploadPerMinute : context.limits.readPerMinute);
  let limitText = { max: NaN, text: '' };

  // Counted as the request comes in, the headers written as its answer goes out (the onSend hook
  // below, or the static files' own answer): the hottest answers set no reply header one by one.
  app.decorateRequest('rateLimit', null);
  app.addHook('onSend', (request, reply, payload, next) => {
    if (request.rateLimit !== null) {
      const pairs: string[] = [];
      appendRateLimitHeaders(pairs, request.rateLimit);
      for (let i = 0; i < pairs.length; i += 2) void reply.header(pairs[i] as string, pairs[i + 1]);
    }
    next(null, payload);
  });

  const countIn = (group: RouteGroup): CountHook => (request, _reply, done) => {
    const max = maxOf(group);
    const window = counters[group].hit(request.ip);
    if (limitText.max !== max) limitText = { max, text: String(max) };
    request.rateLimit = { limit: limitText.text, remaining: Math.max(0, max - window.current), reset: window.reset };
    if (window.current > max) {
      const ttl = window.endsAt - Date.now();
      done(exceeded(429, max, ttl, `${Math.ceil(ttl / 1000)} seconds`));
    } else done();
  };
  const hooks: Record<RouteGroup, CountHook> = { read: countIn('read'), upload: countIn('upload') };

  // Every route says which budget it spends: a route without a group is a mistake found at start-up.
  app.addHook('onRoute', (route) => {
    const group = route.config?.rateLimit?.groupId;
    if (group !== 'read' && group !== 'upload') {
      const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
      throw new Error(`route ${methods} ${route.url} declares no rate-limit group: give it config.rateLimit (READS or UPLOADS, src/server/rate-limit.ts)`);
    }
    // A new array: fastify's HEAD route of a GET route starts from the same options (and gets its own hook here).
    const own = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [hooks[group], ...own];
  });
  // Requests no route matches (404, 405): reads.
  const countUnmatched = hooks.read;
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) countUnmatched(request, reply, done);
    else done();
  });
  done();
};

// Not encapsulated: the hooks apply app-wide, to the routes registered after it and to requests no route matches.
export const rateLimitPlugin = fastifyPlugin(plugin, { name: 'template-registry-rate-limit' });
