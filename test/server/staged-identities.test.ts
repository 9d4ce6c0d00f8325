import { access, mkdir, rename, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { identityOf, sameFile, StagedIdentities } from '../../src/server/staged-identities.js';
import { tempDir } from '../helpers/fixtures.js';

const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);

describe('what the server saw of a staged file as its bytes arrived', () => {
  it('is still the same file after the store renamed it in, and no longer once its bytes, size or inode changed', async () => {
    const dir = await tempDir('tr-identity-');
    const written = path.join(dir, 'upload.tmp');
    await writeFile(written, 'the archive bytes');
    const identity = identityOf(await stat(written));
    const stored = path.join(dir, 'files', 'staged');
    await mkdir(path.dirname(stored));
    await rename(written, stored);
    expect(await sameFile(stored, identity)).toBe(true);

    // The same size, other bytes: the write moves its mtime.
    const later = new Date(Date.now() + 5_000);
    await writeFile(stored, 'THE ARCHIVE BYTES');
    await utimes(stored, later, later);
    expect(await sameFile(stored, identity)).toBe(false);

    // Another file of the same size and mtime is not the file either.
    const other = path.join(dir, 'other');
    await writeFile(other, 'the archive bytes');
    await utimes(other, new Date(identity.mtimeMs), new Date(identity.mtimeMs));
    expect(await sameFile(other, identity)).toBe(false);

    expect(await sameFile(path.join(dir, 'gone'), identity)).toBe(false);
  });

  it('answers a file only for the bytes it recorded, the latest upload of them, and forgets the oldest past its capacity', () => {
    const identities = new StagedIdentities(2);
    const file = { dev: 1, ino: 2, size: 3, mtimeMs: 4 };
    identities.keep('one', { sha256: SHA_A, file });
    expect(identities.get('one', SHA_A)).toEqual({ sha256: SHA_A, file });
    // The store records other bytes for the file (uploaded again through another server): not these.
    expect(identities.get('one', SHA_B)).toBeUndefined();
    expect(identities.get('one', undefined)).toBeUndefined();

    identities.keep('one', { sha256: SHA_B, file: { ...file, ino: 9 } });
    expect(identities.get('one', SHA_A)).toBeUndefined();
    expect(identities.get('one', SHA_B)?.file.ino).toBe(9);

    identities.keep('two', { sha256: SHA_A, file });
    identities.keep('three', { sha256: SHA_A, file });
    expect(identities.get('one', SHA_B)).toBeUndefined();
    expect(identities.get('two', SHA_A)).toBeDefined();
    expect(identities.get('three', SHA_A)).toBeDefined();

    identities.forget('three');
    expect(identities.get('three', SHA_A)).toBeUndefined();
  });

  it('owns the local copies of bytes stored in a bucket: removed when their file is forgotten, uploaded again, evicted past the bytes it may keep, or the server closes', async () => {
    const dir = await tempDir('tr-identity-');
    const copyOf = async (name: string, bytes: number): Promise<{ path: string; file: { dev: number; ino: number; size: number; mtimeMs: number } }> => {
      const file = path.join(dir, name);
      await writeFile(file, Buffer.alloc(bytes));
      return { path: file, file: identityOf(await stat(file)) };
    };
    const exists = (file: string): Promise<boolean> => access(file).then(() => true, () => false);
    const staged = (copy: { path: string; file: { dev: number; ino: number; size: number; mtimeMs: number } }, key: string) => ({
      sha256: SHA_A,
      file: copy.file,
      local: { path: copy.path, copyable: { key, etag: '"e"', size: copy.file.size } },
    });
    // Room for 250 bytes of local copies.
    const identities = new StagedIdentities(10, 250);

    const first = await copyOf('first', 100);
    identities.keep('first', staged(first, 'files/first'));
    expect(identities.get('first', SHA_A)?.local?.copyable.key).toBe('files/first');
    identities.forget('first');
    expect(await exists(first.path)).toBe(false);

    // Uploaded again: the copy of the earlier bytes goes.
    const before = await copyOf('again-1', 100);
    const after = await copyOf('again-2', 100);
    identities.keep('again', staged(before, 'files/again'));
    identities.keep('again', staged(after, 'files/again'));
    expect(await exists(before.path)).toBe(false);
    expect(await exists(after.path)).toBe(true);

    // 100 + 100 fit; a third 100 bytes push the oldest out.
    const second = await copyOf('second', 100);
    identities.keep('second', staged(second, 'files/second'));
    expect(await exists(after.path)).toBe(true);
    const third = await copyOf('third', 100);
    identities.keep('third', staged(third, 'files/third'));
    expect(await exists(after.path)).toBe(false);
    expect(identities.get('again', SHA_A)).toBeUndefined();
    expect([await exists(second.path), await exists(third.path)]).toEqual([true, true]);

    identities.clear();
    expect([await exists(second.path), await exists(third.path)]).toEqual([false, false]);
    expect(identities.get('third', SHA_A)).toBeUndefined();
  });
});

describe('the unpacked folders kept with staged files', () => {
  const exists = (file: string): Promise<boolean> => access(file).then(() => true, () => false);
  const folder = async (dir: string, name: string): Promise<string> => {
    const made = path.join(dir, name);
    await mkdir(made);
    await writeFile(path.join(made, 'README.md'), '# kept');
    return made;
  };
  const archive = (dir: string) => ({ dir, files: [], size: 0 }) as never;
  const file = { dev: 1, ino: 2, size: 3, mtimeMs: 4 };

  it('hands a folder over once, for the recorded bytes only; the one handed over is the taker\'s to remove', async () => {
    const dir = await tempDir('tr-identity-');
    const identities = new StagedIdentities();
    const one = await folder(dir, 'one.check');
    identities.keep('one', { sha256: SHA_A, file, unpacked: { dir: one, archive: archive(one) } });
    expect(identities.takeUnpacked('one', SHA_B)).toBeUndefined();
    expect(identities.takeUnpacked('one', SHA_A)?.dir).toBe(one);
    expect(identities.takeUnpacked('one', SHA_A)).toBeUndefined();
    // The identity stays (its digest is still trusted); forgetting it leaves the taken folder alone.
    expect(identities.get('one', SHA_A)).toBeDefined();
    identities.forget('one');
    expect(await exists(one)).toBe(true);
  });

  it('removes a folder when its file is forgotten or uploaded again, and the oldest past its capacity (their identities kept)', async () => {
    const dir = await tempDir('tr-identity-');
    const identities = new StagedIdentities(10, 1000, 2);
    const folders = await Promise.all(['a', 'b', 'c', 'd'].map((name) => folder(dir, `${name}.check`)));
    const [a, b, c, d] = folders as [string, string, string, string];
    identities.keep('a', { sha256: SHA_A, file, unpacked: { dir: a, archive: archive(a) } });
    identities.keep('b', { sha256: SHA_A, file, unpacked: { dir: b, archive: archive(b) } });
    identities.keep('c', { sha256: SHA_A, file, unpacked: { dir: c, archive: archive(c) } });
    expect(await exists(a)).toBe(false);
    expect(identities.get('a', SHA_A)).toBeDefined();
    expect(identities.takeUnpacked('a', SHA_A)).toBeUndefined();
    expect([await exists(b), await exists(c)]).toEqual([true, true]);

    identities.keep('b', { sha256: SHA_B, file, unpacked: { dir: d, archive: archive(d) } });
    expect(await exists(b)).toBe(false);
    identities.forget('c');
    expect(await exists(c)).toBe(false);
    identities.clear();
    expect(await exists(d)).toBe(false);
  });
});
