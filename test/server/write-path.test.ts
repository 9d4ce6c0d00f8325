/**
 * The write path: no upload can freeze the registry, 201 means stored, a failure leaves
 * no trace, slow and oversized requests are cut off, usage numbers cannot be forged cheaply, and the
 * store is private.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';

import { create as createTar } from 'tar';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { TemplateManifest } from '../../src/core/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { createServer, type RegistryServer } from '../../src/server/index.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

const servers: RegistryServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.app.close()));
});

async function packed(manifest: Partial<TemplateManifest> = {}) {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, ...manifest } });
  return packTemplate(dir, { outDir: await tempDir() });
}

/** Packs a template folder as is, even when its manifest is invalid (the packer would refuse it). */
async function rawPack(dir: string): Promise<{ pack: Awaited<ReturnType<typeof packed>>; manifest: TemplateManifest }> {
  const manifest = JSON.parse(await readFile(path.join(dir, 'template.json'), 'utf8')) as TemplateManifest;
  const file = path.join(await tempDir(), 'raw.tgz');
  await createTar({ gzip: true, file, cwd: dir, portable: true }, await readdir(dir));
  return { pack: { file, manifest } as Awaited<ReturnType<typeof packed>>, manifest };
}

/** Sends raw bytes to the server and resolves with what it answered, once it closes the connection. */
function rawRequest(server: TestServer, head: string, body: Buffer, options: { keepWriting?: boolean } = {}): Promise<{ text: string; closedEarly: boolean }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    let ended = false;
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      ended = true;
      resolve({ text, closedEarly: true });
    });
    socket.on('connect', () => {
      socket.write(head);
      socket.write(body);
      if (!options.keepWriting) return;
      // Keep trickling: the server must answer and hang up without waiting for the rest.
      const trickle = setInterval(() => {
        if (ended || socket.destroyed) clearInterval(trickle);
        else socket.write(Buffer.alloc(1024));
      }, 20);
    });
    setTimeout(() => reject(new Error(`no answer: ${text}`)), 20_000).unref();
  });
}

function multipartHead(server: TestServer, length: number, headers: Record<string, string> = {}): string {
  const { host } = new URL(server.url);
  const lines = [
    'POST /templates HTTP/1.1',
    `Host: ${host}`,
    'Content-Type: multipart/form-data; boundary=b0undary',
    `Content-Length: ${length}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ];
  return lines.join('\r\n');
}

describe('no upload can freeze the registry', () => {
  it('refuses a manifest whose author fields are not strings, before anything is stored', async () => {
    const server = await startRegistryServer();
    const pack = await packed({ author: { name: 'A', url: 42 as unknown as string } });
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect((error as PublishError).status).toBe(422);
    expect((error as PublishError).details).toContainEqual(expect.objectContaining({ field: 'author.url', code: 'TYPE' }));
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('starts on a store holding a version an older release let in, leaves it out with a logged error, and keeps publishing', async () => {
    const dir = await tempDir('tr-poisoned-');
    const storage = await openSqliteStorage(dir);
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    const archive = path.join(await tempDir(), 'a.tgz');
    await writeFile(archive, 'bytes');
    await storage.versions.reserveVersion({ name: 'poisoned', version: '1.0.0', integrity: 'sha512-AAAA', sha256: 'a'.repeat(64), size: 5, owner: record.owner }, record);
    const bad = { ...validManifest, name: 'poisoned', author: { name: 'A', url: 42 } } as unknown as TemplateManifest;
    await storage.versions.commitVersion('poisoned', '1.0.0', archive, bad);
    await storage.close();

    const logs: string[] = [];
    const server = await createServer({ store: dir, publicUrl: 'http://registry.test', logger: { level: 'error', stream: { write: (line: string) => logs.push(line) } } });
    servers.push(server);
    expect(server.context.registry().document.templates).toEqual([]);
    expect(logs.join('')).toMatch(/poisoned@1\.0\.0 is left out of the registry: its entry is invalid/);
    expect((await server.app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('no template pattern can freeze the registry', () => {
  it.each(['^(a|a)*$', '^(b|b)*$', '^(a+)+$', '(x+x+)+y'])(
    'refuses at upload (422, naming the variable) a template whose pattern %s can backtrack catastrophically, by judging the pattern, never by running it on its long default',
    async (pattern) => {
      const server = await startRegistryServer();
      // A backtracking matcher would spend 2^5000 steps refusing this default; the judgement reads only the pattern.
      const dir = await writeTemplate({
        'template.vars.json': { variables: { projectName: { type: 'string', default: `${'a'.repeat(5_000)}!`, validation: pattern } } },
        'template.prompts.json': { prompts: [] },
      });
      const pack = await packTemplate(dir, { outDir: await tempDir() });
      const [upload, health] = await Promise.all([
        publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e),
        fetch(`${server.url}/templates`),
      ]);
      expect(health.status).toBe(200);
      const error = upload as PublishError;
      expect(error).toBeInstanceOf(PublishError);
      expect(error.status).toBe(422);
      expect(error.details).toContainEqual(
        expect.objectContaining({
          field: 'template/template.vars.json',
          code: 'REGEX_UNSAFE',
          message: expect.stringContaining(`validation of variable "projectName" ${JSON.stringify(pattern)} is refused: it is prone to catastrophic backtracking`),
        }),
      );
      // Judged, not run: the default was never matched against the pattern (no default-invalid finding).
      expect((error.details ?? []).filter((d) => d.code === 'DEFAULT_INVALID')).toEqual([]);
      expect(await server.store.versions.listVersions()).toEqual([]);
    },
  );
});

describe('a version an older release let in under a loose spelling', () => {
  it('is left out of the registry with a logged error; the server still starts, and its routes refuse that spelling (400)', async () => {
    const dir = await tempDir('tr-loose-');
    const storage = await openSqliteStorage(dir);
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    const archive = path.join(await tempDir(), 'a.tgz');
    await writeFile(archive, 'bytes');
    await storage.versions.reserveVersion({ name: 'loose', version: '01.0.0', integrity: 'sha512-AAAA', sha256: 'a'.repeat(64), size: 5, owner: record.owner }, record);
    await storage.versions.commitVersion('loose', '01.0.0', archive, { ...validManifest, name: 'loose', version: '01.0.0' });
    await storage.close();

    const logs: string[] = [];
    const server = await createServer({ store: dir, publicUrl: 'http://registry.test', logger: { level: 'error', stream: { write: (line: string) => logs.push(line) } } });
    servers.push(server);
    expect(server.context.registry().document.templates).toEqual([]);
    expect(logs.join('')).toMatch(/loose@01\.0\.0 is left out of the registry: its entry is invalid/);
    expect((await server.app.inject({ url: '/templates/loose/versions/01.0.0' })).statusCode).toBe(400);
  });
});

describe('the archive is what the manifest says', () => {
  async function uploadWith(manifest: object, template: Awaited<ReturnType<typeof packed>>) {
    const server = await startRegistryServer();
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive: template.file, manifest: manifest as TemplateManifest, retries: 0 }).catch((e: unknown) => e);
    return { server, error: error as PublishError };
  }

  it('refuses an archive whose template.json differs from the manifest part in any field (422 MISMATCH)', async () => {
    const pack = await packed();
    const { server, error } = await uploadWith({ ...pack.manifest, description: 'A description the archive does not have' }, pack);
    expect(error.status).toBe(422);
    expect(error.details).toContainEqual(expect.objectContaining({ field: 'template/template.json', code: 'MISMATCH', message: expect.stringContaining('"description"') }));
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it("validates the archive's template.json with the full manifest rules", async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, stability: 'rock-solid' } });
    const { pack, manifest } = await rawPack(dir);
    const { error } = await uploadWith({ ...manifest, stability: 'stable' }, pack);
    expect(error.status).toBe(422);
    expect(error.details).toContainEqual(expect.objectContaining({ field: expect.stringMatching(/^template\/template\.json.*stability/) }));
  });

  it('lists every problem of the template in the archive: validation, lint errors, unsafe regular expressions, Liquid syntax', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { projectName: { type: 'string', default: 'my-app', validation: '^(a+)+$' }, features: { type: 'array', enum: ['api', 'testing'], default: ['api'] } } },
      'template/broken.md': '{% if projectName %}never closed',
    });
    const pack = await packTemplate(dir, { outDir: await tempDir() });
    const { server, error } = await uploadWith(pack.manifest, pack);
    expect(error.status).toBe(422);
    const rules = (error.details ?? []).map((d) => d.code);
    expect(rules).toEqual(expect.arrayContaining(['REGEX_UNSAFE', 'LIQUID_SYNTAX']));
    expect(error.details).toContainEqual(expect.objectContaining({ field: 'template/template/broken.md', message: expect.stringMatching(/^template\/broken\.md:1:\d+ error liquid-syntax/) }));
    expect(await server.store.versions.listVersions()).toEqual([]);
  });
});

describe('201 means stored, and a failure leaves no trace', () => {
  it('answers an upload of a version another upload is storing with 503 and Retry-After, never a 409 that claims it', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const { record, token } = await server.store.tokens.createToken({ role: 'admin' });
    await server.store.versions.reserveVersion(
      { name: pack.manifest.name, version: pack.manifest.version, integrity: pack.integrity, sha256: pack.sha256, size: pack.size, owner: record.owner },
      record,
    );
    const error = await publishTemplate({ registryUrl: server.url, token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(503);
    expect((error as PublishError).code).toBe('VERSION_IN_PROGRESS');
  });
});

describe('no temp file survives a failed request', () => {
  const cases: Array<[string, (server: TestServer) => Promise<unknown>]> = [
    [
      'an archive over the size limit',
      async (server) => {
        const pack = await packed();
        const big = path.join(await tempDir(), 'big.tgz');
        await writeFile(big, Buffer.alloc(3 * 1024 * 1024));
        return publishTemplate({ registryUrl: server.url, token: server.token, archive: big, manifest: pack.manifest, retries: 0 }).catch(() => undefined);
      },
    ],
    [
      'an invalid JSON manifest',
      async (server) => {
        const body = Buffer.from(
          '--b0undary\r\nContent-Disposition: form-data; name="template"; filename="t.tgz"\r\nContent-Type: application/gzip\r\n\r\n' +
            'x'.repeat(10_000) +
            '\r\n--b0undary\r\nContent-Disposition: form-data; name="manifest"\r\nContent-Type: text/plain\r\n\r\n{not json\r\n--b0undary--\r\n',
        );
        return rawRequest(server, multipartHead(server, body.length, { Authorization: `Bearer ${server.token}`, Connection: 'close' }), body);
      },
    ],
    [
      'a duplicate template part',
      async (server) => {
        const part = '--b0undary\r\nContent-Disposition: form-data; name="template"; filename="t.tgz"\r\nContent-Type: application/gzip\r\n\r\n' + 'x'.repeat(5000) + '\r\n';
        const body = Buffer.from(`${part}${part}--b0undary--\r\n`);
        return rawRequest(server, multipartHead(server, body.length, { Authorization: `Bearer ${server.token}`, Connection: 'close' }), body);
      },
    ],
    [
      'a connection dropped half-way through the archive',
      async (server) => {
        const { port } = new URL(server.url);
        const body = Buffer.from('--b0undary\r\nContent-Disposition: form-data; name="template"; filename="t.tgz"\r\nContent-Type: application/gzip\r\n\r\n' + 'x'.repeat(200_000));
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), '127.0.0.1', () => {
            socket.write(multipartHead(server, body.length + 100_000, { Authorization: `Bearer ${server.token}` }));
            socket.write(body, () => {
              socket.destroy();
              resolve();
            });
          });
        });
      },
    ],
  ];

  it.each(cases)('leaves nothing in the store after %s', async (_name, send) => {
    const server = await startRegistryServer({ limits: { maxArchiveBytes: 1024 * 1024 } });
    await send(server);
    await vi.waitFor(async () => expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]), { timeout: 10_000 });
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('removes stray temp files anywhere in the store when the server starts', async () => {
    const dir = await tempDir('tr-stray-');
    await (await openSqliteStorage(dir)).close();
    const strays = [path.join(dir, 'tmp', '123-abc.tgz'), path.join(dir, 'manifests', 'a', '.1.0.0.json.99.0123456789ab.tmp'), path.join(dir, 'public', '.registry.json.7.abcdefabcdef.tmp')];
    for (const file of strays) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, 'left by a crash');
    }
    const server = await createServer({ store: dir, publicUrl: 'http://registry.test' });
    servers.push(server);
    for (const file of strays) await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });
});

describe('slow and oversized requests are cut off', () => {
  it('answers an upload without a valid token with 401 and closes the connection without reading the body', async () => {
    const server = await startRegistryServer();
    const answer = await rawRequest(server, multipartHead(server, 500 * 1024 * 1024, { Authorization: 'Bearer nope' }), Buffer.alloc(64 * 1024), { keepWriting: true });
    expect(answer.text).toMatch(/^HTTP\/1\.1 401/);
    expect(answer.text).toMatch(/connection: close/i);
    expect(answer.closedEarly).toBe(true);
  });

  it('reads and drops the rest of a small refused body, so that its client gets the 401 (not a reset) and the connection serves the next request', async () => {
    const server = await startRegistryServer();
    const { port, host } = new URL(server.url);
    const body = randomBytes(256 * 1024);
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(multipartHead(server, body.length, { Authorization: 'Bearer nope' }));
    socket.write(body);
    await vi.waitFor(() => expect(text).toMatch(/^HTTP\/1\.1 401[\s\S]*\r\n\r\n\{[\s\S]*\}$/), { timeout: 10_000 });
    expect(text).not.toMatch(/connection: close/i);
    text = '';
    socket.write(`GET /registry.json HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await vi.waitFor(() => expect(text).toMatch(/^HTTP\/1\.1 200/), { timeout: 10_000 });
    socket.destroy();
    // The publish client sees the same answer, whatever the timing.
    const archive = path.join(await tempDir(), 'refused.tgz');
    await writeFile(archive, randomBytes(2 * 1024 * 1024));
    const error = await publishTemplate({ registryUrl: server.url, token: 'tr_not_a_token_of_this_registry', archive, manifest: (await packed({})).manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 401 });
  });

  it('answers an upload whose Content-Length passes the limit with 413 and closes the connection', async () => {
    const server = await startRegistryServer({ limits: { maxArchiveBytes: 1024 * 1024 } });
    const answer = await rawRequest(server, multipartHead(server, 500 * 1024 * 1024, { Authorization: `Bearer ${server.token}` }), Buffer.alloc(64 * 1024), {
      keepWriting: true,
    });
    expect(answer.text).toMatch(/^HTTP\/1\.1 413/);
    expect(answer.text).toMatch(/PAYLOAD_TOO_LARGE/);
    expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]);
  });

  it('disconnects an upload that trickles in slower than the request timeout, and removes its temp file', async () => {
    const server = await startRegistryServer({ limits: { requestTimeoutMs: 300 } });
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(multipartHead(server, 10_000_000, { Authorization: `Bearer ${server.token}` }));
    socket.write('--b0undary\r\nContent-Disposition: form-data; name="template"; filename="t.tgz"\r\nContent-Type: application/gzip\r\n\r\n');
    const trickle = setInterval(() => socket.write('x'), 20);
    await closed;
    clearInterval(trickle);
    await vi.waitFor(async () => expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]));
  });
});

describe('usage numbers cannot be forged cheaply', () => {
  async function withPublished(): Promise<TestServer> {
    const server = await startRegistryServer();
    const pack = await packTemplate(example, { outDir: await tempDir() });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    return server;
  }
  const download = { type: 'download', templateId: 'node-service', version: '1.1.0', userAgent: 'x', platform: 'linux' };

  it('refuses unknown fields, over-long strings and timestamps from the future; stamps a feedback event without timestamp', async () => {
    const server = await withPublished();
    const post = (payload: object) => server.app.inject({ method: 'POST', url: '/events', payload });
    const now = new Date().toISOString();
    const unknown = await post({ ...download, timestamp: now, referrer: 'x' });
    expect(unknown.statusCode).toBe(422);
    const long = await post({ ...download, timestamp: now, userAgent: 'x'.repeat(10_000) });
    expect(long.statusCode).toBe(422);
    expect(long.json().error.details).toContainEqual(expect.objectContaining({ field: 'userAgent', code: 'MAX_LENGTH' }));
    const future = await post({ ...download, timestamp: new Date(Date.now() + 3_600_000).toISOString() });
    expect(future.statusCode).toBe(422);
    expect(future.json().error.details).toContainEqual(expect.objectContaining({ field: 'timestamp', code: 'IN_THE_FUTURE' }));
    const feedback = await post({ type: 'feedback', templateId: 'node-service', version: '1.1.0', rating: 5, comment: 'nice', userId: 'u1' });
    expect(feedback.statusCode).toBe(202);
    expect(await server.store.events.countEvents('feedback')).toBe(1);
  });

  it('counts one download per client address, template version and day, whatever route reports it; stores every event', async () => {
    const server = await withPublished();
    const archiveUrl = `${server.url}/templates/node-service/versions/1.1.0/archive`;
    for (let i = 0; i < 3; i++) expect((await fetch(archiveUrl)).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await server.app.inject({ method: 'POST', url: '/events', payload: { ...download, timestamp: new Date().toISOString() }, remoteAddress: '127.0.0.1' });
      expect(res.statusCode).toBe(202);
    }
    const other = await server.app.inject({ method: 'POST', url: '/events', payload: { ...download, timestamp: new Date().toISOString() }, remoteAddress: '10.9.8.7' });
    expect(other.statusCode).toBe(202);
    expect(await server.store.events.countEvents('download')).toBe(7);
    expect((await server.store.events.usage()).get('node-service@1.1.0')?.downloads).toBe(2);
    await server.context.rebuild();
    expect(server.context.registry().document.templates[0]?.stats?.downloads).toBe(2);
  });

  it('does not count (nor store) an archive download made to read the template (X-Download-Purpose: inspect, as info sends)', async () => {
    const server = await withPublished();
    const archiveUrl = `${server.url}/templates/node-service/versions/1.1.0/archive`;
    const inspected = await fetch(archiveUrl, { headers: { 'X-Download-Purpose': 'inspect' } });
    expect(inspected.status).toBe(200);
    expect((await inspected.arrayBuffer()).byteLength).toBeGreaterThan(0);
    expect(await server.store.events.countEvents('download')).toBe(0);
    expect((await fetch(archiveUrl)).status).toBe(200);
    expect(await server.store.events.countEvents('download')).toBe(1);
  });
});

describe('a private store', () => {
  it('creates store folders 0700 and files 0600 whatever the umask', async () => {
    const previous = process.umask(0o022);
    try {
      const server = await startRegistryServer();
      const pack = await packed();
      await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
      const mode = async (file: string) => (await stat(path.join(server.storeDir, file))).mode & 0o777;
      for (const folder of ['.', 'archives', 'manifests', 'tmp', 'public', `archives/${pack.manifest.name}`, `manifests/${pack.manifest.name}`]) expect(await mode(folder), folder).toBe(0o700);
      for (const file of ['registry.sqlite', `archives/${pack.manifest.name}/1.0.0.tgz`, `manifests/${pack.manifest.name}/1.0.0.json`]) expect(await mode(file), file).toBe(0o600);
    } finally {
      process.umask(previous);
    }
  });

  it('takes the client address the trusted proxy saw, not the leftmost X-Forwarded-For', async () => {
    const server = await startRegistryServer({ trustProxy: 1, limits: { readPerMinute: 5 } });
    const remaining = async (forwardedFor: string) =>
      Number((await server.app.inject({ url: '/healthz', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': forwardedFor } })).headers['x-ratelimit-remaining']);
    // A client that makes up a new leftmost address on each request is still one client.
    expect(await remaining('1.1.1.1, 203.0.113.9')).toBe(4);
    expect(await remaining('2.2.2.2, 203.0.113.9')).toBe(3);
    expect(await remaining('203.0.113.10')).toBe(4);
  });
});
