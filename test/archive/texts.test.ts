/**
 * readArchiveTexts: the few text files the catalog shows, read out of a template archive without
 * unpacking it, within bounds (a stranger's archive).
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';

import { readArchiveTexts } from '../../src/archive/texts.js';
import { UnsafeArchiveError } from '../../src/archive/scan.js';
import { tgzOf } from '../registry/memory-source.js';

const read = async (bytes: Buffer, names: string[], limits = {}) => Object.fromEntries([...(await readArchiveTexts(Readable.from([bytes]), names, limits))].map(([name, { text, cut }]) => [name, cut ? `${text}[cut]` : text]));

describe('readArchiveTexts', () => {
  it('reads the files asked for at the root, without regard to case, and only those', async () => {
    const bytes = await tgzOf({ 'template.json': '{}', 'readme.md': 'hello', 'CHANGELOG.md': '## 1.0.0', 'docs/README.md': 'not the README', 'other.txt': 'x' });
    expect(await read(bytes, ['README.md', 'CHANGELOG.md', 'template.prompts.json'])).toEqual({ 'README.md': 'hello', 'CHANGELOG.md': '## 1.0.0' });
  });

  it('reads them under the one top folder of an archive packed that way (package/)', async () => {
    const bytes = await tgzOf({ 'template.json': '{}', 'README.md': 'inside', 'custom/prompts.json': '[]' }, 'package/');
    expect(await read(bytes, ['README.md', 'custom/prompts.json'])).toEqual({ 'README.md': 'inside', 'custom/prompts.json': '[]' });
  });

  it("never takes a file of a folder for the root's when the archive has files at its root", async () => {
    const bytes = await tgzOf({ 'template.json': '{}', 'docs/README.md': 'not the README' });
    expect(await read(bytes, ['README.md'])).toEqual({});
  });

  it('keeps at most maxFileBytes of a file, and says it was cut', async () => {
    const bytes = await tgzOf({ 'README.md': 'abcdefghij' });
    expect(await read(bytes, ['README.md'], { maxFileBytes: 4 })).toEqual({ 'README.md': 'abcd[cut]' });
  });

  it('stops at maxUnpackedBytes (a gzip bomb) and refuses what is not a gzip tar', async () => {
    const bytes = await tgzOf({ 'big.bin': 'x'.repeat(200_000) });
    await expect(read(bytes, ['README.md'], { maxUnpackedBytes: 50_000 })).rejects.toThrow(UnsafeArchiveError);
    await expect(read(bytes, ['README.md'], { maxUnpackedBytes: 50_000 })).rejects.toThrow(/unpacks to more than 50000 bytes/);
    await expect(read(Buffer.from('plain text'), ['README.md'])).rejects.toThrow(/not a gzip-compressed tar archive/);
  });
});
