import type { IncomingMessage, ServerResponse } from 'node:http';

export type Params = Record<string, string>;

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path pattern; a segment starting with ":" captures a parameter, e.g. /api/items/:id */
  path: string;
  /** Public routes skip authentication (when the auth feature is enabled). */
  public?: boolean;
  handler: (req: IncomingMessage, res: ServerResponse, params: Params) => void | Promise<void>;
}

/** Thrown by handlers to answer with an error status and a JSON error body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

const MAX_BODY_BYTES = 1024 * 1024;

/** Reads and parses a JSON request body (at most 1 MiB). */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'PAYLOAD_TOO_LARGE', 'Request body is larger than 1 MiB');
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'Request body is not valid JSON');
  }
}

/** Matches a path against a route pattern; returns the captured parameters or undefined. */
export function matchPath(pattern: string, pathname: string): Params | undefined {
  const expected = pattern.split('/');
  const actual = pathname.split('/');
  if (expected.length !== actual.length) return undefined;
  const params: Params = {};
  for (const [i, segment] of expected.entries()) {
    const value = actual[i] ?? '';
    if (segment.startsWith(':')) {
      if (value === '') return undefined;
      try {
        params[segment.slice(1)] = decodeURIComponent(value);
      } catch {
        return undefined;
      }
    } else if (segment !== value) {
      return undefined;
    }
  }
  return params;
}
