/**
 * A static registry in an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, ...), under a prefix,
 * served by the bucket's website endpoint or a CDN in front of it.
 *
 * Every object carries the HTTP metadata the generator chose (`Content-Type`, `Cache-Control`,
 * `Content-Encoding` of the `.gz`/`.br` variants), so the store serves it as a static host should.
 * What the bucket holds is listed once per build (ListObjectsV2): the ETag of an object written in
 * one part is the MD5 of its bytes, so an unchanged file is recognised without reading it back.
 * An archive larger than `S3_PART_BYTES` is streamed as a multipart upload (one part in memory at a
 * time), completed only once it was read whole and checked.
 *
 * A PUT replaces an object atomically (a reader sees the old or the new bytes) and is durable once
 * answered, so `barrier()` and `commit()` have nothing to do; the generator still writes the entry
 * points (index.json, then registry.json) last, after everything they name was answered.
 *
 * The AWS SDK is loaded only when a client is made or an object is sent: importing this module (the
 * registry's public face re-exports it) costs nothing to those who never use a bucket.
 */
import type { Readable } from 'node:stream';

import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';

import { bytesOf, CACHE_CONTROL, contentTypeOf, fileDigest, md5Of, type HeldFile, type OutputArchive, type OutputFile, type RegistryOutput } from './output.js';

/** An `s3://` URL or an S3 endpoint breaks its rule; the message names the argument. */
export class S3UrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'S3UrlError';
  }
}

/** A request to the bucket failed (after the SDK's retries); the message names the object and the store's error. */
export class S3OutputError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'S3OutputError';
  }
}

/** Where a registry goes in a bucket. */
export interface S3Location {
  bucket: string;
  /** `''` (the bucket's root) or `/`-separated segments ending in `/` (`some/prefix/`). */
  prefix: string;
}

/** What a build writes into: a folder, or a bucket. */
export type OutputTarget = { kind: 'folder'; dir: string } | ({ kind: 's3' } & S3Location);

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

/**
 * A build's `--out` (or the action's `out-dir`): an `s3://` URL, or else a folder. Another URL
 * scheme (`gs://`, `https://`) is refused rather than taken for a folder of that name.
 */
export function parseOutputTarget(value: string, argument: string): OutputTarget {
  if (isS3Url(value)) return { kind: 's3', ...parseS3Url(value, argument) };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new S3UrlError(`${argument}: must be a folder or an s3://bucket/prefix URL (got ${JSON.stringify(value)})`);
  }
  return { kind: 'folder', dir: value };
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
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw new S3UrlError(`${name} must be an http(s) URL (got ${JSON.stringify(value)})`);
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

/** An S3Client for `settings` (see `s3ClientConfig`); the SDK's default credential chain and standard retries. */
export async function createS3Client(settings: S3ClientSettings = {}, env: Readonly<Record<string, string | undefined>> = process.env): Promise<S3Client> {
  const config = s3ClientConfig(settings, env);
  const { S3Client } = await loadSdk();
  return new S3Client(config);
}

/** Objects DeleteObjects takes at once. */
const DELETE_BATCH = 1000;
/**
 * An archive larger than this is sent as a multipart upload, one part of this size in memory at a
 * time (and made visible only once the whole stream was read and checked); a smaller one is read
 * whole and sent in one PUT, its MD5 then its ETag.
 */
export const S3_PART_BYTES = 8 * 1024 * 1024;
/** The largest archive published to a bucket: S3's 10,000 parts of `S3_PART_BYTES`. */
export const S3_ARCHIVE_LIMIT = 10_000 * S3_PART_BYTES;
/** The most `read()` takes of one object (registry.json of a very large registry stays well under). */
export const S3_READ_LIMIT = 256 * 1024 * 1024;

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

/** Reads a stream whole, refusing more than `limit` bytes (the stream is destroyed then). */
async function readAtMost(stream: AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void }, limit: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (total > limit) {
      const error = tooLarge();
      stream.destroy?.(error);
      throw error;
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
  }
  return Buffer.concat(chunks, total);
}

export interface S3OutputOptions extends S3Location {
  client: S3Client;
  /** Keys per ListObjectsV2 page (default the store's, 1,000 on S3); tests make it small. */
  listPageSize?: number;
}

export class S3Output implements RegistryOutput {
  readonly location: string;
  /** S3-compatible stores give the MD5 of a single-part object as its ETag. */
  readonly digest = 'md5' as const;
  readonly bucket: string;
  readonly prefix: string;
  readonly #client: S3Client;
  readonly #listPageSize: number | undefined;

  constructor(options: S3OutputOptions) {
    // The location is checked again: a library caller may build one by hand.
    const checked = parseS3Url(s3UrlOf(options), 'S3Output');
    this.bucket = checked.bucket;
    this.prefix = checked.prefix;
    this.#client = options.client;
    this.#listPageSize = options.listPageSize;
    this.location = s3UrlOf(checked);
  }

  #key(name: string): string {
    const segments = name.split('/');
    if (name === '' || segments.some((s) => s === '' || s === '.' || s === '..')) throw new Error(`not a registry file name: ${JSON.stringify(name)}`);
    return `${this.prefix}${name}`;
  }

  #failure(operation: string, key: string, error: unknown): S3OutputError {
    return new S3OutputError(`${this.location}: ${operation} s3://${this.bucket}/${key} failed: ${describeFailure(error)}`, { cause: error });
  }

  async #send<T>(operation: string, key: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw this.#failure(operation, key, error);
    }
  }

  async inventory(): Promise<Map<string, HeldFile>> {
    const { ListObjectsV2Command } = await loadSdk();
    const held = new Map<string, HeldFile>();
    let token: string | undefined;
    do {
      const page = await this.#send('ListObjectsV2', this.prefix, () =>
        this.#client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            ...(this.prefix !== '' ? { Prefix: this.prefix } : {}),
            ...(token !== undefined ? { ContinuationToken: token } : {}),
            ...(this.#listPageSize !== undefined ? { MaxKeys: this.#listPageSize } : {}),
          }),
        ),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key;
        if (key === undefined || !key.startsWith(this.prefix)) continue;
        const name = key.slice(this.prefix.length);
        // Folder markers and keys no registry file has are not the build's business.
        if (name === '' || name.split('/').some((s) => s === '' || s === '.' || s === '..')) continue;
        const md5 = md5OfEtag(object.ETag);
        const multipart = md5 === undefined && /^"?[0-9a-fA-F]{32}-\d+"?$/.test(object.ETag ?? '');
        held.set(name, { size: object.Size ?? 0, ...(md5 !== undefined ? { digest: md5 } : {}), ...(multipart ? { checksummed: true } : {}) });
      }
      if (page.IsTruncated && !page.NextContinuationToken) throw new S3OutputError(`${this.location}: ListObjectsV2 said the listing goes on but gave no continuation token`);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return held;
  }

  async read(name: string): Promise<Buffer | undefined> {
    const { GetObjectCommand } = await loadSdk();
    const key = this.#key(name);
    const tooLarge = (): Error => new S3OutputError(`${this.location}: s3://${this.bucket}/${key} is larger than ${S3_READ_LIMIT} bytes, the most a build reads`);
    let answer;
    try {
      answer = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw this.#failure('GetObject', key, error);
    }
    const body = answer.Body as (AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void }) | undefined;
    if (!body) return Buffer.alloc(0);
    if ((answer.ContentLength ?? 0) > S3_READ_LIMIT) {
      const error = tooLarge();
      body.destroy?.(error);
      throw error;
    }
    return this.#send('GetObject', key, () => readAtMost(body, S3_READ_LIMIT, tooLarge));
  }

  /** A PUT is durable once answered: one after the other is the order readers see. */
  async putInOrder(files: readonly OutputFile[]): Promise<void> {
    for (const file of files) await this.put(file);
  }

  async put(file: OutputFile): Promise<void> {
    await this.#upload(file.name, bytesOf(file), {
      ContentType: file.contentType,
      CacheControl: file.cacheControl,
      ...(file.contentEncoding !== undefined ? { ContentEncoding: file.contentEncoding } : {}),
    }, fileDigest(file, 'md5'));
  }

  async #upload(name: string, data: Buffer, metadata: { ContentType: string; CacheControl: string; ContentEncoding?: string }, md5 = md5Of(data)): Promise<void> {
    const { PutObjectCommand } = await loadSdk();
    const key = this.#key(name);
    // Content-MD5 makes the store refuse bytes damaged on the way (BadDigest) instead of storing them.
    const contentMd5 = Buffer.from(md5, 'hex').toString('base64');
    await this.#send('PutObject', key, () => this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: data, ContentMD5: contentMd5, ...metadata })));
  }

  async putArchive(archive: OutputArchive): Promise<void> {
    const stream: Readable = archive.stream;
    const tooLarge = (): Error => new S3OutputError(`${this.location}: the archive ${archive.name} is larger than ${S3_ARCHIVE_LIMIT} bytes, the most published to a bucket`);
    if (archive.size > S3_ARCHIVE_LIMIT) {
      const error = tooLarge();
      stream.destroy(error);
      throw error;
    }
    const wrongSize = (read: number): Error => new S3OutputError(`${this.location}: the archive ${archive.name} is ${read} bytes, its store says ${archive.size}; nothing was published`);
    if (archive.size > S3_PART_BYTES) return this.#putArchiveInParts(archive, wrongSize);
    const data = await readAtMost(stream, S3_PART_BYTES, () => wrongSize(S3_PART_BYTES + 1));
    if (data.length !== archive.size) throw wrongSize(data.length);
    // Checked whole before the upload: a bad archive never becomes visible, not even for a moment.
    archive.verify();
    await this.#upload(archive.name, data, { ContentType: contentTypeOf(archive.name), CacheControl: CACHE_CONTROL.immutable });
  }

  /**
   * A large archive as a multipart upload: each part sent as the stream fills it (one part in
   * memory), and the object created by CompleteMultipartUpload only after the whole stream was read
   * and `verify()` passed; on any failure the upload is aborted, and nothing was ever visible.
   */
  async #putArchiveInParts(archive: OutputArchive, wrongSize: (read: number) => Error): Promise<void> {
    const { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, UploadPartCommand } = await loadSdk();
    const key = this.#key(archive.name);
    const created = await this.#send('CreateMultipartUpload', key, () =>
      this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentTypeOf(archive.name), CacheControl: CACHE_CONTROL.immutable })),
    );
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw new S3OutputError(`${this.location}: CreateMultipartUpload s3://${this.bucket}/${key} answered without an UploadId`);
    const parts: { ETag: string; PartNumber: number }[] = [];
    const sendPart = async (chunks: Buffer[], length: number): Promise<void> => {
      const body = Buffer.concat(chunks, length);
      const PartNumber = parts.length + 1;
      const answer = await this.#send('UploadPart', key, () =>
        this.#client.send(new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber, Body: body, ContentMD5: Buffer.from(md5Of(body), 'hex').toString('base64') })),
      );
      if (answer.ETag === undefined) throw new S3OutputError(`${this.location}: UploadPart s3://${this.bucket}/${key} answered without an ETag`);
      parts.push({ ETag: answer.ETag, PartNumber });
    };
    try {
      let chunks: Buffer[] = [];
      let buffered = 0;
      let total = 0;
      for await (const chunk of archive.stream as AsyncIterable<Uint8Array>) {
        total += chunk.length;
        if (total > archive.size) {
          const error = wrongSize(total);
          archive.stream.destroy(error);
          throw error;
        }
        chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
        buffered += chunk.length;
        if (buffered >= S3_PART_BYTES) {
          const whole = Buffer.concat(chunks, buffered);
          await sendPart([whole.subarray(0, S3_PART_BYTES)], S3_PART_BYTES);
          chunks = buffered > S3_PART_BYTES ? [whole.subarray(S3_PART_BYTES)] : [];
          buffered -= S3_PART_BYTES;
        }
      }
      if (total !== archive.size) throw wrongSize(total);
      if (buffered > 0) await sendPart(chunks, buffered);
      // Read whole and checked: only now does the object come to be.
      archive.verify();
      await this.#send('CompleteMultipartUpload', key, () =>
        this.#client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } })),
      );
    } catch (error) {
      await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
  }

  /** Nothing to flush: a PUT is durable once the store answered it. */
  barrier(): Promise<void> {
    return Promise.resolve();
  }

  async remove(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    const { DeleteObjectsCommand } = await loadSdk();
    for (let start = 0; start < names.length; start += DELETE_BATCH) {
      const keys = names.slice(start, start + DELETE_BATCH).map((name) => this.#key(name));
      const answer = await this.#send('DeleteObjects', keys[0] ?? '', () =>
        this.#client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } })),
      );
      // A missing key is deleted as far as S3 is concerned; any error listed is a real failure.
      const failed = (answer.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        throw new S3OutputError(`${this.location}: DeleteObjects failed for ${failed.length} object(s): ${failed.slice(0, 5).map((e) => `${e.Key ?? '?'} (${e.Code ?? 'error'}: ${e.Message ?? ''})`).join(', ')}`);
      }
    }
  }

  /** Nothing to save: the next build lists the bucket again. */
  commit(): Promise<void> {
    return Promise.resolve();
  }
}
