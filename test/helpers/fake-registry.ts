import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';

import busboy from 'busboy';

import { describeSchemaErrors } from '../../src/core/messages.js';
import { schemaErrors } from '../../src/core/schemas.js';

/** What the fake answers one request with, instead of handling it. */
export type FakeFailure =
  /** 500 / 503 with the error envelope. */
  | '500'
  | '503'
  /** 429 RATE_LIMIT_EXCEEDED with `Retry-After: 1`. */
  | '429'
  /** Destroys the socket without answering. */
  | 'drop'
  /** Accepts the request and never answers (until `close()`). */
  | 'hang'
  /** That status with a generic error envelope. */
  | number
  /** Full control: status, extra headers, and a body (a string is sent as is, an object as JSON). */
  | { status: number; headers?: Record<string, string>; body?: string | object };

export interface FakeUpload {
  name: string;
  version: string;
  /** `sha512-<base64>` of the bytes received in the `template` part. */
  integrity: string;
  /** Hex SHA-256 of the same bytes. */
  sha256: string;
  /** Bytes in the `template` part. */
  size: number;
  /** The `manifest` part, parsed as JSON. */
  manifest: unknown;
  headers: http.IncomingHttpHeaders;
  /** Bytes of the whole request body as received (to check against Content-Length). */
  bodyBytes: number;
  /** File name and content type of the `template` part. */
  fileName: string;
  fileType: string;
  manifestFileName: string | undefined;
  manifestType: string | undefined;
}

export interface FakeRegistryOptions {
  /** The bearer token the fake accepts (default `test-token`). */
  token?: string;
  /** Versions already published: `{ name, version, integrity }`. */
  /** Versions already there; `legacy409` ones answer a re-upload with an old-style 409 that does not say the version is complete. */
  existing?: Array<{ name: string; version: string; integrity: string; legacy409?: boolean }>;
  /** Check the manifest part against the template manifest schema and answer 422 (default true). */
  validateManifest?: boolean;
}

export interface FakeRegistry {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  token: string;
  /** Accepted uploads, in order. */
  uploads: FakeUpload[];
  /** Requests received so far (any method, path and outcome). */
  readonly requests: number;
  /** The next requests are answered with these, one per request, before anything else. */
  fail: (plan: FakeFailure[]) => void;
  close: () => Promise<void>;
}

interface StoredVersion {
  entry: Record<string, unknown>;
  integrity: string;
  legacy409?: boolean;
}

class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/**
 * A small in-process registry for operation 2 (`POST /templates`, multipart `template` +
 * `manifest`, bearer token). The archive part is hashed as it streams in, never buffered.
 * Also answers `GET /templates/<name>/versions/<version>` with the stored entry.
 */
export async function startFakeRegistry(options: FakeRegistryOptions = {}): Promise<FakeRegistry> {
  const token = options.token ?? 'test-token';
  const validate = options.validateManifest ?? true;
  const plan: FakeFailure[] = [];
  const uploads: FakeUpload[] = [];
  const store = new Map<string, StoredVersion>();
  let requests = 0;
  let baseUrl = '';

  const meta = (): Record<string, string> => ({
    timestamp: new Date().toISOString(),
    requestId: `req-${requests}`,
    version: '1',
  });

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
  };

  const sendError = (
    res: http.ServerResponse,
    status: number,
    code: string,
    message: string,
    extra: { details?: Array<{ field: string; message: string; code: string }>; headers?: Record<string, string>; retryAfter?: number } = {},
  ): void => {
    const error: Record<string, unknown> = {
      code,
      message,
      details: extra.details ?? [],
      requestId: `req-${requests}`,
      timestamp: new Date().toISOString(),
    };
    if (extra.retryAfter !== undefined) error.retryAfter = extra.retryAfter;
    send(res, status, { error }, extra.headers);
  };

  for (const seed of options.existing ?? []) {
    store.set(`${seed.name}@${seed.version}`, {
      integrity: seed.integrity,
      ...(seed.legacy409 ? { legacy409: true } : {}),
      entry: { id: seed.name, name: seed.name, version: seed.version, integrity: seed.integrity },
    });
  }

  /** Reads (and drops) the rest of the request before answering, so the client always sees the answer. */
  const afterBody = (req: http.IncomingMessage, answer: () => void): void => {
    if (req.readableEnded) {
      answer();
      return;
    }
    req.on('end', answer);
    req.resume();
  };

  const answerFailure = (req: http.IncomingMessage, res: http.ServerResponse, failure: FakeFailure): void => {
    if (failure === 'drop') {
      req.socket.destroy();
      return;
    }
    if (failure === 'hang') {
      req.resume();
      return;
    }
    afterBody(req, () => {
      if (failure === '429') {
        sendError(res, 429, 'RATE_LIMIT_EXCEEDED', 'rate limit exceeded', { headers: { 'Retry-After': '1' }, retryAfter: 1 });
      } else if (failure === '500') {
        sendError(res, 500, 'INTERNAL_ERROR', 'unexpected server error');
      } else if (failure === '503') {
        sendError(res, 503, 'SERVICE_UNAVAILABLE', 'service unavailable');
      } else if (typeof failure === 'number') {
        sendError(res, failure, `HTTP_${failure}`, http.STATUS_CODES[failure] ?? 'error');
      } else {
        const body = failure.body ?? { error: { code: `HTTP_${failure.status}`, message: 'error', details: [], requestId: `req-${requests}`, timestamp: new Date().toISOString() } };
        send(res, failure.status, body, failure.headers);
      }
    });
  };

  const handleUpload = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      afterBody(req, () =>
        sendError(res, 401, 'UNAUTHORIZED', 'missing or invalid API token', { headers: { 'WWW-Authenticate': 'Bearer' } }),
      );
      return;
    }
    if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
      afterBody(req, () => sendError(res, 400, 'BAD_REQUEST', 'expected multipart/form-data'));
      return;
    }

    const counter = new ByteCounter();
    const parser = busboy({ headers: req.headers });
    const pending: Array<Promise<void>> = [];
    let archive: { integrity: string; sha256: string; size: number; fileName: string; fileType: string } | undefined;
    let manifestText: string | undefined;
    let manifestFileName: string | undefined;
    let manifestType: string | undefined;

    parser.on('file', (field, stream, info) => {
      if (field === 'template') {
        const sha512 = createHash('sha512');
        const sha256 = createHash('sha256');
        let size = 0;
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          sha512.update(chunk);
          sha256.update(chunk);
        });
        pending.push(
          new Promise<void>((resolve, reject) => {
            stream.on('end', () => {
              archive = {
                integrity: `sha512-${sha512.digest('base64')}`,
                sha256: sha256.digest('hex'),
                size,
                fileName: info.filename ?? '',
                fileType: info.mimeType,
              };
              resolve();
            });
            stream.on('error', reject);
          }),
        );
      } else if (field === 'manifest') {
        const chunks: Buffer[] = [];
        manifestFileName = info.filename;
        manifestType = info.mimeType;
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        pending.push(
          new Promise<void>((resolve, reject) => {
            stream.on('end', () => {
              manifestText = Buffer.concat(chunks).toString('utf8');
              resolve();
            });
            stream.on('error', reject);
          }),
        );
      } else {
        stream.resume();
      }
    });
    parser.on('field', (field, value) => {
      if (field === 'manifest') manifestText = value;
    });

    const parsed = new Promise<void>((resolve, reject) => {
      parser.on('close', resolve);
      parser.on('error', reject);
    });
    req.pipe(counter).pipe(parser);
    try {
      await parsed;
      await Promise.all(pending);
    } catch (error) {
      req.resume();
      sendError(res, 400, 'BAD_REQUEST', `cannot read the multipart body: ${(error as Error).message}`);
      return;
    }

    const missing = [
      ...(archive ? [] : [{ field: 'template', message: 'the template archive part is missing', code: 'REQUIRED' }]),
      ...(manifestText === undefined ? [{ field: 'manifest', message: 'the manifest part is missing', code: 'REQUIRED' }] : []),
    ];
    if (!archive || manifestText === undefined) {
      sendError(res, 400, 'VALIDATION_ERROR', 'the upload is incomplete', { details: missing });
      return;
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(manifestText);
    } catch {
      sendError(res, 400, 'VALIDATION_ERROR', 'the manifest is not valid JSON', {
        details: [{ field: 'manifest', message: 'not valid JSON', code: 'INVALID_JSON' }],
      });
      return;
    }
    if (validate) {
      const violations = describeSchemaErrors(schemaErrors('template-manifest', manifest));
      if (violations.length > 0) {
        sendError(res, 422, 'VALIDATION_ERROR', 'manifest is invalid', {
          details: violations.map((v) => ({ field: v.pointer, message: v.message, code: v.code })),
        });
        return;
      }
    }
    const { name, version } = manifest as { name: string; version: string };
    const key = `${name}@${version}`;
    const existing = store.get(key);
    if (existing) {
      sendError(res, 409, 'VERSION_EXISTS', `${key} is already published`, {
        details: [
          { field: 'integrity', code: 'VERSION_EXISTS', message: existing.integrity },
          ...(existing.legacy409 ? [] : [{ field: 'state', code: 'VERSION_EXISTS', message: 'complete' }]),
        ],
      });
      return;
    }
    const now = new Date().toISOString();
    const location = `${baseUrl}/templates/${name}/versions/${version}`;
    const m = manifest as Record<string, unknown>;
    const entry: Record<string, unknown> = {
      id: name,
      name,
      version,
      description: m.description,
      category: m.category,
      stability: m.stability ?? 'stable',
      downloadUrl: `${location}/archive`,
      integrity: archive.integrity,
      sha256: archive.sha256,
      size: archive.size,
      createdAt: now,
      updatedAt: now,
    };
    store.set(key, { entry, integrity: archive.integrity });
    uploads.push({
      name,
      version,
      integrity: archive.integrity,
      sha256: archive.sha256,
      size: archive.size,
      manifest,
      headers: req.headers,
      bodyBytes: counter.bytes,
      fileName: archive.fileName,
      fileType: archive.fileType,
      manifestFileName,
      manifestType,
    });
    send(res, 201, { data: entry, meta: meta() }, { Location: location });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    requests++;
    const failure = plan.shift();
    if (failure !== undefined) {
      answerFailure(req, res, failure);
      return;
    }
    const { pathname } = new URL(req.url ?? '/', 'http://fake.invalid');
    if (req.method === 'POST' && pathname === '/templates') {
      await handleUpload(req, res);
      return;
    }
    const match = /^\/templates\/([^/]+)\/versions\/([^/]+)$/.exec(pathname);
    if (req.method === 'GET' && match) {
      const stored = store.get(`${decodeURIComponent(match[1]!)}@${decodeURIComponent(match[2]!)}`);
      if (stored) send(res, 200, { data: stored.entry, meta: meta() });
      else sendError(res, 404, 'NOT_FOUND', 'no such template version');
      return;
    }
    afterBody(req, () => sendError(res, 404, 'NOT_FOUND', `no route for ${req.method} ${pathname}`));
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'INTERNAL_ERROR', String(error));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: baseUrl,
    token,
    uploads,
    get requests() {
      return requests;
    },
    fail: (next) => {
      plan.push(...next);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
