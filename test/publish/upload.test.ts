import { createHash, randomBytes } from 'node:crypto';
import { open, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { parseRetryAfter, retryDelay } from '../../src/core/index.js';
import {
  publishTemplate,
  PublishError,
  type PublishOptions,
  type PublishRetryInfo,
} from '../../src/publish/upload.js';
import { startFakeRegistry, type FakeRegistry } from '../helpers/fake-registry.js';
import { tempDir, validManifest } from '../helpers/fixtures.js';

const TOKEN = 'tr_secret_token_0123456789abcdef';
const manifest = validManifest;

const registries: FakeRegistry[] = [];
afterEach(async () => {
  await Promise.all(registries.splice(0).map((registry) => registry.close()));
});

async function registry(options: Parameters<typeof startFakeRegistry>[0] = {}): Promise<FakeRegistry> {
  const started = await startFakeRegistry({ token: TOKEN, ...options });
  registries.push(started);
  return started;
}

function sri(bytes: Buffer): string {
  return `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
}

async function archive(bytes: Buffer = randomBytes(4096)): Promise<{ file: string; bytes: Buffer; integrity: string }> {
  const file = path.join(await tempDir('tr-publish-'), 'demo-template-1.0.0.tgz');
  await writeFile(file, bytes);
  return { file, bytes, integrity: sri(bytes) };
}

function options(fake: FakeRegistry, file: string, extra: Partial<PublishOptions> = {}): PublishOptions {
  return { registryUrl: fake.url, token: TOKEN, archive: file, manifest, minDelayMs: 1, maxDelayMs: 20, ...extra };
}

async function rejection(promise: Promise<unknown>): Promise<PublishError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PublishError);
    return error as PublishError;
  }
  throw new Error('expected a PublishError');
}

describe('publishTemplate', () => {
  it('uploads the archive and the manifest as multipart with the bearer token', async () => {
    const fake = await registry();
    const { file, bytes, integrity } = await archive();
    const result = await publishTemplate(options(fake, file, { registryUrl: `${fake.url}/`, userAgent: 'tests/1.0' }));

    expect(result).toMatchObject({ uploaded: true, status: 201, attempts: 1, integrity });
    expect(result.location).toBe(`${fake.url}/templates/demo-template/versions/1.0.0`);
    expect(result.downloadUrl).toBe(`${fake.url}/templates/demo-template/versions/1.0.0/archive`);
    expect(result.entry).toMatchObject({ name: 'demo-template', version: '1.0.0', integrity });

    expect(fake.uploads).toHaveLength(1);
    const upload = fake.uploads[0]!;
    expect(upload).toMatchObject({ name: 'demo-template', version: '1.0.0', integrity, size: bytes.length });
    expect(upload.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(upload.manifest).toEqual(validManifest);
    expect(upload.fileName).toBe('demo-template-1.0.0.tgz');
    expect(upload.fileType).toBe('application/gzip');
    expect(upload.manifestFileName).toBe('template.json');
    expect(upload.manifestType).toBe('application/json');
    expect(upload.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(upload.headers.accept).toBe('application/json');
    expect(upload.headers['user-agent']).toBe('tests/1.0');
    expect(upload.headers['content-type']).toMatch(/^multipart\/form-data; boundary=\S+$/);
    expect(upload.headers['transfer-encoding']).toBeUndefined();
    expect(Number(upload.headers['content-length'])).toBe(upload.bodyBytes);
  });

  it('takes the registry document URL as well as the base (one TEMPLATE_REGISTRY_URL for every command)', async () => {
    const fake = await registry();
    const { file } = await archive();
    const result = await publishTemplate(options(fake, file, { registryUrl: `${fake.url}/registry.json` }));
    expect(result).toMatchObject({ uploaded: true, status: 201 });
    expect(result.location).toBe(`${fake.url}/templates/demo-template/versions/1.0.0`);
    expect(fake.uploads).toHaveLength(1);
  });

  it('reads the manifest from a template.json path and uses a given integrity as is', async () => {
    const fake = await registry();
    const { file, integrity } = await archive();
    const manifestFile = path.join(path.dirname(file), 'template.json');
    await writeFile(manifestFile, JSON.stringify({ ...validManifest, version: '2.3.4' }));
    const result = await publishTemplate(options(fake, file, { manifest: manifestFile, integrity }));
    expect(result.uploaded).toBe(true);
    expect(fake.uploads[0]).toMatchObject({ version: '2.3.4', fileName: 'demo-template-2.3.4.tgz', integrity });
  });

  it('retries a 500 and succeeds on the second attempt', async () => {
    const fake = await registry();
    fake.fail(['500']);
    const { file, integrity } = await archive();
    const retries: PublishRetryInfo[] = [];
    const result = await publishTemplate(options(fake, file, { onRetry: (info) => retries.push(info) }));
    expect(result).toMatchObject({ uploaded: true, attempts: 2 });
    expect(fake.requests).toBe(2);
    expect(fake.uploads).toHaveLength(1);
    expect(fake.uploads[0]!.integrity).toBe(integrity);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1 });
    expect(retries[0]!.reason).toMatch(/^HTTP 500 INTERNAL_ERROR/);
  });

  it('reports the bytes of the body sent, up to its Content-Length, starting again on a retry', async () => {
    const fake = await registry();
    fake.fail(['500']);
    const { file } = await archive(randomBytes(300 * 1024));
    const progress: { sent: number; total: number }[] = [];
    await publishTemplate(options(fake, file, { onProgress: (sent, total) => progress.push({ sent, total }) }));

    const total = Number(fake.uploads[0]!.headers['content-length']);
    expect(total).toBeGreaterThan(300 * 1024);
    expect(progress.every((p) => p.total === total)).toBe(true);
    // One run from 0 to the total per attempt, never going back within an attempt.
    const attempts = progress.reduce<number[][]>((runs, p) => (p.sent === 0 ? [...runs, [0]] : (runs.at(-1)!.push(p.sent), runs)), []);
    expect(attempts).toHaveLength(2);
    for (const sent of attempts) expect(sent).toEqual([...sent].sort((a, b) => a - b));
    // The archive streams in chunks: the accepted attempt moves several times before it reaches the total.
    expect(attempts[1]!.length).toBeGreaterThan(3);
    expect(attempts[1]!.at(-1)).toBe(total);
  });

  it('retries a dropped connection and re-sends the whole file', async () => {
    const fake = await registry();
    fake.fail(['drop', 'drop']);
    const { file, bytes, integrity } = await archive(randomBytes(256 * 1024));
    const reasons: string[] = [];
    const result = await publishTemplate(options(fake, file, { onRetry: (info) => reasons.push(info.reason) }));
    expect(result).toMatchObject({ uploaded: true, attempts: 3 });
    expect(reasons).toHaveLength(2);
    for (const reason of reasons) expect(reason).toMatch(/ECONNRESET|EPIPE|socket hang up/);
    expect(fake.uploads[0]).toMatchObject({ integrity, size: bytes.length });
  });

  it('leaves no idle timer armed once an upload cut off mid-body is done: the process can exit', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    for (let run = 0; run < 5; run++) {
      const fake = await registry();
      fake.fail(['500', 'drop', 'drop']);
      const { file } = await archive(randomBytes(4 * 1024 * 1024));
      const result = await publishTemplate(options(fake, file, { timeoutMs: 60_000 }));
      expect(result).toMatchObject({ uploaded: true, attempts: 4 });
      // Let the archive's reader hand over what it still holds.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('honours Retry-After on a 429', async () => {
    const fake = await registry();
    fake.fail(['429']);
    const { file } = await archive();
    const retries: PublishRetryInfo[] = [];
    // The wait is the delay given to onRetry (the client sleeps exactly that long before the next attempt).
    const result = await publishTemplate(
      options(fake, file, { minDelayMs: 1, maxDelayMs: 5_000, onRetry: (info) => retries.push(info) }),
    );
    expect(result).toMatchObject({ uploaded: true, attempts: 2 });
    expect(retries).toEqual([{ attempt: 1, delayMs: 1000, reason: expect.stringContaining('HTTP 429 RATE_LIMIT_EXCEEDED') }]);
    expect(retries[0]!.reason).toContain('Retry-After 1000 ms');
  });

  it('honours Retry-After: 0 on a 503 and caps a long Retry-After at maxDelayMs', async () => {
    const fake = await registry();
    fake.fail([
      { status: 503, headers: { 'Retry-After': '0' } },
      { status: 503, headers: { 'Retry-After': '3600' } },
    ]);
    const { file } = await archive();
    const retries: PublishRetryInfo[] = [];
    const result = await publishTemplate(options(fake, file, { minDelayMs: 5, maxDelayMs: 40, onRetry: (info) => retries.push(info) }));
    expect(result.attempts).toBe(3);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(5);
    expect(retries[0]!.delayMs).toBeLessThanOrEqual(40);
    expect(retries[1]!.delayMs).toBe(40);
  });

  it('treats a 409 with the same integrity as already published', async () => {
    const { file, integrity } = await archive();
    const fake = await registry({ existing: [{ name: 'demo-template', version: '1.0.0', integrity }] });
    const result = await publishTemplate(options(fake, file));
    expect(result).toEqual({ uploaded: false, status: 409, attempts: 1, integrity });
    expect(fake.uploads).toHaveLength(0);
  });

  it('confirms a 409 that does not say the version is complete from the version route, as with any registry', async () => {
    const { file, integrity } = await archive();
    const fake = await registry({ existing: [{ name: 'demo-template', version: '1.0.0', integrity, legacy409: true }] });
    const result = await publishTemplate(options(fake, file));
    expect(result).toMatchObject({ uploaded: false, status: 409 });
    expect(fake.uploads).toHaveLength(0);
  });

  it('does not take a 409 whose version the read side does not list with the same integrity', async () => {
    const { file } = await archive();
    const fake = await registry({ existing: [{ name: 'demo-template', version: '1.0.0', integrity: sri(Buffer.from('another archive')), legacy409: true }] });
    const error = await rejection(publishTemplate(options(fake, file)));
    expect(error.status).toBe(409);
    expect(error.message).toMatch(/its version route gives demo-template@1\.0\.0 the integrity sha512-/);
  });

  it('is idempotent across re-runs: the second publish of the same bytes does not upload', async () => {
    const fake = await registry();
    const { file } = await archive();
    expect((await publishTemplate(options(fake, file))).uploaded).toBe(true);
    expect((await publishTemplate(options(fake, file))).uploaded).toBe(false);
    expect(fake.uploads).toHaveLength(1);
  });

  it('refuses a 409 with another integrity, naming both', async () => {
    const other = sri(Buffer.from('other bytes'));
    const fake = await registry({ existing: [{ name: 'demo-template', version: '1.0.0', integrity: other }] });
    const { file, integrity } = await archive();
    const error = await rejection(publishTemplate(options(fake, file)));
    expect(error.status).toBe(409);
    expect(error.code).toBe('VERSION_EXISTS');
    expect(error.attempts).toBe(1);
    expect(error.message).toContain('demo-template@1.0.0 is already published with different content');
    expect(error.message).toContain(other);
    expect(error.message).toContain(integrity);
    expect(fake.requests).toBe(1);
  });

  it('does not retry a 401 and never shows the token', async () => {
    const fake = await registry({ token: 'the-right-token' });
    const { file } = await archive();
    const error = await rejection(publishTemplate(options(fake, file, { retries: 3 })));
    expect(fake.requests).toBe(1);
    expect(error).toMatchObject({ status: 401, code: 'UNAUTHORIZED', attempts: 1, requestId: 'req-1' });
    expect(error.message).toMatch(/^HTTP 401 UNAUTHORIZED: missing or invalid API token/);
    expect(error.message).toMatch(/hint: .*token/);
    expect(error.message).not.toContain(TOKEN);
    expect(JSON.stringify(error)).not.toContain(TOKEN);
    expect(String(error.stack)).not.toContain(TOKEN);
  });

  it('redacts the token when the registry echoes it back', async () => {
    const fake = await registry();
    fake.fail([{ status: 400, body: `bad request: Authorization: Bearer ${TOKEN} rejected (${TOKEN})` }]);
    const { file } = await archive();
    const error = await rejection(publishTemplate(options(fake, file)));
    expect(error.status).toBe(400);
    expect(error.message).toContain('bad request');
    expect(error.message).not.toContain(TOKEN);
  });

  it('shows the details of a 422 and does not retry it', async () => {
    const fake = await registry();
    const { file } = await archive();
    const error = await rejection(publishTemplate(options(fake, file, { manifest: { ...manifest, version: '1.0' } })));
    expect(fake.requests).toBe(1);
    expect(error).toMatchObject({ status: 422, code: 'VALIDATION_ERROR', attempts: 1 });
    expect(error.details).toContainEqual(expect.objectContaining({ field: '/version', code: 'PATTERN' }));
    expect(error.message).toMatch(/^HTTP 422 VALIDATION_ERROR: manifest is invalid\n {2}\/version PATTERN: must be/);
    expect(error.message).toContain('request id: req-1');
  });

  it('shows a non-JSON error body trimmed to 500 characters', async () => {
    const fake = await registry();
    fake.fail([{ status: 413, body: `  ${'x'.repeat(2000)}  ` }]);
    const { file } = await archive();
    const error = await rejection(publishTemplate(options(fake, file)));
    expect(error.status).toBe(413);
    expect(error.code).toBeUndefined();
    expect(error.message).toBe(`HTTP 413: ${'x'.repeat(500)}...`);
  });

  it('gives up after the retries with a message naming the attempts', async () => {
    const fake = await registry();
    fake.fail(['503', '503', '503']);
    const { file } = await archive();
    const error = await rejection(publishTemplate(options(fake, file, { retries: 2 })));
    expect(fake.requests).toBe(3);
    expect(error.attempts).toBe(3);
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/^gave up after 3 attempts: HTTP 503 SERVICE_UNAVAILABLE: service unavailable/);
  });

  it('gives up on a refused connection after the retries', async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { file } = await archive();
    const retries: PublishRetryInfo[] = [];
    const error = await rejection(
      publishTemplate({
        registryUrl: `http://127.0.0.1:${port}`,
        token: TOKEN,
        archive: file,
        manifest,
        retries: 2,
        minDelayMs: 1,
        maxDelayMs: 5,
        onRetry: (info) => retries.push(info),
      }),
    );
    expect(retries.map((info) => info.attempt)).toEqual([1, 2]);
    expect(error).toMatchObject({ code: 'ECONNREFUSED', attempts: 3, status: undefined });
    expect(error.message).toMatch(/^gave up after 3 attempts: cannot reach http:\/\/127\.0\.0\.1:\d+\/templates: ECONNREFUSED/);
  });

  it('times out an attempt that gets no answer, then retries it', async () => {
    const fake = await registry();
    fake.fail(['hang']);
    const { file } = await archive();
    const reasons: string[] = [];
    const result = await publishTemplate(options(fake, file, { timeoutMs: 300, onRetry: (info) => reasons.push(info.reason) }));
    expect(result.attempts).toBe(2);
    expect(reasons[0]).toMatch(/^ETIMEDOUT: no activity for 300 ms/);
  });

  it('validates its inputs before sending anything', async () => {
    const fake = await registry();
    const { file } = await archive();
    await expect(publishTemplate(options(fake, file, { registryUrl: 'ftp://example.com' }))).rejects.toThrow(/http\(s\) URL/);
    await expect(publishTemplate(options(fake, file, { registryUrl: 'not a url' }))).rejects.toThrow(/http\(s\) URL/);
    await expect(publishTemplate(options(fake, file, { token: '  ' }))).rejects.toThrow(/API token is required/);
    await expect(publishTemplate(options(fake, `${file}.missing`))).rejects.toThrow(/archive not found/);
    await expect(publishTemplate(options(fake, file, { integrity: 'md5-abc' }))).rejects.toThrow(/sha512-<base64>/);
    await expect(publishTemplate(options(fake, file, { manifest: path.join(path.dirname(file), 'nope.json') }))).rejects.toThrow(
      /cannot read the manifest/,
    );
    expect(fake.requests).toBe(0);
  });

  it('streams a large archive without holding it in memory', async () => {
    const fake = await registry();
    const size = 128 * 1024 * 1024;
    const file = path.join(await tempDir('tr-publish-big-'), 'big.tgz');
    const handle = await open(file, 'w');
    // Sparse: mostly zeros, with a few random blocks so the hash means something.
    await handle.truncate(size);
    for (const offset of [0, size / 2, size - 4096]) await handle.write(randomBytes(4096), 0, 4096, offset);
    await handle.close();

    const used = (): number => {
      const usage = process.memoryUsage();
      return usage.heapUsed + usage.arrayBuffers;
    };
    const baseline = used();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, used());
    }, 5);
    try {
      const result = await publishTemplate(options(fake, file));
      expect(result.uploaded).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, used());

    const upload = fake.uploads[0]!;
    expect(upload.size).toBe(size);
    expect(Number(upload.headers['content-length'])).toBe(upload.bodyBytes);
    // Client and fake registry share this process and both stream. Uncollected 64 KiB chunks plateau
    // around 35 MB whatever the file size (V8 collects on external-memory pressure); holding the
    // file, as a FormData upload would, adds at least its 128 MB.
    expect(peak - baseline).toBeLessThan(size / 2);
  });
});

describe('retry timing helpers', () => {
  it('parses Retry-After seconds and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 7 ', now)).toBe(7000);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('backs off exponentially with jitter, within min and max', () => {
    const limits = { minDelayMs: 500, maxDelayMs: 30_000 };
    expect(retryDelay(1, limits, undefined, () => 0.5)).toBe(500);
    expect(retryDelay(2, limits, undefined, () => 0.5)).toBe(1000);
    expect(retryDelay(3, limits, undefined, () => 0.5)).toBe(2000);
    expect(retryDelay(3, limits, undefined, () => 0)).toBe(1500);
    expect(retryDelay(3, limits, undefined, () => 1)).toBe(2500);
    expect(retryDelay(1, limits, undefined, () => 0)).toBe(500);
    expect(retryDelay(20, limits, undefined, () => 1)).toBe(30_000);
    expect(retryDelay(1, limits, 10_000, () => 0.5)).toBe(10_000);
    expect(retryDelay(1, limits, 120_000, () => 0.5)).toBe(30_000);
  });
});
