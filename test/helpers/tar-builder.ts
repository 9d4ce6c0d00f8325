/**
 * Tar archives written byte by byte, so that tests can build what no well-behaved packer writes:
 * links, devices, FIFOs, duplicate entries, PAX path overrides, traversal and absolute paths.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

export interface TarEntry {
  path: string;
  /** ustar type flag: '0' file, '1' hard link, '2' symlink, '3' char device, '4' block device, '5' folder, '6' FIFO, 'x' PAX header. */
  type?: string;
  body?: Buffer | string;
  linkpath?: string;
}

function field(buffer: Buffer, offset: number, length: number, value: string): void {
  buffer.write(value.slice(0, length), offset, length, 'utf8');
}

function octal(buffer: Buffer, offset: number, length: number, value: number): void {
  field(buffer, offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function header(entry: TarEntry, size: number): Buffer {
  const block = Buffer.alloc(512);
  field(block, 0, 100, entry.path);
  octal(block, 100, 8, entry.type === '5' ? 0o755 : 0o644);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, size);
  octal(block, 136, 12, 1_700_000_000);
  block.fill(' ', 148, 156);
  field(block, 156, 1, entry.type ?? '0');
  field(block, 157, 100, entry.linkpath ?? '');
  field(block, 257, 6, 'ustar\0');
  field(block, 263, 2, '00');
  let sum = 0;
  for (const byte of block) sum += byte;
  field(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

/** A PAX extended header record (`<len> key=value\n`, the length counting itself). */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length = `${length}${body}`.length;
  return `${length}${body}`;
}

export function tarBytes(entries: readonly TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? '');
    blocks.push(header(entry, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export const gzipTar = (entries: readonly TarEntry[]): Buffer => gzipSync(tarBytes(entries));

/** The files of a template folder as tar entries under `prefix` (folders first, sorted). */
export async function templateEntries(dir: string, prefix = 'package/'): Promise<TarEntry[]> {
  const entries: TarEntry[] = [{ path: prefix, type: '5' }];
  const walk = async (relative: string): Promise<void> => {
    for (const item of (await readdir(path.join(dir, relative), { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const name = relative === '' ? item.name : `${relative}/${item.name}`;
      if (item.isDirectory()) {
        entries.push({ path: `${prefix}${name}/`, type: '5' });
        await walk(name);
      } else entries.push({ path: `${prefix}${name}`, body: await readFile(path.join(dir, name)) });
    }
  };
  await walk('');
  return entries;
}

/**
 * `prefix` then a file of `mebibytes` zeros, as gzip members (a gzip stream may be several
 * concatenated members): about 1 KB per MiB, without ever holding the unpacked bytes.
 */
export function gzipBomb(prefix: Buffer, mebibytes: number): Buffer {
  const size = mebibytes * 1024 * 1024;
  const zeros = gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
  const head = header({ path: 'package/zeros.bin' }, size);
  return Buffer.concat([gzipSync(Buffer.concat([prefix, head])), ...Array.from({ length: mebibytes }, () => zeros)]);
}

export interface HostileArchive {
  name: string;
  bytes: Buffer;
}

/**
 * A valid template's archive made hostile in every way the issue names. Each one must be refused
 * at upload and at download, and nothing may be written outside the destination.
 */
export function hostileArchives(base: readonly TarEntry[]): HostileArchive[] {
  const withEntries = (...extra: TarEntry[]): Buffer => gzipTar([...base, ...extra]);
  const tar = tarBytes(base);
  const gz = gzipSync(tar);
  return [
    { name: 'path traversal', bytes: withEntries({ path: 'package/../../escaped.txt', body: 'x' }) },
    { name: 'traversal inside a folder name', bytes: withEntries({ path: 'package/template/../../../escaped.txt', body: 'x' }) },
    { name: 'absolute path', bytes: withEntries({ path: '/tmp/tr-absolute-escape.txt', body: 'x' }) },
    { name: 'symlink outside', bytes: withEntries({ path: 'package/template/link', type: '2', linkpath: '/etc/passwd' }) },
    { name: 'symlink inside', bytes: withEntries({ path: 'package/template/link', type: '2', linkpath: 'README.md' }) },
    { name: 'hardlink outside', bytes: withEntries({ path: 'package/template/hard', type: '1', linkpath: '/etc/passwd' }) },
    { name: 'hardlink inside', bytes: withEntries({ path: 'package/template/hard', type: '1', linkpath: 'package/README.md' }) },
    {
      name: 'link chain (DAG)',
      bytes: withEntries(
        { path: 'package/template/a', type: '2', linkpath: '..' },
        { path: 'package/template/b', type: '2', linkpath: 'a/..' },
        { path: 'package/template/b/escaped.txt', body: 'x' },
      ),
    },
    { name: 'character device', bytes: withEntries({ path: 'package/template/null', type: '3' }) },
    { name: 'block device', bytes: withEntries({ path: 'package/template/disk', type: '4' }) },
    { name: 'FIFO', bytes: withEntries({ path: 'package/template/pipe', type: '6' }) },
    { name: 'duplicate entry', bytes: withEntries({ path: 'package/README.md', body: 'second copy' }) },
    {
      name: 'PAX path override',
      bytes: withEntries(
        { path: 'package/PaxHeader', type: 'x', body: paxRecord('path', '../../pax-escaped.txt') },
        { path: 'package/innocent.txt', body: 'x' },
      ),
    },
    { name: 'gzip bomb', bytes: gzipBomb(tar.subarray(0, tar.length - 1024), 600) },
    { name: 'truncated gzip', bytes: gz.subarray(0, Math.floor(gz.length * 0.6)) },
    { name: 'trailing data', bytes: Buffer.concat([gz, Buffer.from('not part of the archive'.repeat(100))]) },
    { name: 'not a gzip', bytes: Buffer.from('this is not an archive') },
    { name: '.git hook', bytes: withEntries({ path: 'package/template/.git/hooks/post-commit', body: '#!/bin/sh\ntouch pwned\n' }) },
    { name: '.git config (fsmonitor)', bytes: withEntries({ path: 'package/template/.git/config', body: '[core]\n\tfsmonitor = touch pwned\n' }) },
    { name: '.GIT in upper case', bytes: withEntries({ path: 'package/template/.GIT/config', body: '[core]\n' }) },
    { name: '.git with a trailing dot (NTFS)', bytes: withEntries({ path: 'package/template/.git./config', body: '[core]\n' }) },
    { name: '.git 8.3 short name (NTFS)', bytes: withEntries({ path: 'package/template/GIT~1/config', body: '[core]\n' }) },
    { name: '.git with an HFS+ ignorable code point', bytes: withEntries({ path: 'package/template/.g\u200Cit/config', body: '[core]\n' }) },
    { name: '.git at the archive root', bytes: withEntries({ path: 'package/.git/config', body: '[core]\n' }) },
    { name: '.git as a folder entry', bytes: withEntries({ path: 'package/template/sub/.git/', type: '5' }) },
    { name: '.hg hgrc', bytes: withEntries({ path: 'package/template/.hg/hgrc', body: '[hooks]\n' }) },
    { name: '.svn entries', bytes: withEntries({ path: 'package/template/.svn/entries', body: '12\n' }) },
  ];
}
