import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field below
type Answer = { status: number; body: any };

const sri = (bytes: Buffer): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

async function json(method: string, url: string, token: string | undefined, body?: unknown): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function put(url: string, bytes: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'application/gzip', ...headers }, body: bytes });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** A multipart POST with text fields and file parts. */
function multipart(url: string, token: string, parts: { name: string; filename?: string; type?: string; body: Buffer | string }[]): Promise<Answer> {
  const boundary = `----tr${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`), Buffer.from(part.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  const body = Buffer.concat(chunks);
  return fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body }).then(async (response) => {
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  });
}

/** upload-url, PUT and confirm: a confirmed file's id. */
async function stage(server: TestServer, bytes: Buffer, token = server.token): Promise<string> {
  const created = await json('POST', `${server.url}/files/upload-url`, token, { filename: 'demo.tgz', contentType: 'application/gzip' });
  expect(created.status).toBe(201);
  expect((await put(created.body.data.uploadUrl as string, bytes)).status).toBe(200);
  const confirmed = await json('POST', `${server.url}/files/${created.body.data.fileId as string}/confirm`, token, { size: bytes.length, integrity: sri(bytes) });
  expect(confirmed.status).toBe(200);
  return created.body.data.fileId as string;
}

async function leftIn(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

describe('large uploads through /files', () => {
  it('stages a file (upload-url, PUT without a token, confirm) and publishes it with fileId', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const bytes = await readFile(pack.file);

    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'node-service.tgz', contentType: 'application/gzip' });
    expect(created.status).toBe(201);
    const { uploadUrl, fileId } = created.body.data as { uploadUrl: string; fileId: string };
    expect(uploadUrl.startsWith(`${server.url}/files/${fileId}/`)).toBe(true);

    const uploaded = await put(uploadUrl, bytes);
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.data).toMatchObject({ fileId, state: 'uploaded', size: bytes.length, integrity: pack.integrity });

    const confirmed = await json('POST', `${server.url}/files/${fileId}/confirm`, server.token, { size: pack.size, integrity: pack.integrity });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data).toMatchObject({ fileId, state: 'confirmed', filename: 'node-service.tgz', contentType: 'application/gzip' });

    const published = await multipart(`${server.url}/templates`, server.token, [
      { name: 'fileId', body: fileId },
      { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
    ]);
    expect(published.status).toBe(201);
    expect(published.body.data).toMatchObject({ id: 'node-service', version: pack.manifest.version, integrity: pack.integrity });
    const archive = Buffer.from(await (await fetch(published.body.data.downloadUrl as string)).arrayBuffer());
    expect(sri(archive)).toBe(pack.integrity);

    // Consumed: neither usable again nor left on disk.
    expect(await server.store.files.getFile(fileId)).toBeUndefined();
    expect(await leftIn(path.join(server.storeDir, 'files'))).toEqual([]);
    const again = await multipart(`${server.url}/templates`, server.token, [
      { name: 'fileId', body: fileId },
      { name: 'manifest', type: 'application/json', body: JSON.stringify(pack.manifest) },
    ]);
    expect(again.status).toBe(404);
  });

  it('publishes a staged file of the embedded store without copying its bytes (the archive stored is the staged file), and refuses one whose bytes changed since', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const fileId = await stage(server, await readFile(pack.file));
    const staged = await stat(path.join(server.storeDir, 'files', fileId));
    const publish = (id: string) =>
      multipart(`${server.url}/templates`, server.token, [
        { name: 'fileId', body: id },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
      ]);
    expect((await publish(fileId)).status).toBe(201);
    // The one file the bytes were written to by the upload is the archive now: linked, never written again.
    const stored = await stat(path.join(server.storeDir, 'archives', pack.manifest.name, `${pack.manifest.version}.tgz`));
    expect(stored.ino).toBe(staged.ino);
    expect(stored.nlink).toBe(1);

    // A staged file whose bytes changed after they were confirmed is still refused, linked or not.
    const other = await packTemplate(example, { version: '9.9.9', outDir: await tempDir('tr-pack-') });
    const changedId = await stage(server, await readFile(other.file));
    const changed = path.join(server.storeDir, 'files', changedId);
    const bytes = await readFile(changed);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await writeFile(changed, bytes);
    const refused = await multipart(`${server.url}/templates`, server.token, [
      { name: 'fileId', body: changedId },
      { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(other.manifest) },
    ]);
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect((await json('GET', `${server.url}/templates/${other.manifest.name}/versions/9.9.9`, undefined)).status).toBe(404);
  });

  it('publishes a file staged before a restart (no record of its upload: its bytes digested again), and refuses it when its bytes changed meanwhile', async () => {
    const storeDir = await tempDir('tr-store-');
    const first = await startRegistryServer({ storeDir });
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const other = await packTemplate(example, { version: '9.9.9', outDir: await tempDir('tr-pack-') });
    const fileId = await stage(first, await readFile(pack.file));
    const changedId = await stage(first, await readFile(other.file));
    await first.app.close();

    const changed = path.join(storeDir, 'files', changedId);
    const bytes = await readFile(changed);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await writeFile(changed, bytes);

    const second = await startRegistryServer({ storeDir });
    const publish = (id: string, manifest: object) =>
      multipart(`${second.url}/templates`, first.token, [
        { name: 'fileId', body: id },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(manifest) },
      ]);
    expect((await publish(fileId, pack.manifest)).status).toBe(201);
    const entry = await json('GET', `${second.url}/templates/${pack.manifest.name}/versions/${pack.manifest.version}`, undefined);
    expect(entry.body.data.integrity).toBe(pack.integrity);
    expect((await publish(changedId, other.manifest)).status).toBeGreaterThanOrEqual(500);
    expect((await json('GET', `${second.url}/templates/${other.manifest.name}/versions/9.9.9`, undefined)).status).toBe(404);
  });

  it('answers 422 when the confirmed size or integrity differ from the stored bytes, and keeps the file unconfirmed', async () => {
    const server = await startRegistryServer();
    const bytes = randomBytes(2048);
    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'a.tgz', contentType: 'application/gzip' });
    const { uploadUrl, fileId } = created.body.data as { uploadUrl: string; fileId: string };
    const early = await json('POST', `${server.url}/files/${fileId}/confirm`, server.token, {});
    expect(early.status).toBe(409);
    await put(uploadUrl, bytes);
    const wrong = await json('POST', `${server.url}/files/${fileId}/confirm`, server.token, { size: bytes.length + 1, integrity: sri(randomBytes(8)) });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.code).toBe('VALIDATION_ERROR');
    expect((wrong.body.error.details as { field: string }[]).map((detail) => detail.field).sort()).toEqual(['integrity', 'size']);
    expect((await server.store.files.getFile(fileId))?.state).toBe('uploaded');
    // Without a body: nothing to compare, confirmed.
    const plain = await json('POST', `${server.url}/files/${fileId}/confirm`, server.token);
    expect(plain.status).toBe(200);
    expect(plain.body.data.state).toBe('confirmed');
  });

  it('refuses a PUT without the capability (403) or to an unknown file (404), and confirm or use by another token (403)', async () => {
    const server = await startRegistryServer();
    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'a.tgz', contentType: 'application/gzip' });
    const { uploadUrl, fileId } = created.body.data as { uploadUrl: string; fileId: string };
    const url = new URL(uploadUrl);
    expect((await put(`${url.origin}${url.pathname}`, Buffer.from('x'))).status).toBe(403);
    expect((await put(`${url.origin}${url.pathname}?sig=${'A'.repeat(43)}`, Buffer.from('x'))).status).toBe(403);
    expect((await put(`${url.origin}/files/00000000-0000-4000-8000-000000000000/content${url.search}`, Buffer.from('x'))).status).toBe(404);
    expect((await json('POST', `${server.url}/files/upload-url`, undefined, { filename: 'a.tgz', contentType: 'application/gzip' })).status).toBe(401);

    const { token: other } = await server.store.tokens.createToken({ role: 'publisher' });
    const bytes = randomBytes(64);
    const fileOfOther = await stage(server, bytes, other);
    expect((await json('POST', `${server.url}/files/${fileId}/confirm`, other, {})).status).toBe(403);
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const refused = await multipart(`${server.url}/templates`, server.token, [
      { name: 'fileId', body: fileOfOther },
      { name: 'manifest', type: 'application/json', body: JSON.stringify(pack.manifest) },
    ]);
    expect(refused.status).toBe(403);
    expect((await server.store.files.getFile(fileOfOther))?.state).toBe('confirmed');
  });

  it('answers an oversized PUT 413 and leaves no temp file, declared or streamed', async () => {
    const server = await startRegistryServer({ limits: { maxArchiveBytes: 1024 } });
    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'a.tgz', contentType: 'application/gzip' });
    const { uploadUrl, fileId } = created.body.data as { uploadUrl: string; fileId: string };
    expect((await put(uploadUrl, randomBytes(4096))).status).toBe(413);

    // Chunked, with no Content-Length: cut off while streaming.
    const status = await new Promise<number | string>((resolve) => {
      const request = httpRequest(uploadUrl, { method: 'PUT', headers: { 'Content-Type': 'application/gzip', 'Transfer-Encoding': 'chunked' } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      request.write(randomBytes(800));
      request.end(randomBytes(800));
    });
    expect([413, 'ECONNRESET', 'EPIPE']).toContain(status);
    // The temp file goes once the cut-off request is cleaned up, which may follow the answer.
    await expect.poll(() => leftIn(path.join(server.storeDir, 'tmp')), { timeout: 10_000, interval: 10 }).toEqual([]);
    expect(await leftIn(path.join(server.storeDir, 'files'))).toEqual([]);
    expect((await server.store.files.getFile(fileId))?.state).toBe('pending');
  });

  it('removes expired files with their bytes, and refuses them from then on', async () => {
    let now = Date.parse('2026-06-01T00:00:00Z');
    const server = await startRegistryServer({ clock: () => new Date(now), files: { pendingTtlMs: 60_000, confirmedTtlMs: 60_000, sweepEveryMs: 40 } });
    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'a.tgz', contentType: 'application/gzip' });
    const { uploadUrl, fileId } = created.body.data as { uploadUrl: string; fileId: string };
    expect((await put(uploadUrl, randomBytes(100))).status).toBe(200);
    const confirmedId = await stage(server, randomBytes(100));
    expect(await leftIn(path.join(server.storeDir, 'files'))).toHaveLength(2);
    // Nothing expires before its lifetime on the server's clock; once past it, the next sweep (every 40 ms) removes both.
    now += 59_000;
    expect((await server.store.files.getFile(fileId))?.state).toBe('uploaded');
    now += 2_000;
    await expect.poll(async () => (await leftIn(path.join(server.storeDir, 'files'))).length, { timeout: 10_000, interval: 50 }).toBe(0);
    expect(await server.store.files.getFile(fileId)).toBeUndefined();
    expect(await server.store.files.getFile(confirmedId)).toBeUndefined();
    expect(await leftIn(path.join(server.storeDir, 'files'))).toEqual([]);
    expect((await put(uploadUrl, randomBytes(100))).status).toBe(404);
    expect((await json('POST', `${server.url}/files/${confirmedId}/confirm`, server.token, {})).status).toBe(404);
  });

  it('POST /files takes multipart file + metadata and answers a confirmed file that publishes', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const bytes = await readFile(pack.file);
    const answer = await multipart(`${server.url}/files`, server.token, [
      { name: 'metadata', type: 'application/json', body: JSON.stringify({ filename: 'node-service.tgz', contentType: 'application/gzip', integrity: pack.integrity }) },
      { name: 'file', filename: 'node-service.tgz', type: 'application/gzip', body: bytes },
    ]);
    expect(answer.status).toBe(201);
    expect(answer.body.data).toMatchObject({ state: 'confirmed', size: bytes.length, integrity: pack.integrity, filename: 'node-service.tgz' });
    const published = await multipart(`${server.url}/templates`, server.token, [
      { name: 'manifest', type: 'application/json', body: JSON.stringify(pack.manifest) },
      { name: 'fileId', body: answer.body.data.fileId as string },
    ]);
    expect(published.status).toBe(201);

    const mismatch = await multipart(`${server.url}/files`, server.token, [
      { name: 'metadata', body: JSON.stringify({ filename: 'x.tgz', contentType: 'application/gzip', size: 1 }) },
      { name: 'file', filename: 'x.tgz', type: 'application/gzip', body: randomBytes(10) },
    ]);
    expect(mismatch.status).toBe(422);
    const missing = await multipart(`${server.url}/files`, server.token, [{ name: 'metadata', body: '{}' }]);
    expect(missing.status).toBe(400);
    expect(await leftIn(path.join(server.storeDir, 'tmp'))).toEqual([]);
    expect(await leftIn(path.join(server.storeDir, 'files'))).toEqual([]);
  });

  it('answers the metadata part as a JSON body is answered: a missing part 400 REQUIRED, a broken value 422, not an object 400', async () => {
    const server = await startRegistryServer();
    const file = { name: 'file', filename: 'x.tgz', type: 'application/gzip', body: randomBytes(10) };
    const missing = await multipart(`${server.url}/files`, server.token, [{ name: 'metadata', body: '{}' }]);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'file', code: 'REQUIRED' })] });
    for (const metadata of [{ contentType: '' }, { filename: 'x'.repeat(256) }, { size: -1 }, { integrity: 7 }, { filename: 'a\u0000b' }]) {
      const broken = await multipart(`${server.url}/files`, server.token, [{ name: 'metadata', body: JSON.stringify(metadata) }, file]);
      expect(broken.status, JSON.stringify(metadata)).toBe(422);
      expect(broken.body.error.code).toBe('VALIDATION_ERROR');
      expect(broken.body.error.details[0].field).toMatch(/^metadata\./);
    }
    const notAnObject = await multipart(`${server.url}/files`, server.token, [{ name: 'metadata', body: '["x.tgz"]' }, file]);
    expect(notAnObject.status).toBe(400);
    expect(notAnObject.body.error.code).toBe('BAD_REQUEST');
    expect(await leftIn(path.join(server.storeDir, 'files'))).toEqual([]);
  });

  it('refuses a fileId together with a template part, and a fileId not yet confirmed', async () => {
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const created = await json('POST', `${server.url}/files/upload-url`, server.token, { filename: 'a.tgz', contentType: 'application/gzip' });
    const { fileId } = created.body.data as { fileId: string };
    const manifest = { name: 'manifest', type: 'application/json', body: JSON.stringify(pack.manifest) };
    expect((await multipart(`${server.url}/templates`, server.token, [{ name: 'fileId', body: fileId }, manifest])).status).toBe(409);
    const both = await multipart(`${server.url}/templates`, server.token, [
      { name: 'fileId', body: fileId },
      { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(pack.file) },
      manifest,
    ]);
    expect(both.status).toBe(400);
  });
});
