/**
 * The staged-file routes refuse a stranger (401) or a declared size over the limit (413) before
 * they read the body, as POST /templates does: a client still sending a small body (a declared
 * length of at most 8 MiB, LINGER_MAX_BYTES) gets that answer, not EPIPE or ECONNRESET, and its
 * connection serves the next request. So do the JSON routes, whose bodies are refused over their
 * 1 MiB limit by its declared length.
 */
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { LINGER_MAX_BYTES } from '../../src/server/envelope.js';
import { multipartBody } from '../helpers/multipart.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

/** A server whose /files accept at most 64 KiB of archive (and 16 KiB of metadata): a 1 MiB body is over the limit, yet small enough to be read and dropped. */
async function smallServer(): Promise<TestServer> {
  return startRegistryServer({ limits: { maxArchiveBytes: 64 * 1024, maxManifestBytes: 16 * 1024 } });
}

/** A POST /files body of `size` bytes of archive. */
function filesBody(size: number): { payload: Buffer; type: string } {
  return multipartBody([
    { name: 'metadata', type: 'application/json', body: JSON.stringify({ filename: 'a.tgz', contentType: 'application/gzip' }) },
    { name: 'file', filename: 'a.tgz', type: 'application/gzip', body: randomBytes(size) },
  ]);
}

/** Sends the whole request on one socket, then a GET on the same connection: both answers' heads as the client read them. */
async function refusedThenReused(server: TestServer, head: string, body: Buffer): Promise<{ first: string; next: string }> {
  const { port, host } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(head);
  socket.write(body);
  await vi.waitFor(() => expect(text).toMatch(/^HTTP\/1\.1 \d{3}[\s\S]*\r\n\r\n\{[\s\S]*\}$/), { timeout: 10_000 });
  const first = text;
  text = '';
  socket.write(`GET /registry.json HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  await vi.waitFor(() => expect(text).toMatch(/^HTTP\/1\.1 \d{3}/), { timeout: 10_000 });
  socket.destroy();
  return { first, next: text };
}

function requestHead(server: TestServer, method: string, target: string, headers: Record<string, string | number>): string {
  const { host } = new URL(server.url);
  return [`${method} ${target} HTTP/1.1`, `Host: ${host}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), '', ''].join('\r\n');
}

/** A fetch of the whole body, as an HTTP client sends it: the status it got, or the network error that lost it. */
async function fetchStatus(url: string, init: RequestInit): Promise<number | string> {
  try {
    const response = await fetch(url, init);
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? String(error);
  }
}

describe('POST /files refuses before the body, and its client gets the answer', () => {
  it.each([
    ['without a token', {}],
    ['with a token that is not one', { Authorization: 'Bearer trg_not_a_token' }],
  ])('answers 401 %s to a client still sending its body, and the connection serves the next request', async (_name, auth) => {
    const server = await smallServer();
    const { payload, type } = filesBody(32 * 1024);
    const { first, next } = await refusedThenReused(server, requestHead(server, 'POST', '/files', { 'Content-Type': type, 'Content-Length': payload.length, ...auth }), payload);
    expect(first).toMatch(/^HTTP\/1\.1 401/);
    expect(first).toMatch(/"code":"UNAUTHORIZED"/);
    expect(first).not.toMatch(/connection: close/i);
    expect(next).toMatch(/^HTTP\/1\.1 200/);

    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await fetchStatus(`${server.url}/files`, { method: 'POST', headers: { 'Content-Type': type, ...auth }, body: payload })).toBe(401);
    }
    expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]);
  });

  it('answers 413 to a declared Content-Length over the limit while the client still sends, and stores nothing', async () => {
    const server = await smallServer();
    const { payload, type } = filesBody(1024 * 1024);
    const { first, next } = await refusedThenReused(
      server,
      requestHead(server, 'POST', '/files', { 'Content-Type': type, 'Content-Length': payload.length, Authorization: `Bearer ${server.token}` }),
      payload,
    );
    expect(first).toMatch(/^HTTP\/1\.1 413/);
    expect(first).toMatch(/"code":"PAYLOAD_TOO_LARGE"/);
    expect(next).toMatch(/^HTTP\/1\.1 200/);

    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await fetchStatus(`${server.url}/files`, { method: 'POST', headers: { 'Content-Type': type, Authorization: `Bearer ${server.token}` }, body: payload })).toBe(413);
    }
    expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]);
  });
});

/** `POST /files/upload-url` of an archive: what the server answered. */
async function stageFile(server: TestServer): Promise<{ uploadUrl: string; maxBytes?: number }> {
  const created = await fetch(`${server.url}/files/upload-url`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
    body: JSON.stringify({ filename: 'a.tgz', contentType: 'application/gzip' }),
  });
  return ((await created.json()) as { data: { uploadUrl: string; maxBytes?: number } }).data;
}

describe('PUT of a staged file refuses a declared size over the limit before the body', () => {
  it('answers 413 to a client still sending its bytes, and the connection serves the next request', async () => {
    const server = await smallServer();
    const { uploadUrl } = await stageFile(server);
    const target = new URL(uploadUrl);
    const bytes = randomBytes(1024 * 1024);
    const { first, next } = await refusedThenReused(
      server,
      requestHead(server, 'PUT', `${target.pathname}${target.search}`, { 'Content-Type': 'application/gzip', 'Content-Length': bytes.length }),
      bytes,
    );
    expect(first).toMatch(/^HTTP\/1\.1 413/);
    expect(first).not.toMatch(/connection: close/i);
    expect(next).toMatch(/^HTTP\/1\.1 200/);
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await fetchStatus(uploadUrl, { method: 'PUT', headers: { 'Content-Type': 'application/gzip' }, body: bytes })).toBe(413);
    }
  });

  it('gives the publish client, staging an archive over the limit, the 413 rather than a network error', async () => {
    const server = await smallServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const archive = path.join(await tempDir(), 'large.tgz');
    await writeFile(archive, randomBytes(2 * 1024 * 1024));
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive, manifest: pack.manifest, retries: 0, largeUploadThreshold: 0 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 413 });
  });

  it('tells the publish client the most it may send, so that an archive too large to be read and dropped (over 8 MiB) is refused before a byte of it is sent', async () => {
    const server = await smallServer();
    expect((await stageFile(server)).maxBytes).toBe(64 * 1024);
    const puts: string[] = [];
    server.app.server.on('request', (request: { method?: string; url?: string }) => {
      if (request.method === 'PUT') puts.push(request.url ?? '');
    });
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const archive = path.join(await tempDir(), 'large.tgz');
    await writeFile(archive, randomBytes(LINGER_MAX_BYTES + 1024 * 1024));
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive, manifest: pack.manifest, retries: 2, largeUploadThreshold: 0 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect((error as Error).message).toContain(`${archive} is ${LINGER_MAX_BYTES + 1024 * 1024} bytes; the registry accepts at most ${64 * 1024}`);
    expect(puts).toEqual([]);
  });
});

describe('a JSON body declared over the 1 MiB body limit', () => {
  it.each([
    ['POST /events', 'POST', '/events', false],
    ['PATCH /templates/{id}/versions/{version}', 'PATCH', '/templates/web-app/versions/1.0.0', true],
  ])('%s: answers 413 to a client still sending its body, and the connection serves the next request', async (_name, method, target, authorized) => {
    const server = await smallServer();
    const payload = Buffer.from(JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) }), 'utf8');
    const auth: Record<string, string> = authorized ? { Authorization: `Bearer ${server.token}` } : {};
    const { first, next } = await refusedThenReused(server, requestHead(server, method, target, { 'Content-Type': 'application/json', 'Content-Length': payload.length, ...auth }), payload);
    expect(first).toMatch(/^HTTP\/1\.1 413/);
    expect(first).toMatch(/"code":"PAYLOAD_TOO_LARGE"/);
    expect(first).toMatch(/the body is larger than the limit of 1048576 bytes/);
    expect(first).not.toMatch(/connection: close/i);
    expect(next).toMatch(/^HTTP\/1\.1 200/);
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await fetchStatus(`${server.url}${target}`, { method, headers: { 'Content-Type': 'application/json', ...auth }, body: payload })).toBe(413);
    }
  });

  it('still closes the connection after a chunked body read past the limit', async () => {
    const server = await smallServer();
    const { port, host } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /events HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const chunk = Buffer.alloc(256 * 1024, 'x');
    for (let i = 0; i < 5; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString('latin1')}\r\n`);
    await closed;
    expect(text).toMatch(/^HTTP\/1\.1 413/);
    expect(text).toMatch(/connection: close/i);
  });
});
