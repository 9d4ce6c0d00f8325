/**
 * What one slow or greedy client may hold of the server:
 *
 * - a request body must arrive within `bodyTimeoutMs` (60 s) of its headers; past that the request
 *   is answered 408 REQUEST_TIMEOUT and its connection closed. The routes that take an archive's
 *   bytes (`POST /templates`, `POST /files`, `PUT /files/{id}/content`) have `requestTimeoutMs`
 *   (300 s) instead: 50 MiB over a slow link takes longer, and they stream to disk as it comes;
 * - one client address holds at most `maxConnectionsPerAddress` connections (64; 0: no limit) at
 *   once; a request on a connection past that is answered 429 TOO_MANY_CONNECTIONS and the
 *   connection closed, and one that sends nothing is closed after a moment. Behind trusted
 *   proxies every connection comes from a proxy: the limit is then the proxies' to keep.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';

import type { FastifyInstance, FastifyRequest, FastifyServerFactory } from 'fastify';

import { ApiError, newRequestId } from './envelope.js';

/** Whether a request has a body to wait for (a length above 0, or chunks). */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function bodyTimedOut(timeoutMs: number): ApiError {
  const seconds = timeoutMs / 1000;
  return new ApiError(408, 'REQUEST_TIMEOUT', `the request body did not arrive within ${seconds} second${seconds === 1 ? '' : 's'}`, [], { Connection: 'close' });
}

/**
 * Gives every request body `timeoutMs` to arrive, except those `exempt` says have a time-out of
 * their own: the body is read through a stream that fails with the 408 when time is up, so the
 * route's parser answers it through the error handler. Call before any route is registered.
 */
export function installBodyTimeout(app: FastifyInstance, timeoutMs: number, exempt: (request: FastifyRequest) => boolean): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (exempt(request) || !hasBody(request)) {
      done(null, payload);
      return;
    }
    const timed = new PassThrough();
    // A route that never reads its body must not turn the time-out into an uncaught error.
    timed.on('error', () => undefined);
    const timer = setTimeout(() => timed.destroy(bodyTimedOut(timeoutMs)), timeoutMs);
    const stop = (): void => clearTimeout(timer);
    timed.once('end', stop);
    timed.once('close', stop);
    reply.raw.once('close', stop);
    payload.once('error', (error) => timed.destroy(error));
    payload.pipe(timed);
    done(null, timed);
  });
}

/** How long a connection past the limit may take to send its request before it is closed unanswered. */
const REFUSED_GRACE_MS = 2000;

/** Connections per client address, counted on the server's sockets. */
export class ConnectionLimit {
  readonly #open = new Map<string, number>();
  readonly #refused = new WeakSet<Socket>();

  /** `max`: connections one address may hold at once; 0: no limit. */
  constructor(readonly max: number) {}

  /** Connections open from `address` now (those within the limit). */
  openFrom(address: string): number {
    return this.#open.get(address) ?? 0;
  }

  /** Counts `server`'s connections from now on; returns it. */
  attach<S extends Server>(server: S): S {
    if (this.max <= 0) return server;
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress ?? '';
      const open = this.openFrom(address);
      if (open >= this.max) {
        this.#refused.add(socket);
        socket.setTimeout(REFUSED_GRACE_MS, () => socket.destroy());
        return;
      }
      this.#open.set(address, open + 1);
      socket.once('close', () => {
        const left = this.openFrom(address) - 1;
        if (left > 0) this.#open.set(address, left);
        else this.#open.delete(address);
      });
    });
    return server;
  }

  /**
   * fastify's `serverFactory`: the HTTP/1 server fastify would make (the same timeouts and limits
   * from its options), its connections counted, a request on a connection past the limit answered
   * (`refuse`) before fastify sees it.
   */
  readonly serverFactory: FastifyServerFactory = (handler, options) => {
    const settings = options as { http?: ServerOptions; keepAliveTimeout: number; requestTimeout: number; connectionTimeout: number; maxRequestsPerSocket: number };
    const server = createServer(settings.http ?? {}, (request, response) => {
      if (!this.refuse(request, response)) handler(request, response);
    });
    server.keepAliveTimeout = settings.keepAliveTimeout;
    server.requestTimeout = settings.requestTimeout;
    server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    return this.attach(server);
  };

  /** Answers a request on a connection past the limit (429, the connection closed): true; false for any other. */
  readonly refuse = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (!this.#refused.has(request.socket)) return false;
    const requestId = newRequestId();
    const body = JSON.stringify({
      error: {
        code: 'TOO_MANY_CONNECTIONS',
        message: `too many connections from your address: at most ${this.max} at once; close one (or reuse it) and retry`,
        details: [],
        requestId,
        timestamp: new Date().toISOString(),
        retryAfter: 1,
      },
    });
    response.writeHead(429, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'retry-after': '1',
      'x-request-id': requestId,
      connection: 'close',
    });
    response.end(body);
    return true;
  };
}
