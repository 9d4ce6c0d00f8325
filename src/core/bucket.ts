/**
 * The one bucket module: how an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, ...) is named
 * (`s3://bucket/prefix`), reached (endpoint, path style, region, checksums) and asked (the SDK
 * client with its time-outs and retry policy), and how its failures are told, for every user of a
 * bucket: the static registry output (`registry/s3-output.ts`) and the server's blob store
 * (`store/blob/s3.ts`), which share one client when both live in the same bucket.
 *
 * The AWS SDK is loaded only when a client is made or a command is sent: importing this module
 * costs nothing to those who never use a bucket.
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { parseHttpUrl } from './http-url.js';

/** An `s3://` URL or an S3 endpoint breaks its rule; the message names the argument. */
export class S3UrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'S3UrlError';
  }
}

/** Where a registry goes in a bucket. */
export interface S3Location {
  bucket: string;
  /** `''` (the bucket's root) or `/`-separated segments ending in `/` (`some/prefix/`). */
  prefix: string;
}

/** Bucket names as AWS S3 (and R2, MinIO) accept them for new buckets. */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** Key segments of S3's "safe characters": no escaping needed anywhere, in a URL or a shell. */
const SEGMENT_PATTERN = /^[A-Za-z0-9!_.*'()-]+$/;
/** Room left for the registry's own names under the 1,024-byte key limit. */
const MAX_PREFIX_LENGTH = 512;

export const isS3Url = (value: string): boolean => /^s3:\/\//i.test(value);

/**
 * Parses `s3://bucket/some/prefix` (a trailing `/` is fine). Throws S3UrlError naming `argument`
 * (`--out`, `input out-dir`) and the rule broken: no bucket, a bucket name S3 refuses, a query
 * string or fragment, credentials or a port in the URL, empty or unsafe key segments.
 */
export function parseS3Url(value: string, argument = 'the S3 URL'): S3Location {
  const fail = (rule: string, shown: string | null = value): never => {
    throw new S3UrlError(`${argument}: ${rule}${shown === null ? '' : ` (got ${JSON.stringify(shown)})`}`);
  };
  if (!isS3Url(value)) fail('must be an s3://bucket/prefix URL');
  const rest = value.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  // Credentials are never echoed: the value is not shown when it holds some.
  if (authority.includes('@')) fail('must not hold credentials (give them the AWS SDK way: environment, profile or role)', null);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(value)) fail('must not contain spaces or control characters');
  if (/[?#]/.test(value)) fail('must not have a query string or a fragment: s3://bucket/prefix');
  if (authority === '') fail('must name a bucket: s3://bucket/prefix');
  if (authority.includes(':')) fail('must not have a port: the endpoint is given apart (--s3-endpoint, s3-endpoint or AWS_ENDPOINT_URL)');
  if (!BUCKET_PATTERN.test(authority) || /^\d+\.\d+\.\d+\.\d+$/.test(authority) || authority.includes('..')) {
    fail(`bucket "${authority}" must be 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit`);
  }
  const path = slash === -1 ? '' : rest.slice(slash + 1).replace(/\/$/, '');
  const segments = path === '' ? [] : path.split('/');
  for (const segment of segments) {
    if (segment === '') fail('must not have empty path segments ("//")');
    if (segment === '.' || segment === '..') fail('must not have "." or ".." path segments');
    if (!SEGMENT_PATTERN.test(segment)) fail(`prefix segment "${segment}" may only hold letters, digits and ! _ . * ' ( ) -`);
  }
  if (path.length > MAX_PREFIX_LENGTH) fail(`prefix must be at most ${MAX_PREFIX_LENGTH} characters`);
  return { bucket: authority, prefix: path === '' ? '' : `${path}/` };
}

/** `s3://bucket/prefix` of a location (no trailing slash), for messages and results. */
export function s3UrlOf(location: S3Location): string {
  return `s3://${location.bucket}/${location.prefix.replace(/\/$/, '')}`.replace(/\/$/, '');
}

/** How to reach the store; credentials always come the AWS SDK way (environment, profile, role). */
export interface S3ClientSettings {
  /** The store's endpoint (`https://<account>.r2.cloudflarestorage.com`, `http://127.0.0.1:9000`); default `AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, then AWS S3. */
  endpoint?: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (MinIO, most self-hosted stores). */
  forcePathStyle?: boolean;
  /** Default `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `us-east-1` with a custom endpoint (else the SDK's profile). */
  region?: string;
}

function checkEndpoint(value: string, name: string): string {
  const url = parseHttpUrl(value);
  if (!url) throw new S3UrlError(`${name} must be an http(s) URL (got ${JSON.stringify(value)})`);
  if (url.username !== '' || url.password !== '') throw new S3UrlError(`${name} must not hold credentials (give them the AWS SDK way: environment, profile or role)`);
  return value;
}

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/**
 * The S3Client configuration for `settings` in the environment `env` (a pure function of both).
 * Checksums: the SDK's default adds `x-amz-checksum-*` headers to every upload, which several
 * S3-compatible stores refuse; uploads carry `Content-MD5` instead, which every store checks, so the
 * SDK adds its own only where an operation requires one, unless AWS_REQUEST_CHECKSUM_CALCULATION /
 * AWS_RESPONSE_CHECKSUM_VALIDATION say otherwise.
 */
export function s3ClientConfig(settings: S3ClientSettings = {}, env: Readonly<Record<string, string | undefined>> = process.env): S3ClientConfig {
  const given = nonEmpty(settings.endpoint);
  const fromEnv = nonEmpty(env.AWS_ENDPOINT_URL_S3) !== undefined ? 'AWS_ENDPOINT_URL_S3' : nonEmpty(env.AWS_ENDPOINT_URL) !== undefined ? 'AWS_ENDPOINT_URL' : undefined;
  const endpoint = given !== undefined ? checkEndpoint(given, 'the S3 endpoint') : fromEnv !== undefined ? checkEndpoint(nonEmpty(env[fromEnv]) as string, fromEnv) : undefined;
  const region = nonEmpty(settings.region) ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION) ?? (endpoint !== undefined ? 'us-east-1' : undefined);
  return {
    ...(endpoint !== undefined ? { endpoint } : { followRegionRedirects: true }),
    ...(region !== undefined ? { region } : {}),
    forcePathStyle: settings.forcePathStyle ?? false,
    ...(nonEmpty(env.AWS_REQUEST_CHECKSUM_CALCULATION) === undefined ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const } : {}),
    ...(nonEmpty(env.AWS_RESPONSE_CHECKSUM_VALIDATION) === undefined ? { responseChecksumValidation: 'WHEN_REQUIRED' as const } : {}),
  };
}

type Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<Sdk> | undefined;
/** The AWS SDK, loaded on first use (shared with the store's S3BlobStore). */
export const loadSdk = (): Promise<Sdk> => (sdk ??= import('@aws-sdk/client-s3'));

/** How long a connection, an answer's headers or a silence while bytes flow may take, in ms, unless told otherwise. */
export const DEFAULT_BUCKET_TIMEOUT_MS = 30_000;
/** Attempts per request (the first included), unless told otherwise. */
export const DEFAULT_BUCKET_ATTEMPTS = 3;

/** The one retry and time-out policy of every bucket client: the static output's and the blob store's. */
export interface BucketPolicy {
  /** The most a connection, an answer's headers or a silence in a transfer may take, in ms (default 30,000). */
  timeoutMs?: number;
  /** Attempts per request, the first included (default 3); the SDK retries throttling, server errors and dropped connections. */
  maxAttempts?: number;
  /** Default the AWS SDK's chain (environment, profile, role). */
  credentials?: S3ClientConfig['credentials'];
}

/** The SDK logs nothing of ours: no request, header or credential reaches a log through it. */
const SILENT = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * An S3Client for `settings` (see `s3ClientConfig`) with the bucket policy: every request bounded
 * (connection, headers, silences), the SDK's standard retries capped at `maxAttempts`, a silent
 * logger, the SDK's credential chain unless `credentials` are given.
 */
export async function createS3Client(settings: S3ClientSettings = {}, env: Readonly<Record<string, string | undefined>> = process.env, policy: BucketPolicy = {}): Promise<S3Client> {
  const config = s3ClientConfig(settings, env);
  const timeout = policy.timeoutMs ?? DEFAULT_BUCKET_TIMEOUT_MS;
  const { S3Client } = await loadSdk();
  return new S3Client({
    ...config,
    ...(policy.credentials !== undefined ? { credentials: policy.credentials } : {}),
    maxAttempts: Math.max(1, policy.maxAttempts ?? DEFAULT_BUCKET_ATTEMPTS),
    logger: SILENT,
    requestHandler: { connectionTimeout: timeout, requestTimeout: timeout, throwOnRequestTimeout: true, socketTimeout: timeout },
  });
}

/**
 * Whether another attempt of a request may succeed: a timeout, a dropped connection, throttling or a
 * server error. The SDK retries those itself, except a request whose body is a stream: its caller
 * opens the stream again and asks this.
 */
export function isTransient(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $retryable?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500 || status === 429;
  return e?.$retryable !== undefined || e?.name === 'TimeoutError' || /^(ECONNRESET|EPIPE|ETIMEDOUT|ECONNREFUSED|EAI_AGAIN)$/.test(e?.code ?? '');
}

/**
 * The SDK's error without its `$response`, which holds the signed request (access key id and
 * signature in its Authorization header): an error caused by it may be logged whole.
 */
export function plainCause(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { name, message, stack } = error;
  const { Code, code, $fault, $metadata, $retryable } = error as Error & Record<string, unknown>;
  return Object.assign(new Error(message), { name, stack, Code, code, $fault, $metadata, $retryable });
}

/** The MD5 an ETag stands for: only a plain 32-hex ETag (a multipart upload's `"<hex>-<parts>"` is not one). */
export function md5OfEtag(etag: string | undefined): string | undefined {
  const match = /^"?([0-9a-fA-F]{32})"?$/.exec(etag ?? '');
  return match?.[1]?.toLowerCase();
}

/** A 404 of an object (a missing bucket is not one). */
export function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | null;
  if (e?.name === 'NoSuchBucket' || e?.Code === 'NoSuchBucket') return false; // a missing bucket is an error, not an empty one
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.Code === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/** The store's own words for a failure: its error code and message (never the request's headers). */
export function describeFailure(error: unknown): string {
  const e = error as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const message = typeof e?.message === 'string' && e.message !== '' && e.message !== name ? `: ${e.message}` : '';
  return `${name}${message}${status !== undefined ? ` (HTTP ${status})` : ''}`;
}
