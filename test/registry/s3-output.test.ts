import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { staticArchivePath } from '../../src/core/routes.js';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { buildRegistry } from '../../src/registry/build.js';
import { md5OfEtag, parseOutputTarget, parseS3Url, s3ClientConfig, S3Output, S3OutputError, S3_PART_BYTES, S3UrlError, s3UrlOf } from '../../src/registry/s3-output.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { version } from './memory-source.js';

const BUCKET = 'registry';
const IMMUTABLE = 'public, max-age=31536000, immutable';
const DOCUMENT = 'public, max-age=60, stale-while-revalidate=600';

/** A published version whose archive the build must publish beside registry.json. */
function withArchive(name: string, v: string, bytes: Buffer, integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`): SourceVersion {
  return version(
    name,
    v,
    {},
    {
      downloadUrl: staticArchivePath(name, v),
      integrity,
      size: bytes.length,
      openArchive: () => Promise.resolve({ stream: Readable.from([bytes.subarray(0, 7), bytes.subarray(7)]), size: bytes.length }),
    },
  );
}

/** A registry source over `list` (change it between builds); versions are copied, their openArchive kept. */
function memorySource(list: SourceVersion[]): RegistrySource & { list: SourceVersion[] } {
  const source = { list, versions: () => Promise.resolve(source.list.map((v) => ({ ...v, manifest: structuredClone(v.manifest) }))) };
  return source;
}

interface Sent {
  command: string;
  key?: string;
  /** The length of a request body sent as bytes (PutObject, UploadPart). */
  bodyBytes?: number;
}

let s3: FakeS3;
/** The client the builds use: every request it completes is recorded, in order. */
let client: S3Client;
/** A client of its own to look at the bucket (not recorded). */
let inspector: S3Client;
let sent: Sent[] = [];
/** Every command the client tried, answered or not (s3rver answers no AbortMultipartUpload). */
let tried: string[] = [];
let failWhen: ((request: Sent) => boolean) | undefined;

beforeAll(async () => {
  s3 = await startFakeS3([BUCKET, 'root-bucket']);
  const config = { ...s3ClientConfig({ endpoint: s3.endpoint, forcePathStyle: true }, {}), credentials: S3RVER_CREDENTIALS };
  client = new S3Client(config);
  inspector = new S3Client(config);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const { Key: key, Body: body } = args.input as { Key?: string; Body?: unknown };
      const request: Sent = { command: String(context.commandName), ...(key !== undefined ? { key } : {}), ...(body instanceof Uint8Array ? { bodyBytes: body.length } : {}) };
      tried.push(request.command);
      if (failWhen?.(request)) throw Object.assign(new Error('We encountered an internal error. Please try again.'), { name: 'InternalError', $metadata: { httpStatusCode: 500 } });
      const result = await next(args);
      sent.push(request);
      return result;
    },
    { step: 'initialize', name: 'recordRequests' },
  );
});

afterAll(async () => {
  client.destroy();
  inspector.destroy();
  await s3.close();
});

beforeEach(() => {
  sent = [];
  tried = [];
  failWhen = undefined;
});

let prefixes = 0;
/** A prefix of its own for each test: the tests share one bucket. */
const freshPrefix = (): string => `some/prefix-${++prefixes}`;

const puts = (): string[] => sent.filter((r) => r.command === 'PutObjectCommand').map((r) => r.key ?? '');

async function getObject(key: string) {
  const answer = await inspector.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return { ...answer, bytes: Buffer.from(await answer.Body!.transformToByteArray()) };
}

/** Every object under `prefix`, by name relative to it, with its ETag and LastModified. */
async function listed(prefix: string, bucket = BUCKET): Promise<Map<string, { etag: string; lastModified: number }>> {
  const objects = new Map<string, { etag: string; lastModified: number }>();
  let token: string | undefined;
  do {
    const page = await inspector.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) objects.set((o.Key ?? '').slice(prefix.length), { etag: o.ETag ?? '', lastModified: o.LastModified?.getTime() ?? 0 });
    token = page.NextContinuationToken;
  } while (token);
  return objects;
}

const output = (prefix: string) => new S3Output({ client, bucket: BUCKET, prefix });

describe('build-registry into an S3-compatible bucket (s3rver)', () => {
  it('writes every object with its Content-Type, Cache-Control and Content-Encoding; variants decompress to their file; registry.json is the last PUT', async () => {
    const prefix = freshPrefix();
    const archive = Buffer.from('a tar.gz archive of a@1.0.0, bytes as published');
    const source = memorySource([withArchive('a', '1.0.0', archive), version('a', '1.1.0'), version('b', '0.1.0', { stability: 'beta' })]);
    const result = await buildRegistry(source, { output: output(prefix) });

    expect(result.changed).toBe(true);
    const held = await listed(`${prefix}/`);
    expect([...held.keys()].sort()).toEqual([...result.files].sort());
    expect(result.files).toEqual(expect.arrayContaining(['archives/a/1.0.0.tgz', 'templates/a.json', 'templates/b.json', 'index.html.br', 'index.json.gz', 'registry.json', 'registry.json.gz', 'registry.json.br']));
    expect(puts().at(-1)).toBe(`${prefix}/registry.json`);
    expect(puts().slice(0, 1)).toEqual([`${prefix}/archives/a/1.0.0.tgz`]);

    const expectedType = (name: string): string =>
      name.endsWith('.tgz') ? 'application/gzip' : /\.html(\.gz|\.br)?$/.test(name) ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8';
    const bodies = new Map<string, Buffer>();
    for (const name of result.files) {
      const object = await getObject(`${prefix}/${name}`);
      bodies.set(name, object.bytes);
      expect({ name, type: object.ContentType, cache: object.CacheControl, encoding: object.ContentEncoding }).toEqual({
        name,
        type: expectedType(name),
        cache: name.startsWith('archives/') ? IMMUTABLE : DOCUMENT,
        encoding: name.endsWith('.gz') ? 'gzip' : name.endsWith('.br') ? 'br' : undefined,
      });
      // The listing's ETag is the MD5 of the bytes: what the next build compares against.
      expect(md5OfEtag(held.get(name)?.etag)).toBe(createHash('md5').update(object.bytes).digest('hex'));
    }
    for (const name of result.files.filter((n) => /\.(gz|br)$/.test(n))) {
      const base = bodies.get(name.slice(0, -3));
      const decoded = name.endsWith('.gz') ? gunzipSync(bodies.get(name)!) : brotliDecompressSync(bodies.get(name)!);
      expect(decoded.equals(base!), name).toBe(true);
    }
    expect(bodies.get('archives/a/1.0.0.tgz')).toEqual(archive);
    const document = JSON.parse(bodies.get('registry.json')!.toString('utf8')) as RegistryDocument;
    expect(document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['a@1.0.0', 'a@1.1.0', 'b@0.1.0']);
  });

  it('rewrites nothing on an unchanged second run, from a fresh output as a new process would', async () => {
    const prefix = freshPrefix();
    const source = memorySource([withArchive('a', '1.0.0', Buffer.from('archive')), version('b', '1.0.0')]);
    const first = await buildRegistry(source, { output: output(prefix), now: () => new Date('2026-05-01T00:00:00.000Z') });
    const before = await listed(`${prefix}/`);
    sent = [];

    const second = await buildRegistry(source, { output: output(prefix), now: () => new Date('2026-06-01T00:00:00.000Z') });
    expect(second.changed).toBe(false);
    expect(second.written).toEqual([]);
    expect(second.removed).toEqual([]);
    expect(second.etag).toBe(first.etag);
    expect(second.document.lastUpdated).toBe('2026-05-01T00:00:00.000Z');
    expect(sent.filter((r) => r.command !== 'ListObjectsV2Command' && r.command !== 'GetObjectCommand')).toEqual([]);
    // It looked at the listing and the small index, not at every file.
    expect(sent.filter((r) => r.command === 'GetObjectCommand').map((r) => r.key)).toEqual([`${prefix}/index.json`]);
    expect(await listed(`${prefix}/`)).toEqual(before);
  });

  it('after a new version rewrites only its template file, the catalog, index.json and registry.json (with variants), registry.json last', async () => {
    const prefix = freshPrefix();
    const source = memorySource([version('a', '1.0.0'), version('b', '1.0.0')]);
    await buildRegistry(source, { output: output(prefix) });
    sent = [];

    source.list.push(version('b', '1.1.0'));
    const result = await buildRegistry(source, { output: output(prefix) });
    const variants = (name: string) => [name, `${name}.gz`, `${name}.br`];
    // The catalog holds the first page of results, where b's card now shows 1.1.0.
    expect([...result.written].sort()).toEqual(['templates/b.json', ...variants('index.html'), ...variants('index.json'), ...variants('registry.json')].sort());
    expect(puts().map((key) => key.slice(prefix.length + 1)).sort()).toEqual([...result.written].sort());
    expect(puts().at(-1)).toBe(`${prefix}/registry.json`);
    expect(puts().indexOf(`${prefix}/index.json`)).toBeGreaterThan(puts().indexOf(`${prefix}/templates/b.json`));
    const document = JSON.parse((await getObject(`${prefix}/registry.json`)).bytes.toString('utf8')) as RegistryDocument;
    expect(document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['a@1.0.0', 'b@1.0.0', 'b@1.1.0']);
  });

  it('deletes the objects of a template that is gone, after registry.json stopped naming it', async () => {
    const prefix = freshPrefix();
    const source = memorySource([version('a', '1.0.0'), version('b', '1.0.0')]);
    await buildRegistry(source, { output: output(prefix) });
    sent = [];

    source.list = [version('a', '1.0.0')];
    const result = await buildRegistry(source, { output: output(prefix) });
    expect(result.removed).toEqual(['templates/b.json']);
    expect((await listed(`${prefix}/`)).has('templates/b.json')).toBe(false);
    const commands = sent.map((r) => r.command);
    expect(commands.indexOf('DeleteObjectsCommand')).toBeGreaterThan(sent.findIndex((r) => r.key === `${prefix}/registry.json`));
  });

  it('leaves the previous registry.json in place when a PUT fails half-way, and the next build completes', async () => {
    const prefix = freshPrefix();
    const source = memorySource([version('a', '1.0.0')]);
    await buildRegistry(source, { output: output(prefix) });
    const before = await getObject(`${prefix}/registry.json`);
    sent = [];

    source.list.push(version('b', '1.0.0'));
    failWhen = (r) => r.command === 'PutObjectCommand' && r.key === `${prefix}/index.json.gz`;
    const failed = buildRegistry(source, { output: output(prefix) });
    await expect(failed).rejects.toThrow(S3OutputError);
    await expect(failed).rejects.toThrow(`PutObject s3://${BUCKET}/${prefix}/index.json.gz failed: InternalError: We encountered an internal error. Please try again. (HTTP 500)`);
    expect(puts()).toContain(`${prefix}/templates/b.json`);
    expect(puts()).not.toContain(`${prefix}/registry.json`);
    const after = await getObject(`${prefix}/registry.json`);
    expect(after.bytes.equals(before.bytes)).toBe(true);
    expect(after.ETag).toBe(before.ETag);

    failWhen = undefined;
    const retried = await buildRegistry(source, { output: output(prefix) });
    expect(retried.changed).toBe(true);
    expect(retried.written).not.toContain('templates/b.json'); // already uploaded by the failed build
    const document = JSON.parse((await getObject(`${prefix}/registry.json`)).bytes.toString('utf8')) as RegistryDocument;
    expect(document.templates.map((t) => t.id)).toEqual(['a', 'b']);
  });

  it('never uploads an archive that does not match its integrity', async () => {
    const prefix = freshPrefix();
    const source = memorySource([withArchive('a', '1.0.0', Buffer.from('tampered bytes'), `sha512-${createHash('sha512').update('the published bytes').digest('base64')}`)]);
    // The template whose archive is not what it claims is left out (reported); nothing names the archive.
    const result = await buildRegistry(source, { output: output(prefix) });
    expect(result.failed).toEqual([{ id: 'a', kept: false, message: expect.stringMatching(/does not match its integrity/) }]);
    expect(result.document.templates).toEqual([]);
    expect(puts().filter((key) => key.includes('archives/'))).toEqual([]);
    expect([...(await listed(`${prefix}/`)).keys()].filter((key) => key.includes('archives/'))).toEqual([]);
  });

  it('refuses an archive whose length differs from the size its source gives, before uploading it', async () => {
    const prefix = freshPrefix();
    const out = output(prefix);
    const bytes = Buffer.from('twelve bytes');
    let verified = false;
    await expect(out.putArchive({ name: 'archives/a/1.0.0.tgz', size: 99, stream: Readable.from([bytes]), verify: () => void (verified = true) })).rejects.toThrow(
      /archives\/a\/1\.0\.0\.tgz is 12 bytes, its store says 99/,
    );
    expect(verified).toBe(false);
    expect(puts()).toEqual([]);
  });
});

describe('S3Output archives larger than one part', () => {
  /** `size` bytes (a repeating pattern, so every part differs from the next) streamed in 64 KiB chunks. */
  const bigArchive = (size: number) => {
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) bytes.writeUInt32BE(i, Math.min(i, size - 4));
    const chunks = Array.from({ length: Math.ceil(size / 65536) }, (_, i) => bytes.subarray(i * 65536, (i + 1) * 65536));
    return { bytes, stream: () => Readable.from(chunks) };
  };

  it('streams a large archive as a multipart upload, never more than one part in a request body, the same bytes in the bucket', async () => {
    const prefix = freshPrefix();
    const size = 2 * S3_PART_BYTES + 12345;
    const { bytes, stream } = bigArchive(size);
    let verified = false;
    await output(prefix).putArchive({ name: 'archives/big/1.0.0.tgz', size, stream: stream(), verify: () => void (verified = true) });
    expect(verified).toBe(true);
    const key = `${prefix}/archives/big/1.0.0.tgz`;
    expect(sent.filter((r) => r.key === key).map((r) => r.command)).toEqual([
      'CreateMultipartUploadCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'CompleteMultipartUploadCommand',
    ]);
    // The server's static copy holds one part of an archive at a time, not the archive.
    expect(sent.filter((r) => r.command === 'UploadPartCommand').map((r) => r.bodyBytes)).toEqual([S3_PART_BYTES, S3_PART_BYTES, 12345]);
    const stored = await getObject(key);
    expect(stored.bytes.equals(bytes)).toBe(true);
    expect(stored.CacheControl).toBe(IMMUTABLE);
    expect(stored.ContentType).toBe('application/gzip');
  });

  it('a fresh build neither reads back nor uploads again a large archive already in the bucket (its multipart ETag vouches for it)', async () => {
    const prefix = freshPrefix();
    const { bytes } = bigArchive(S3_PART_BYTES + 5);
    const source = memorySource([withArchive('big', '1.0.0', bytes)]);
    await buildRegistry(source, { output: output(prefix) });
    const key = `${prefix}/${staticArchivePath('big', '1.0.0')}`;
    expect(sent.filter((r) => r.key === key).map((r) => r.command)).toContain('CompleteMultipartUploadCommand');
    sent = [];
    // s3rver lists a multipart object with the MD5 of its bytes; S3 lists `"<md5 of the parts' MD5s>-<parts>"`, as here.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (context.commandName === 'ListObjectsV2Command') {
          for (const object of (result.output as { Contents?: { Key?: string; ETag?: string }[] }).Contents ?? []) {
            if (object.Key === key) object.ETag = `"${createHash('md5').update(object.ETag ?? '').digest('hex')}-2"`;
          }
        }
        return result;
      },
      { step: 'initialize', name: 'multipartEtags' },
    );
    try {
      // As a new process would: a fresh output, which knows the bucket only from its listing.
      const again = await buildRegistry(source, { output: output(prefix) });
      expect(again.failed).toEqual([]);
      expect(again.document.templates.map((t) => t.id)).toEqual(['big']);
      expect(sent.filter((r) => r.key === key)).toEqual([]);
    } finally {
      client.middlewareStack.remove('multipartEtags');
    }
  });

  it('never makes a large archive visible when its check fails after the last part, and aborts the upload', async () => {
    const prefix = freshPrefix();
    const size = S3_PART_BYTES + 1;
    const { stream } = bigArchive(size);
    const check = new Error('the archive of big@1.0.0 in the store does not match its integrity');
    await expect(
      output(prefix).putArchive({
        name: 'archives/big/1.0.0.tgz',
        size,
        stream: stream(),
        verify: () => {
          throw check;
        },
      }),
    ).rejects.toBe(check);
    expect(tried).toContain('AbortMultipartUploadCommand');
    expect(tried).not.toContain('CompleteMultipartUploadCommand');
    expect([...(await listed(`${prefix}/`)).keys()]).toEqual([]);
  });

  it('refuses a large archive longer than the size its source gives, before it is complete', async () => {
    const prefix = freshPrefix();
    const { stream } = bigArchive(S3_PART_BYTES + 100);
    let verified = false;
    await expect(output(prefix).putArchive({ name: 'archives/big/1.0.0.tgz', size: S3_PART_BYTES + 10, stream: stream(), verify: () => void (verified = true) })).rejects.toThrow(
      /archives\/big\/1\.0\.0\.tgz is \d+ bytes, its store says \d+; nothing was published/,
    );
    expect(verified).toBe(false);
    expect(sent.map((r) => r.command)).not.toContain('CompleteMultipartUploadCommand');
    expect([...(await listed(`${prefix}/`)).keys()]).toEqual([]);
  });
});

describe('S3Output', () => {
  it('knows the MD5 of single-part objects, reads a missing object as undefined and removes objects, at the bucket root', async () => {
    const out = new S3Output({ client, bucket: 'root-bucket', prefix: '' });
    expect(out.location).toBe('s3://root-bucket');
    const files = ['registry.json', 'templates/a.json', 'templates/b.json', 'index.json'];
    for (const name of files) await out.put({ name, data: Buffer.from(`bytes of ${name}`), contentType: 'application/json; charset=utf-8', cacheControl: DOCUMENT });

    const held = await out.inventory();
    expect([...held.keys()].sort()).toEqual([...files].sort());
    for (const name of files) expect(held.get(name)).toEqual({ size: `bytes of ${name}`.length, digest: createHash('md5').update(`bytes of ${name}`).digest('hex') });
    expect((await out.read('templates/a.json'))?.toString()).toBe('bytes of templates/a.json');
    expect(await out.read('templates/nope.json')).toBeUndefined();

    sent = [];
    await out.remove(['templates/a.json', 'templates/never-there.json']);
    await out.remove([]);
    expect(sent.map((r) => r.command)).toEqual(['DeleteObjectsCommand']);
    expect([...(await out.inventory()).keys()].sort()).toEqual(['index.json', 'registry.json', 'templates/b.json']);
    await inspector.send(new DeleteObjectsCommand({ Bucket: 'root-bucket', Delete: { Objects: files.map((Key) => ({ Key })) } }));
  });

  // s3rver cannot page a listing on Node 20 (its continuation tokens use DES, which OpenSSL 3 dropped):
  // the paging is checked against a client that answers pages the way S3 documents them.
  it('lists page after page under its prefix, skipping folder markers, and takes no multipart ETag for an MD5', async () => {
    const pages = [
      { Contents: [{ Key: 'p/registry.json', Size: 3, ETag: '"0123456789abcdef0123456789abcdef"' }, { Key: 'p/templates/', Size: 0, ETag: '"d41d8cd98f00b204e9800998ecf8427e"' }], IsTruncated: true, NextContinuationToken: 'page-2' },
      { Contents: [{ Key: 'p/archives/a/1.0.0.tgz', Size: 9, ETag: '"0123456789abcdef0123456789abcdef-2"' }], IsTruncated: false },
    ];
    const inputs: Record<string, unknown>[] = [];
    const paging = {
      send: (command: { input: Record<string, unknown> }) => {
        inputs.push(command.input);
        return Promise.resolve(pages[inputs.length - 1]);
      },
    } as unknown as S3Client;
    const held = await new S3Output({ client: paging, bucket: 'registry', prefix: 'p', listPageSize: 2 }).inventory();
    expect(inputs).toEqual([
      { Bucket: 'registry', Prefix: 'p/', MaxKeys: 2 },
      { Bucket: 'registry', Prefix: 'p/', MaxKeys: 2, ContinuationToken: 'page-2' },
    ]);
    expect(held).toEqual(
      new Map([
        ['registry.json', { size: 3, digest: '0123456789abcdef0123456789abcdef' }],
        // A multipart ETag is no MD5: only the store's own checksum (a large archive's upload completes after its check).
        ['archives/a/1.0.0.tgz', { size: 9, checksummed: true }],
      ]),
    );

    const endless = { send: () => Promise.resolve({ Contents: [], IsTruncated: true }) } as unknown as S3Client;
    await expect(new S3Output({ client: endless, bucket: 'registry', prefix: '' }).inventory()).rejects.toThrow(/gave no continuation token/);
  });

  it('names the bucket and the object when the store refuses a request', async () => {
    const out = new S3Output({ client, bucket: 'no-such-bucket', prefix: 'x/' });
    await expect(out.inventory()).rejects.toThrow(/^s3:\/\/no-such-bucket\/x: ListObjectsV2 s3:\/\/no-such-bucket\/x\/ failed: NoSuchBucket/);
  });

  it('takes only plain MD5 ETags as fingerprints', () => {
    expect(md5OfEtag('"0123456789abcdef0123456789ABCDEF"')).toBe('0123456789abcdef0123456789abcdef');
    expect(md5OfEtag('"0123456789abcdef0123456789abcdef-3"')).toBeUndefined(); // multipart
    expect(md5OfEtag('W/"0123456789abcdef0123456789abcdef"')).toBeUndefined();
    expect(md5OfEtag(undefined)).toBeUndefined();
  });
});

describe('parseS3Url', () => {
  it('reads the bucket and the prefix', () => {
    expect(parseS3Url('s3://registry/some/prefix')).toEqual({ bucket: 'registry', prefix: 'some/prefix/' });
    expect(parseS3Url('s3://registry/some/prefix/')).toEqual({ bucket: 'registry', prefix: 'some/prefix/' });
    expect(parseS3Url('s3://my.bucket-1')).toEqual({ bucket: 'my.bucket-1', prefix: '' });
    expect(parseS3Url('s3://my.bucket-1/')).toEqual({ bucket: 'my.bucket-1', prefix: '' });
    expect(s3UrlOf({ bucket: 'registry', prefix: 'some/prefix/' })).toBe('s3://registry/some/prefix');
    expect(s3UrlOf({ bucket: 'registry', prefix: '' })).toBe('s3://registry');
  });

  it.each([
    ['s3://', /--out: must name a bucket/],
    ['s3:///prefix', /--out: must name a bucket/],
    ['s3://Registry/x', /--out: bucket "Registry" must be 3 to 63 lowercase letters/],
    ['s3://my_bucket/x', /bucket "my_bucket" must be/],
    ['s3://ab/x', /bucket "ab" must be/],
    ['s3://192.168.1.1/x', /bucket "192\.168\.1\.1" must be/],
    ['s3://registry/x?versionId=1', /--out: must not have a query string or a fragment/],
    ['s3://registry/x#top', /must not have a query string or a fragment/],
    ['s3://registry:9000/x', /must not have a port/],
    ['s3://registry//x', /must not have empty path segments/],
    ['s3://registry/a/../b', /must not have "\." or "\.\." path segments/],
    ['s3://registry/a b', /must not contain spaces or control characters/],
    ['s3://registry/caf%C3%A9', /prefix segment "caf%C3%A9" may only hold/],
    ['https://registry/x', /--out: must be an s3:\/\/bucket\/prefix URL/],
  ])('refuses %s naming the argument', (url, message) => {
    expect(() => parseS3Url(url, '--out')).toThrow(S3UrlError);
    expect(() => parseS3Url(url, '--out')).toThrow(message);
  });

  it('does not echo credentials put in the URL', () => {
    expect(() => parseS3Url('s3://AKIAEXAMPLE:secret@registry/x', '--out')).toThrow(/^--out: must not hold credentials/);
    try {
      parseS3Url('s3://AKIAEXAMPLE:secret@registry/x', '--out');
    } catch (error) {
      expect((error as Error).message).not.toContain('secret');
    }
  });

  it('tells a folder from a bucket, and refuses other URL schemes', () => {
    expect(parseOutputTarget('public', '--out')).toEqual({ kind: 'folder', dir: 'public' });
    expect(parseOutputTarget('./s3:/x', '--out')).toEqual({ kind: 'folder', dir: './s3:/x' });
    expect(parseOutputTarget('S3://registry/p', '--out')).toEqual({ kind: 's3', bucket: 'registry', prefix: 'p/' });
    expect(() => parseOutputTarget('gs://registry/p', '--out')).toThrow(/^--out: must be a folder or an s3:\/\/bucket\/prefix URL/);
  });
});

describe('s3ClientConfig', () => {
  it('takes the endpoint from the setting, then AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, and defaults the region with one', () => {
    expect(s3ClientConfig({ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true }, { AWS_ENDPOINT_URL: 'https://ignored.example' })).toMatchObject({
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      region: 'us-east-1',
    });
    expect(s3ClientConfig({}, { AWS_ENDPOINT_URL: 'https://acct.r2.cloudflarestorage.com', AWS_REGION: 'auto' })).toMatchObject({
      endpoint: 'https://acct.r2.cloudflarestorage.com',
      region: 'auto',
      forcePathStyle: false,
    });
    expect(s3ClientConfig({}, { AWS_ENDPOINT_URL: 'https://a.example', AWS_ENDPOINT_URL_S3: 'https://s3.example', AWS_DEFAULT_REGION: 'eu-west-1' })).toMatchObject({
      endpoint: 'https://s3.example',
      region: 'eu-west-1',
    });
  });

  it('leaves AWS S3 to the SDK: no endpoint, the region from the environment or the profile, redirects across regions followed', () => {
    const config = s3ClientConfig({}, {});
    expect(config.endpoint).toBeUndefined();
    expect(config.region).toBeUndefined();
    expect(config.followRegionRedirects).toBe(true);
    expect(s3ClientConfig({}, { AWS_REGION: 'eu-central-1' }).region).toBe('eu-central-1');
  });

  it('sends only the checksums an operation requires, unless the environment says otherwise', () => {
    expect(s3ClientConfig({}, {})).toMatchObject({ requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
    const chosen = s3ClientConfig({}, { AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_SUPPORTED', AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_SUPPORTED' });
    expect(chosen.requestChecksumCalculation).toBeUndefined();
    expect(chosen.responseChecksumValidation).toBeUndefined();
  });

  it('refuses an endpoint that is not an http(s) URL, naming where it came from', () => {
    expect(() => s3ClientConfig({}, { AWS_ENDPOINT_URL: 'minio:9000' })).toThrow(/^AWS_ENDPOINT_URL must be an http\(s\) URL/);
    expect(() => s3ClientConfig({ endpoint: 'ftp://x' }, {})).toThrow(S3UrlError);
    expect(() => s3ClientConfig({ endpoint: 'https://key:secret@r2.example' }, {})).toThrow(/must not hold credentials/);
  });
});
