/**
 * Issue 26, item 2: the gzip variant of a large registry.json is made of pieces compressed one by
 * one and cut where the content says, so that a rebuild after one change compresses only the piece
 * that changed and copies the others' bytes. The result is one valid gzip file (Node's gunzip and
 * the system's `gzip -t` both read it), the same bytes however the document was cut into writes,
 * and the same bytes whether its pieces were reused or made again.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { crc32, gunzipSync } from 'node:zlib';

import { describe, expect, it } from 'vitest';

import { buildRegistry } from '../../src/registry/build.js';
import { GENERATOR_STATE_FILE } from '../../src/registry/folder-output.js';
import { crc32Combine, gzipPieces, PIECE_MIN, reuseFrom, reuseFromParts, type DocumentUnit, type PieceTable } from '../../src/registry/gzip-pieces.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { tempDir } from '../helpers/fixtures.js';
import { version } from './memory-source.js';

const NOW = new Date('2026-03-01T12:00:00.000Z');

/** A document of `count` units of a few KB each, JSON-like, with a tail of its own. */
function units(count: number, change?: (index: number) => string | undefined): DocumentUnit[] {
  const list: DocumentUnit[] = [{ parts: [Buffer.from('{"templates":[')] }];
  for (let index = 0; index < count; index++) {
    const body = change?.(index) ?? `{"id":"template-${index}","description":"${'a template with a description '.repeat(60 + (index % 40))}"}`;
    list.push({ parts: index > 0 ? [Buffer.from(','), Buffer.from(body)] : [Buffer.from(body)] });
  }
  list.push({ parts: [Buffer.from(`],"lastUpdated":"${NOW.toISOString()}"}\n`)], alone: true });
  return list;
}

const bytesOf = (list: readonly DocumentUnit[]): Buffer => Buffer.concat(list.flatMap((unit) => unit.parts));

describe('gzip in pieces', () => {
  it('is one gzip file that Node and the system gzip read back as the document', async () => {
    const document = units(3_000);
    const { data, pieces } = await gzipPieces(document);
    expect(pieces.length).toBeGreaterThan(4);
    expect(gunzipSync(data).equals(bytesOf(document))).toBe(true);
    const file = path.join(await tempDir('tr-gzip-pieces-'), 'registry.json.gz');
    await writeFile(file, data);
    expect(() => execFileSync('gzip', ['-t', file])).not.toThrow();
    expect(execFileSync('gzip', ['-dc', file], { maxBuffer: 64 * 1024 * 1024 }).equals(bytesOf(document))).toBe(true);
  });

  it('cuts pieces between units only, at least PIECE_MIN bytes apart, the tail alone', async () => {
    const document = units(3_000);
    const { pieces } = await gzipPieces(document);
    const sizes = pieces.map(([size]) => size);
    // Pieces of templates (the head with the first ones), then the tail alone.
    expect(sizes.at(-1)).toBe(document.at(-1)?.parts[0]?.length);
    for (const size of sizes.slice(0, -2)) expect(size).toBeGreaterThanOrEqual(PIECE_MIN);
    const boundaries = new Set<number>();
    let offset = 0;
    for (const unit of document) {
      boundaries.add(offset);
      offset += unit.parts.reduce((sum, part) => sum + part.length, 0);
    }
    let at = 0;
    for (const size of sizes) {
      expect(boundaries.has(at)).toBe(true);
      at += size;
    }
  });

  it('reuses every piece a change did not touch, and gives the bytes a compression from scratch gives', async () => {
    const before = units(3_000);
    const first = await gzipPieces(before);
    // One template changed in the middle, one added near the start, and a new tail (its lastUpdated).
    const after = units(3_000, (index) => (index === 1_500 ? `{"id":"template-1500","description":"changed"}` : undefined));
    after.splice(100, 0, { parts: [Buffer.from(','), Buffer.from('{"id":"template-new","description":"new"}')] });
    after[after.length - 1] = { parts: [Buffer.from('],"lastUpdated":"2026-03-02T00:00:00.000Z"}\n')], alone: true };
    const fromScratch = await gzipPieces(after);
    const fromFile = await gzipPieces(after, reuseFrom(bytesOf(before), first.data, first.pieces));
    const fromParts = await gzipPieces(after, reuseFromParts(first.made));
    expect(fromFile.data.equals(fromScratch.data)).toBe(true);
    expect(fromParts.data.equals(fromScratch.data)).toBe(true);
    expect(gunzipSync(fromFile.data).equals(bytesOf(after))).toBe(true);
    // The pieces holding the two changes and the tail are made again; every other one is copied.
    expect(fromFile.reused).toBeGreaterThanOrEqual(fromScratch.pieces.length - 4);
    expect(fromParts.reused).toBe(fromFile.reused);
    expect(fromScratch.reused).toBe(0);
  });

  it('combines CRC-32s as zlib does: the CRC of two strings joined from each one\'s and the second\'s length', () => {
    for (const [a, b] of [
      [0, 0],
      [0, 5],
      [1, 1],
      [17, 4096],
      [100_000, 1],
      [3, 8 * 1024 * 1024 + 7],
    ] as const) {
      const first = randomBytes(a);
      const second = randomBytes(b);
      expect(crc32Combine(crc32(first), crc32(second), b)).toBe(crc32(Buffer.concat([first, second])));
    }
  });

  it('takes a reused piece\'s recorded CRC-32 instead of reading its bytes, and still writes the right trailer; a table without CRCs (an older release\'s) is read too', async () => {
    const before = units(2_000);
    const first = await gzipPieces(before);
    expect(first.pieces.every((piece) => piece.length === 3)).toBe(true);
    const after = [...before.slice(0, 1_000), { parts: [Buffer.from(','), Buffer.from('{"id":"new"}')] }, ...before.slice(1_000)];
    // A recorded CRC that is wrong shows in the trailer: proof that the recorded one is used.
    const wrong: PieceTable = first.pieces.map(([size, deflated, crc]) => [size, deflated, ((crc as number) ^ 1) >>> 0]);
    const misled = await gzipPieces(after, reuseFrom(bytesOf(before), first.data, wrong));
    expect(() => gunzipSync(misled.data)).toThrow();
    const right = await gzipPieces(after, reuseFrom(bytesOf(before), first.data, first.pieces));
    const older = await gzipPieces(after, reuseFrom(bytesOf(before), first.data, first.pieces.map(([size, deflated]) => [size, deflated])));
    expect(right.reused).toBeGreaterThan(0);
    for (const rebuilt of [right, older]) {
      expect(gunzipSync(rebuilt.data).equals(bytesOf(after))).toBe(true);
      expect(rebuilt.data.equals((await gzipPieces(after)).data)).toBe(true);
    }
  });

  it('never reuses a piece whose bytes differ, even with the same size and first bytes', async () => {
    const before = units(2_000);
    const first = await gzipPieces(before);
    // The same length, the same first bytes: one character near the end of a template's text changed.
    const original = before[700]?.parts.at(-1) as Buffer;
    const changed = Buffer.from(original);
    changed[changed.length - 3] = 'Z'.charCodeAt(0);
    const after = before.map((unit, index) => (index === 700 ? { parts: [Buffer.from(','), changed] } : unit));
    const rebuilt = await gzipPieces(after, reuseFrom(bytesOf(before), first.data, first.pieces));
    expect(gunzipSync(rebuilt.data).equals(bytesOf(after))).toBe(true);
    expect(rebuilt.data.equals((await gzipPieces(after)).data)).toBe(true);
    expect(rebuilt.reused).toBe(first.pieces.length - 1);
  });
});

/** A source of `versions`, listing what changed since a build state (as the store's does). */
function sourceOf(versions: SourceVersion[]): RegistrySource {
  const revision = 'r';
  return {
    identity: 'gzip-pieces-test',
    versions: () => Promise.resolve(versions.map((v) => ({ ...v, revision }))),
    templatesSince: (known) => {
      const counts = new Map<string, number>();
      for (const v of versions) counts.set(v.manifest.name, (counts.get(v.manifest.name) ?? 0) + 1);
      const unchanged = new Set([...counts].filter(([id, count]) => known.get(id)?.versions.length === count).map(([id]) => id));
      return Promise.resolve({ unchanged, versions: versions.filter((v) => !unchanged.has(v.manifest.name)).map((v) => ({ ...v, revision })) });
    },
  };
}

describe('registry.json.gz of a build with a build state', () => {
  const long = 'A template with a long description to make the document large. '.repeat(14);
  const many = (count: number): SourceVersion[] =>
    Array.from({ length: count }, (_, t) => Array.from({ length: 10 }, (_, v) => version(`t-${String(t).padStart(4, '0')}`, `1.${v}.0`, { description: `${long}${t}/${v}` }))).flat();

  it('after one new version in a fresh build, is what a full build writes and records its pieces', async () => {
    const versions = many(500);
    const out = await tempDir('tr-gzip-state-');
    await buildRegistry(sourceOf(versions), { outDir: out, now: () => NOW, state: true, catalog: false });
    const state = JSON.parse(await readFile(path.join(out, GENERATOR_STATE_FILE), 'utf8')) as { gzip?: { pieces: [number, number][]; size: number } };
    expect(state.gzip?.pieces.length).toBeGreaterThan(4);
    const oldGzip = await readFile(path.join(out, 'registry.json.gz'));
    expect(state.gzip?.size).toBe(oldGzip.length);

    const more = [...versions, version('t-0250-new', '1.0.0', { description: 'new' })];
    const result = await buildRegistry(sourceOf(more), { outDir: out, now: () => new Date('2026-03-02T00:00:00.000Z'), state: true, catalog: false });
    expect(result.notices ?? []).toEqual([]);
    const full = await tempDir('tr-gzip-full-');
    await buildRegistry(sourceOf(more), { outDir: full, now: () => new Date('2026-03-02T00:00:00.000Z'), catalog: false });
    const rebuilt = await readFile(path.join(out, 'registry.json.gz'));
    expect(rebuilt.equals(await readFile(path.join(full, 'registry.json.gz')))).toBe(true);
    expect(gunzipSync(rebuilt).equals(await readFile(path.join(out, 'registry.json')))).toBe(true);
    // The unchanged templates reach the document as runs of the last registry.json's bytes, cut into
    // 1 MiB pieces without a copy: the document and its brotli variant are a full build's too.
    for (const name of ['registry.json', 'registry.json.br']) expect((await readFile(path.join(out, name))).equals(await readFile(path.join(full, name))), name).toBe(true);
  });

  it('ignores a registry.json.gz that is not the one the state recorded (and still writes a valid one)', async () => {
    const versions = many(500);
    const out = await tempDir('tr-gzip-state-');
    await buildRegistry(sourceOf(versions), { outDir: out, now: () => NOW, state: true, catalog: false });
    // Someone replaced the .gz with other bytes of the same size.
    const gzip = await readFile(path.join(out, 'registry.json.gz'));
    gzip.fill(0x41, 100, 200);
    await writeFile(path.join(out, 'registry.json.gz'), gzip);
    const more = [...versions, version('t-0250-new', '1.0.0', { description: 'new' })];
    await buildRegistry(sourceOf(more), { outDir: out, now: () => NOW, state: true, catalog: false });
    expect(gunzipSync(await readFile(path.join(out, 'registry.json.gz'))).equals(await readFile(path.join(out, 'registry.json')))).toBe(true);
  });
});
