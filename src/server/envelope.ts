import { randomUUID } from 'node:crypto';

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { ErrorDetail } from '../core/validation.js';

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

export function requestId(request: FastifyRequest): string {
  return String(request.id);
}

/** `{ data, meta: { timestamp, requestId, version } }` */
export function envelope<T>(request: FastifyRequest, data: T, extra: Record<string, unknown> = {}): { data: T; meta: Record<string, unknown> } & Record<string, unknown> {
  return { data, meta: { timestamp: new Date().toISOString(), requestId: requestId(request), version: API_VERSION }, ...extra };
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

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) void reply.header(name, value);
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

/** Request ids, the X-Request-Id header, and the error envelope for every error and unknown route. */
export function installEnvelope(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('X-Request-Id', requestId(request));
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new ApiError(404, 'NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0] ?? ''}`)),
  );
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return sendError(request, reply, error);
    const status = error.statusCode ?? 500;
    if (error.validation) {
      const details = error.validation.map((v) => ({
        field: `${error.validationContext ?? 'request'}${v.instancePath || (typeof v.params.missingProperty === 'string' ? `/${v.params.missingProperty}` : '')}`,
        message: v.message ?? 'is invalid',
        code: v.keyword === 'required' ? 'REQUIRED' : v.keyword.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase(),
      }));
      return sendError(request, reply, new ApiError(400, 'VALIDATION_ERROR', `invalid ${error.validationContext ?? 'request'}`, details));
    }
    if (status >= 500) request.log.error(error);
    const code = STATUS_CODES[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'ERROR');
    const message = status >= 500 ? 'unexpected server error' : error.message;
    return sendError(request, reply, new ApiError(status, code, message));
  });
}

export const newRequestId = (): string => randomUUID();
