import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

import { scanArchive, UnsafeArchiveError } from '../../src/archive/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { tempDir } from '../helpers/fixtures.js';

describe('scanArchive', () => {
  it('lists the files of a packed template and reads its template.json', async () => {
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    const summary = await scanArchive(pack.file);
    expect(summary.root).toBe('');
    expect(summary.files).toContain('template.json');
    expect(JSON.parse(summary.manifestText ?? '{}').name).toBe('node-service');
  });

  it('refuses data that is not a gzip tar', async () => {
    const file = path.join(await tempDir(), 'x.tgz');
    await writeFile(file, 'hello');
    await expect(scanArchive(file)).rejects.toThrow(UnsafeArchiveError);
  });

  it('stops a gzip bomb as soon as it unpacks past the limit', async () => {
    const file = path.join(await tempDir(), 'bomb.tgz');
    await writeFile(file, gzipSync(Buffer.alloc(64 * 1024 * 1024)));
    await expect(scanArchive(file, { maxUnpackedBytes: 4 * 1024 * 1024 })).rejects.toThrow(/more than 4194304 bytes|after its end|no files/);
  });

  it('refuses a long tail of data after the end of the archive without spending quadratic time on it', async () => {
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    const { gunzipSync } = await import('node:zlib');
    const { readFile } = await import('node:fs/promises');
    const tar = gunzipSync(await readFile(pack.file));
    const file = path.join(await tempDir(), 'tail.tgz');
    await writeFile(file, gzipSync(Buffer.concat([tar, Buffer.alloc(8 * 1024 * 1024)])));
    await expect(scanArchive(file)).rejects.toThrow(/after its end/);
  });
});
