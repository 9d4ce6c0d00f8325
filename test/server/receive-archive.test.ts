/**
 * `receiveArchive` writes an upload to its temp file, hashes it and hands it to the unpacker in one
 * pass over its bytes; a slow unpacker (a staged object read back from a bucket and unpacked) must
 * not stall it, however the temp file's drains fall between its chunks.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';

import { describe, expect, it } from 'vitest';

import type { ArchiveUnpacker } from '../../src/archive/unpack.js';
import { receiveArchive } from '../../src/server/routes/upload.js';
import { tempDir } from '../helpers/fixtures.js';

/** An unpacker that takes its time over each chunk (the temp file drains meanwhile) and keeps what it got. */
function slowUnpacker(): { unpacker: ArchiveUnpacker; got: Buffer[] } {
  const got: Buffer[] = [];
  const unpacker = {
    write: async (chunk: Buffer) => {
      got.push(chunk);
      await delay(2);
    },
    end: () => Promise.resolve({ dir: '', files: [] }),
    abort: () => Promise.resolve(),
  };
  return { unpacker: unpacker as unknown as ArchiveUnpacker, got };
}

describe('receiveArchive', () => {
  it('finishes with a slow unpacker: every chunk written, hashed and unpacked, whenever the file drained', async () => {
    const chunks = Array.from({ length: 24 }, () => randomBytes(256 * 1024));
    const temp = path.join(await tempDir(), 'upload.tgz');
    const { unpacker, got } = slowUnpacker();
    const received = await receiveArchive(Readable.from(chunks), temp, unpacker);
    const bytes = Buffer.concat(chunks);
    expect(received.size).toBe(bytes.length);
    expect(received.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(received.integrity).toBe(`sha512-${createHash('sha512').update(bytes).digest('base64')}`);
    expect((await readFile(temp)).equals(bytes)).toBe(true);
    expect(Buffer.concat(got).equals(bytes)).toBe(true);
  }, 20_000);
});
