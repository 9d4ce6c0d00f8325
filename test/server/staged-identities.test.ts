import { mkdir, rename, stat, utimes, writeFile } from 'node:fs/promises';
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
});
