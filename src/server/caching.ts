/**
 * HTTP caching of every answer, by the spec's caching rules (docs/spec/registry-spec.md; the
 * classes an operator sees: docs/registry-hosting.md): validators (a route's own `ETag`, else a weak
 * tag of the body without the envelope's per-answer `meta`; `Last-Modified`), 304 for conditional
 * GET and HEAD, `Cache-Control` by class, and 405 with `Allow` (`allowedMethods`, used by
 * envelope.ts's not-found handler). Shared reads are `public` where the spec says "private, short
 * max-age": they are the same for every client, so a CDN may hold them for their 60 s.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import type { ServerContext } from './context.js';
import { ARCHIVE_CACHE_CONTROL, ENVELOPE_CACHE_CONTROL, ERROR_CACHE_CONTROL } from './routes/read.js';
import { ifNoneMatchMatches, notModifiedSince } from './static-files.js';

/** Answers that needed a token (per-token and admin data). */
export const PRIVATE_CACHE_CONTROL = 'no-cache, no-store, must-revalidate';
/**
 * Answers that carry a credential or a capability URL (access and refresh tokens, the session
 * cookie, an upload URL, a minted token, a new account): the spec's "sensitive data" class, never
 * kept by any cache, never used without revalidation.
 */
export const CREDENTIAL_CACHE_CONTROL = 'no-cache, no-store, must-revalidate';
/** Registry data (lists, entries, categories): public, short-lived. */
export const REGISTRY_DATA_CACHE_CONTROL = ENVELOPE_CACHE_CONTROL;

/**
 * How the plugin treats a route's answers: each route declares its class in its own config
 * (`config: { cache: 'registry-data' }`), required on every route (a route without one is refused
 * when it is registered), so renaming a route never changes how its answers are cached.
 *
 * - `static-file`: the static registry files; their routes set every validator and Cache-Control
 *   themselves (static-files.ts), the plugin leaves them alone.
 * - `registry-data`: answers made of the registry document alone (lists, entries, categories):
 *   Last-Modified is its lastUpdated.
 * - `archive`: a version's archive: immutable, Last-Modified its publication, If-Modified-Since
 *   answered before the handler (a 304 neither opens the archive nor counts a download).
 * - `attestation`: a version's provenance bundle: Last-Modified its publication.
 * - `openapi`: the OpenAPI document: Last-Modified the server's start.
 * - `dynamic`: anything else: Last-Modified when this server first gave the answer's tag.
 */
export type CacheClass = 'static-file' | 'registry-data' | 'archive' | 'attestation' | 'openapi' | 'dynamic';

const CACHE_CLASSES: ReadonlySet<string> = new Set<CacheClass>(['static-file', 'registry-data', 'archive', 'attestation', 'openapi', 'dynamic']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How the route's answers are cached (required on every route; caching.ts). */
    cache?: CacheClass;
  }
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** A route's path (`/templates/:id.json`, `/files/*`) as a regular expression over request paths. */
function pathPattern(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * Records every route as it is registered (an onRoute hook: call before registering routes) and
 * returns the methods the routes of a request path answer (HEAD wherever GET is), none for a path
 * no route has.
 */
export function trackRouteMethods(app: FastifyInstance): (path: string) => readonly string[] {
  const routes: { pattern: RegExp; methods: readonly string[] }[] = [];
  app.addHook('onRoute', (route) => {
    routes.push({ pattern: pathPattern(route.url), methods: Array.isArray(route.method) ? route.method : [route.method] });
  });
  return (path) => {
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) for (const method of route.methods) allowed.add(method.toUpperCase());
    if (allowed.has('GET')) allowed.add('HEAD');
    return [...allowed].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  };
}

function rank(method: string): number {
  const index = METHOD_ORDER.indexOf(method);
  return index === -1 ? METHOD_ORDER.length : index;
}

const VOLATILE_META = /"meta":\{"timestamp":"[^"]*","requestId":"[^"]*",?/y;

/** The weak tag of a body: SHA-256 (base64url) of it, without the envelope's per-answer timestamp and request id. */
export function bodyEtag(body: string | Buffer): string {
  let hashed: string | Buffer = body;
  if (typeof body === 'string') {
    const at = body.lastIndexOf('"meta":{"timestamp":"');
    if (at !== -1) {
      VOLATILE_META.lastIndex = at;
      const match = VOLATILE_META.exec(body);
      if (match) hashed = `${body.slice(0, at)}"meta":{${body.slice(at + match[0].length)}`;
    }
  }
  // Weak: two answers with one tag hold the same data, but not the same bytes (their meta differs).
  return `W/"${createHash('sha256').update(hashed).digest('base64url')}"`;
}

function headerText(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/** How many answers without a modification date of their own have their first-seen time remembered. */
export const FIRST_SEEN_LIMIT = 10_000;

/**
 * The Last-Modified of answers that have no modification date of their own (per-token lists, analytics,
 * health): when this server first gave the current tag at a key. A changed answer gets a later second
 * than the one it replaces, so If-Modified-Since never matches an answer newer than the client's.
 * The oldest keys are forgotten first (their next answer counts as new: a 200, never a wrong 304).
 */
export class FirstSeenDates {
  private readonly seen = new Map<string, { tag: string; date: Date }>();

  constructor(private readonly limit = FIRST_SEEN_LIMIT) {}

  dateOf(key: string, tag: string, now: Date): Date {
    const previous = this.seen.get(key);
    this.seen.delete(key);
    if (previous?.tag === tag) {
      this.seen.set(key, previous);
      return previous.date;
    }
    const after = previous ? Math.floor(previous.date.getTime() / 1000) * 1000 + 1000 : 0;
    const date = new Date(Math.max(now.getTime(), after));
    this.seen.set(key, { tag, date });
    if (this.seen.size > this.limit) this.seen.delete(this.seen.keys().next().value as string);
    return date;
  }
}

interface ArchiveParams {
  id?: string;
  version?: string;
}

export const cachingPlugin = fastifyPlugin<{ context: ServerContext }>(
  (app, { context }, done) => {
    const now = (): Date => context.clock?.() ?? new Date();
    const startedAt = now();
    const registryLastModified = (): Date | undefined => {
      try {
        return context.registry().lastModified;
      } catch {
        return undefined;
      }
    };
    const archiveEntry = (request: FastifyRequest) => {
      const { id, version } = request.params as ArchiveParams;
      try {
        return context.registry().document.templates.find((e) => e.id === id && e.version === version);
      } catch {
        return undefined;
      }
    };
    /** The Last-Modified of a route's answer, and whether it is stable (If-Modified-Since is then evaluated). */
    const lastModifiedOf = (request: FastifyRequest): { date: Date; stable: boolean } => {
      const cache = request.routeOptions.config.cache;
      if (cache === 'registry-data') {
        const date = registryLastModified();
        if (date) return { date, stable: true };
      } else if (cache === 'archive' || cache === 'attestation') {
        const published = archiveEntry(request)?.createdAt;
        const date = published !== undefined && !Number.isNaN(Date.parse(published)) ? new Date(published) : registryLastModified();
        if (date) return { date, stable: true };
      } else if (cache === 'openapi') {
        return { date: startedAt, stable: true };
      }
      return { date: now(), stable: false };
    };

    app.addHook('onRoute', (route) => {
      const cache = route.config?.cache;
      if (cache === undefined || !CACHE_CLASSES.has(cache)) {
        const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
        throw new Error(`route ${methods} ${route.url} declares no cache class: give it config.cache (${[...CACHE_CLASSES].join(', ')}; src/server/caching.ts)`);
      }
    });

    // An archive's validators are known before its handler runs: If-Modified-Since is answered
    // here, so that a 304 neither opens the archive nor counts a download (If-None-Match is the route's).
    app.addHook('preHandler', (request, reply, next) => {
      if (request.routeOptions.config.cache !== 'archive' || (request.method !== 'GET' && request.method !== 'HEAD')) return next();
      const since = headerText(request.headers['if-modified-since']);
      if (since === undefined || request.headers['if-none-match'] !== undefined) return next();
      const entry = archiveEntry(request);
      if (!entry) return next();
      const { date } = lastModifiedOf(request);
      if (!notModifiedSince(since, date)) return next();
      void reply.code(304).header('Cache-Control', ARCHIVE_CACHE_CONTROL).header('Last-Modified', date.toUTCString());
      if (typeof entry.sha256 === 'string') void reply.header('ETag', `"${entry.sha256}"`);
      void reply.send();
    });

    const firstSeen = new FirstSeenDates();

    app.addHook('onSend', (request, reply, payload, next) => {
      const status = reply.statusCode;
      if (status >= 400) {
        // Errors are never cached.
        if (!headerText(reply.getHeader('cache-control'))?.includes('no-store')) void reply.header('Cache-Control', ERROR_CACHE_CONTROL);
        return next(null, payload);
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') return next(null, payload);
      // The static files carry their own validators and Cache-Control (static-files.ts).
      if (request.routeOptions.config.cache === 'static-file') return next(null, payload);
      if (request.token !== undefined) void reply.header('Cache-Control', PRIVATE_CACHE_CONTROL);
      if (status !== 200 && status !== 304) return next(null, payload);
      if (reply.getHeader('cache-control') === undefined) void reply.header('Cache-Control', REGISTRY_DATA_CACHE_CONTROL);
      const body = status === 200 && (typeof payload === 'string' || Buffer.isBuffer(payload)) ? payload : undefined;
      let tagged = false;
      if (reply.getHeader('etag') === undefined && body !== undefined) {
        void reply.header('ETag', bodyEtag(body));
        tagged = true;
      }
      let lastModified = reply.getHeader('last-modified') === undefined ? lastModifiedOf(request) : undefined;
      const tag = headerText(reply.getHeader('etag'));
      if (lastModified && !lastModified.stable && body !== undefined && tag !== undefined) {
        // HEAD answers what GET would: one key for both.
        const key = `${request.url}\n${request.token?.id ?? ''}`;
        lastModified = { date: firstSeen.dateOf(key, tag, now()), stable: true };
      }
      if (lastModified) void reply.header('Last-Modified', lastModified.date.toUTCString());
      if (body === undefined) return next(null, payload);
      const ifNoneMatch = headerText(request.headers['if-none-match']);
      const ifModifiedSince = headerText(request.headers['if-modified-since']);
      let notModified = false;
      if (ifNoneMatch !== undefined) {
        // Tags a route set itself are compared by the route.
        notModified = tagged && ifNoneMatchMatches(ifNoneMatch, [headerText(reply.getHeader('etag')) ?? '']);
      } else if (ifModifiedSince !== undefined && lastModified?.stable) {
        notModified = notModifiedSince(ifModifiedSince, lastModified.date);
      }
      if (!notModified) return next(null, payload);
      notModifiedReply(reply);
      // fastify's own onSend of a HEAD route runs after this one and reads the payload: an empty
      // stream, which it drains without adding a Content-Length.
      return next(null, request.method === 'HEAD' ? Readable.from([]) : null);
    });
    done();
  },
  { name: 'template-registry-caching' },
);

/** Turns a reply into a 304: no body, no content headers. */
function notModifiedReply(reply: FastifyReply): void {
  void reply.code(304);
  reply.removeHeader('content-type');
  reply.removeHeader('content-length');
  reply.removeHeader('content-encoding');
}
