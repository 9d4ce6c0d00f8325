/**
 * `/files` has a per-token quota. A token keeps at most `maxStagedFilesPerToken`
 * staged files (past it 429 QUOTA_EXCEEDED, Retry-After until the first expires) holding at most
 * `maxStagedBytesPerToken` bytes together (past it 413 QUOTA_EXCEEDED), counted by the store in one
 * transaction with each change, so parallel requests cannot pass it together.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';

import { expect, it } from 'vitest';

import { describeOnEveryBackend } from '../helpers/backends.js';
import { startServerOn, type StorageTestServer } from '../helpers/registry-server.js';

const LIMITS = { maxStagedFilesPerToken: 3, maxStagedBytesPerToken: 1000 };

async function stageUrl(server: StorageTestServer, token: string) {
  return server.app.inject({ method: 'POST', url: '/files/upload-url', headers: { authorization: `Bearer ${token}` }, payload: { filename: 'a.tgz', contentType: 'application/gzip' } });
}

const localPart = (url: string): string => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

const put = (server: StorageTestServer, uploadUrl: string, bytes: Buffer) =>
  server.app.inject({ method: 'PUT', url: localPart(uploadUrl), headers: { 'content-type': 'application/gzip' }, payload: bytes });

/** A PUT without Content-Length (chunked): only the streamed bytes can tell it is too large. */
function putChunked(server: StorageTestServer, uploadUrl: string, bytes: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}${localPart(uploadUrl)}`, { method: 'PUT', headers: { 'content-type': 'application/gzip', 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    for (let at = 0; at < bytes.length; at += 100) req.write(bytes.subarray(at, at + 100));
    req.end();
  });
}

function multipartFile(bytes: Buffer): { payload: Buffer; type: string } {
  const boundary = `----tr${randomBytes(8).toString('hex')}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.tgz"\r\nContent-Type: application/gzip\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, type: `multipart/form-data; boundary=${boundary}` };
}

describeOnEveryBackend('the per-token quota of /files', (openStorage) => {
  it('refuses a token’s files past the count with 429 and past the bytes with 413 (declared, streamed, multipart, parallel), never another token’s', async () => {
    const server = await startServerOn(await openStorage(), { limits: LIMITS });
    const { token: other } = await server.store.tokens.createToken({ role: 'publisher' });

    // Count: three parallel... of ten parallel stagings, three are kept.
    const staged = await Promise.all(Array.from({ length: 10 }, () => stageUrl(server, server.token)));
    const kept = staged.filter((res) => res.statusCode === 201);
    expect(kept).toHaveLength(3);
    const refused = staged.find((res) => res.statusCode === 429)!;
    expect(refused.json().error).toMatchObject({ code: 'QUOTA_EXCEEDED', retryAfter: expect.any(Number) });
    // Until the first staged file expires (an hour for one without bytes).
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3500);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(3600);
    expect((await stageUrl(server, other)).statusCode).toBe(201);
    const [first, second, third] = kept.map((res) => res.json().data as { uploadUrl: string; fileId: string });

    // Bytes: 600 fit; 600 more do not (declared, or streamed without a length); 400 do; 600 again in place of the first's 600 do.
    expect((await put(server, first!.uploadUrl, randomBytes(600))).statusCode).toBe(200);
    const declared = await put(server, second!.uploadUrl, randomBytes(600));
    expect(declared.statusCode).toBe(413);
    expect(declared.json().error.code).toBe('QUOTA_EXCEEDED');
    const streamed = await putChunked(server, second!.uploadUrl, randomBytes(600));
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.body).error.code).toBe('QUOTA_EXCEEDED');
    expect((await server.store.files.getFile(second!.fileId))?.state).toBe('pending');
    expect((await put(server, second!.uploadUrl, randomBytes(400))).statusCode).toBe(200);
    expect((await put(server, first!.uploadUrl, randomBytes(600))).statusCode).toBe(200);
    expect(await server.store.files.usage((await server.store.files.getFile(first!.fileId))!.tokenId)).toMatchObject({ files: 3, bytes: 1000 });

    // POST /files: the count is checked before the body is read.
    const form = multipartFile(randomBytes(10));
    const multipart = await server.app.inject({ method: 'POST', url: '/files', payload: form.payload, headers: { 'content-type': form.type, authorization: `Bearer ${server.token}` } });
    expect(multipart.statusCode).toBe(429);
    expect(multipart.json().error.code).toBe('QUOTA_EXCEEDED');
    expect(third).toBeDefined();
  });

  it('lets only one of two parallel uploads that each fit, but not together, be stored', async () => {
    const server = await startServerOn(await openStorage(), { limits: LIMITS });
    const urls = await Promise.all([stageUrl(server, server.token), stageUrl(server, server.token)]);
    const [a, b] = urls.map((res) => res.json().data as { uploadUrl: string; fileId: string });
    const answers = await Promise.all([put(server, a!.uploadUrl, randomBytes(700)), put(server, b!.uploadUrl, randomBytes(700))]);
    expect(answers.map((res) => res.statusCode).sort()).toEqual([200, 413]);
    const states = await Promise.all([a!.fileId, b!.fileId].map(async (id) => (await server.store.files.getFile(id))?.state));
    expect(states.sort()).toEqual(['pending', 'uploaded']);
    // A multipart upload of what is left fits; one byte more does not.
    const tooMuch = multipartFile(randomBytes(301));
    const over = await server.app.inject({ method: 'POST', url: '/files', payload: tooMuch.payload, headers: { 'content-type': tooMuch.type, authorization: `Bearer ${server.token}` } });
    expect(over.statusCode).toBe(413);
    expect(over.json().error.code).toBe('QUOTA_EXCEEDED');
    const fits = multipartFile(randomBytes(300));
    expect((await server.app.inject({ method: 'POST', url: '/files', payload: fits.payload, headers: { 'content-type': fits.type, authorization: `Bearer ${server.token}` } })).statusCode).toBe(201);
  });
});
