import { randomUUID } from 'node:crypto';

import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { isStorageFull } from '../core/errors.js';
import { describeSchemaErrors } from '../core/messages.js';
import { errorDetails, type ErrorDetail } from '../core/validation.js';

/** How a route names its JSON body in errors (route `config.body`). */
export interface BodyDescription {
  /** What the body must be, for a 400 when it is not even a JSON object: `a JSON analytics event`. */
  shape: string;
  /** The message of a 422 when it breaks its schema: `the event is invalid`. */
  invalid: string;
  /** The detail field of a problem with the whole body: `event`. */
  root: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    body?: BodyDescription;
  }
  interface FastifyRequest {
    /** The interface version answering the request (`1.0`), set by the api-version hook (api-version.ts). */
    apiVersion?: string;
  }
}

export const API_VERSION = '1.0';

export type { ErrorDetail } from '../core/validation.js';

/** An error answered with the spec's error envelope. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Refusals answered before any of the request's body was read, their connection closed after them (`closing` in routes/upload.ts). */
const refusedBeforeBody = new WeakSet<ApiError>();

/** Marks `error` as answered before the request's body was read (see `readsRestInstead`). */
export function beforeBody(error: ApiError): ApiError {
  refusedBeforeBody.add(error);
  return error;
}

export function requestId(request: FastifyRequest): string {
  return String(request.id);
}

/** `{ data, meta: { timestamp, requestId, version } }`; `version` is the interface version the request selected. */
export function envelope<T>(request: FastifyRequest, data: T, extra: Record<string, unknown> = {}): { data: T; meta: Record<string, unknown> } & Record<string, unknown> {
  return { data, meta: { timestamp: new Date().toISOString(), requestId: requestId(request), version: request.apiVersion ?? API_VERSION }, ...extra };
}

export function errorBody(request: FastifyRequest, error: ApiError): { error: Record<string, unknown> } {
  return {
    error: {
      code: error.code,
      message: error.message,
      details: error.details,
      requestId: requestId(request),
      timestamp: new Date().toISOString(),
      ...error.extra,
    },
  };
}

/** The most of a refused body read and dropped so that its client gets the answer (see `readsRestInstead`). */
export const LINGER_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Whether a refusal that would close its connection lets the rest of the body be read and dropped
 * instead: a socket closed with bytes unread is reset, and the client's side then drops the answer
 * with it (an EPIPE instead of the 401 that says why). Only a body of a declared length up to
 * LINGER_MAX_BYTES: a larger or chunked one is still cut off at once, never read.
 */
function readsRestInstead(request: FastifyRequest): boolean {
  const raw = request.raw;
  if (raw.complete || raw.headers['transfer-encoding'] !== undefined) return false;
  const declared = Number(raw.headers['content-length']);
  return Number.isFinite(declared) && declared > 0 && declared <= LINGER_MAX_BYTES;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  const lingers = refusedBeforeBody.has(error) && readsRestInstead(request);
  if (lingers) {
    // fastify's own refusals before the body (its body limit) ask for the connection to be closed on the reply.
    if (String(reply.getHeader('connection') ?? '').toLowerCase() === 'close') void reply.removeHeader('connection');
    // The rest is read and dropped here: a body piped into the body time-out's stream (slow-clients.ts),
    // which no one reads now, would hold it, and the connection with it.
    request.raw.unpipe();
    request.raw.resume();
  }
  for (const [name, value] of Object.entries(error.headers)) {
    if (lingers && name.toLowerCase() === 'connection' && value.toLowerCase() === 'close') continue;
    void reply.header(name, value);
  }
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(errorBody(request, error));
}

const STATUS_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'VALIDATION_ERROR',
  429: 'RATE_LIMIT_EXCEEDED',
};


/** PostgreSQL's refusal of text it cannot store (a NUL in text or json: SQLSTATE 22021, 22P05). */
export function isUnstorableText(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '22021' || code === '22P05';
}

export interface EnvelopeOptions {
  /**
   * The methods the routes of a path (without its query) answer; none for a path no route has.
   * A request of another method on a known path is then a 405 with `Allow`, not a 404.
   */
  allowedMethods?: (path: string) => readonly string[];
}

/** Request ids, the X-Request-Id header, and the error envelope for every error and unknown route (404, or 405 with Allow). */
export function installEnvelope(app: FastifyInstance, options: EnvelopeOptions = {}): void {
  // Set as the answer goes out (an answer written straight to the response sets it itself:
  // routes/read.ts); a callback hook: an async one would cost every answer a promise and a microtask turn.
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('X-Request-Id', requestId(request));
    done(null, payload);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = options.allowedMethods?.(path) ?? [];
    if (allowed.length > 0) {
      const allow = allowed.join(', ');
      return sendError(request, reply, new ApiError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}; allowed: ${allow}`, [], { Allow: allow }));
    }
    return sendError(request, reply, new ApiError(404, 'NOT_FOUND', `no route for ${request.method} ${path}`));
  });
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return sendError(request, reply, error);
    const status = error.statusCode ?? 500;
    if (error.validation) return sendError(request, reply, validationError(error, request));
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // A declared Content-Length over the route's body limit is refused before any of the body is read
      // (a chunked body is refused once read past the limit, and its connection still closed: readsRestInstead).
      const limit = request.routeOptions.bodyLimit;
      return sendError(request, reply, beforeBody(new ApiError(413, 'PAYLOAD_TOO_LARGE', `the body is larger than the limit of ${limit} bytes`)));
    }
    if (status >= 500) request.log.error(error);
    if (isUnstorableText(error)) {
      // The edge refuses NUL in every field (json-input.ts); this answers one that slipped past as the client's, not a 500.
      return sendError(request, reply, new ApiError(400, 'BAD_REQUEST', 'the request holds a character the database cannot store (NUL, U+0000)'));
    }
    if (isStorageFull(error)) {
      return sendError(request, reply, new ApiError(507, 'INSUFFICIENT_STORAGE', "the registry's storage is full; nothing was stored, retry later", [], { 'Retry-After': '60' }));
    }
    const code = STATUS_CODES[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'ERROR');
    const message = status >= 500 ? 'unexpected server error' : error.message;
    return sendError(request, reply, new ApiError(status, code, message));
  });
}

export const newRequestId = (): string => randomUUID();

/**
 * The status of input that failed validation, by the spec's status table ("400: invalid JSON or
 * missing fields", "422: validation errors"): 400 when a required field (or part) is missing (a
 * detail REQUIRED), 422 when everything required is there and a value breaks a rule. One rule for
 * JSON bodies and multipart parts alike; an answer with both kinds is a 400 listing every detail.
 */
export function validationStatus(details: readonly ErrorDetail[]): 400 | 422 {
  return details.some((detail) => detail.code === 'REQUIRED') ? 400 : 422;
}

/** VALIDATION_ERROR with the status its details call for (validationStatus). */
export function invalidInput(message: string, details: ErrorDetail[]): ApiError {
  return new ApiError(validationStatus(details), 'VALIDATION_ERROR', message, details);
}

/**
 * The one formatter of schema errors (from the schemas declared on routes) into the error
 * envelope: the query string or parameters -> 400 VALIDATION_ERROR; a body that is not a JSON
 * object -> 400 BAD_REQUEST; a body missing a required field -> 400 VALIDATION_ERROR (REQUIRED
 * details); a body that breaks its schema otherwise -> 422 VALIDATION_ERROR (validationStatus).
 * Details name the field (`limit`, `events.0`) in the project's plain words.
 */
export function validationError(error: FastifyError, request: FastifyRequest): ApiError {
  const context = error.validationContext ?? 'request';
  const errors = (error.validation ?? []) as unknown as ErrorObject[];
  if (context !== 'body') {
    return new ApiError(400, 'VALIDATION_ERROR', `invalid ${context}`, errorDetails(describeSchemaErrors(errors), context));
  }
  const body = request.routeOptions.config.body ?? { shape: 'a JSON object', invalid: 'the body is invalid', root: 'body' };
  if (errors.some((e) => e.instancePath === '' && e.keyword === 'type')) return new ApiError(400, 'BAD_REQUEST', `the body must be ${body.shape}`);
  return invalidInput(body.invalid, errorDetails(describeSchemaErrors(errors), body.root));
}
