/**
 * The fast path of the static files: the server's `http.Server` (fastify's `serverFactory`) hands
 * each request to `StaticFront.answer` first, which answers a plain GET or HEAD of a file of the
 * static registry straight from the build's snapshot in memory, and hands everything else to
 * fastify untouched.
 *
 * Why: these files are what every client reads, and fastify's pipeline (request and reply objects,
 * routing, the app-wide hooks) costs more than the answer itself: a 304 of registry.json took about
 * 1.6x the CPU of a bare node:http server through fastify, about 1.05x here (bench/server-read.js).
 *
 * What it keeps: the same bytes and headers as the fastify routes in routes/read.ts (the same
 * negotiation and conditional-request functions, the same precomputed headers, an X-Request-Id,
 * the X-RateLimit-* headers) and the same read budget (`countRead` on the counter the rate-limit
 * plugin uses as its store); the same paths under `/v1` (api-version.ts). What it leaves to
 * fastify, which answers them as it always did: any other method (405), path or query string, a
 * request naming an API version the server does not have (400), a request with a body, a client
 * past its limit (fastify counts it again and answers the 429 envelope), a file not built yet
 * (503), a closing server (503), and every request of a server that logs requests or trusts
 * proxies for the client address (fastify's logging and its X-Forwarded-For rules are not repeated
 * here).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';

import type { FastifyServerFactory } from 'fastify';

import { isTemplateName } from '../core/versions.js';
import { headersSelectSupportedVersion } from './api-version.js';
import { newRequestId } from './envelope.js';
import { countRead, RATE_LIMIT_WINDOW_MS, WindowCounter } from './rate-limit.js';
import { CATALOG_FILE, chooseRepresentation, INDEX_FILE, isNotModified, REGISTRY_FILE, templateFileName, type StaticFiles } from './static-files.js';

/** The paths of the fastify routes for the static files (routes/read.ts), and the file each answers. */
const ENTRY_POINTS = new Map<string, string>([
  ['/registry.json', REGISTRY_FILE],
  ['/', REGISTRY_FILE],
  ['/index.json', INDEX_FILE],
  ['/index.html', CATALOG_FILE],
  ['/catalog', CATALOG_FILE],
]);

const TEMPLATE_PATH = /^\/templates\/([^/?]+)\.json$/;

/** The file a request path names, when it is exactly one of the static files' paths (also under `/v1`, api-version.ts). */
export function staticFileOfPath(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  if (url.startsWith('/v1') && (url.length === 3 || url[3] === '/')) url = url.slice(3) || '/';
  const entryPoint = ENTRY_POINTS.get(url);
  if (entryPoint !== undefined) return entryPoint;
  const id = TEMPLATE_PATH.exec(url)?.[1];
  return id !== undefined && isTemplateName(id) ? templateFileName(id) : undefined;
}

const WINDOW_SECONDS = String(RATE_LIMIT_WINDOW_MS / 1000);

export interface StaticFrontOptions {
  /** The files of the last build; undefined before the first. */
  files: () => StaticFiles | undefined;
  /** Reads per minute per client. */
  readPerMinute: () => number;
  /** The server logs requests (fastify's logger): every request then goes through fastify. */
  logger?: unknown;
  /** The server trusts proxies for the client address: every request then goes through fastify. */
  trustProxy?: unknown;
  /** Answers a request before anything else when it returns true (a connection past its address's limit). */
  gate?: (request: IncomingMessage, response: ServerResponse) => boolean;
}

export class StaticFront {
  /** The rate-limit counter, shared with the rate-limit plugin (its store). */
  readonly counter = new WindowCounter(RATE_LIMIT_WINDOW_MS);
  readonly #options: StaticFrontOptions;
  readonly #enabled: boolean;
  #closing = false;

  constructor(options: StaticFrontOptions) {
    this.#options = options;
    this.#enabled = !options.logger && (options.trustProxy === undefined || options.trustProxy === false);
  }

  /**
   * fastify's `serverFactory`: the HTTP/1 server fastify would make (the same timeouts and limits
   * from its options), offering each request to `answer` before fastify's handler.
   */
  readonly serverFactory: FastifyServerFactory = (handler, options) => {
    const settings = options as { http?: http.ServerOptions; keepAliveTimeout: number; requestTimeout: number; connectionTimeout: number; maxRequestsPerSocket: number };
    const gate = this.#options.gate;
    const server = http.createServer(settings.http ?? {}, (request, response) => {
      if (gate?.(request, response)) return;
      if (!this.answer(request, response)) handler(request, response);
    });
    server.keepAliveTimeout = settings.keepAliveTimeout;
    server.requestTimeout = settings.requestTimeout;
    server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    return server;
  };

  /** From now on every request goes to fastify (which answers 503 while it closes). */
  close(): void {
    this.#closing = true;
  }

  /** Answers `request` when it is a plain read of a built static file within its client's budget; false (nothing written) otherwise. */
  answer(request: IncomingMessage, response: ServerResponse): boolean {
    if (!this.#enabled || this.#closing) return false;
    const method = request.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    const headers = request.headers;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
    // A version the server does not have is fastify's 400 (api-version.ts).
    if (!headersSelectSupportedVersion(headers)) return false;
    const name = staticFileOfPath(request.url);
    if (name === undefined) return false;
    const file = this.#options.files()?.get(name);
    const ip = request.socket.remoteAddress;
    if (file === undefined || ip === undefined) return false;
    const count = countRead(this.counter, ip, this.#options.readPerMinute());
    if (count.exceeded) return false;

    const chosen = chooseRepresentation(file, headers['accept-encoding']);
    const notModified = isNotModified(file, chosen, headers['if-none-match'], headers['if-modified-since']);
    const answer: Record<string, string> = {
      'x-request-id': newRequestId(),
      'x-ratelimit-limit': count.limit,
      'x-ratelimit-remaining': count.remaining,
      'x-ratelimit-reset': count.reset,
      'x-ratelimit-window': WINDOW_SECONDS,
    };
    Object.assign(answer, notModified ? chosen.notModifiedHeaders : chosen.headers);
    response.writeHead(notModified ? 304 : 200, answer);
    if (notModified || method === 'HEAD') response.end();
    else response.end(chosen.bytes);
    return true;
  }
}
