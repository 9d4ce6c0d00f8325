import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

import { ArchiveUnpacker, extractArchive, unpackArchive, UnsafeArchiveError } from '../../src/archive/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { CHECK_UNPACK } from '../../src/server/archive-check.js';
import { tempDir } from '../helpers/fixtures.js';
import { tarBytes, type TarEntry } from '../helpers/tar-builder.js';

/** The bytes in small chunks, from a source that can be read only once (as an upload arrives). */
function once(bytes: Buffer, chunk = 1000): AsyncIterable<Buffer> {
  let used = false;
  return {
    [Symbol.asyncIterator]: () => {
      if (used) throw new Error('the upload was read a second time');
      used = true;
      let offset = 0;
      return {
        next: () => {
          if (offset >= bytes.length) return Promise.resolve({ done: true, value: undefined });
          const value = bytes.subarray(offset, offset + chunk);
          offset += chunk;
          return Promise.resolve({ done: false, value });
        },
      };
    },
  };
}

async function filesBelow(dir: string, prefix = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = `${prefix}${entry.name}`;
    if (entry.isDirectory()) Object.assign(out, await filesBelow(path.join(dir, entry.name), `${relative}/`));
    else out[relative] = (await readFile(path.join(dir, entry.name))).toString('base64');
  }
  return out;
}

const tgz = (entries: TarEntry[]): Buffer => gzipSync(tarBytes(entries));

describe('unpackArchive (one pass as the bytes arrive)', () => {
  it('unpacks a packed template from a source read once, to the same files extractArchive writes, with template.json from the scan', async () => {
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    const bytes = await readFile(pack.file);
    const dest = await tempDir();
    const unpacked = await unpackArchive(once(bytes), dest);
    expect(unpacked.dir).toBe(path.resolve(dest));
    expect(JSON.parse(unpacked.manifestText ?? '{}').name).toBe('node-service');
    const reference = await tempDir();
    const scan = await extractArchive(pack.file, reference);
    expect(unpacked.files).toEqual(scan.files);
    expect(await filesBelow(unpacked.dir)).toEqual(await filesBelow(reference));
  });

  it('unpacks every file whole whatever the size of the chunks the upload arrives in (a real template, 66 files)', async () => {
    const source = 'test/fixtures/real/copier-uv/1.0.0';
    const pack = await packTemplate(source, { outDir: await tempDir('tr-unpack-chunks-') });
    const expected = await extractArchive(pack.file, await tempDir('tr-unpack-expected-'));
    // The whole archive in one chunk too: the parser then runs furthest ahead of the files' writers.
    for (const chunkBytes of [100, 4096, 64 * 1024, 1024 * 1024, (await stat(pack.file)).size]) {
      const unpacker = new ArchiveUnpacker(path.join(await tempDir('tr-unpack-chunk-'), 'out'));
      for await (const chunk of createReadStream(pack.file, { highWaterMark: chunkBytes })) await unpacker.write(chunk as Buffer);
      const unpacked = await unpacker.end();
      expect(unpacked.files, `${chunkBytes}-byte chunks`).toEqual(expected.files);
      const sizes = await Promise.all(unpacked.files.map(async (file) => `${file} ${(await stat(path.join(unpacked.dir, file))).size}`));
      const sourceSizes = await Promise.all(unpacked.files.map(async (file) => `${file} ${(await stat(path.join(source, file))).size}`));
      expect(sizes, `${chunkBytes}-byte chunks`).toEqual(sourceSizes);
    }
  });

  it('names the top folder as the template folder when every file is under one', async () => {
    const dest = await tempDir();
    const unpacked = await unpackArchive(once(tgz([{ path: 'package/', type: '5' }, { path: 'package/template.json', body: '{"a":1}' }, { path: 'package/docs/x.md', body: 'x' }])), dest);
    expect(unpacked.root).toBe('package/');
    expect(unpacked.dir).toBe(path.join(path.resolve(dest), 'package'));
    expect(unpacked.files).toEqual(['docs/x.md', 'template.json']);
    expect(await readFile(path.join(unpacked.dir, 'docs/x.md'), 'utf8')).toBe('x');
    expect(unpacked.manifestText).toBe('{"a":1}');
  });

  it.each([
    ['a symbolic link', [{ path: 'a.txt', body: 'a' }, { path: 'link', type: '2', linkpath: '/etc/passwd' }], /not a file or folder/],
    ['a path leaving the archive', [{ path: 'a.txt', body: 'a' }, { path: '../escaped.txt', body: 'x' }], /unsafe path/],
    ['a duplicate file', [{ path: 'a.txt', body: 'first' }, { path: 'a.txt', body: 'second' }], /more than once/],
    ['a file under a file', [{ path: 'a', body: 'file' }, { path: 'a/b.txt', body: 'under it' }], /conflicts with another entry/],
    ['a file where a folder is', [{ path: 'a/', type: '5' }, { path: 'a/b.txt', body: 'b' }, { path: 'a', body: 'file' }], /conflicts with another entry|more than once/],
  ])('refuses %s as the archive’s fault (UnsafeArchiveError), writing nothing outside its folder', async (_label, entries, message) => {
    const parent = await tempDir();
    const dest = path.join(parent, 'unpacked');
    const refusal = unpackArchive(once(tgz(entries as TarEntry[])), dest);
    await expect(refusal).rejects.toThrow(UnsafeArchiveError);
    await expect(refusal).rejects.toThrow(message);
    expect((await readdir(parent)).sort()).toEqual(['unpacked']);
  });

  it('refuses an archive damaged after its last entry (a broken gzip trailer) instead of waiting for that entry forever', async () => {
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    const bytes = Buffer.from(await readFile(pack.file));
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await expect(unpackArchive(once(bytes), await tempDir())).rejects.toThrow(UnsafeArchiveError);
  });

  it('takes every chunk of an upload it already refused, and tells the refusal at the end', async () => {
    const unpacker = new ArchiveUnpacker(await tempDir());
    await unpacker.write(Buffer.from('not a gzip tar at all'));
    for (let i = 0; i < 100; i++) await unpacker.write(Buffer.alloc(64 * 1024, i));
    await expect(unpacker.end()).rejects.toThrow(/not a gzip-compressed tar archive/);
  });

  it('stops a gzip bomb at the unpacked-size limit while the upload goes on', async () => {
    const dest = await tempDir();
    const bomb = gzipSync(tarBytes([{ path: 'big.bin', body: Buffer.alloc(16 * 1024 * 1024) }]));
    await expect(unpackArchive(once(bomb, 4096), dest, { maxUnpackedBytes: 1024 * 1024 })).rejects.toThrow(/more than 1048576 bytes/);
  });

  it('for the check, writes a binary file as its head and a hole of its size, and a text file (however large) whole', async () => {
    const binary = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0]), randomBytes(300 * 1024)]);
    const lateNul = Buffer.concat([Buffer.alloc(9000, 'a'), Buffer.from([0]), Buffer.alloc(100_000, 'b')]);
    const text = Buffer.from('{{ projectName }}\n'.repeat(20_000));
    const small = Buffer.from([1, 0, 2]);
    const entries = [
      { path: 'template.json', body: '{"a":1}' },
      { path: 'assets/logo.bin', body: binary },
      { path: 'assets/late-nul.txt', body: lateNul },
      { path: 'src/readme.md', body: text },
      { path: 'assets/small.bin', body: small },
    ];
    const unpacked = await unpackArchive(once(tgz(entries), 64 * 1024), await tempDir(), {}, CHECK_UNPACK);
    const read = (file: string): Promise<Buffer> => readFile(path.join(unpacked.dir, file));
    const logo = await read('assets/logo.bin');
    expect(logo.length).toBe(binary.length);
    expect(logo.subarray(0, 8192).equals(binary.subarray(0, 8192))).toBe(true);
    // Past its head, nothing of the archive's bytes was written.
    expect(logo.subarray(8192).equals(Buffer.alloc(binary.length - 8192))).toBe(true);
    expect((await stat(path.join(unpacked.dir, 'assets/logo.bin'))).size).toBe(binary.length);
    // Binary by the rule (a NUL in the first 8 KiB) or not: a NUL later is text's business.
    expect((await read('assets/late-nul.txt')).equals(lateNul)).toBe(true);
    expect((await read('src/readme.md')).equals(text)).toBe(true);
    expect((await read('assets/small.bin')).equals(small)).toBe(true);
    expect(unpacked.files).toEqual(['assets/late-nul.txt', 'assets/logo.bin', 'assets/small.bin', 'src/readme.md', 'template.json']);
  });
});
