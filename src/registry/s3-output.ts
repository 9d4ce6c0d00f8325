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

import type { S3Client } from '@aws-sdk/client-s3';

import { describeFailure, isNotFound, isS3Url, loadSdk, md5OfEtag, parseS3Url, S3UrlError, s3UrlOf, type S3Location } from '../core/bucket.js';

// The bucket's names and client, as the registry's public face has always given them.
export { createS3Client, describeFailure, isNotFound, isS3Url, loadSdk, md5OfEtag, parseS3Url, s3ClientConfig, S3UrlError, s3UrlOf, type S3ClientSettings, type S3Location } from '../core/bucket.js';
import { bytesOf, CACHE_CONTROL, contentTypeOf, fileDigest, md5Of, type HeldFile, type OutputArchive, type OutputFile, type RegistryOutput } from './output.js';

/** A request to the bucket failed (after the SDK's retries); the message names the object and the store's error. */
export class S3OutputError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'S3OutputError';
  }
}

/** What a build writes into: a folder, or a bucket. */
export type OutputTarget = { kind: 'folder'; dir: string } | ({ kind: 's3' } & S3Location);

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
