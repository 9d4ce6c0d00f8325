/**
 * A BlobStore in an S3-compatible bucket, below a prefix: one object per key.
 *
 * A PUT replaces an object atomically and is durable once answered, which is all the interface
 * asks. Conditional writes (If-None-Match) are never used: s3rver and several S3-compatible stores
 * ignore them, so whoever needs one writer per key coordinates elsewhere (the database).
 *
 * Every request is bounded: a connection, the answer's headers and each silence while bytes flow
 * have a timeout, and the SDK's attempts are capped. The SDK is loaded on first use, so importing
 * the store's public face costs nothing to a folder-only server.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';

import type { S3Client } from '@aws-sdk/client-s3';

import {
  createS3Client,
  DEFAULT_BUCKET_ATTEMPTS,
  DEFAULT_BUCKET_TIMEOUT_MS,
  describeFailure,
  isNotFound,
  isTransient,
  loadSdk,
  md5OfEtag,
  parseS3Url,
  plainCause,
  S3UrlError,
  s3UrlOf,
  type BucketPolicy,
  type S3ClientSettings,
} from '../../core/bucket.js';
import type { ArchiveReader, BlobCopySource, BlobStore } from '../types.js';

import { checkBlobKey, checkBlobPrefix } from './keys.js';

/** Why `checkBucket` found a bucket unusable (its message says the rest, in words). */
export type S3BucketProblem = 'no-bucket' | 'denied' | 'no-credentials' | 'unreachable' | 'failed';

/**
 * A request to the bucket failed or timed out (after the retries); the message names the object.
 * From `checkBucket`, `bucketProblem` says which kind of failure it was.
 */
export class S3BlobError extends Error {
  readonly bucketProblem: S3BucketProblem | undefined;

  constructor(message: string, options?: { cause?: unknown; bucketProblem?: S3BucketProblem }) {
    super(message, options);
    this.name = 'S3BlobError';
    this.bucketProblem = options?.bucketProblem;
  }
}

/** Network failures in plain words (the endpoint is named by whoever knows which flag gave it). */
const NETWORK_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate cannot be verified',
};

export interface S3BlobStoreOptions extends S3ClientSettings, BucketPolicy {
  bucket: string;
  /** `''` or `/`-separated segments (a trailing `/` is optional): every key lives below it. */
  prefix: string;
  /**
   * Whether a single-part PUT's ETag must equal the MD5 of the bytes sent (default true): it catches
   * damage on stores that ignore Content-MD5. Turn off for buckets encrypted with SSE-KMS or SSE-C,
   * whose ETags are not MD5s.
   */
  checkEtag?: boolean;
  /** Keys per ListObjectsV2 page (default the store's, 1,000 on S3). */
  listPageSize?: number;
}

/** The S3 options besides the location, as `openBlobStore` takes them. */
export type S3BlobSettings = Omit<S3BlobStoreOptions, 'bucket' | 'prefix'>;

/**
 * A file larger than this goes to the bucket as a multipart upload in parts of this size (one part
 * in memory at a time); a smaller one is streamed in one PutObject.
 */
export const S3_BLOB_PART_BYTES = 8 * 1024 * 1024;
/** A file upload gets its timeout plus one second per MiB before its answer is due. */
const UPLOAD_BYTES_PER_MS = 1024 * 1024 / 1000;

/** The largest object one CopyObject copies (S3's limit). */
const MAX_COPY_OBJECT_BYTES = 5 * 1024 ** 3;

/** A conditional request whose condition failed (412): the object is no longer the version named. */
function isPreconditionFailed(error: unknown): boolean {
  const e = error as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.name === 'PreconditionFailed' || e?.Code === 'PreconditionFailed' || e?.$metadata?.httpStatusCode === 412;
}

const md5Base64 = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');

async function fileMd5(file: string): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export class S3BlobStore implements BlobStore {
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  readonly #options: S3BlobStoreOptions;
  readonly #timeoutMs: number;
  readonly #maxAttempts: number;
  #client: Promise<S3Client> | undefined;

  constructor(options: S3BlobStoreOptions) {
    const checked = parseS3Url(s3UrlOf({ bucket: options.bucket, prefix: options.prefix.replace(/\/?$/, '/') }), 'S3BlobStore');
    this.bucket = checked.bucket;
    this.prefix = checked.prefix;
    this.location = s3UrlOf(checked);
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_BUCKET_TIMEOUT_MS;
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_BUCKET_ATTEMPTS);
  }

  #makeClient(): Promise<S3Client> {
    const { endpoint, forcePathStyle, region, credentials } = this.#options;
    return (this.#client ??= createS3Client({ endpoint, forcePathStyle, region }, process.env, {
      timeoutMs: this.#timeoutMs,
      maxAttempts: this.#maxAttempts,
      ...(credentials !== undefined ? { credentials } : {}),
    }));
  }

  /** The store's own SDK client (its timeouts and attempts included), e.g. to instrument it in tests. */
  sdkClient(): Promise<S3Client> {
    return this.#makeClient();
  }

  #objectKey(key: string): string {
    return `${this.prefix}${checkBlobKey(key)}`;
  }

  #failure(operation: string, objectKey: string, error: unknown): S3BlobError {
    return new S3BlobError(`${operation} s3://${this.bucket}/${objectKey} failed: ${describeFailure(error)}`, { cause: plainCause(error) });
  }

  async #send<T>(operation: string, objectKey: string, request: (client: S3Client) => Promise<T>): Promise<T> {
    const client = await this.sdkClient();
    try {
      return await request(client);
    } catch (error) {
      throw this.#failure(operation, objectKey, error);
    }
  }

  /** The SDK never retries a streamed body; a file is reopened for each attempt instead. */
  async #withAttempts<T>(attempt: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries += 1) {
      try {
        return await attempt();
      } catch (error) {
        if (tries >= this.#maxAttempts || !(error instanceof S3BlobError) || !isTransient(error.cause)) throw error;
      }
    }
  }

  async putBytes(key: string, bytes: Uint8Array | string, options: { contentType?: string } = {}): Promise<void> {
    const body = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    const md5 = createHash('md5').update(body).digest('hex');
    await this.#put(this.#objectKey(key), () => body, body.byteLength, md5, options.contentType);
  }

  async putFile(key: string, localFile: string, options: { contentType?: string } = {}): Promise<BlobCopySource | undefined> {
    const objectKey = this.#objectKey(key);
    const { size } = await stat(localFile);
    const etag =
      size > S3_BLOB_PART_BYTES
        ? await this.#putInParts(objectKey, localFile, size, options.contentType)
        : // Read once for the digest, then streamed: a file that changes meanwhile no longer matches it and is refused.
          await fileMd5(localFile).then((md5) => this.#withAttempts(() => this.#putStream(objectKey, localFile, size, md5, options.contentType)));
    return etag === undefined ? undefined : { key, etag, size };
  }

  /**
   * A large file as a multipart upload: each part read from the file into one buffer of
   * `S3_BLOB_PART_BYTES` (the only part of the file in memory), sent with its Content-MD5 and tried
   * again on its own when a transient error stops it; the object exists only once
   * CompleteMultipartUpload is answered, and the upload is aborted on any failure.
   */
  async #putInParts(objectKey: string, localFile: string, size: number, contentType = 'application/octet-stream'): Promise<string | undefined> {
    const { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, UploadPartCommand } = await loadSdk();
    const created = await this.#send('CreateMultipartUpload', objectKey, (client) => client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, ContentType: contentType })));
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw new S3BlobError(`CreateMultipartUpload s3://${this.bucket}/${objectKey} answered without an UploadId`);
    const requestTimeout = this.#timeoutMs + Math.ceil(S3_BLOB_PART_BYTES / UPLOAD_BYTES_PER_MS);
    const parts: { ETag: string; PartNumber: number }[] = [];
    const digests: Buffer[] = [];
    const buffer = Buffer.allocUnsafe(S3_BLOB_PART_BYTES);
    const file = await open(localFile, 'r');
    try {
      for (let offset = 0; offset < size; offset += S3_BLOB_PART_BYTES) {
        const length = Math.min(S3_BLOB_PART_BYTES, size - offset);
        const { bytesRead } = await file.read(buffer, 0, length, offset);
        if (bytesRead !== length) throw new S3BlobError(`UploadPart s3://${this.bucket}/${objectKey} failed: ${localFile} changed while it was uploaded`);
        const body = buffer.subarray(0, length);
        const md5 = createHash('md5').update(body).digest();
        const PartNumber = parts.length + 1;
        const answer = await this.#withAttempts(() =>
          this.#send('UploadPart', objectKey, (client) =>
            client.send(new UploadPartCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId, PartNumber, Body: body, ContentLength: length, ContentMD5: md5.toString('base64') }), { requestTimeout }),
          ),
        );
        if (answer.ETag === undefined) throw new S3BlobError(`UploadPart s3://${this.bucket}/${objectKey} answered without an ETag`);
        parts.push({ ETag: answer.ETag, PartNumber });
        digests.push(md5);
      }
      const done = await this.#send('CompleteMultipartUpload', objectKey, (client) =>
        client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId, MultipartUpload: { Parts: parts } })),
      );
      // A multipart ETag is the MD5 of the parts' MD5s and their count: it tells whether the store assembled what was sent.
      const expected = `${createHash('md5').update(Buffer.concat(digests)).digest('hex')}-${parts.length}`;
      const stored = /^"?([0-9a-fA-F]{32}-\d+)"?$/.exec(done.ETag ?? '')?.[1]?.toLowerCase();
      if (this.#options.checkEtag !== false && stored !== undefined && stored !== expected) {
        throw new S3BlobError(`CompleteMultipartUpload s3://${this.bucket}/${objectKey}: the store assembled an object whose ETag is ${stored}, ${expected} was sent`);
      }
      return done.ETag;
    } catch (error) {
      await this.#send('AbortMultipartUpload', objectKey, (client) => client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId }))).catch(() => undefined);
      throw error;
    } finally {
      await file.close();
    }
  }

  /**
   * The SDK pipes a streamed body without listening for its errors: a read error would be thrown
   * out of the process and the request left waiting. It aborts the request instead, and is the failure.
   */
  async #putStream(objectKey: string, localFile: string, size: number, md5: string, contentType?: string): Promise<string | undefined> {
    const stream = createReadStream(localFile);
    const aborter = new AbortController();
    let readError: unknown;
    stream.once('error', (error) => {
      readError = error;
      aborter.abort(error);
    });
    try {
      return await this.#put(objectKey, () => stream, size, md5, contentType, aborter.signal);
    } catch (error) {
      if (readError === undefined) throw error;
      throw new S3BlobError(`PutObject s3://${this.bucket}/${objectKey} failed: reading ${localFile}: ${describeFailure(readError)}`, { cause: readError });
    } finally {
      stream.destroy();
    }
  }

  /** A PutObject of `body`, checked against its MD5; answers the object's ETag. */
  async #put(objectKey: string, body: () => Uint8Array | Readable, size: number, md5: string, contentType = 'application/octet-stream', abortSignal?: AbortSignal): Promise<string | undefined> {
    const { PutObjectCommand } = await loadSdk();
    const requestTimeout = this.#timeoutMs + Math.ceil(size / UPLOAD_BYTES_PER_MS);
    const answer = await this.#send('PutObject', objectKey, (client) =>
      client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: objectKey, Body: body(), ContentLength: size, ContentType: contentType, ContentMD5: md5Base64(md5) }),
        { requestTimeout, ...(abortSignal !== undefined ? { abortSignal } : {}) },
      ),
    );
    const stored = md5OfEtag(answer.ETag);
    if (this.#options.checkEtag !== false && stored !== undefined && stored !== md5) {
      throw new S3BlobError(`PutObject s3://${this.bucket}/${objectKey}: the store kept bytes whose MD5 is ${stored}, ${md5} was sent`);
    }
    return answer.ETag;
  }

  async open(key: string): Promise<ArchiveReader | undefined> {
    const { GetObjectCommand } = await loadSdk();
    const objectKey = this.#objectKey(key);
    const answer = await this.#ifFound('GetObject', objectKey, (client) => client.send(new GetObjectCommand({ Bucket: this.bucket, Key: objectKey })));
    if (!answer) return undefined;
    const stream = answer.Body as Readable | undefined;
    if (!stream) throw new S3BlobError(`GetObject s3://${this.bucket}/${objectKey} answered without a body`);
    const size = answer.ContentLength ?? 0;
    return { stream, size, ...(answer.ETag === undefined ? {} : { copyable: { key, etag: answer.ETag, size } }) };
  }

  /**
   * CopyObject within the bucket, on the condition that the source is still `from.etag`
   * (x-amz-copy-source-if-match): false when it changed (412), or is larger than one CopyObject
   * takes (5 GiB); the copy exists once it is answered. The source's ETag is also asked first
   * (HeadObject): some S3-compatible stores (s3rver among them) ignore the condition.
   */
  async copy(from: BlobCopySource, key: string, options: { contentType?: string } = {}): Promise<boolean> {
    if (from.size > MAX_COPY_OBJECT_BYTES) return false;
    const { CopyObjectCommand, HeadObjectCommand } = await loadSdk();
    const source = this.#objectKey(from.key);
    const objectKey = this.#objectKey(key);
    const current = await this.#ifFound('HeadObject', source, (client) => client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: source })));
    if (current?.ETag !== from.etag || current.ContentLength !== from.size) return false;
    try {
      const answer = await this.#send('CopyObject', objectKey, (client) =>
        client.send(
          new CopyObjectCommand({
            Bucket: this.bucket,
            Key: objectKey,
            CopySource: `${this.bucket}/${source.split('/').map(encodeURIComponent).join('/')}`,
            CopySourceIfMatch: from.etag,
            MetadataDirective: 'REPLACE',
            ContentType: options.contentType ?? 'application/octet-stream',
          }),
        ),
      );
      if (answer.CopyObjectResult?.ETag === undefined) throw new S3BlobError(`CopyObject s3://${this.bucket}/${objectKey} answered without an ETag`);
      return true;
    } catch (error) {
      if (error instanceof S3BlobError && isPreconditionFailed(error.cause)) return false;
      throw error;
    }
  }

  async readBytes(key: string): Promise<Buffer | undefined> {
    const reader = await this.open(key);
    if (!reader) return undefined;
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of reader.stream) chunks.push(chunk as Buffer);
    } catch (error) {
      throw this.#failure('GetObject', this.#objectKey(key), error);
    }
    return Buffer.concat(chunks);
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    const { HeadObjectCommand } = await loadSdk();
    const objectKey = this.#objectKey(key);
    const answer = await this.#ifFound('HeadObject', objectKey, (client) => client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey })));
    return answer ? { size: answer.ContentLength ?? 0 } : undefined;
  }

  /** A request's answer, or undefined on a 404 of the object. */
  async #ifFound<T>(operation: string, objectKey: string, request: (client: S3Client) => Promise<T>): Promise<T | undefined> {
    try {
      return await this.#send(operation, objectKey, request);
    } catch (error) {
      if (error instanceof S3BlobError && isNotFound(error.cause)) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const { DeleteObjectCommand } = await loadSdk();
    const objectKey = this.#objectKey(key);
    // S3 answers 204 for a missing key; a store that answers 404 means the same.
    await this.#ifFound('DeleteObject', objectKey, (client) => client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: objectKey })));
  }

  /**
   * Checks once that the bucket is there and answers these credentials: a listing below the prefix
   * (not HeadBucket, which a policy granting ListBucket on the prefix only refuses). It lists a name
   * none of the stores' keys starts with (theirs start with archives/, manifests/, files/...), so
   * the answer is empty, small and never paged, whatever the bucket holds. Opening a store calls it,
   * so a missing bucket or a wrong endpoint fails at start, with the reason, instead of at the first
   * upload (or never, for a command that reads no bytes).
   */
  async checkBucket(): Promise<void> {
    const { ListObjectsV2Command } = await loadSdk();
    const probe = `${this.prefix}.bucket-check`;
    try {
      await this.#send('ListObjectsV2', probe, (client) => client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: probe, MaxKeys: 1 })));
    } catch (error) {
      // A bad endpoint setting is the caller's to name (S3UrlError, before any request).
      if (error instanceof S3UrlError) throw error;
      // An S3BlobError's cause is the SDK's error already stripped of the signed request.
      throw this.#bucketProblem(error instanceof S3BlobError ? error.cause : plainCause(error));
    }
  }

  #bucketProblem(cause: unknown): S3BlobError {
    const e = cause as { name?: string; Code?: string; code?: string; $metadata?: { httpStatusCode?: number } } | null;
    const code = e?.Code ?? e?.name ?? '';
    const status = e?.$metadata?.httpStatusCode;
    const problem = (kind: S3BucketProblem, message: string): S3BlobError => new S3BlobError(message, { cause, bucketProblem: kind });
    if (code === 'NoSuchBucket' || (status === 404 && code !== 'NoSuchKey')) return problem('no-bucket', `the bucket ${this.bucket} does not exist`);
    if (e?.name === 'CredentialsProviderError') {
      return problem('no-credentials', 'no credentials to sign requests with: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile or role');
    }
    if (status === 403 || status === 401) {
      // The store's error code says which (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch); never a credential.
      return problem('denied', `the bucket ${this.bucket} refused these credentials (${code || `HTTP ${status}`}): check the access key and the bucket's policy`);
    }
    const network = e?.code !== undefined ? NETWORK_WORDS[e.code] : undefined;
    if (network !== undefined) return problem('unreachable', network);
    if (e?.name === 'TimeoutError') return problem('unreachable', `no answer within ${Math.round(this.#timeoutMs / 1000)} s`);
    return problem('failed', `listing s3://${this.bucket}/${this.prefix} failed: ${describeFailure(cause)}`);
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    const { ListObjectsV2Command } = await loadSdk();
    const listed = `${this.prefix}${checkBlobPrefix(prefix)}`;
    let token: string | undefined;
    do {
      const page = await this.#send('ListObjectsV2', listed, (client) =>
        client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            ...(listed !== '' ? { Prefix: listed } : {}),
            ...(token !== undefined ? { ContinuationToken: token } : {}),
            ...(this.#options.listPageSize !== undefined ? { MaxKeys: this.#options.listPageSize } : {}),
          }),
        ),
      );
      yield* this.#keysOf(page.Contents ?? []);
      if (page.IsTruncated && !page.NextContinuationToken) throw new S3BlobError(`ListObjectsV2 s3://${this.bucket}/${listed}: the listing goes on but no continuation token was given`);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** The keys of a page; objects no key could name (folder markers, `a//b`) are not the store's. */
  *#keysOf(objects: readonly { Key?: string; Size?: number }[]): Iterable<{ key: string; size: number }> {
    for (const object of objects) {
      if (object.Key === undefined || !object.Key.startsWith(this.prefix)) continue;
      const key = object.Key.slice(this.prefix.length);
      try {
        checkBlobKey(key);
      } catch {
        continue;
      }
      yield { key, size: object.Size ?? 0 };
    }
  }
}
