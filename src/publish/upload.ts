import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';

import type { ApiErrorDetail, TemplateManifest } from '../core/schema-types.js';
import { registryBaseUrl } from '../core/registry-url.js';
import { parseRetryAfter, retryDelay } from '../core/retry.js';
import { computeIntegrity } from '../archive/integrity.js';
import { confirmPublished, type PublishedCheck } from './confirm.js';
import { isRecord } from '../core/is-record.js';

export interface PublishRetryInfo {
  /** The attempt that just failed (1-based). */
  attempt: number;
  /** How long we wait before the next attempt. */
  delayMs: number;
  /** Why the attempt failed, e.g. `HTTP 503 ...` or `ECONNRESET: socket hang up`. Never holds the token. */
  reason: string;
}

export interface PublishOptions {
  /**
   * The registry's base URL or its registry.json URL (`core/registry-url.ts`); the archive is POSTed
   * to `<base>/templates`.
   */
  registryUrl: string;
  /** API token, sent as `Authorization: Bearer <token>`; never printed. */
  token: string;
  /** Path of the `.tgz` to upload. */
  archive: string;
  /** The manifest to send, as an object or the path of a `template.json`. */
  manifest: TemplateManifest | string;
  /** `sha512-<base64>` of the archive; computed from the file when absent. */
  integrity?: string;
  /**
   * The Sigstore bundle (JSON) of the archive's build provenance (`attestProvenance`), sent as the
   * third part `attestation` (also through `/files`); the registry verifies it before storing the version.
   */
  attestation?: string;
  /** Retries after a network error, a 5xx or a 429 (default 4, so at most 5 attempts). */
  retries?: number;
  /** First backoff delay (default 500 ms); doubles each retry, with jitter. */
  minDelayMs?: number;
  /** Cap on any delay, `Retry-After` included (default 30 s). */
  maxDelayMs?: number;
  /**
   * An attempt fails when its connection stays idle (nothing sent, nothing received) this long
   * (default 120 s). Idle rather than total, so a large archive on a slow link is not cut off.
   */
  timeoutMs?: number;
  userAgent?: string;
  /** Called before each wait between attempts. */
  onRetry?: (info: PublishRetryInfo) => void;
  /**
   * Called as the request body is handed to the connection: bytes sent so far and the body's
   * total (multipart framing included). Starts again at 0 on each attempt.
   */
  onProgress?: (sent: number, total: number) => void;
  /**
   * Archives larger than this many bytes go through the registry's large-upload routes
   * (`POST /files/upload-url`, `PUT` of the raw bytes, `POST /files/{id}/confirm`, then
   * `POST /templates` with `fileId`); smaller ones in one multipart POST. Default 8 MiB
   * (`DEFAULT_LARGE_UPLOAD_THRESHOLD`). A registry without `/files` (older servers) gets the one
   * multipart POST instead.
   */
  largeUploadThreshold?: number;
}

/** Above this archive size `publishTemplate` uses the large-upload routes (`/files`). */
export const DEFAULT_LARGE_UPLOAD_THRESHOLD = 8 * 1024 * 1024;

export interface PublishResult {
  /** False when the registry already had this exact version with these exact bytes. */
  uploaded: boolean;
  status: number;
  attempts: number;
  /** Integrity of the archive we sent. */
  integrity: string;
  /** `data` of the registry's success envelope. */
  entry?: unknown;
  /** The `Location` header, as an absolute URL. */
  location?: string;
  /** `entry.downloadUrl` when the registry gave one. */
  downloadUrl?: string;
  /**
   * Set when the registry stored the version but does not list it yet (`meta.listed: false`, e.g.
   * its disk was full when it rebuilt): its reason. The registry lists it once a rebuild succeeds.
   */
  warning?: string;
}

export interface PublishErrorInit {
  status?: number;
  code?: string;
  details?: ApiErrorDetail[];
  requestId?: string;
  attempts?: number;
}

/** A publish the registry refused, or that could not reach it. The message never holds the token. */
export class PublishError extends Error {
  override readonly name = 'PublishError';
  /** HTTP status; absent for a network error or a bad input. */
  readonly status: number | undefined;
  /** The envelope's `error.code`, or a network error code such as `ECONNREFUSED`. */
  readonly code: string | undefined;
  readonly details: ApiErrorDetail[];
  readonly requestId: string | undefined;
  /** Attempts made (0 when the inputs were rejected before any request). */
  readonly attempts: number;

  constructor(message: string, init: PublishErrorInit = {}) {
    super(message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
    this.attempts = init.attempts ?? 0;
  }
}

export const DEFAULT_PUBLISH_USER_AGENT = `template-registry-publish (node ${process.version})`;

const DEFAULTS = { retries: 4, minDelayMs: 500, maxDelayMs: 30_000, timeoutMs: 120_000 } as const;

/** Error bodies past this size are not kept in memory. */
const MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_SHOWN_BODY = 500;

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
  'ERR_STREAM_PREMATURE_CLOSE',
]);

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Outcome =
  | { kind: 'response'; response: RawResponse }
  | { kind: 'network'; error: NodeJS.ErrnoException; retryable: boolean };

interface Upload {
  url: URL;
  /** The registry's base URL (`/files` routes are below it). */
  base: URL;
  /** Whether this attempt goes through `/files` (set false when the registry has none). */
  large: boolean;
  integrity: string;
  token: string;
  archive: string;
  size: number;
  fileName: string;
  manifestJson: string;
  attestation?: string;
  userAgent: string;
  timeoutMs: number;
  onProgress?: (sent: number, total: number) => void;
}

/** Removes the token (and any bearer credential) from text shown to a user. */
function redactor(token: string): (text: string) => string {
  return (text) => {
    let out = text.replace(/(Bearer\s+)\S+/gi, '$1***');
    if (token !== '') out = out.split(token).join('***');
    return out;
  };
}

/** The URL without user name and password, for messages. */
function displayUrl(url: URL): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

interface ParsedApiError {
  code?: string;
  message?: string;
  details: ApiErrorDetail[];
  requestId?: string;
  retryAfter?: number;
}

/** The registry's error envelope `{ error: { code, message, details, requestId, ... } }`, when the body is one. */
function parseErrorEnvelope(body: string): ParsedApiError | undefined {
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

/** `HTTP 422 VALIDATION_ERROR: manifest is invalid` plus one indented line per detail. */
function describeResponse(response: RawResponse, apiError: ParsedApiError | undefined): string {
  const head = `HTTP ${response.status}`;
  if (!apiError) {
    const body = response.body.trim();
    if (body === '') return `${head} ${http.STATUS_CODES[response.status] ?? ''}`.trimEnd();
    return `${head}: ${body.length > MAX_SHOWN_BODY ? `${body.slice(0, MAX_SHOWN_BODY)}...` : body}`;
  }
  const lines = [`${head}${apiError.code ? ` ${apiError.code}` : ''}: ${apiError.message ?? http.STATUS_CODES[response.status] ?? 'error'}`];
  for (const detail of apiError.details) {
    const where = [detail.field, detail.code].filter((part) => part !== '').join(' ');
    lines.push(`  ${where === '' ? '' : `${where}: `}${detail.message}`);
  }
  if (apiError.requestId) lines.push(`  request id: ${apiError.requestId}`);
  return lines.join('\n');
}

function hintFor(status: number, name: string): string | undefined {
  if (status === 401) {
    return 'hint: the registry did not accept the API token; check that it is set (TEMPLATE_REGISTRY_TOKEN), not expired, and meant for this registry';
  }
  if (status === 403) return `hint: the API token is valid but may not publish "${name}"`;
  return undefined;
}

/** The `attestation` part (the provenance bundle), when there is one. */
function attestationPart(boundary: string, attestation: string | undefined): string {
  if (attestation === undefined) return '';
  return (
    `--${boundary}\r\n` +
    'Content-Disposition: form-data; name="attestation"; filename="attestation.sigstore.json"\r\n' +
    'Content-Type: application/json\r\n\r\n' +
    `${attestation}\r\n`
  );
}

function multipartParts(boundary: string, fileName: string, manifestJson: string, attestation?: string): { head: Buffer; tail: Buffer } {
  const head =
    `--${boundary}\r\n` +
    `Content-Disposition: form-data; name="template"; filename="${fileName}"\r\n` +
    'Content-Type: application/gzip\r\n\r\n';
  const tail =
    `\r\n--${boundary}\r\n` +
    'Content-Disposition: form-data; name="manifest"; filename="template.json"\r\n' +
    'Content-Type: application/json\r\n\r\n' +
    `${manifestJson}\r\n` +
    attestationPart(boundary, attestation) +
    `--${boundary}--\r\n`;
  return { head: Buffer.from(head, 'utf8'), tail: Buffer.from(tail, 'utf8') };
}

/** One HTTP request, its body streamed from `body` with an exact Content-Length, its answer read (up to MAX_RESPONSE_BYTES). */
interface Exchange {
  url: URL;
  method: string;
  headers: Record<string, string>;
  contentLength: number;
  body: () => AsyncGenerator<Buffer>;
  timeoutMs: number;
  /** Set when reading the body from its source failed (not the network): such an attempt is not retried. */
  sourceError?: () => NodeJS.ErrnoException | undefined;
}

function exchange(request: Exchange): Promise<Outcome> {
  const transport = request.url.protocol === 'https:' ? https : http;
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    let responded = false;
    const settle = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };

    const outgoing = transport.request(request.url, {
      method: request.method,
      // A fresh connection per attempt: a retry never lands on a socket the registry already dropped.
      agent: false,
      headers: { ...request.headers, 'Content-Length': String(request.contentLength) },
    });
    outgoing.setTimeout(request.timeoutMs, () => {
      const error: NodeJS.ErrnoException = new Error(`no activity for ${request.timeoutMs} ms`);
      error.code = 'ETIMEDOUT';
      outgoing.destroy(error);
    });
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (responded) return;
      const sourceError = request.sourceError?.();
      if (sourceError) {
        settle({ kind: 'network', error: sourceError, retryable: false });
        return;
      }
      const code = error.code ?? '';
      const retryable = RETRYABLE_NETWORK_CODES.has(code) || /socket hang up|ECONNRESET/i.test(error.message);
      settle({ kind: 'network', error, retryable });
    });
    outgoing.on('response', (response) => {
      responded = true;
      const chunks: Buffer[] = [];
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        if (kept >= MAX_RESPONSE_BYTES) return;
        chunks.push(chunk);
        kept += chunk.length;
      });
      const done = (): void => {
        settle({
          kind: 'response',
          response: { status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') },
        });
        // The registry answered: stop sending whatever is left of the body.
        outgoing.destroy();
      };
      response.on('end', done);
      response.on('close', done);
      response.on('error', done);
    });

    // Byte mode: the stream reads ahead by bytes, not by 16 chunks, so the progress stays close to the socket.
    pipeline(Readable.from(request.body(), { objectMode: false }), outgoing).catch((error: unknown) => {
      // After an answer the upload is cut short on purpose; before one, the request's 'error' reports it.
      if (!responded && !outgoing.destroyed) outgoing.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

/** The archive as a stream of chunks with `head` before and `tail` after, reporting progress; `failed` keeps a read error of the archive. */
function archiveBody(upload: Upload, head: Buffer, tail: Buffer, failed: { error?: NodeJS.ErrnoException }): { contentLength: number; body: () => AsyncGenerator<Buffer> } {
  const contentLength = head.length + upload.size + tail.length;
  let sent = 0;
  // A chunk is counted once the connection asks for the next one, i.e. when the previous was taken.
  const handedOver = (chunk: Buffer): void => {
    sent += chunk.length;
    upload.onProgress?.(sent, contentLength);
  };
  async function* body(): AsyncGenerator<Buffer> {
    upload.onProgress?.(0, contentLength);
    if (head.length > 0) {
      yield head;
      handedOver(head);
    }
    try {
      for await (const chunk of createReadStream(upload.archive)) {
        yield chunk as Buffer;
        handedOver(chunk as Buffer);
      }
    } catch (error) {
      failed.error = error as NodeJS.ErrnoException;
      throw error;
    }
    if (tail.length > 0) {
      yield tail;
      handedOver(tail);
    }
  }
  return { contentLength, body };
}

async function checkUnchanged(upload: Upload): Promise<void> {
  const info = await stat(upload.archive);
  if (info.size !== upload.size) {
    throw new PublishError(`${upload.archive} changed while publishing (size ${upload.size} -> ${info.size} bytes)`);
  }
}

function baseHeaders(upload: Upload): Record<string, string> {
  return { Authorization: `Bearer ${upload.token}`, Accept: 'application/json', 'User-Agent': upload.userAgent };
}

/** One POST: the multipart body is streamed from disk, with an exact Content-Length. */
async function sendOnce(upload: Upload): Promise<Outcome> {
  if (upload.large) return sendLarge(upload);
  await checkUnchanged(upload);
  const boundary = `----template-registry-${randomBytes(16).toString('hex')}`;
  const { head, tail } = multipartParts(boundary, upload.fileName, upload.manifestJson, upload.attestation);
  const failed: { error?: NodeJS.ErrnoException } = {};
  const { contentLength, body } = archiveBody(upload, head, tail, failed);
  return exchange({
    url: upload.url,
    method: 'POST',
    headers: { ...baseHeaders(upload), 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    contentLength,
    body,
    timeoutMs: upload.timeoutMs,
    sourceError: () => failed.error,
  });
}

/** A request with a small body held in memory (JSON, or a multipart of text parts). */
function smallRequest(upload: Upload, url: URL, method: string, contentType: string, text: string): Promise<Outcome> {
  const bytes = Buffer.from(text, 'utf8');
  return exchange({
    url,
    method,
    headers: { ...baseHeaders(upload), 'Content-Type': contentType },
    contentLength: bytes.length,
    // eslint-disable-next-line @typescript-eslint/require-await -- an async generator of one chunk
    body: async function* () {
      yield bytes;
    },
    timeoutMs: upload.timeoutMs,
  });
}

/** `<base>/<route>`. */
function below(base: URL, route: string): URL {
  const url = new URL(base.href);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${route}`;
  return url;
}

/** The registry has no `/files`: this attempt and the next ones send the archive in one multipart POST. */
class NoFilesRoute extends Error {}

/**
 * The large-upload flow: `POST /files/upload-url`, `PUT` the raw bytes (streamed from disk, to an
 * opaque URL that needs no token), `POST /files/{id}/confirm` with size and integrity, then
 * `POST /templates` with the parts `fileId` and `manifest`. The first answer that is not a success
 * is the outcome (the caller retries the whole flow, or reports it).
 */
async function sendLarge(upload: Upload): Promise<Outcome> {
  await checkUnchanged(upload);
  const created = await smallRequest(upload, below(upload.base, 'files/upload-url'), 'POST', 'application/json', JSON.stringify({ filename: upload.fileName, contentType: 'application/gzip' }));
  if (created.kind !== 'response') return created;
  if (created.response.status === 404 || created.response.status === 405) throw new NoFilesRoute('the registry has no POST /files/upload-url');
  if (created.response.status !== 201 && created.response.status !== 200) return created;
  const parsed = parseJson(created.response.body);
  const data = isRecord(parsed) && isRecord(parsed.data) ? parsed.data : undefined;
  if (!data || typeof data.uploadUrl !== 'string' || typeof data.fileId !== 'string') {
    throw new PublishError(`the registry's answer to POST ${displayUrl(below(upload.base, 'files/upload-url'))} has no uploadUrl and fileId`);
  }
  const fileId = data.fileId;
  let uploadUrl: URL;
  try {
    uploadUrl = new URL(data.uploadUrl, upload.base);
  } catch {
    throw new PublishError(`the registry gave an upload URL that is not a URL`);
  }
  if (uploadUrl.protocol !== 'http:' && uploadUrl.protocol !== 'https:') throw new PublishError(`the registry gave an upload URL that is not http(s) (${uploadUrl.protocol})`);

  const failed: { error?: NodeJS.ErrnoException } = {};
  const { contentLength, body } = archiveBody(upload, Buffer.alloc(0), Buffer.alloc(0), failed);
  // No Authorization header: the URL carries its own capability (and may point at another host, e.g. a bucket).
  const stored = await exchange({
    url: uploadUrl,
    method: 'PUT',
    headers: { Accept: 'application/json', 'User-Agent': upload.userAgent, 'Content-Type': 'application/gzip' },
    contentLength,
    body,
    timeoutMs: upload.timeoutMs,
    sourceError: () => failed.error,
  });
  if (stored.kind !== 'response' || stored.response.status < 200 || stored.response.status >= 300) return stored;

  const confirmUrl = below(upload.base, `files/${encodeURIComponent(fileId)}/confirm`);
  const confirmed = await smallRequest(upload, confirmUrl, 'POST', 'application/json', JSON.stringify({ size: upload.size, integrity: upload.integrity }));
  if (confirmed.kind !== 'response' || confirmed.response.status !== 200) return confirmed;

  const boundary = `----template-registry-${randomBytes(16).toString('hex')}`;
  const form =
    `--${boundary}\r\nContent-Disposition: form-data; name="fileId"\r\n\r\n${fileId}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="manifest"; filename="template.json"\r\nContent-Type: application/json\r\n\r\n${upload.manifestJson}\r\n` +
    attestationPart(boundary, upload.attestation) +
    `--${boundary}--\r\n`;
  return smallRequest(upload, upload.url, 'POST', `multipart/form-data; boundary=${boundary}`, form);
}

async function loadManifest(manifest: TemplateManifest | string): Promise<TemplateManifest> {
  if (typeof manifest !== 'string') return manifest;
  let text: string;
  try {
    text = await readFile(manifest, 'utf8');
  } catch (error) {
    throw new PublishError(`cannot read the manifest ${manifest}: ${(error as Error).message}`);
  }
  const parsed = parseJson(text);
  if (!isRecord(parsed)) throw new PublishError(`${manifest} does not hold a JSON object`);
  return parsed as unknown as TemplateManifest;
}

function checkNumber(name: string, value: number, min: number): number {
  if (!Number.isFinite(value) || value < min) throw new PublishError(`${name} must be a number >= ${min} (got ${value})`);
  return value;
}

/** The file name of the archive part: `<name>-<version>.tgz`, without characters that would break the header. */
function partFileName(name: string, version: string): string {
  return `${name}-${version}.tgz`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * Uploads a packed template to the registry (operation 2: `POST <registry>/templates`, multipart
 * parts `template` and `manifest`, bearer token). The archive is streamed from disk on every
 * attempt, never held in memory. Network errors, 5xx and 429 are retried with exponential backoff
 * (honouring `Retry-After`); other 4xx are not. A 409 for the same name@version with the same
 * integrity counts as already published (`uploaded: false`); with another integrity it is an
 * error: an existing version is never overwritten.
 */
export async function publishTemplate(options: PublishOptions): Promise<PublishResult> {
  let url: URL;
  try {
    url = new URL(registryBaseUrl(String(options.registryUrl)));
  } catch {
    throw new PublishError(`registry URL must be an http(s) URL (got ${JSON.stringify(redactor(options.token)(String(options.registryUrl)))})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PublishError(`registry URL must be an http(s) URL (got ${url.protocol} in ${displayUrl(url)})`);
  }
  if (typeof options.token !== 'string' || options.token.trim() === '') {
    throw new PublishError('an API token is required to publish (set TEMPLATE_REGISTRY_TOKEN or pass --token)');
  }
  if (/[\r\n]/.test(options.token)) throw new PublishError('the API token must not contain line breaks');
  const token = options.token.trim();
  const redact = redactor(token);

  let archiveInfo;
  try {
    archiveInfo = await stat(options.archive);
  } catch {
    throw new PublishError(`archive not found: ${options.archive}`);
  }
  if (!archiveInfo.isFile()) throw new PublishError(`archive is not a file: ${options.archive}`);

  const retries = Math.floor(checkNumber('retries', options.retries ?? DEFAULTS.retries, 0));
  const minDelayMs = checkNumber('minDelayMs', options.minDelayMs ?? DEFAULTS.minDelayMs, 0);
  const maxDelayMs = Math.max(minDelayMs, checkNumber('maxDelayMs', options.maxDelayMs ?? DEFAULTS.maxDelayMs, 0));
  const timeoutMs = checkNumber('timeoutMs', options.timeoutMs ?? DEFAULTS.timeoutMs, 1);

  const manifest = await loadManifest(options.manifest);
  const { name, version } = manifest as { name?: unknown; version?: unknown };
  if (typeof name !== 'string' || name === '' || typeof version !== 'string' || version === '') {
    throw new PublishError('the manifest must have a non-empty "name" and "version"');
  }
  const label = `${name}@${version}`;

  const integrity = options.integrity ?? (await computeIntegrity(options.archive)).integrity;
  if (!/^sha512-[A-Za-z0-9+/]+={0,2}$/.test(integrity)) {
    throw new PublishError(`integrity must be "sha512-<base64>" (got ${JSON.stringify(integrity)})`);
  }

  const threshold = checkNumber('largeUploadThreshold', options.largeUploadThreshold ?? DEFAULT_LARGE_UPLOAD_THRESHOLD, 0);
  const base = new URL(url.href);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/templates`;
  const upload: Upload = {
    url,
    base,
    large: archiveInfo.size > threshold,
    integrity,
    token,
    archive: options.archive,
    size: archiveInfo.size,
    fileName: partFileName(name, version),
    manifestJson: JSON.stringify(manifest),
    ...(options.attestation === undefined ? {} : { attestation: options.attestation }),
    userAgent: options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT,
    timeoutMs,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };

  const attemptsLimit = retries + 1;
  let noFilesRoute = false;
  for (let attempt = 1; ; attempt++) {
    const outcome = await sendOnce(upload).catch((error: unknown) => {
      if (error instanceof NoFilesRoute) return { kind: 'no-files' } as const;
      if (error instanceof PublishError) throw error;
      throw new PublishError(redact(`cannot send ${options.archive}: ${(error as Error).message}`), { attempts: attempt });
    });
    if (outcome.kind === 'no-files') {
      // An older registry: no large uploads. The archive goes in one multipart POST, within its limit or refused (413, said below).
      upload.large = false;
      noFilesRoute = true;
      attempt--;
      continue;
    }
    const exhausted = attempt >= attemptsLimit;
    // Only a retryable failure on the last attempt is "giving up"; other failures stop at once.
    const gaveUp = `gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}: `;

    if (outcome.kind === 'network') {
      const code = outcome.error.code ?? 'NETWORK_ERROR';
      const reason = redact(`${code}: ${outcome.error.message}`);
      if (!outcome.retryable || exhausted) {
        const prefix = outcome.retryable ? gaveUp : '';
        throw new PublishError(`${prefix}${redact(`cannot reach ${displayUrl(url)}`)}: ${reason}`, { code, attempts: attempt });
      }
      const delayMs = retryDelay(attempt, { minDelayMs, maxDelayMs });
      options.onRetry?.({ attempt, delayMs, reason });
      await sleep(delayMs);
      continue;
    }

    const { response } = outcome;
    const status = response.status;
    const apiError = parseErrorEnvelope(response.body);
    const errorInit = (): PublishErrorInit => ({
      status,
      code: apiError?.code,
      details: apiError?.details ?? [],
      requestId: apiError?.requestId,
      attempts: attempt,
    });

    if (status === 200 || status === 201) {
      const parsed = parseJson(response.body);
      const entry = isRecord(parsed) && 'data' in parsed ? parsed.data : parsed;
      const entryIntegrity = isRecord(entry) && typeof entry.integrity === 'string' ? entry.integrity : undefined;
      if (entryIntegrity !== undefined && entryIntegrity.startsWith('sha512-') && entryIntegrity !== integrity) {
        throw new PublishError(
          `the registry stored ${label} with integrity ${entryIntegrity}, but the archive sent has ${integrity}; the upload was corrupted, check the published version`,
          { status, code: 'INTEGRITY_MISMATCH', attempts: attempt },
        );
      }
      const locationHeader = headerValue(response.headers.location);
      const result: PublishResult = { uploaded: true, status, attempts: attempt, integrity };
      if (entry !== undefined) result.entry = entry;
      if (locationHeader) {
        try {
          result.location = new URL(locationHeader, url).href;
        } catch {
          result.location = locationHeader;
        }
      }
      if (isRecord(entry) && typeof entry.downloadUrl === 'string') result.downloadUrl = entry.downloadUrl;
      const meta = isRecord(parsed) && isRecord(parsed.meta) ? parsed.meta : undefined;
      if (meta?.listed === false) result.warning = typeof meta.warning === 'string' ? meta.warning : `${label} is stored, but the registry does not list it yet`;
      return result;
    }

    if (status === 409) {
      const stored = apiError?.details.find((detail) => detail.field === 'integrity')?.message;
      // This registry's own details are a shortcut: a complete version's integrity (and whether it is yanked).
      const complete = apiError?.details.some((detail) => detail.field === 'state' && detail.message === 'complete') ?? false;
      const yankedDetail = apiError?.details.some((detail) => detail.field === 'yanked') ?? false;
      const check: PublishedCheck =
        stored !== undefined && complete
          ? stored !== integrity
            ? { kind: 'different', reason: `the registry holds ${label} with integrity ${stored}, this archive has ${integrity}` }
            : yankedDetail
              ? { kind: 'yanked', source: 'its answer' }
              : { kind: 'same', source: 'its answer' }
          : // Any other registry that follows the specification: asked through its read side.
            await confirmPublished({ base: upload.base.href.replace(/\/+$/, ''), registryUrl: String(options.registryUrl), name, version, integrity, size: upload.size, token, timeoutMs, userAgent: upload.userAgent });
      if (check.kind === 'same') return { uploaded: false, status, attempts: attempt, integrity };
      if (check.kind === 'yanked') {
        throw new PublishError(redact(`${label} was yanked: a yanked version is never published again, publish a new version instead\n${describeResponse(response, apiError)}`), errorInit());
      }
      throw new PublishError(
        redact(`${label} is already published with different content (${check.reason}); a published version is never overwritten, publish a new version instead\n${describeResponse(response, apiError)}`),
        errorInit(),
      );
    }

    const retryable = status === 429 || status >= 500;
    let message = describeResponse(response, apiError);
    const hint =
      status === 413 && noFilesRoute
        ? `hint: the archive (${upload.size} bytes) is above largeUploadThreshold, but the registry is too old for large uploads (it has no POST /files/upload-url) and refused the archive in one request; upgrade the registry server`
        : hintFor(status, name);
    if (hint) message += `\n  ${hint}`;
    if (!retryable || exhausted) throw new PublishError(redact(`${retryable ? gaveUp : ''}${message}`), errorInit());

    let retryAfterMs: number | undefined;
    if (status === 429 || status === 503) {
      retryAfterMs = parseRetryAfter(headerValue(response.headers['retry-after']));
      if (retryAfterMs === undefined && apiError?.retryAfter !== undefined) retryAfterMs = apiError.retryAfter * 1000;
    }
    const delayMs = retryDelay(attempt, { minDelayMs, maxDelayMs }, retryAfterMs);
    const firstLine = message.split('\n')[0] ?? message;
    const reason = redact(retryAfterMs === undefined ? firstLine : `${firstLine} (Retry-After ${retryAfterMs} ms)`);
    options.onRetry?.({ attempt, delayMs, reason });
    await sleep(delayMs);
  }
}

/** How long the exchange and the revocation of a trusted-publishing token may take (one request each). */
const TOKEN_REQUEST_TIMEOUT_MS = 30_000;

/** The audience a registry's trusted publishing takes ID tokens for: `template-registry:<host of its URL>`. */
export function registryAudienceOf(registryUrl: string): string {
  return `template-registry:${new URL(registryBaseUrl(registryUrl)).host}`;
}

export interface IdTokenExchangeOptions {
  /** The registry's base URL (or its registry.json URL). */
  registryUrl: string;
  /** The CI run's OIDC ID token (for `registryAudienceOf(registryUrl)`); never printed. */
  idToken: string;
  userAgent?: string;
}

/** A token minted for trusted publishing: limited to `templates`, until `expiresAt`. */
export interface ExchangedToken {
  token: string;
  expiresAt: string;
  templates: string[];
}

/** The registry's `/api/oidc/token`, its URL checked. */
function oidcTokenUrl(registryUrl: string): URL {
  let base: URL;
  try {
    base = new URL(registryBaseUrl(String(registryUrl)));
  } catch {
    throw new PublishError(`registry URL must be an http(s) URL (got ${JSON.stringify(String(registryUrl))})`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new PublishError(`registry URL must be an http(s) URL (got ${base.protocol} in ${displayUrl(base)})`);
  return below(base, 'api/oidc/token');
}

/** One request with a small JSON body (or none), answered in memory. */
function tokenRequest(url: URL, method: string, headers: Record<string, string>, body: string, userAgent: string): Promise<Outcome> {
  const bytes = Buffer.from(body, 'utf8');
  return exchange({
    url,
    method,
    headers: { Accept: 'application/json', 'User-Agent': userAgent, ...(bytes.length > 0 ? { 'Content-Type': 'application/json' } : {}), ...headers },
    contentLength: bytes.length,
    // eslint-disable-next-line @typescript-eslint/require-await -- an async generator of at most one chunk
    body: async function* () {
      if (bytes.length > 0) yield bytes;
    },
    timeoutMs: TOKEN_REQUEST_TIMEOUT_MS,
  });
}

/**
 * Trusted publishing: exchanges a CI run's OIDC ID token for a registry token (`POST /api/oidc/token`),
 * once (an ID token is taken once: it is never retried). A refusal is a PublishError whose details
 * name the claim that did not match. Neither token ever appears in a message.
 */
export async function exchangeIdToken(options: IdTokenExchangeOptions): Promise<ExchangedToken> {
  const url = oidcTokenUrl(options.registryUrl);
  const redact = redactor(options.idToken);
  const outcome = await tokenRequest(url, 'POST', {}, JSON.stringify({ token: options.idToken }), options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT);
  if (outcome.kind === 'network') {
    const code = outcome.error.code ?? 'NETWORK_ERROR';
    throw new PublishError(redact(`cannot reach ${displayUrl(url)}: ${code}: ${outcome.error.message}`), { code, attempts: 1 });
  }
  const { response } = outcome;
  const apiError = parseErrorEnvelope(response.body);
  if (response.status !== 201 && response.status !== 200) {
    throw new PublishError(redact(`the registry refused the OIDC ID token: ${describeResponse(response, apiError)}`), {
      status: response.status,
      code: apiError?.code,
      details: apiError?.details ?? [],
      requestId: apiError?.requestId,
      attempts: 1,
    });
  }
  const parsed = parseJson(response.body);
  const data = isRecord(parsed) && isRecord(parsed.data) ? parsed.data : undefined;
  if (!data || typeof data.token !== 'string' || data.token === '') throw new PublishError(`the registry's answer to POST ${displayUrl(url)} has no token`);
  return {
    token: data.token,
    expiresAt: typeof data.expiresAt === 'string' ? data.expiresAt : '',
    templates: Array.isArray(data.templates) ? data.templates.filter((name): name is string => typeof name === 'string') : [],
  };
}

/**
 * Revokes a token minted for trusted publishing (`DELETE /api/oidc/token`): true when the registry
 * revoked it; false when it was refused already (expired or revoked). Other failures throw.
 */
export async function revokeExchangedToken(options: { registryUrl: string; token: string; userAgent?: string }): Promise<boolean> {
  const url = oidcTokenUrl(options.registryUrl);
  const redact = redactor(options.token);
  const outcome = await tokenRequest(url, 'DELETE', { Authorization: `Bearer ${options.token}` }, '', options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT);
  if (outcome.kind === 'network') {
    throw new PublishError(redact(`cannot reach ${displayUrl(url)}: ${outcome.error.code ?? 'NETWORK_ERROR'}: ${outcome.error.message}`), { code: outcome.error.code, attempts: 1 });
  }
  const { response } = outcome;
  if (response.status === 204 || response.status === 200) return true;
  if (response.status === 401) return false;
  const apiError = parseErrorEnvelope(response.body);
  throw new PublishError(redact(`the registry did not revoke the token: ${describeResponse(response, apiError)}`), { status: response.status, code: apiError?.code, attempts: 1 });
}
