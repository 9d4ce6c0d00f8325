import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { tarBytes } from '../helpers/tar-builder.js';
import { multipartBody } from '../helpers/multipart.js';

interface Answer {
  status: number;
  body: { error?: { code: string; details?: { field: string; code: string; message: string }[] } } | undefined;
}

async function send(method: string, url: string, headers: Record<string, string>, body?: Buffer | string): Promise<Answer> {
  const response = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as Answer['body']) };
}

const manifest = { ...validManifest, name: 'one-pass', version: '1.0.0' };

/** An archive whose `docs` is a file and also holds a file: no file system can hold both. */
const conflicting = gzipSync(
  tarBytes([
    { path: 'template.json', body: JSON.stringify(manifest) },
    { path: 'docs', body: 'a file' },
    { path: 'docs/guide.md', body: 'under the file' },
  ]),
);

async function publish(server: TestServer, first: { name: string; filename?: string; type?: string; body: Buffer | string }): Promise<Answer> {
  const form = multipartBody([first, { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(manifest) }]);
  return send('POST', `${server.url}/templates`, { authorization: `Bearer ${server.token}`, 'content-type': form.type }, form.payload);
}

async function stage(server: TestServer, bytes: Buffer): Promise<string> {
  const auth = { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' };
  const created = await send('POST', `${server.url}/files/upload-url`, auth, JSON.stringify({ filename: 't.tgz', contentType: 'application/gzip' }));
  const { uploadUrl, fileId } = (created.body as unknown as { data: { uploadUrl: string; fileId: string } }).data;
  expect((await send('PUT', uploadUrl, { 'content-type': 'application/gzip' }, bytes)).status).toBe(200);
  expect((await send('POST', `${server.url}/files/${fileId}/confirm`, auth, '{}')).status).toBe(200);
  return fileId;
}

describe('an upload unpacked as it arrives', () => {
  it('answers 422 INVALID_ARCHIVE, not a server error, for an archive holding a file under a file: sent as the template part or as a staged file', async () => {
    const server = await startRegistryServer();
    const direct = await publish(server, { name: 'template', filename: 't.tgz', type: 'application/gzip', body: conflicting });
    expect(direct.status).toBe(422);
    expect(direct.body?.error?.details?.[0]).toMatchObject({ field: 'template', code: 'INVALID_ARCHIVE' });
    expect(direct.body?.error?.details?.[0]?.message).toMatch(/archive entry "docs(\/guide\.md)?" conflicts with another entry/);

    const staged = await publish(server, { name: 'fileId', body: await stage(server, conflicting) });
    expect(staged.status).toBe(422);
    expect(staged.body?.error?.details?.[0]).toMatchObject({ field: 'template', code: 'INVALID_ARCHIVE' });
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it("leaves nothing of an upload's unpacked copy in the store's temp folder, refused or not", async () => {
    const server = await startRegistryServer();
    await publish(server, { name: 'template', filename: 't.tgz', type: 'application/gzip', body: conflicting });
    await publish(server, { name: 'template', filename: 't.tgz', type: 'application/gzip', body: Buffer.from('not an archive') });
    await publish(server, { name: 'fileId', body: await stage(server, conflicting) });
    expect(await readdir(path.join(server.storeDir, 'tmp')).catch(() => [])).toEqual([]);
  });

  it('unpacks a staged file at its PUT, and its publish checks that folder instead of reading the bytes again: nothing of it is left after', async () => {
    const server = await startRegistryServer();
    const tmp = path.join(server.storeDir, 'tmp');
    const packed = async (name: string, readme: string): Promise<Buffer> => {
      const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version: '1.0.0' }, 'template/README.md': readme });
      return readFile((await packTemplate(dir, { outDir: await tempDir('tr-pack-') })).file);
    };
    const publishStaged = (name: string, fileId: string): Promise<Answer> => {
      const form = multipartBody([
        { name: 'fileId', body: fileId },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify({ ...validManifest, name, version: '1.0.0' }) },
      ]);
      return send('POST', `${server.url}/templates`, { authorization: `Bearer ${server.token}`, 'content-type': form.type }, form.payload);
    };

    const fileId = await stage(server, await packed('kept-unpack', '# Kept\n'));
    const kept = await readdir(tmp);
    expect(kept).toHaveLength(1);
    const folder = path.join(tmp, kept[0] as string);
    expect((await readdir(folder, { recursive: true })).map(String)).toContain(path.join('template', 'README.md'));
    // What the check reads is that folder: a change made to it there is what the publish sees.
    await writeFile(path.join(folder, 'template.json'), '{ not json');
    const refused = await publishStaged('kept-unpack', fileId);
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('template.json');
    expect(await readdir(tmp)).toEqual([]);

    // Taken once: the next publish of the same file (released by the refusal) reads and unpacks its bytes again.
    const again = await publishStaged('kept-unpack', fileId);
    expect(again.status).toBe(201);
    expect(await readdir(tmp)).toEqual([]);
    expect((await server.store.versions.listVersions()).map((v) => `${v.name}@${v.version}`)).toEqual(['kept-unpack@1.0.0']);
  });
});
