import { openAsBlob } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';

import type { TemplateManifest } from '../core/schema-types.js';
import { REGISTRY_TOKEN_ENV } from '../core/env-names.js';
import { registryBaseUrl } from '../core/registry-url.js';
import { isRecord } from '../core/is-record.js';
import { computeIntegrity } from '../archive/integrity.js';
import {
  parseErrorEnvelope,
  parseJson,
  RegistryApiClient,
  RegistryApiError,
  type ApiCallResult,
  type ApiOutcome,
  type FormPart,
  type RegistryApiErrorInit,
} from './api-client.js';
import { confirmPublished, type PublishedCheck } from './confirm.js';

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

export type PublishErrorInit = RegistryApiErrorInit;

/** A publish the registry refused, or that could not reach it. The message never holds the token. */
export class PublishError extends RegistryApiError {
  override readonly name = 'PublishError';
}

export const DEFAULT_PUBLISH_USER_AGENT = `template-registry-publish (node ${process.version})`;

function hintFor(status: number, name: string): string | undefined {
  if (status === 401) {
    return `hint: the registry did not accept the API token; check that it is set (${REGISTRY_TOKEN_ENV}), not expired, and meant for this registry`;
  }
  if (status === 403) return `hint: the API token is valid but may not publish "${name}"`;
  return undefined;
}

/** What every attempt of one publish sends. */
interface Upload {
  client: RegistryApiClient;
  /** `<base>/templates`. */
  url: URL;
  /** Whether the attempts go through `/files` (set false when the registry has none). */
  large: boolean;
  integrity: string;
  archive: string;
  /** The archive, read from disk each time a request body is sent (never held in memory). */
  blob: Blob;
  size: number;
  fileName: string;
  /** The `manifest` part, and the `attestation` part when there is one. */
  metaParts: FormPart[];
  onProgress?: (sent: number, total: number) => void;
}

async function checkUnchanged(upload: Upload): Promise<void> {
  const info = await stat(upload.archive);
  if (info.size !== upload.size) {
    throw new PublishError(`${upload.archive} changed while publishing (size ${upload.size} -> ${info.size} bytes)`);
  }
}

/** One multipart POST of the archive and the manifest, encoded by `FormData`, the archive streamed from disk. */
function postArchive(upload: Upload): Promise<ApiOutcome> {
  return upload.client.exchange({
    method: 'POST',
    url: upload.url,
    body: { form: [{ name: 'template', file: upload.blob, fileName: upload.fileName }, ...upload.metaParts] },
    source: upload.archive,
    ...(upload.onProgress ? { onProgress: upload.onProgress } : {}),
  });
}

/**
 * The large-upload flow: `POST /files/upload-url`, `PUT` the raw bytes (streamed from disk, to an
 * opaque URL that needs no token), `POST /files/{id}/confirm` with size and integrity, then
 * `POST /templates` with the parts `fileId` and `manifest`. The first answer that is not a success
 * is the outcome (the caller retries the whole flow, or reports it). `no-files`: the registry has
 * no `/files` (an older server).
 */
async function sendLarge(upload: Upload): Promise<ApiOutcome | 'no-files'> {
  const { client } = upload;
  const createUrl = client.url('/files/upload-url');
  const created = await client.exchange({ method: 'POST', url: createUrl, body: { json: { filename: upload.fileName, contentType: 'application/gzip' } } });
  if (created.kind !== 'response') return created;
  if (created.response.status === 404 || created.response.status === 405) return 'no-files';
  if (created.response.status !== 201 && created.response.status !== 200) return created;
  const parsed = parseJson(created.response.body);
  const data = isRecord(parsed) && isRecord(parsed.data) ? parsed.data : undefined;
  if (!data || typeof data.uploadUrl !== 'string' || typeof data.fileId !== 'string') {
    throw new PublishError(`the registry's answer to POST ${createUrl.href} has no uploadUrl and fileId`);
  }
  const fileId = data.fileId;
  let uploadUrl: URL;
  try {
    uploadUrl = new URL(data.uploadUrl, client.base.href.replace(/\/*$/, '/'));
  } catch {
    throw new PublishError(`the registry gave an upload URL that is not a URL`);
  }
  if (uploadUrl.protocol !== 'http:' && uploadUrl.protocol !== 'https:') throw new PublishError(`the registry gave an upload URL that is not http(s) (${uploadUrl.protocol})`);
  // A registry that says how many bytes it takes (ours: `maxBytes`) refuses more before reading
  // them, and closes the connection: the client, still sending, would see a broken pipe, not why.
  if (typeof data.maxBytes === 'number' && upload.size > data.maxBytes) {
    const message = `${upload.archive} is ${upload.size} bytes; the registry accepts at most ${data.maxBytes} (its archive size limit, or what is left of this token's staged-bytes quota)`;
    throw new PublishError(message, { status: 413, code: 'PAYLOAD_TOO_LARGE', details: [{ field: 'archive', code: 'TOO_LARGE', message }] });
  }

  // No Authorization header: the URL carries its own capability (and may point at another host, e.g. a bucket).
  const stored = await client.exchange({
    method: 'PUT',
    url: uploadUrl,
    authorize: false,
    body: { file: upload.blob, contentType: 'application/gzip', path: upload.archive },
    source: upload.archive,
    ...(upload.onProgress ? { onProgress: upload.onProgress } : {}),
  });
  if (stored.kind !== 'response' || stored.response.status < 200 || stored.response.status >= 300) return stored;

  const confirmed = await client.exchange({
    method: 'POST',
    url: client.url(`/files/${encodeURIComponent(fileId)}/confirm`),
    body: { json: { size: upload.size, integrity: upload.integrity } },
  });
  if (confirmed.kind !== 'response' || confirmed.response.status !== 200) return confirmed;

  return client.exchange({ method: 'POST', url: upload.url, body: { form: [{ name: 'fileId', value: fileId }, ...upload.metaParts] } });
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

/** The file name of the archive part: `<name>-<version>.tgz`, without characters that would break the header. */
function partFileName(name: string, version: string): string {
  return `${name}-${version}.tgz`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** A text part sent as a small JSON file (`manifest`, `attestation`). */
function jsonPart(name: string, fileName: string, text: string): FormPart {
  return { name, file: new Blob([text], { type: 'application/json' }), fileName };
}

/**
 * Uploads a packed template to the registry (operation 2: `POST <registry>/templates`, multipart
 * parts `template` and `manifest`, bearer token), through the write API client
 * (`publish/api-client.ts`: its retries, errors and redaction). The archive is streamed from disk
 * on every attempt, never held in memory. Network errors, 5xx and 429 are retried with exponential
 * backoff (honouring `Retry-After`); other 4xx are not. A 409 for the same name@version with the
 * same integrity counts as already published (`uploaded: false`); with another integrity it is an
 * error: an existing version is never overwritten.
 */
export async function publishTemplate(options: PublishOptions): Promise<PublishResult> {
  const client = new RegistryApiClient({
    registryUrl: String(options.registryUrl),
    token: typeof options.token === 'string' ? options.token : '',
    userAgent: options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT,
    ...(options.retries === undefined ? {} : { retries: options.retries }),
    ...(options.minDelayMs === undefined ? {} : { minDelayMs: options.minDelayMs }),
    ...(options.maxDelayMs === undefined ? {} : { maxDelayMs: options.maxDelayMs }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    errorType: PublishError,
  });
  if (client.token === '') throw new PublishError(`an API token is required to publish (set ${REGISTRY_TOKEN_ENV} or pass --token)`);

  let archiveInfo;
  try {
    archiveInfo = await stat(options.archive);
  } catch {
    throw new PublishError(`archive not found: ${options.archive}`);
  }
  if (!archiveInfo.isFile()) throw new PublishError(`archive is not a file: ${options.archive}`);

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

  const threshold = options.largeUploadThreshold ?? DEFAULT_LARGE_UPLOAD_THRESHOLD;
  if (!Number.isFinite(threshold) || threshold < 0) throw new PublishError(`largeUploadThreshold must be a number >= 0 (got ${threshold})`);
  const upload: Upload = {
    client,
    url: client.url('/templates'),
    large: archiveInfo.size > threshold,
    integrity,
    archive: options.archive,
    blob: await openAsBlob(options.archive, { type: 'application/gzip' }),
    size: archiveInfo.size,
    fileName: partFileName(name, version),
    metaParts: [
      jsonPart('manifest', 'template.json', JSON.stringify(manifest)),
      ...(options.attestation === undefined ? [] : [jsonPart('attestation', 'attestation.sigstore.json', options.attestation)]),
    ],
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };

  let noFilesRoute = false;
  const result = await client.call(async () => {
    await checkUnchanged(upload);
    if (upload.large) {
      const outcome = await sendLarge(upload);
      if (outcome !== 'no-files') return outcome;
      // An older registry: no large uploads. The archive goes in one multipart POST, within its limit or refused (413, said below).
      upload.large = false;
      noFilesRoute = true;
    }
    return postArchive(upload);
  });
  return publishOutcome(upload, result, { label, name, version, noFilesRoute, registryUrl: String(options.registryUrl) });
}

/** What an upload's last answer means: published, already there, or refused. */
async function publishOutcome(
  upload: Upload,
  result: ApiCallResult,
  context: { label: string; name: string; version: string; noFilesRoute: boolean; registryUrl: string },
): Promise<PublishResult> {
  const { client, integrity } = upload;
  const { label } = context;
  const { response, attempts } = result;
  const status = response.status;

  if (status === 200 || status === 201) {
    const parsed = parseJson(response.body);
    const entry = isRecord(parsed) && 'data' in parsed ? parsed.data : parsed;
    const entryIntegrity = isRecord(entry) && typeof entry.integrity === 'string' ? entry.integrity : undefined;
    if (entryIntegrity !== undefined && entryIntegrity.startsWith('sha512-') && entryIntegrity !== integrity) {
      throw new PublishError(
        `the registry stored ${label} with integrity ${entryIntegrity}, but the archive sent has ${integrity}; the upload was corrupted, check the published version`,
        { status, code: 'INTEGRITY_MISMATCH', attempts },
      );
    }
    const locationHeader = response.headers.get('location');
    const published: PublishResult = { uploaded: true, status, attempts, integrity };
    if (entry !== undefined) published.entry = entry;
    if (locationHeader) {
      try {
        published.location = new URL(locationHeader, upload.url).href;
      } catch {
        published.location = locationHeader;
      }
    }
    if (isRecord(entry) && typeof entry.downloadUrl === 'string') published.downloadUrl = entry.downloadUrl;
    const meta = isRecord(parsed) && isRecord(parsed.meta) ? parsed.meta : undefined;
    if (meta?.listed === false) published.warning = typeof meta.warning === 'string' ? meta.warning : `${label} is stored, but the registry does not list it yet`;
    return published;
  }

  if (status === 409) {
    const apiError = parseErrorEnvelope(response.body);
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
          await confirmPublished({
            base: client.base.href.replace(/\/+$/, ''),
            registryUrl: context.registryUrl,
            name: context.name,
            version: context.version,
            integrity,
            size: upload.size,
            token: client.token,
            timeoutMs: client.timeoutMs,
            userAgent: client.userAgent,
          });
    if (check.kind === 'same') return { uploaded: false, status, attempts, integrity };
    if (check.kind === 'yanked') {
      throw client.refusal(result, { prefix: `${label} was yanked: a yanked version is never published again, publish a new version instead\n` });
    }
    throw client.refusal(result, {
      prefix: `${label} is already published with different content (${check.reason}); a published version is never overwritten, publish a new version instead\n`,
    });
  }

  const hint =
    status === 413 && context.noFilesRoute
      ? `hint: the archive (${upload.size} bytes) is above largeUploadThreshold, but the registry is too old for large uploads (it has no POST /files/upload-url) and refused the archive in one request; upgrade the registry server`
      : hintFor(status, context.name);
  throw client.refusal(result, hint === undefined ? {} : { hint });
}

/** How long the exchange and the revocation of a trusted-publishing token may stay idle (one request each). */
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

/**
 * Trusted publishing: exchanges a CI run's OIDC ID token for a registry token (`POST /api/oidc/token`),
 * once (an ID token is taken once: it is never retried). A refusal is a PublishError whose details
 * name the claim that did not match. Neither token ever appears in a message.
 */
export async function exchangeIdToken(options: IdTokenExchangeOptions): Promise<ExchangedToken> {
  const client = new RegistryApiClient({
    registryUrl: options.registryUrl,
    secrets: [options.idToken],
    userAgent: options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT,
    retries: 0,
    timeoutMs: TOKEN_REQUEST_TIMEOUT_MS,
    errorType: PublishError,
  });
  const url = client.url('/api/oidc/token');
  const result = await client.call(() => client.exchange({ method: 'POST', url, body: { json: { token: options.idToken } } }));
  const { response } = result;
  if (response.status !== 201 && response.status !== 200) throw client.refusal(result, { prefix: 'the registry refused the OIDC ID token: ' });
  const parsed = parseJson(response.body);
  const data = isRecord(parsed) && isRecord(parsed.data) ? parsed.data : undefined;
  if (!data || typeof data.token !== 'string' || data.token === '') throw new PublishError(`the registry's answer to POST ${url.href} has no token`);
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
  const client = new RegistryApiClient({
    registryUrl: options.registryUrl,
    token: options.token,
    userAgent: options.userAgent ?? DEFAULT_PUBLISH_USER_AGENT,
    retries: 0,
    timeoutMs: TOKEN_REQUEST_TIMEOUT_MS,
    errorType: PublishError,
  });
  const result = await client.call(() => client.exchange({ method: 'DELETE', url: client.url('/api/oidc/token') }));
  if (result.response.status === 204 || result.response.status === 200) return true;
  if (result.response.status === 401) return false;
  throw client.refusal(result, { prefix: 'the registry did not revoke the token: ' });
}
