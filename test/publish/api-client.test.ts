/** The write API client (`publish/api-client.ts`): its retries, errors, redaction and bodies. */
import { createHash, randomBytes } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { readdir, readlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type http from 'node:http';
import path from 'node:path';

import busboy from 'busboy';
import { describe, expect, it } from 'vitest';

import { RegistryApiClient, RegistryApiError, type ApiRetryInfo } from '../../src/publish/api-client.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRecorder, type Received } from '../helpers/webhook-receiver.js';

const TOKEN = 'tr_client_secret_0123456789abcdef';

type Handler = (request: Received, res: http.ServerResponse) => void;

/** A server that reads each request whole, records it and answers with the next handler (the last one repeats). */
async function server(...handlers: Handler[]): Promise<{ url: string; received: Received[] }> {
  const recorder = await startRecorder((request, n, res) => handlers[Math.min(n, handlers.length) - 1]!(request, res));
  return { url: recorder.origin, received: recorder.requests };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
  (_request, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

/** A client whose waits are recorded, not slept. */
function client(url: string, extra: Partial<ConstructorParameters<typeof RegistryApiClient>[0]> = {}): { client: RegistryApiClient; waits: number[]; retries: ApiRetryInfo[] } {
  const waits: number[] = [];
  const retries: ApiRetryInfo[] = [];
  const made = new RegistryApiClient({
    registryUrl: url,
    token: TOKEN,
    minDelayMs: 10,
    maxDelayMs: 60_000,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
    onRetry: (info) => retries.push(info),
    ...extra,
  });
  return { client: made, waits, retries };
}

async function rejection(promise: Promise<unknown>): Promise<RegistryApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RegistryApiError);
  return error as RegistryApiError;
}

/** The parts of a multipart body as a server's parser (busboy) reads them. */
async function parts(request: Received): Promise<{ name: string; fileName?: string; type?: string; bytes: Buffer }[]> {
  const found: { name: string; fileName?: string; type?: string; bytes: Buffer }[] = [];
  await new Promise<void>((resolve, reject) => {
    const parser = busboy({ headers: request.headers });
    parser.on('field', (name, value) => found.push({ name, bytes: Buffer.from(value) }));
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => found.push({ name, fileName: info.filename, type: info.mimeType, bytes: Buffer.concat(chunks) }));
    });
    parser.on('close', resolve);
    parser.on('error', reject);
    parser.end(request.body);
  });
  return found;
}

describe('RegistryApiClient.json', () => {
  it('retries a 503 after the Retry-After it asks for, then gives the answer’s data', async () => {
    const registry = await server(json(503, { error: { code: 'SERVICE_UNAVAILABLE', message: 'busy' } }, { 'retry-after': '7' }), json(200, { data: { changed: 1 } }));
    const { client: api, waits, retries } = client(registry.url);
    expect(await api.json('PATCH', '/templates/bulk', { filter: { id: 'demo' } })).toEqual({ changed: 1 });
    expect(waits).toEqual([7000]);
    expect(retries).toEqual([{ attempt: 1, delayMs: 7000, reason: 'HTTP 503 SERVICE_UNAVAILABLE: busy (Retry-After 7000 ms)' }]);
    expect(registry.received.map((request) => `${request.method} ${request.url}`)).toEqual(['PATCH /templates/bulk', 'PATCH /templates/bulk']);
    expect(registry.received[1]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(registry.received[1]!.body.toString('utf8'))).toEqual({ filter: { id: 'demo' } });
  });

  it('does not retry a 4xx: its error names the request, the status, the message, the details and the request id, never the token', async () => {
    const registry = await server(
      json(422, {
        error: { code: 'VALIDATION_ERROR', message: `bad token ${TOKEN}`, details: [{ field: 'issuer', message: 'not trusted', code: 'ENUM' }], requestId: 'req-42' },
      }),
    );
    const { client: api, waits } = client(registry.url);
    const error = await rejection(api.json('POST', '/templates/demo/trusted-publishers', { issuer: 'x' }));
    expect(registry.received).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(error.message).toBe('POST /templates/demo/trusted-publishers: 422 bad token ***\n  issuer: not trusted\n  request id: req-42');
    expect(error).toMatchObject({ status: 422, code: 'VALIDATION_ERROR', requestId: 'req-42', attempts: 1 });
    expect(JSON.stringify(error)).not.toContain(TOKEN);
  });

  it('gives up after its retries, saying how many attempts it made', async () => {
    const registry = await server(json(500, { error: { code: 'INTERNAL_ERROR', message: 'boom' } }));
    const { client: api, waits } = client(registry.url, { retries: 2 });
    const error = await rejection(api.json('DELETE', '/templates/demo/versions/1.0.0'));
    expect(registry.received).toHaveLength(3);
    expect(waits).toHaveLength(2);
    expect(error.message).toBe('gave up after 3 attempts: DELETE /templates/demo/versions/1.0.0: 500 boom');
    expect(error.attempts).toBe(3);
  });

  it('refuses a redirect instead of following it, and does not retry it', async () => {
    const elsewhere = await server(json(200, { data: 'followed' }));
    const registry = await server((_request, res) => {
      res.writeHead(307, { location: `${elsewhere.url}/templates/bulk` });
      res.end();
    });
    const { client: api } = client(registry.url);
    const error = await rejection(api.json('PATCH', '/templates/bulk', {}));
    expect(error.code).toBe('REDIRECT');
    expect(error.message).toMatch(/redirect/);
    expect(registry.received).toHaveLength(1);
    expect(elsewhere.received).toHaveLength(0);
  });

  it('refuses a registry URL that is not http(s) before sending anything', () => {
    expect(() => new RegistryApiClient({ registryUrl: `ftp://user:${TOKEN}@example.com/` })).toThrow(/registry URL must be an http\(s\) URL/);
    expect(() => new RegistryApiClient({ registryUrl: `ftp://user:${TOKEN}@example.com/` })).not.toThrow(new RegExp(TOKEN));
  });
});

describe('RegistryApiClient.exchange bodies', () => {
  it('sends a FormData multipart with an exact Content-Length: text parts, JSON files and a file streamed from disk', async () => {
    const registry = await server(json(201, { data: {} }));
    const bytes = randomBytes(200 * 1024 + 17);
    const file = path.join(await tempDir('tr-client-'), 'demo.tgz');
    await writeFile(file, bytes);
    const { client: api } = client(registry.url);
    const progress: [number, number][] = [];
    const outcome = await api.exchange({
      method: 'POST',
      url: api.url('/templates'),
      body: {
        form: [
          { name: 'template', file: await openAsBlob(file, { type: 'application/gzip' }), fileName: 'demo "1".tgz' },
          { name: 'fileId', value: 'line one\nline two' },
          { name: 'manifest', file: new Blob(['{"name":"démo"}'], { type: 'application/json' }), fileName: 'template.json' },
        ],
      },
      onProgress: (sent, total) => progress.push([sent, total]),
    });
    expect(outcome).toMatchObject({ kind: 'response', response: { status: 201 } });

    const request = registry.received[0]!;
    expect(request.headers['transfer-encoding']).toBeUndefined();
    expect(Number(request.headers['content-length'])).toBe(request.body.length);
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const received = new Map((await parts(request)).map((part) => [part.name, part]));
    // FormData's escapes (a quote in a file name as %22, line breaks as CRLF) change the length too.
    expect(received.get('template')).toMatchObject({ fileName: 'demo %221%22.tgz', type: 'application/gzip' });
    expect(createHash('sha256').update(received.get('template')!.bytes).digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(received.get('fileId')!.bytes.toString('utf8')).toBe('line one\r\nline two');
    expect(received.get('manifest')).toMatchObject({ fileName: 'template.json', type: 'application/json' });
    expect(JSON.parse(received.get('manifest')!.bytes.toString('utf8'))).toEqual({ name: 'démo' });
    // Counted from 0 up to the Content-Length.
    expect(progress[0]).toEqual([0, request.body.length]);
    expect(progress.at(-1)).toEqual([request.body.length, request.body.length]);
  });

  it('sends a file read from its path in several chunks: the same bytes, an exact Content-Length, progress up to the end', async () => {
    const registry = await server(json(200, { data: {} }));
    const bytes = randomBytes(10 * 1024 * 1024 + 17);
    const file = path.join(await tempDir('tr-client-'), 'big.tgz');
    await writeFile(file, bytes);
    const { client: api } = client(registry.url);
    const progress: number[] = [];
    const outcome = await api.exchange({
      method: 'PUT',
      url: api.url('/files/x/content'),
      authorize: false,
      body: { file: await openAsBlob(file), contentType: 'application/gzip', path: file },
      source: file,
      onProgress: (sent) => progress.push(sent),
    });
    expect(outcome).toMatchObject({ kind: 'response', response: { status: 200 } });
    const request = registry.received[0]!;
    expect(Number(request.headers['content-length'])).toBe(bytes.length);
    expect(request.body.equals(bytes)).toBe(true);
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(bytes.length);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.every((sent, i) => i === 0 || sent > progress[i - 1]!)).toBe(true);
  });

  it.runIf(process.platform === 'linux')('opens no file for a request that fails before its body is sent', async () => {
    // A port nothing listens on: taken, then freed.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address() as { port: number };
        probe.close(() => resolve(address.port));
      });
    });
    const file = path.join(await tempDir('tr-client-'), 'demo.tgz');
    await writeFile(file, randomBytes(64 * 1024));
    const { client: api } = client(`http://127.0.0.1:${port}/`, { retries: 0 });
    const outcome = await api.exchange({ method: 'PUT', url: api.url('/files/x/content'), authorize: false, body: { file: await openAsBlob(file), contentType: 'application/gzip', path: file }, source: file });
    expect(outcome).toMatchObject({ kind: 'network' });
    const open = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
    expect(open).not.toContain(file);
  });

  it('does not retry when the file to send changed on disk after it was opened', async () => {
    const registry = await server(json(201, { data: {} }));
    const file = path.join(await tempDir('tr-client-'), 'demo.tgz');
    await writeFile(file, randomBytes(64 * 1024));
    const blob = await openAsBlob(file);
    await writeFile(file, randomBytes(1024));
    const { client: api, waits } = client(registry.url);
    const error = await rejection(api.call(() => api.exchange({ method: 'PUT', url: api.url('/files/x/content'), body: { file: blob, contentType: 'application/gzip' }, source: file })));
    expect(error.message).toContain(`cannot send ${file}`);
    expect(error.attempts).toBe(1);
    expect(waits).toEqual([]);
  });
});
