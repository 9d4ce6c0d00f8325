import crypto, { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { s3ClientConfig, S3UrlError } from '../../src/registry/s3-output.js';
import { claimBlobStore, claimLockFile, type ClaimResult } from '../../src/store/blob/index.js';
import { S3_BLOB_PART_BYTES } from '../../src/store/blob/s3.js';
import { FolderBlobStore, openBlobStore, S3BlobError, S3BlobStore, type BlobStore, type S3BlobStoreOptions } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { blobContract } from './blob-contract.js';
import { archiveKey } from '../../src/store/blob-layout.js';
import { writeVersionBytes } from '../../src/store/version-rules.js';
import { templateManifest } from '../helpers/builders.js';

/**
 * s3rver makes its ListObjectsV2 continuation tokens with DES, which OpenSSL 3 no longer has: a
 * truncated listing answers 500. It runs in this process, so its cipher is swapped for AES (same
 * 8-byte key and IV, doubled) while these tests run.
 */
function letS3rverPaginate(): () => void {
  const { createCipheriv, createDecipheriv } = crypto;
  const widen = (algorithm: string, key: crypto.CipherKey, iv: crypto.BinaryLike | null): [string, crypto.CipherKey, crypto.BinaryLike | null] =>
    algorithm === 'des' ? ['aes-128-cbc', Buffer.concat([key as Buffer, key as Buffer]), Buffer.concat([iv as Buffer, iv as Buffer])] : [algorithm, key, iv];
  crypto.createCipheriv = ((algorithm: string, key: crypto.CipherKey, iv: crypto.BinaryLike | null) => createCipheriv(...widen(algorithm, key, iv))) as typeof createCipheriv;
  crypto.createDecipheriv = ((algorithm: string, key: crypto.CipherKey, iv: crypto.BinaryLike | null) => createDecipheriv(...widen(algorithm, key, iv))) as typeof createDecipheriv;
  return () => {
    crypto.createCipheriv = createCipheriv;
    crypto.createDecipheriv = createDecipheriv;
  };
}

const BUCKET = 'blobs';
let restoreCipher: () => void;
let s3: FakeS3;
let prefixes = 0;

beforeAll(async () => {
  restoreCipher = letS3rverPaginate();
  s3 = await startFakeS3([BUCKET]);
});

afterAll(async () => {
  await s3.close();
  restoreCipher();
});

/** A store of its own below a fresh prefix of the shared bucket. */
function s3Store(options: Partial<S3BlobStoreOptions> = {}): S3BlobStore {
  prefixes += 1;
  return new S3BlobStore({ bucket: BUCKET, prefix: `test-${prefixes}`, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 5_000, ...options });
}

/** Breaks every PutObject of `store` off after its first chunk was sent, as a failing disk would. */
async function cutPuts(store: S3BlobStore): Promise<void> {
  const client = await store.sdkClient();
  client.middlewareStack.add(
    (next, context) => (args) => {
      const body = (args.request as { body?: unknown }).body;
      if (context.commandName === 'PutObjectCommand' && body instanceof Readable) {
        body.once('data', () => process.nextTick(() => body.destroy(new Error('disk read failed half-way'))));
      }
      return next(args);
    },
    { step: 'deserialize', name: 'cutPuts', priority: 'low' },
  );
}

/** Makes every PutObject of `store` fail on the way out, as a dropped connection does. */
async function dropPuts(store: S3BlobStore): Promise<void> {
  const client = await store.sdkClient();
  client.middlewareStack.add(
    (next, context) => (args) => (context.commandName === 'PutObjectCommand' ? Promise.reject(new Error('connection dropped')) : next(args)),
    { step: 'deserialize', name: 'dropPuts', priority: 'low' },
  );
}

/**
 * Records the x-amz-copy-source-if-match of each CopyObject of `store`; with `changed`, answers it
 * as S3 does once the source is no longer that version (412), which s3rver never checks.
 */
async function watchCopies(store: S3BlobStore, changed = false): Promise<string[]> {
  const conditions: string[] = [];
  const client = await store.sdkClient();
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName !== 'CopyObjectCommand') return next(args);
      conditions.push((args.request as { headers: Record<string, string> }).headers['x-amz-copy-source-if-match'] ?? '');
      return changed ? Promise.reject(Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), { name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } })) : next(args);
    },
    { step: 'finalizeRequest', name: 'watchCopies', priority: 'low' },
  );
  return conditions;
}

blobContract('folder', async () => new FolderBlobStore(path.join(await tempDir('tr-blob-'), 'store')), (store, key) =>
  store.putFile(key, path.join(path.dirname(store.location), 'never-written')),
);

// s3rver writes an upload straight into its object file, so a request cut half-way would damage it
// there (S3 itself never keeps a part): the S3 run fails its put before any byte leaves.
blobContract('S3', () => Promise.resolve(s3Store()), async (store, key) => {
  await dropPuts(store as S3BlobStore);
  const file = path.join(await tempDir('tr-blob-'), 'upload.bin');
  await writeFile(file, randomBytes(4096));
  await expect(store.putBytes(key, 'new bytes')).rejects.toThrow(/connection dropped/);
  return store.putFile(key, file);
});

describe('FolderBlobStore', () => {
  it('keeps its folders and files private, and no temp file behind', async () => {
    const dir = path.join(await tempDir('tr-blob-'), 'store');
    const store = new FolderBlobStore(dir);
    await store.putBytes('a/b/c.bin', 'x');
    const local = path.join(path.dirname(dir), 'local');
    await writeFile(local, 'y', { mode: 0o644 });
    await store.putFile('a/d.bin', local);
    const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(path.join(dir, 'a', 'b'))).toBe(0o700);
    expect(await mode(path.join(dir, 'a', 'b', 'c.bin'))).toBe(0o600);
    expect(await mode(path.join(dir, 'a', 'd.bin'))).toBe(0o600);
    expect((await readdir(path.join(dir, 'a'))).sort()).toEqual(['b', 'd.bin']);
  });

  it('never lists temp files a crash left', async () => {
    const dir = path.join(await tempDir('tr-blob-'), 'store');
    const store = new FolderBlobStore(dir);
    await store.putBytes('a/x', '1');
    await mkdir(path.join(dir, 'a'), { recursive: true });
    await writeFile(path.join(dir, 'a', `.x.${process.pid}.0123456789ab.tmp`), 'half');
    const keys: string[] = [];
    for await (const { key } of store.list('')) keys.push(key);
    expect(keys).toEqual(['a/x']);
  });
});

describe('S3BlobStore', () => {
  it('stores the Content-Type given, octet-stream by default', async () => {
    const store = s3Store();
    const inspector = new S3Client({ ...s3ClientConfig({ endpoint: s3.endpoint, forcePathStyle: true }, {}), credentials: S3RVER_CREDENTIALS });
    try {
      const file = path.join(await tempDir('tr-blob-'), 'a.tgz');
      await writeFile(file, 'bytes');
      await store.putFile('a.tgz', file, { contentType: 'application/gzip' });
      await store.putBytes('m.json', '{}', { contentType: 'application/json' });
      await store.putBytes('raw', 'x');
      const typeOf = async (key: string): Promise<string | undefined> =>
        (await inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${store.prefix}${key}` }))).ContentType;
      expect(await typeOf('a.tgz')).toBe('application/gzip');
      expect(await typeOf('m.json')).toBe('application/json');
      expect(await typeOf('raw')).toBe('application/octet-stream');
    } finally {
      inspector.destroy();
    }
  });

  it('copies bytes within the bucket while they are the version read, and refuses (false) once they changed', async () => {
    const store = s3Store();
    await store.putBytes('staged/a', 'first bytes');
    const read = await store.open('staged/a');
    read?.stream.resume();
    const source = read?.copyable;
    expect(source).toMatchObject({ key: 'staged/a', size: 11 });
    if (!source) return;
    const conditions = await watchCopies(store);
    expect(await store.copy(source, 'archives/a.tgz', { contentType: 'application/gzip' })).toBe(true);
    expect((await store.readBytes('archives/a.tgz'))?.toString()).toBe('first bytes');
    expect(conditions).toEqual([source.etag]);
    const changed = s3Store();
    await changed.putBytes('staged/a', 'first bytes');
    await watchCopies(changed, true);
    expect(await changed.copy({ ...source, key: 'staged/a' }, 'archives/b.tgz')).toBe(false);
    expect(await changed.stat('archives/b.tgz')).toBeUndefined();
  });

  it('answers where putFile stored the bytes (key, ETag, size), single or multipart; a copy from there is refused once the object changed, by a store that ignores the copy\'s condition too', async () => {
    const store = s3Store();
    const dir = await tempDir('tr-blob-');
    for (const size of [1024, S3_BLOB_PART_BYTES + 1024]) {
      const file = path.join(dir, `put-${size}`);
      await writeFile(file, randomBytes(size));
      const stored = await store.putFile(`staged/${size}`, file);
      expect(stored).toMatchObject({ key: `staged/${size}`, size, etag: expect.stringMatching(/\S/) as string });
      if (!stored) return;
      expect(await store.copy(stored, `archives/${size}.tgz`)).toBe(true);
      expect((await store.readBytes(`archives/${size}.tgz`))?.equals(await readFile(file))).toBe(true);
      // s3rver never checks x-amz-copy-source-if-match: the ETag asked before the copy tells.
      await store.putBytes(`staged/${size}`, 'other bytes');
      expect(await store.copy(stored, `archives/${size}-again.tgz`)).toBe(false);
      expect(await store.stat(`archives/${size}-again.tgz`)).toBeUndefined();
    }
    expect(await new FolderBlobStore(path.join(dir, 'folder')).putFile('staged/a', path.join(dir, `put-1024`))).toBeUndefined();
  });

  it('commits a staged archive as a copy within the bucket, or the checked local file once the staged bytes changed', async () => {
    const store = s3Store();
    const manifest = templateManifest('copied', '1.0.0');
    const commit = async (version: string, staged: string, local: string): Promise<string | undefined> => {
      await store.putBytes(`files/${version}`, staged);
      const read = await store.open(`files/${version}`);
      read?.stream.resume();
      if (!read?.copyable) throw new Error('no copyable source');
      const file = path.join(await tempDir('tr-blob-'), 'archive.tgz');
      await writeFile(file, local);
      await writeVersionBytes(store, { name: 'copied', version, state: 'pending' }, { file, copyOf: read.copyable }, { ...manifest, version }, undefined);
      return (await store.readBytes(archiveKey('copied', version)))?.toString();
    };
    // The bucket's bytes, not the local file's: copied, not uploaded.
    expect(await commit('1.0.0', 'bytes in the bucket', 'local bytes')).toBe('bytes in the bucket');
    // Changed since they were read (the store answers the copy 412): the checked local file is stored.
    await watchCopies(store, true);
    expect(await commit('1.0.1', 'bytes in the bucket', 'checked bytes')).toBe('checked bytes');
  });

  it('keeps to its prefix: two stores in one bucket do not see each other', async () => {
    const one = new S3BlobStore({ bucket: BUCKET, prefix: 'tenant/one/', endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
    const two = openBlobStore(`s3://${BUCKET}/tenant/two`, { endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
    expect(two).toBeInstanceOf(S3BlobStore);
    expect(two.location).toBe(`s3://${BUCKET}/tenant/two`);
    await one.putBytes('same/key', 'one');
    await two.putBytes('same/key', 'two');
    await two.putBytes('only-two', '2');
    expect((await one.readBytes('same/key'))?.toString()).toBe('one');
    expect((await two.readBytes('same/key'))?.toString()).toBe('two');
    expect(await one.stat('only-two')).toBeUndefined();
    const listed: string[] = [];
    for await (const { key } of one.list('')) listed.push(key);
    expect(listed).toEqual(['same/key']);
    await one.delete('same/key');
    expect((await two.readBytes('same/key'))?.toString()).toBe('two');
  });

  it('fails a putFile whose file cannot be read to the end, without hanging or throwing out of the process', async () => {
    const store = s3Store();
    await cutPuts(store);
    const file = path.join(await tempDir('tr-blob-'), 'upload.bin');
    await writeFile(file, randomBytes(4 * 1024 * 1024));
    const started = Date.now();
    await expect(store.putFile('cut', file)).rejects.toThrow(/PutObject s3:\/\/blobs\/test-\d+\/cut failed: reading .*upload\.bin: Error: disk read failed half-way/);
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('fails a put whose bytes arrived damaged (a store that ignores Content-MD5 still answers their MD5)', async () => {
    const store = s3Store();
    const client = await store.sdkClient();
    client.middlewareStack.add(
      (next) => (args) => {
        const request = args.request as { body?: unknown };
        if (Buffer.isBuffer(request.body)) request.body = Buffer.from(request.body.toString().toUpperCase());
        return next(args);
      },
      { step: 'deserialize', name: 'damage', priority: 'low' },
    );
    await expect(store.putBytes('damaged', 'lower case')).rejects.toThrow(/PutObject s3:\/\/blobs\/test-\d+\/damaged: the store kept bytes whose MD5 is [0-9a-f]{32}, [0-9a-f]{32} was sent/);
  });

  it('putFile sends a file larger than one part as a multipart upload: no request body larger than a part, the same bytes read back', async () => {
    const store = s3Store();
    const sent: { command: string; bytes?: number }[] = [];
    (await store.sdkClient()).middlewareStack.add(
      (next, context) => (args) => {
        const body = (args.input as { Body?: unknown }).Body;
        sent.push({ command: String(context.commandName), ...(body instanceof Uint8Array ? { bytes: body.length } : {}) });
        return next(args);
      },
      { step: 'initialize', name: 'recordCommands' },
    );
    const file = path.join(await tempDir('tr-blob-'), 'big.tgz');
    const bytes = randomBytes(2 * S3_BLOB_PART_BYTES + 1000);
    await writeFile(file, bytes);
    await store.putFile('archives/big/1.0.0.tgz', file, { contentType: 'application/gzip' });
    expect(sent.map((request) => request.command)).toEqual(['CreateMultipartUploadCommand', 'UploadPartCommand', 'UploadPartCommand', 'UploadPartCommand', 'CompleteMultipartUploadCommand']);
    // The server holds one part of a large archive at a time, never the archive.
    expect(sent.filter((request) => request.command === 'UploadPartCommand').map((request) => request.bytes)).toEqual([S3_BLOB_PART_BYTES, S3_BLOB_PART_BYTES, 1000]);
    expect((await store.readBytes('archives/big/1.0.0.tgz'))?.equals(bytes)).toBe(true);
    expect(await store.stat('archives/big/1.0.0.tgz')).toEqual({ size: bytes.length });
  });

  it('putFile of a large file leaves no object when a part is refused, and aborts the upload', async () => {
    const store = s3Store();
    const tried: string[] = [];
    (await store.sdkClient()).middlewareStack.add(
      (next, context) => (args) => {
        tried.push(String(context.commandName));
        if (context.commandName === 'UploadPartCommand' && (args.input as { PartNumber?: number }).PartNumber === 2) {
          return Promise.reject(Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }));
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseSecondPart' },
    );
    const file = path.join(await tempDir('tr-blob-'), 'big.tgz');
    await writeFile(file, randomBytes(S3_BLOB_PART_BYTES + 10));
    await expect(store.putFile('archives/big/1.0.0.tgz', file)).rejects.toThrow(/UploadPart s3:\/\/blobs\/test-\d+\/archives\/big\/1\.0\.0\.tgz failed: AccessDenied/);
    expect(tried).toContain('AbortMultipartUploadCommand');
    expect(tried).not.toContain('CompleteMultipartUploadCommand');
    expect(await store.stat('archives/big/1.0.0.tgz')).toBeUndefined();
  });

  it('pages through a listing with a small page size', async () => {
    const store = s3Store({ listPageSize: 2 });
    await Promise.all(['a/1', 'a/2', 'a/3', 'a/4', 'a/5', 'b/1'].map((key) => store.putBytes(key, key)));
    const listed: string[] = [];
    for await (const { key } of store.list('a/')) listed.push(key);
    expect(listed.sort()).toEqual(['a/1', 'a/2', 'a/3', 'a/4', 'a/5']);
  });

  it('refuses a bad location before any request', () => {
    expect(() => new S3BlobStore({ bucket: 'Bad_Bucket', prefix: '' })).toThrow(S3UrlError);
    expect(() => new S3BlobStore({ bucket: BUCKET, prefix: 'a//b' })).toThrow(/empty path segments/);
    expect(() => openBlobStore('gs://bucket/x')).toThrow(/--storage: must be a folder or an s3:\/\/bucket\/prefix URL/);
    expect(openBlobStore('/srv/store')).toBeInstanceOf(FolderBlobStore);
    expect(new S3BlobStore({ bucket: BUCKET, prefix: '' }).location).toBe(`s3://${BUCKET}`);
  });

  describe('against a server that never answers', () => {
    let silent: Server;
    let endpoint: string;
    const sockets = new Set<Socket>();

    beforeAll(async () => {
      silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const address = silent.address();
      endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    });

    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    const stalled = (): BlobStore =>
      new S3BlobStore({ bucket: BUCKET, prefix: 'stalled', endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 300, maxAttempts: 2 });

    it.each([
      ['stat', (store: BlobStore) => store.stat('a/key')],
      ['open', (store: BlobStore) => store.open('a/key')],
      ['putBytes', (store: BlobStore) => store.putBytes('a/key', 'x')],
      ['delete', (store: BlobStore) => store.delete('a/key')],
    ])('%s fails within the bound, naming the object', async (_name, request) => {
      const started = Date.now();
      const error = await request(stalled()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(S3BlobError);
      expect((error as Error).message).toMatch(/s3:\/\/blobs\/stalled\/a\/key failed: TimeoutError/);
      expect((error as Error).message).not.toMatch(/S3RVER/);
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it('putFile fails within the bound too', async () => {
      const file = path.join(await tempDir('tr-blob-'), 'f');
      await writeFile(file, randomBytes(1000));
      const started = Date.now();
      await expect(stalled().putFile('a/key', file)).rejects.toThrow(/PutObject s3:\/\/blobs\/stalled\/a\/key failed: TimeoutError/);
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it('list fails within the bound', async () => {
      const started = Date.now();
      const listing = async (): Promise<void> => {
        for await (const _ of stalled().list('a/')) void _;
      };
      await expect(listing()).rejects.toThrow(/ListObjectsV2 s3:\/\/blobs\/stalled\/a\/ failed/);
      expect(Date.now() - started).toBeLessThan(3_000);
    });
  });
});

describe('S3BlobStore.checkBucket', () => {
  const problem = (store: S3BlobStore): Promise<unknown> => store.checkBucket().then(() => undefined, (error: unknown) => error);

  it('passes on a bucket that is there (an empty prefix of it too)', async () => {
    await expect(s3Store().checkBucket()).resolves.toBeUndefined();
    await expect(new S3BlobStore({ bucket: BUCKET, prefix: '', endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS }).checkBucket()).resolves.toBeUndefined();
  });

  it('says a missing bucket does not exist', async () => {
    const error = await problem(s3Store({ bucket: 'nobucket' }));
    expect(error).toBeInstanceOf(S3BlobError);
    expect(error).toMatchObject({ bucketProblem: 'no-bucket', message: 'the bucket nobucket does not exist' });
  });

  it('says an endpoint that refuses connections cannot be reached, within the bound', async () => {
    const started = Date.now();
    const error = await problem(s3Store({ endpoint: 'http://127.0.0.1:1', maxAttempts: 1 }));
    expect(error).toMatchObject({ bucketProblem: 'unreachable', message: 'connection refused' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('says refused credentials were refused, naming neither the key nor the secret', async () => {
    const error = await problem(s3Store({ credentials: { accessKeyId: 'AKIA-NOT-A-KEY', secretAccessKey: 'not-the-secret-42' } }));
    expect(error).toMatchObject({ bucketProblem: 'denied' });
    expect((error as Error).message).toMatch(/^the bucket blobs refused these credentials \(InvalidAccessKeyId\)/);
    expect((error as Error).message).not.toMatch(/AKIA-NOT-A-KEY|not-the-secret-42/);
  });
});

describe('claims of a blob store for a copy', () => {
  const claimed = (result: ClaimResult): { release(): Promise<void> } => {
    if ('busy' in result) throw new Error(`expected a claim, got: ${result.busy}`);
    return result.claimed;
  };

  it('a folder: one claim at a time (an exclusive copy.lock), free again once released', async () => {
    const store = new FolderBlobStore(path.join(await tempDir('tr-claim-'), 'not-yet'));
    const first = claimed(await claimBlobStore(store));
    const lock = JSON.parse(await readFile(path.join(store.location, 'copy.lock'), 'utf8')) as { pid: number };
    expect(lock.pid).toBe(process.pid);
    const second = await claimBlobStore(store);
    expect(second).toEqual({ busy: expect.stringMatching(new RegExp(`^another store copy is running into it \\(pid ${process.pid} on .*; if it is not running any more, remove .*copy\\.lock\\)$`)) as string });
    await first.release();
    await first.release();
    await claimed(await claimBlobStore(store)).release();
    expect(await readdir(store.location)).toEqual([]);
  });

  it('a lock file left by a process that is gone is not taken over: the refusal says the copy was interrupted', async () => {
    const file = path.join(await tempDir('tr-claim-'), 'registry.sqlite.copy.lock');
    // A pid no process has (beyond pid_max on Linux).
    await writeFile(file, JSON.stringify({ pid: 2 ** 22 + 1, host: hostname(), startedAt: '2024-01-01T00:00:00.000Z' }));
    const result = await claimLockFile(file);
    expect(result).toEqual({ busy: expect.stringMatching(/is no longer running: it was interrupted, .*remove .*registry\.sqlite\.copy\.lock/) as string });
  });

  it('a bucket: a second claim gives way while the first holds its marker, and leaves no marker of its own', async () => {
    const store = s3Store();
    const first = claimed(await claimBlobStore(store));
    const second = await claimBlobStore(store);
    expect(second).toEqual({ busy: expect.stringMatching(/^another store copy is running into it \(pid \d+ on .*; if it is not running any more, remove s3:\/\/blobs\/test-\d+\/copy-claims\/[0-9a-f-]+\.json\)$/) as string });
    const markers: string[] = [];
    for await (const { key } of store.list('copy-claims/')) markers.push(key);
    expect(markers).toHaveLength(1);
    await first.release();
    const third = claimed(await claimBlobStore(store));
    await third.release();
    for await (const { key } of store.list('')) throw new Error(`left behind: ${key}`);
  });
});
