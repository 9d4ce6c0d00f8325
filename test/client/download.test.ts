import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { createGzip, gzipSync } from 'node:zlib';

import { create as tarCreate, Header, type HeaderData } from 'tar';
import { beforeAll, describe, expect, it, vi } from 'vitest';

import { DownloadError, downloadTemplate, IntegrityError, RegistryClient, UnsafeArchiveError } from '../../src/client/index.js';
import type { TemplateEntry } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { templateEntry } from '../helpers/builders.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const MiB = 1024 * 1024;

/**
 * The size of every chunk the archive scanner's gunzip produced: how far a refused archive was
 * decompressed before it was stopped (what the gzip-bomb tests check, instead of the time it took).
 */
const inflated = vi.hoisted((): number[] => []);
vi.mock('node:zlib', async (importOriginal) => {
  const zlib = await importOriginal<typeof import('node:zlib')>();
  return {
    ...zlib,
    createGunzip: (options?: import('node:zlib').ZlibOptions) => {
      const gunzip = zlib.createGunzip(options);
      const push = gunzip.push.bind(gunzip);
      gunzip.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
        if (Buffer.isBuffer(chunk)) inflated.push(chunk.length);
        return push(chunk, encoding);
      };
      return gunzip;
    },
  };
});
const sum = (sizes: readonly number[]): number => sizes.reduce((total, size) => total + size, 0);
/** What gunzip may decompress past the point where the scan refuses: its buffered chunks, well under 1 MiB. */
const SLACK = MiB;

interface RawEntry {
  header: HeaderData;
  body?: Buffer | string;
}

/** One 512-byte tar header, written by hand so that any path, link or type can be tested. */
function headerBlock(data: HeaderData): Buffer {
  const block = Buffer.alloc(512);
  new Header({ mode: 0o644, uid: 0, gid: 0, size: 0, mtime: new Date('2026-01-01T00:00:00Z'), type: 'File', ...data }).encode(block, 0);
  return block;
}

function rawTar(entries: readonly RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const { header, body } of entries) {
    const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
    blocks.push(headerBlock({ ...header, size: header.type === undefined || header.type === 'File' ? bytes.length : 0 }));
    if (bytes.length > 0) blocks.push(bytes, Buffer.alloc((512 - (bytes.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

const sri = (bytes: Buffer): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

interface Served {
  fetch: typeof globalThis.fetch;
  calls: string[];
}

const urlOf = (input: string | URL | Request): string => (typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);

function serve(bytes: Buffer, init: ResponseInit = {}): Served {
  const served: Served = {
    calls: [],
    fetch: (input) => {
      served.calls.push(urlOf(input));
      return Promise.resolve(new Response(bytes, { status: 200, headers: { 'content-type': 'application/gzip', 'content-length': String(bytes.length) }, ...init }));
    },
  };
  return served;
}

function entryFor(bytes: Buffer, extra: Partial<TemplateEntry> = {}): TemplateEntry {
  return templateEntry('demo', { downloadUrl: 'https://registry.example.test/demo-1.0.0.tgz', integrity: sri(bytes), ...extra });
}

async function listTree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const item of await readdir(dir, { withFileTypes: true })) {
    const relative = prefix + item.name;
    if (item.isDirectory()) out.push(...(await listTree(path.join(dir, item.name), `${relative}/`)));
    else out.push(relative);
  }
  return out.sort();
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

/** Refuses `bytes`, checks the error, and that `dest` (missing before) is still missing. */
async function expectRefused(bytes: Buffer, pattern: RegExp, entry?: string, limits = {}): Promise<UnsafeArchiveError> {
  const root = await tempDir('tr-dl-');
  const dest = path.join(root, 'out', 'dest');
  const error = await downloadTemplate(entryFor(bytes), dest, { fetch: serve(bytes).fetch, limits }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(UnsafeArchiveError);
  expect((error as Error).message).toMatch(pattern);
  if (entry !== undefined) expect((error as UnsafeArchiveError).entry).toBe(entry);
  expect(await exists(dest)).toBe(false);
  expect(await readdir(root)).toEqual([]);
  return error as UnsafeArchiveError;
}

describe('downloadTemplate: good archives', () => {
  it('unpacks a package/ archive with the top folder stripped, normalising modes', async () => {
    const bytes = rawTar([
      { header: { path: 'package/', type: 'Directory', mode: 0o777 } },
      { header: { path: 'package/template.json' }, body: '{"name":"demo"}\n' },
      { header: { path: 'package/bin/run.sh', mode: 0o4777 }, body: '#!/bin/sh\necho hi\n' },
      { header: { path: 'package/docs/a.md', mode: 0o666 }, body: '# A\n' },
    ]);
    const dest = path.join(await tempDir('tr-dl-'), 'out');
    const progress: [number, number | undefined][] = [];
    const result = await downloadTemplate(entryFor(bytes, { size: bytes.length }), dest, {
      fetch: serve(bytes).fetch,
      onProgress: (received, total) => progress.push([received, total]),
    });

    expect(result).toEqual({
      dir: dest,
      files: ['bin/run.sh', 'docs/a.md', 'template.json'],
      integrity: sri(bytes),
      size: bytes.length,
      // The entry names no attestation: the default `warn` check finds none.
      provenance: { status: 'unsigned' },
    });
    expect(await listTree(dest)).toEqual(result.files);
    expect(await readFile(path.join(dest, 'template.json'), 'utf8')).toBe('{"name":"demo"}\n');
    const run = (await stat(path.join(dest, 'bin/run.sh'))).mode & 0o7777;
    expect(run & 0o7000).toBe(0); // no setuid
    expect(run & 0o100).toBe(0o100); // still executable
    expect((await stat(path.join(dest, 'docs/a.md'))).mode & 0o7777 & 0o111).toBe(0);
    expect((await stat(path.join(dest, 'docs/a.md'))).mode & 0o002).toBe(0);
    expect(progress.at(-1)).toEqual([bytes.length, bytes.length]);
  });

  it('unpacks an archive with files at its root as is, into an existing empty folder, verified by sha256 alone', async () => {
    const source = await tempDir('tr-src-');
    await writeTree(source, { 'template.json': '{}', 'template/README.md': '# x\n', 'README.md': 'r' });
    const bytes = await buffer(tarCreate({ gzip: true, cwd: source, portable: true }, ['template.json', 'template', 'README.md']));
    const dest = await tempDir('tr-dl-');
    const { integrity: _ignored, ...rest } = entryFor(bytes);
    const result = await downloadTemplate({ ...rest, sha256: sha256(bytes) }, dest, { fetch: serve(bytes).fetch });
    expect(result.files).toEqual(['README.md', 'template.json', 'template/README.md']);
    expect(await listTree(dest)).toEqual(result.files);
  });

  it('refuses a missing or non-empty destination before downloading', async () => {
    const bytes = rawTar([{ header: { path: 'a.txt' }, body: 'a' }]);
    const dest = await tempDir('tr-dl-');
    await writeFile(path.join(dest, 'keep.txt'), 'mine');
    const served = serve(bytes);
    await expect(downloadTemplate(entryFor(bytes), dest, { fetch: served.fetch })).rejects.toThrow(/is not empty/);
    expect(served.calls).toEqual([]);
    expect(await readdir(dest)).toEqual(['keep.txt']);
  });
});

describe('downloadTemplate: a failed unpack', () => {
  /**
   * Downloads an archive that passes every check, but whose unpack fails: while it downloads,
   * another program puts a non-empty folder where the archive's `b.txt` goes. Runs with a fresh
   * TMPDIR, to see the temp download folder go.
   */
  async function unpackFailing(dest: string): Promise<{ error: unknown; tmp: string }> {
    const bytes = rawTar([
      { header: { path: 'package/a.txt' }, body: 'a\n' },
      { header: { path: 'package/b.txt' }, body: 'b\n' },
      { header: { path: 'package/c/d.txt' }, body: 'd\n' },
    ]);
    const tmp = await tempDir('tr-tmpdir-');
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const error = await downloadTemplate(entryFor(bytes), dest, {
        fetch: serve(bytes).fetch,
        onProgress: () => {
          mkdirSync(path.join(dest, 'b.txt'), { recursive: true });
          writeFileSync(path.join(dest, 'b.txt', 'theirs.txt'), 'not from the archive');
        },
      }).catch((e: unknown) => e);
      return { error, tmp };
    } finally {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    }
  }

  it('removes the destination it created, and the temp download folder', async () => {
    const root = await tempDir('tr-dl-');
    const dest = path.join(root, 'out');
    const { error, tmp } = await unpackFailing(dest);
    expect(error).toBeInstanceOf(UnsafeArchiveError);
    expect((error as Error).message).toMatch(/^unpacking demo@1\.0\.0 failed: /);
    expect(await exists(dest)).toBe(false);
    expect(await readdir(root)).toEqual([]);
    expect(await readdir(tmp)).toEqual([]);
  });

  it('empties, and keeps, a destination that was there (empty) before', async () => {
    const dest = await tempDir('tr-dl-');
    const { error, tmp } = await unpackFailing(dest);
    expect(error).toBeInstanceOf(UnsafeArchiveError);
    expect((await stat(dest)).isDirectory()).toBe(true);
    expect(await readdir(dest)).toEqual([]);
    expect(await readdir(tmp)).toEqual([]);
  });
});

describe('downloadTemplate: verification', () => {
  it('refuses an integrity mismatch, naming expected and actual, with nothing extracted', async () => {
    const bytes = rawTar([{ header: { path: 'a.txt' }, body: 'a' }]);
    const other = rawTar([{ header: { path: 'b.txt' }, body: 'b' }]);
    const dest = path.join(await tempDir('tr-dl-'), 'dest');
    const error = await downloadTemplate(entryFor(other), dest, { fetch: serve(bytes).fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect((error as IntegrityError).expected).toBe(sri(other));
    expect((error as IntegrityError).actual).toBe(sri(bytes));
    expect((error as Error).message).toContain(sri(other));
    expect((error as Error).message).toContain(sri(bytes));
    expect(await exists(dest)).toBe(false);
  });

  it('refuses a sha256 or size mismatch', async () => {
    const bytes = rawTar([{ header: { path: 'a.txt' }, body: 'a' }]);
    const dest = path.join(await tempDir('tr-dl-'), 'dest');
    const base = { id: 'demo', version: '1.0.0', downloadUrl: 'https://x.test/a.tgz' };
    await expect(downloadTemplate({ ...base, sha256: '0'.repeat(64) }, dest, { fetch: serve(bytes).fetch })).rejects.toThrow(
      new RegExp(`sha256 mismatch for demo@1.0.0: expected 0{64}, got ${sha256(bytes)}`),
    );
    await expect(downloadTemplate({ ...base, integrity: sri(bytes), size: bytes.length + 1 }, dest, { fetch: serve(bytes).fetch })).rejects.toBeInstanceOf(IntegrityError);
    expect(await exists(dest)).toBe(false);
  });

  it('refuses an entry with neither integrity nor sha256 unless allowUnverified', async () => {
    const bytes = rawTar([{ header: { path: 'a.txt' }, body: 'a' }]);
    const dest = path.join(await tempDir('tr-dl-'), 'dest');
    const base = { id: 'demo', version: '1.0.0', downloadUrl: 'https://x.test/a.tgz' };
    const served = serve(bytes);
    await expect(downloadTemplate(base, dest, { fetch: served.fetch })).rejects.toThrow(/neither integrity nor sha256/);
    expect(served.calls).toEqual([]);
    const result = await downloadTemplate(base, dest, { fetch: served.fetch, allowUnverified: true });
    expect(result.files).toEqual(['a.txt']);
    expect(result.integrity).toBe(sri(bytes));
  });

  it('reports an HTTP error, and stops a download past maxBytes without reading the rest', async () => {
    const dest = path.join(await tempDir('tr-dl-'), 'dest');
    const notFound: typeof globalThis.fetch = () => Promise.resolve(new Response('no', { status: 404, statusText: 'Not Found' }));
    const error = await downloadTemplate(entryFor(Buffer.from('x')), dest, { fetch: notFound }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DownloadError);
    expect((error as DownloadError).status).toBe(404);
    expect((error as Error).message).toMatch(/demo-1\.0\.0\.tgz failed: HTTP 404 Not Found/);

    let pulled = 0;
    const endless: typeof globalThis.fetch = () =>
      Promise.resolve(
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulled++;
              controller.enqueue(new Uint8Array(64 * 1024));
            },
          }),
        ),
      );
    await expect(downloadTemplate(entryFor(Buffer.from('x')), dest, { fetch: endless, limits: { maxBytes: MiB } })).rejects.toThrow(
      /larger than the limit of 1048576 bytes/,
    );
    expect(pulled).toBeLessThan(40);
    await expect(downloadTemplate(entryFor(Buffer.alloc(10)), dest, { fetch: serve(Buffer.alloc(2 * MiB)).fetch, limits: { maxBytes: MiB } })).rejects.toThrow(
      /2097152 bytes, more than the limit/,
    );
    expect(await exists(dest)).toBe(false);
  });
});

describe('downloadTemplate: unsafe archives', () => {
  it('refuses ../evil', async () => {
    await expectRefused(rawTar([{ header: { path: 'ok.txt' }, body: 'ok' }, { header: { path: '../evil' }, body: 'x' }]), /"\.\.\/evil" has an unsafe path/, '../evil');
    await expectRefused(rawTar([{ header: { path: 'a/../../evil' }, body: 'x' }]), /unsafe path/, 'a/../../evil');
  });

  it('refuses /etc/passwd', async () => {
    await expectRefused(rawTar([{ header: { path: '/etc/passwd' }, body: 'root::0:0::/:/bin/sh\n' }]), /"\/etc\/passwd" has an unsafe path/, '/etc/passwd');
  });

  it('refuses every link, wherever it points: archives hold regular files and folders only', async () => {
    const links: RawEntry[] = [
      { header: { path: 'package/docs/link.md', type: 'SymbolicLink', linkpath: 'a.md' } },
      { header: { path: 'sub/link', type: 'SymbolicLink', linkpath: '../../outside' } },
      { header: { path: 'abs', type: 'SymbolicLink', linkpath: '/etc/passwd' } },
      { header: { path: 'hl', type: 'Link', linkpath: '../../etc/passwd' } },
      { header: { path: 'package/copy.json', type: 'Link', linkpath: 'package/template.json' } },
    ];
    for (const link of links) {
      const kind = String(link.header.type);
      const linkPath = link.header.path ?? '';
      await expectRefused(
        rawTar([{ header: { path: 'package/template.json' }, body: '{}' }, link]),
        new RegExp(`"${linkPath.replace(/[/.]/g, '\\$&')}" is a ${kind}, not a file or folder`),
        linkPath,
      );
    }
  });

  it('refuses character devices, block devices and fifos', async () => {
    await expectRefused(
      rawTar([{ header: { path: 'a.txt' }, body: 'a' }, { header: { path: 'null', type: 'CharacterDevice', devmaj: 1, devmin: 3 } }]),
      /"null" is a CharacterDevice/,
      'null',
    );
    await expectRefused(rawTar([{ header: { path: 'disk', type: 'BlockDevice', devmaj: 8, devmin: 0 } }]), /BlockDevice/, 'disk');
    await expectRefused(rawTar([{ header: { path: 'pipe', type: 'FIFO' } }]), /FIFO/, 'pipe');
  });

  it('refuses too many entries', async () => {
    const entries = Array.from({ length: 6 }, (_, i) => ({ header: { path: `f${i}.txt` }, body: String(i) }));
    await expectRefused(rawTar(entries), /more than 5 entries/, 'f5.txt', { maxEntries: 5 });
  });

  it('refuses duplicates, non-gzip data and empty archives', async () => {
    await expectRefused(rawTar([{ header: { path: 'x' }, body: 'y' }, { header: { path: 'x' }, body: 'z' }]), /"x" appears more than once/, 'x');
    await expectRefused(Buffer.from('this is not an archive'), /not a gzip-compressed tar archive/);
    await expectRefused(rawTar([{ header: { path: 'only-dir/', type: 'Directory' } }]), /holds no files/);
  });

  describe('gzip bombs', () => {
    let zeros: Buffer;
    let bigFile: Buffer;

    /** 200 MiB of zeros after `head`, gzip-compressed as a stream (about 200 KiB). */
    async function bomb(head: Buffer): Promise<Buffer> {
      const chunk = Buffer.alloc(MiB);
      let sent = 0;
      const source = new Readable({
        read() {
          if (sent === 0 && head.length > 0) this.push(head);
          if (sent === 200) this.push(null);
          else {
            sent++;
            this.push(chunk);
          }
        },
      });
      return buffer(source.pipe(createGzip({ level: 6 })));
    }

    beforeAll(async () => {
      zeros = await bomb(Buffer.alloc(0));
      bigFile = await bomb(headerBlock({ path: 'big.bin', size: 200 * MiB }));
    }, 60_000);

    it('stops 200 MiB of compressed zeros at the limit (zero blocks end a tar: the rest is trailing data)', async () => {
      expect(zeros.length).toBeLessThan(MiB);
      inflated.splice(0);
      await expectRefused(zeros, /more than 1048576 bytes after its end/, undefined, { maxUnpackedBytes: 10 * MiB });
      // Decompression stopped just past the 1 MiB of trailing data allowed, far from the 200 MiB.
      expect(sum(inflated)).toBeLessThan(1 * MiB + SLACK);
      inflated.splice(0);
      await expectRefused(zeros, /unpacks to more than 524288 bytes/, undefined, { maxUnpackedBytes: 512 * 1024 });
      expect(sum(inflated)).toBeLessThan(512 * 1024 + SLACK);
    });

    it('counts unpacked bytes as they stream: 40,000 empty files are 20 MiB of headers', async () => {
      const archive = rawTar(Array.from({ length: 40_000 }, (_, i) => ({ header: { path: `f/${i}` } })));
      inflated.splice(0);
      await expectRefused(archive, /unpacks to more than 10485760 bytes/, undefined, { maxUnpackedBytes: 10 * MiB, maxEntries: 1_000_000 });
      expect(sum(inflated)).toBeGreaterThan(10 * MiB);
      expect(sum(inflated)).toBeLessThan(10 * MiB + SLACK);
    });

    it('stops a tar holding one 200 MiB file at its header, before unpacking it', async () => {
      inflated.splice(0);
      await expectRefused(bigFile, /unpacks to more than 10485760 bytes/, 'big.bin', { maxUnpackedBytes: 10 * MiB });
      // The header declared too much: the scan stopped before the file's bytes were decompressed.
      expect(sum(inflated)).toBeLessThan(SLACK);
    });
  });
});

describe('downloadTemplate from a real registry server', () => {
  it('publishes the example, finds it with RegistryClient, downloads and unpacks the same files', async () => {
    const example = path.resolve('examples/templates/node-service');
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });

    const client = new RegistryClient({ registryUrl: `${server.url}/registry.json` });
    const entry = await client.getTemplate('node-service');
    expect(entry).not.toBeNull();
    const dest = path.join(await tempDir('tr-dl-'), 'node-service');
    const result = await downloadTemplate(entry!, dest);

    expect(result).toMatchObject({ dir: dest, integrity: pack.integrity, size: pack.size });
    expect(result.files).toEqual([...pack.files].sort());
    expect(await listTree(dest)).toEqual([...pack.files].sort());
    for (const file of pack.files) {
      const unpacked = await readFile(path.join(dest, file));
      if (file === 'template.json') expect(JSON.parse(unpacked.toString('utf8'))).toEqual(pack.manifest);
      else expect(unpacked.equals(await readFile(path.join(example, file)))).toBe(true);
    }
  });

  it('refuses a download whose bytes differ from the registry entry, leaving the destination empty', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir('tr-pack-') });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    const entry = (await new RegistryClient({ registryUrl: `${server.url}/registry.json` }).getTemplate('node-service'))!;
    const dest = await tempDir('tr-dl-');
    await mkdir(dest, { recursive: true });
    const tampered: typeof globalThis.fetch = async (input, init) => {
      const real = Buffer.from(await (await fetch(input, init)).arrayBuffer());
      real[real.length - 10] = (real[real.length - 10] as number) ^ 0xff;
      return new Response(real);
    };
    await expect(downloadTemplate(entry, dest, { fetch: tampered })).rejects.toBeInstanceOf(IntegrityError);
    expect(await readdir(dest)).toEqual([]);
  });
});
