/**
 * The one client of a registry server's write API, on `fetch`: publish (`publish/upload.ts`), the
 * trusted-publishing token exchange, and the CLI's deprecate, yank, owner and trust commands all
 * send through it. One policy for all of them:
 *
 * - retries: a network error, a 429 or a 5xx is retried with `core/retry.ts`'s backoff (honouring
 *   `Retry-After`, header or envelope), other answers are not; an attempt fails when its connection
 *   stays idle (nothing sent, nothing received) for `timeoutMs`;
 * - errors: `RegistryApiError`, carrying the status, the envelope's code, details and request id,
 *   and the attempts made;
 * - redaction: the token (and any `Bearer` credential) never appears in a message or a retry reason.
 *
 * Bodies: JSON, a multipart form encoded by `FormData` (files as `Blob`s, `openAsBlob` for archives:
 * streamed from disk, never held in memory), or a file's raw bytes. Every body goes with an exact
 * Content-Length, and its bytes are counted as they are handed to the connection (`onProgress`).
 */
import { createReadStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import type { ApiErrorDetail } from '../core/schema-types.js';
import { isRecord } from '../core/is-record.js';
import { registryBaseUrl } from '../core/registry-url.js';
import { parseRetryAfter, retryDelay } from '../core/retry.js';
import { readBodyHead } from '../core/response-body.js';

/** The standard reason phrase of an HTTP status (node:http's table: loaded when a message needs one, not at import). */
const reasonPhrase = (status: number): string | undefined => process.getBuiltinModule('node:http').STATUS_CODES[status];

export const DEFAULT_API_USER_AGENT = `template-registry (node ${process.version})`;

/** Retries after a network error, a 429 or a 5xx (4: at most 5 attempts), the first delay, the cap on any delay. */
export const DEFAULT_API_RETRY = { retries: 4, minDelayMs: 500, maxDelayMs: 30_000 } as const;

/** An attempt fails after this long without a byte sent or received. */
export const DEFAULT_API_IDLE_TIMEOUT_MS = 120_000;

/** Answers past this size are not kept (an error body is shown cut anyway; a success is small JSON). */
const MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_SHOWN_BODY = 500;

export interface RegistryApiErrorInit {
  status?: number;
  code?: string;
  details?: ApiErrorDetail[];
  requestId?: string;
  attempts?: number;
}

/** A request the registry refused, or that could not reach it. The message never holds the token. */
export class RegistryApiError extends Error {
  override readonly name: string = 'RegistryApiError';
  /** HTTP status; absent for a network error or a bad input. */
  readonly status: number | undefined;
  /** The envelope's `error.code`, or a network error code such as `ECONNREFUSED`. */
  readonly code: string | undefined;
  readonly details: ApiErrorDetail[];
  readonly requestId: string | undefined;
  /** Attempts made (0 when the inputs were rejected before any request). */
  readonly attempts: number;

  constructor(message: string, init: RegistryApiErrorInit = {}) {
    super(message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
    this.attempts = init.attempts ?? 0;
  }
}

export interface ApiRetryInfo {
  /** The attempt that just failed (1-based). */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  /** Why the attempt failed, e.g. `HTTP 503 ...` or `ECONNRESET: other side closed`. Never holds the token. */
  reason: string;
}

/** Removes the secrets (and any bearer credential) from text shown to a user. */
export function redactor(...secrets: string[]): (text: string) => string {
  const known = secrets.filter((secret) => secret !== '');
  return (text) => {
    let out = text.replace(/(Bearer\s+)\S+/gi, '$1***');
    for (const secret of known) out = out.split(secret).join('***');
    return out;
  };
}

/** The URL without user name and password, for messages. */
export function displayUrl(url: URL): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export interface ParsedApiError {
  code?: string;
  message?: string;
  details: ApiErrorDetail[];
  requestId?: string;
  retryAfter?: number;
}

/** The registry's error envelope `{ error: { code, message, details, requestId, ... } }`, when the body is one. */
export function parseErrorEnvelope(body: string): ParsedApiError | undefined {
  const parsed = parseJson(body);
  if (!isRecord(parsed) || !isRecord(parsed.error)) return undefined;
  const error = parsed.error;
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  const details: ApiErrorDetail[] = Array.isArray(error.details)
    ? error.details.filter(isRecord).map((detail) => ({
        field: text(detail.field) ?? '',
        message: text(detail.message) ?? (detail.message === undefined ? '' : JSON.stringify(detail.message)),
        code: text(detail.code) ?? '',
      }))
    : [];
  return {
    code: text(error.code),
    message: text(error.message),
    details,
    requestId: text(error.requestId),
    retryAfter: typeof error.retryAfter === 'number' ? error.retryAfter : undefined,
  };
}

/** An answer of the registry, its body read (up to 1 MiB). */
export interface ApiResponse {
  url: URL;
  status: number;
  headers: Headers;
  body: string;
}

export type ApiOutcome =
  | { kind: 'response'; response: ApiResponse }
  | { kind: 'network'; url: URL; code: string; message: string; retryable: boolean };

/** `HTTP 422 VALIDATION_ERROR: manifest is invalid` plus one indented line per detail and the request id. */
export function describeResponse(response: Pick<ApiResponse, 'status' | 'body'>, apiError = parseErrorEnvelope(response.body)): string {
  const head = `HTTP ${response.status}`;
  if (!apiError) {
    const body = response.body.trim();
    if (body === '') return `${head} ${reasonPhrase(response.status) ?? ''}`.trimEnd();
    return `${head}: ${body.length > MAX_SHOWN_BODY ? `${body.slice(0, MAX_SHOWN_BODY)}...` : body}`;
  }
  const lines = [`${head}${apiError.code ? ` ${apiError.code}` : ''}: ${apiError.message ?? reasonPhrase(response.status) ?? 'error'}`];
  for (const detail of apiError.details) {
    const where = [detail.field, detail.code].filter((part) => part !== '').join(' ');
    lines.push(`  ${where === '' ? '' : `${where}: `}${detail.message}`);
  }
  if (apiError.requestId) lines.push(`  request id: ${apiError.requestId}`);
  return lines.join('\n');
}

/** A part of a multipart form: text, or a file (a `Blob`: `openAsBlob` streams one from disk). */
export type FormPart = { name: string; value: string } | { name: string; file: Blob; fileName: string };

/**
 * What a request sends: JSON, a multipart form, or a file's raw bytes (`path`: the file on disk the
 * Blob was opened from, read in large chunks: a file Blob's own stream hands over 64 KiB at a time,
 * and 100 MB of them cost the client three times the CPU of reading it).
 */
export type ApiBody = { json: unknown } | { form: FormPart[] } | { file: Blob; contentType: string; path?: string };

/**
 * The chunks a file body is read in from its path. Measured on 2026-11-28 (a PUT of 100 MB to a
 * server in another process that writes it to disk, medians of 15 interleaved runs): 1 MiB chunks
 * read one at a time 493 ms and 399 ms of the client's CPU; 4 MiB chunks, the next read while one
 * is sent, 299 ms and 231 ms; `curl -T` 220 ms.
 */
const FILE_BODY_CHUNK = 4 * 1024 * 1024;

/**
 * The file at `path` as a stream of FILE_BODY_CHUNK chunks, opened at the first read (a request that
 * fails before sending its body leaves no file open) and closed at its end or when cancelled. Each
 * chunk handed over starts the read of the next, so the disk and the connection work at once; the
 * stream itself queues nothing (the connection's pulls still say how much was handed over).
 */
function fileChunks(path: string): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Buffer> | undefined;
  let next: Promise<IteratorResult<Buffer>> | undefined;
  const readAhead = (iterator: AsyncIterator<Buffer>): Promise<IteratorResult<Buffer>> => {
    const read = iterator.next();
    // Awaited by the next pull; a failure while nobody waits (the request ended) is not unhandled.
    read.catch(() => undefined);
    return read;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= (createReadStream(path, { highWaterMark: FILE_BODY_CHUNK }) as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
        const step = await (next ?? chunks.next());
        next = undefined;
        if (step.done === true) {
          controller.close();
          return;
        }
        next = readAhead(chunks);
        controller.enqueue(step.value);
      },
      async cancel() {
        await chunks?.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

export interface ApiExchange {
  method: string;
  url: URL;
  body?: ApiBody;
  /** Send the client's token (default true). False for a URL that carries its own capability. */
  authorize?: boolean;
  /** More headers (a credential other than the client's token, e.g.). */
  headers?: Record<string, string>;
  /** Bytes of the body handed to the connection so far, of its Content-Length; called with 0 first. */
  onProgress?: (sent: number, total: number) => void;
  /** Where the body's file is read from, for the message when reading it fails. */
  source?: string;
}

export interface RegistryApiClientOptions {
  /** The registry's base URL or its registry.json URL (`core/registry-url.ts`). */
  registryUrl: string;
  /** The API token, sent as `Authorization: Bearer <token>`; never shown. Empty: no credential. */
  token?: string;
  /** Other secrets a message must never show (an OIDC ID token sent in a body, e.g.). */
  secrets?: string[];
  userAgent?: string;
  /** Retries after a network error, a 429 or a 5xx (default 4). */
  retries?: number;
  /** First backoff delay (default 500 ms); doubles each retry, with jitter. */
  minDelayMs?: number;
  /** Cap on any delay, `Retry-After` included (default 30 s). */
  maxDelayMs?: number;
  /** An attempt fails when its connection stays idle this long (default 120 s). */
  timeoutMs?: number;
  /** Called before each wait between attempts. */
  onRetry?: (info: ApiRetryInfo) => void;
  /** The error made for a failure (a subclass, e.g. `PublishError`). */
  errorType?: new (message: string, init?: RegistryApiErrorInit) => RegistryApiError;
  /** The wait between attempts (tests pass one that does not sleep). */
  sleep?: (ms: number) => Promise<unknown>;
}

/** The outcome of a call with retries: the last answer (2xx, a 4xx, or the retryable one that exhausted the retries). */
export interface ApiCallResult {
  response: ApiResponse;
  attempts: number;
  /** The answer was retryable but no attempt was left. */
  gaveUp: boolean;
}

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** Whether an answer is worth another attempt: rate limited, or the server failed. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

function checkNumber(name: string, value: number, min: number, errorType: RegistryApiClientOptions['errorType'] = RegistryApiError): number {
  if (!Number.isFinite(value) || value < min) throw new errorType(`${name} must be a number >= ${min} (got ${value})`);
  return value;
}

/** The error a failed read of a body's own source (the archive on disk) is kept as: never retried. */
class SourceError extends Error {
  constructor(
    readonly source: string,
    readonly failure: unknown,
  ) {
    super(failure instanceof Error ? failure.message : String(failure));
  }
}

/**
 * `source` as a stream that counts the bytes taken from it (`onChunk`) and keeps a failure of the
 * source apart from the network's (`failed`).
 */
function counted(source: ReadableStream<Uint8Array>, onChunk: (bytes: number) => void, failed: { error?: unknown }): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (error) {
          failed.error = error;
          throw error;
        }
        if (step.done) {
          controller.close();
          return;
        }
        controller.enqueue(step.value);
        onChunk(step.value.byteLength);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    // Pulled only when the connection asks for more: the count stays close to what was handed over.
    { highWaterMark: 0 },
  );
}

const ENCODER_URL = 'http://multipart.invalid/';

function formData(parts: FormPart[], fileOf: (part: FormPart & { file: Blob }) => Blob): FormData {
  const form = new FormData();
  for (const part of parts) {
    if ('value' in part) form.append(part.name, part.value);
    else form.append(part.name, fileOf(part), part.fileName);
  }
  return form;
}

function boundaryOf(request: Request): string {
  return /boundary=(.+)$/.exec(request.headers.get('content-type') ?? '')?.[1] ?? '';
}

/**
 * A multipart form as `FormData` encodes it, as a stream (files read as it is sent), with its exact
 * length: the framing (every file part empty, encoded in memory) plus the files' sizes, the two
 * encodings differing only in their random boundary, written once per part and once at the end.
 */
async function encodeForm(parts: FormPart[]): Promise<{ stream: ReadableStream<Uint8Array>; contentType: string; length: number }> {
  const request = new Request(ENCODER_URL, { method: 'POST', body: formData(parts, (part) => part.file) });
  const frame = new Request(ENCODER_URL, { method: 'POST', body: formData(parts, (part) => new Blob([], { type: part.file.type })) });
  const frameLength = (await frame.arrayBuffer()).byteLength;
  const files = parts.reduce((sum, part) => sum + ('file' in part ? part.file.size : 0), 0);
  const length = frameLength + (boundaryOf(request).length - boundaryOf(frame).length) * (parts.length + 1) + files;
  if (!request.body) throw new Error('FormData gave no body');
  return { stream: request.body, contentType: request.headers.get('content-type') ?? '', length };
}

/** The code and message of a failed `fetch`: undici's cause, with "the other side closed" said as ECONNRESET. */
function networkFailure(error: unknown): { code: string; message: string } {
  const outer = error as { code?: unknown; message?: unknown; cause?: unknown };
  const cause = (isRecord(outer.cause) ? outer.cause : outer) as { code?: unknown; message?: unknown };
  let code = typeof cause.code === 'string' ? cause.code : typeof outer.code === 'string' ? outer.code : 'NETWORK_ERROR';
  const message = typeof cause.message === 'string' ? cause.message : String(error);
  if (code === 'UND_ERR_SOCKET') code = 'ECONNRESET';
  return { code, message };
}

/** The registry's write API: see the module's comment for its retry, error and redaction policy. */
export class RegistryApiClient {
  /** The registry's base URL, without a trailing slash in its path. */
  readonly base: URL;
  readonly token: string;
  readonly userAgent: string;
  readonly timeoutMs: number;
  readonly redact: (text: string) => string;
  readonly #retries: number;
  readonly #limits: { minDelayMs: number; maxDelayMs: number };
  readonly #onRetry: ((info: ApiRetryInfo) => void) | undefined;
  readonly #error: new (message: string, init?: RegistryApiErrorInit) => RegistryApiError;
  readonly #sleep: (ms: number) => Promise<unknown>;

  constructor(options: RegistryApiClientOptions) {
    this.#error = options.errorType ?? RegistryApiError;
    const token = (options.token ?? '').trim();
    this.token = token;
    this.redact = redactor(token, ...(options.secrets ?? []));
    if (/[\r\n]/.test(token)) throw new this.#error('the API token must not contain line breaks');
    let base: URL;
    try {
      base = new URL(registryBaseUrl(String(options.registryUrl)));
    } catch {
      throw new this.#error(`registry URL must be an http(s) URL (got ${JSON.stringify(this.redact(String(options.registryUrl)))})`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new this.#error(`registry URL must be an http(s) URL (got ${base.protocol} in ${displayUrl(base)})`);
    }
    base.pathname = base.pathname.replace(/\/+$/, '');
    this.base = base;
    this.userAgent = options.userAgent ?? DEFAULT_API_USER_AGENT;
    this.#retries = Math.floor(checkNumber('retries', options.retries ?? DEFAULT_API_RETRY.retries, 0, this.#error));
    const minDelayMs = checkNumber('minDelayMs', options.minDelayMs ?? DEFAULT_API_RETRY.minDelayMs, 0, this.#error);
    const maxDelayMs = Math.max(minDelayMs, checkNumber('maxDelayMs', options.maxDelayMs ?? DEFAULT_API_RETRY.maxDelayMs, 0, this.#error));
    this.#limits = { minDelayMs, maxDelayMs };
    this.timeoutMs = checkNumber('timeoutMs', options.timeoutMs ?? DEFAULT_API_IDLE_TIMEOUT_MS, 1, this.#error);
    this.#onRetry = options.onRetry;
    this.#sleep = options.sleep ?? sleep;
  }

  /** `<base><route>`; `route` starts with `/` and may carry a query. */
  url(route: string): URL {
    return new URL(`${this.base.href.replace(/\/+$/, '')}${route}`);
  }

  /** The client's error type, for a failure its caller finds in an answer. */
  error(message: string, init: RegistryApiErrorInit = {}): RegistryApiError {
    return new this.#error(this.redact(message), init);
  }

  /** The error of a refused answer: its description (status, code, message, details, request id), `prefix` before it and `hint` after. */
  refusal(result: ApiCallResult, options: { prefix?: string; hint?: string } = {}): RegistryApiError {
    const { response } = result;
    const apiError = parseErrorEnvelope(response.body);
    let message = `${result.gaveUp ? `gave up after ${result.attempts} attempt${result.attempts === 1 ? '' : 's'}: ` : ''}${options.prefix ?? ''}${describeResponse(response, apiError)}`;
    if (options.hint) message += `\n  ${options.hint}`;
    return this.error(message, { status: response.status, code: apiError?.code, details: apiError?.details ?? [], requestId: apiError?.requestId, attempts: result.attempts });
  }

  /**
   * One request, no retry: its answer (body read, up to 1 MiB), or the network error that kept it
   * from one. A failure to read the body's own source (the archive) throws: never worth a retry.
   */
  async exchange(request: ApiExchange): Promise<ApiOutcome> {
    const controller = new AbortController();
    const idleError = Object.assign(new Error(`no activity for ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' });
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const active = (): void => {
      clearTimeout(timer);
      // The body's source may still hand over a chunk after the exchange ended (a connection reset
      // mid-upload): a timer armed then would keep the process alive for the whole idle time-out.
      if (ended) return;
      timer = setTimeout(() => controller.abort(idleError), this.timeoutMs);
    };
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent, ...request.headers };
    if (request.authorize !== false && this.token !== '') headers.authorization = `Bearer ${this.token}`;
    const failed: { error?: unknown } = {};
    let body: Buffer | ReadableStream<Uint8Array> | undefined;
    const streamed = (stream: ReadableStream<Uint8Array>, length: number): ReadableStream<Uint8Array> => {
      headers['content-length'] = String(length);
      let sent = 0;
      request.onProgress?.(0, length);
      return counted(
        stream,
        (bytes) => {
          sent += bytes;
          active();
          request.onProgress?.(sent, length);
        },
        failed,
      );
    };
    if (request.body && 'json' in request.body) {
      body = Buffer.from(JSON.stringify(request.body.json), 'utf8');
      headers['content-type'] = 'application/json';
    } else if (request.body && 'form' in request.body) {
      const form = await encodeForm(request.body.form);
      headers['content-type'] = form.contentType;
      body = streamed(form.stream, form.length);
    } else if (request.body) {
      headers['content-type'] = request.body.contentType;
      const { file, path } = request.body;
      // The Blob's size is the Content-Length either way: a file that changed since fails the request.
      body = streamed(path === undefined ? file.stream() : fileChunks(path), file.size);
    }

    active();
    try {
      const response = await fetch(request.url, {
        method: request.method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
        signal: controller.signal,
        // Never followed (a write goes where it was told); and with 'follow' undici keeps a copy of a
        // streamed body for a redirect that may come, i.e. the whole archive in memory (undici #4058).
        redirect: 'error',
      });
      active();
      const text = await this.#readBody(response, active);
      return { kind: 'response', response: { url: request.url, status: response.status, headers: response.headers, body: text } };
    } catch (error) {
      if (failed.error !== undefined) throw new SourceError(request.source ?? 'the file to send', failed.error);
      if (controller.signal.aborted && controller.signal.reason === idleError) {
        return { kind: 'network', url: request.url, code: 'ETIMEDOUT', message: idleError.message, retryable: true };
      }
      const { code, message } = networkFailure(error);
      if (/redirect/i.test(message)) {
        return { kind: 'network', url: request.url, code: 'REDIRECT', message: 'the registry answered with a redirect, which a write never follows: give the URL it redirects to', retryable: false };
      }
      return { kind: 'network', url: request.url, code, message, retryable: RETRYABLE_NETWORK_CODES.has(code) || /socket hang up|other side closed/i.test(message) };
    } finally {
      ended = true;
      clearTimeout(timer);
      // The registry answered: whatever is left of the body (an early refusal) is not sent.
      controller.abort();
    }
  }

  /** The answer's text, the first MAX_RESPONSE_BYTES kept; each chunk counts as activity. */
  async #readBody(response: Response, active: () => void): Promise<string> {
    return (await readBodyHead(response, MAX_RESPONSE_BYTES, { onChunk: active })).toString('utf8');
  }

  /**
   * Runs `attempt` until it gives an answer that is not retryable, or no attempt is left: a network
   * error, a 429 or a 5xx waits (backoff, `Retry-After`) and tries again. A network error on the
   * last attempt, or one not worth a retry, throws.
   */
  async call(attempt: (number: number) => Promise<ApiOutcome>): Promise<ApiCallResult> {
    const attemptsLimit = this.#retries + 1;
    for (let number = 1; ; number++) {
      let outcome: ApiOutcome;
      try {
        outcome = await attempt(number);
      } catch (error) {
        if (error instanceof SourceError) {
          const code = (error.failure as { code?: unknown }).code;
          throw this.error(`cannot send ${error.source}: ${error.message}`, { ...(typeof code === 'string' ? { code } : {}), attempts: number });
        }
        throw error;
      }
      const exhausted = number >= attemptsLimit;
      const gaveUp = `gave up after ${number} attempt${number === 1 ? '' : 's'}: `;
      if (outcome.kind === 'network') {
        const reason = this.redact(`${outcome.code}: ${outcome.message}`);
        if (!outcome.retryable || exhausted) {
          throw this.error(`${outcome.retryable ? gaveUp : ''}cannot reach ${displayUrl(outcome.url)}: ${reason}`, { code: outcome.code, attempts: number });
        }
        await this.#wait({ attempt: number, delayMs: retryDelay(number, this.#limits), reason });
        continue;
      }
      const { response } = outcome;
      if (!isRetryableStatus(response.status)) return { response, attempts: number, gaveUp: false };
      if (exhausted) return { response, attempts: number, gaveUp: true };
      const apiError = parseErrorEnvelope(response.body);
      let retryAfterMs: number | undefined;
      if (response.status === 429 || response.status === 503) {
        retryAfterMs = parseRetryAfter(response.headers.get('retry-after') ?? undefined);
        if (retryAfterMs === undefined && apiError?.retryAfter !== undefined) retryAfterMs = apiError.retryAfter * 1000;
      }
      const firstLine = describeResponse(response, apiError).split('\n')[0] ?? '';
      const reason = this.redact(retryAfterMs === undefined ? firstLine : `${firstLine} (Retry-After ${retryAfterMs} ms)`);
      await this.#wait({ attempt: number, delayMs: retryDelay(number, this.#limits, retryAfterMs), reason });
    }
  }

  async #wait(info: ApiRetryInfo): Promise<void> {
    this.#onRetry?.(info);
    await this.#sleep(info.delayMs);
  }

  /**
   * A JSON request with retries: the `data` of a 2xx answer, or a `RegistryApiError` saying
   * `<METHOD> <route>: <status> <message>` and the envelope's details.
   */
  async json(method: string, route: string, body?: unknown): Promise<unknown> {
    const url = this.url(route);
    const result = await this.call(() => this.exchange({ method, url, ...(body === undefined ? {} : { body: { json: body } }) }));
    const { response } = result;
    const parsed = response.body === '' ? undefined : parseJson(response.body);
    if (response.status >= 200 && response.status < 300) return isRecord(parsed) ? parsed.data : undefined;
    const apiError = parseErrorEnvelope(response.body);
    const said = apiError?.message ?? (response.body.trim().slice(0, 200) || reasonPhrase(response.status) || '');
    const details = (apiError?.details ?? []).map((detail) => `\n  ${detail.field ? `${detail.field}: ` : ''}${detail.message}`).join('');
    const requestId = apiError?.requestId ? `\n  request id: ${apiError.requestId}` : '';
    const gaveUp = result.gaveUp ? `gave up after ${result.attempts} attempts: ` : '';
    throw this.error(`${gaveUp}${method} ${route}: ${response.status} ${said}${details}${requestId}`, {
      status: response.status,
      code: apiError?.code,
      details: apiError?.details ?? [],
      requestId: apiError?.requestId,
      attempts: result.attempts,
    });
  }
}
