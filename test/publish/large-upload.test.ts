import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';

import { afterEach, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { DEFAULT_LARGE_UPLOAD_THRESHOLD, publishTemplate, PublishError } from '../../src/publish/upload.js';
import { startFakeRegistry, type FakeRegistry } from '../helpers/fake-registry.js';
import { tempDir, validManifest } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

/** A server whose request log (method and URL of each request) the test reads. */
async function loggedServer(): Promise<{ server: TestServer; requests: string[] }> {
  const requests: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        const entry = JSON.parse(line) as { req?: { method?: string; url?: string } };
        if (entry.req?.method && entry.req.url) requests.push(`${entry.req.method} ${entry.req.url.replace(/\?.*$/, '')}`);
      }
      done();
    },
  });
  const server = await startRegistryServer({ logger: { level: 'info', stream } });
  return { server, requests };
}

const fakes: FakeRegistry[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

describe('publishTemplate above largeUploadThreshold', () => {
  it('goes through /files (upload-url, PUT, confirm, POST /templates with fileId) and publishes the same bytes', async () => {
    const { server, requests } = await loggedServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const progress: [number, number][] = [];
    const result = await publishTemplate({
      registryUrl: server.url,
      token: server.token,
      archive: pack.file,
      manifest: pack.manifest,
      largeUploadThreshold: 1,
      onProgress: (sent, total) => progress.push([sent, total]),
    });
    expect(result).toMatchObject({ uploaded: true, status: 201, integrity: pack.integrity });
    expect(requests).toContain('POST /files/upload-url');
    expect(requests.some((request) => /^PUT \/files\/[0-9a-f-]+\/content$/.test(request))).toBe(true);
    expect(requests.some((request) => /^POST \/files\/[0-9a-f-]+\/confirm$/.test(request))).toBe(true);
    expect(requests).toContain('POST /templates');
    // The PUT carries the archive alone: its progress ends at the archive's size.
    expect(progress.at(-1)).toEqual([pack.size, pack.size]);

    const archive = await readFile(server.store.archivePath('node-service', pack.manifest.version));
    expect(`sha512-${createHash('sha512').update(archive).digest('base64')}`).toBe(pack.integrity);
    expect(await readdir(path.join(server.storeDir, 'files'))).toEqual([]);
  });

  it('sends an archive below the threshold in one multipart POST, as before', async () => {
    const { server, requests } = await loggedServer();
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    expect(pack.size).toBeLessThan(DEFAULT_LARGE_UPLOAD_THRESHOLD);
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    expect(requests.filter((request) => request.includes('/files'))).toEqual([]);
    expect(requests).toContain('POST /templates');
  });

  it('falls back to one multipart POST on a registry without /files, and says it is too old when that is refused as too large', async () => {
    const fake = await startFakeRegistry({ token: 'tr_token_0123456789' });
    fakes.push(fake);
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const manifest = { ...validManifest, name: 'node-service', version: pack.manifest.version };
    const options = { registryUrl: fake.url, token: fake.token, archive: pack.file, manifest, largeUploadThreshold: 1, minDelayMs: 1, maxDelayMs: 5 };
    const result = await publishTemplate(options);
    expect(result.uploaded).toBe(true);
    expect(fake.uploads).toHaveLength(1);
    expect(fake.uploads[0]?.integrity).toBe(pack.integrity);

    fake.fail([404, 413]);
    const error = await publishTemplate({ ...options, manifest: { ...manifest, version: '9.9.9' } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(413);
    expect((error as PublishError).message).toMatch(/too old for large uploads/);
  });

  it('refuses a threshold that is not a number >= 0', async () => {
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    await expect(publishTemplate({ registryUrl: 'http://127.0.0.1:9', token: 't', archive: pack.file, manifest: pack.manifest, largeUploadThreshold: -1 })).rejects.toThrow(/largeUploadThreshold/);
  });
});
