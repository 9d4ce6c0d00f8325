import { describe, expect, it } from 'vitest';

import { createS3Client, DEFAULT_BUCKET_ATTEMPTS, isTransient } from '../../src/core/bucket.js';
import { S3BlobStore } from '../../src/store/blob/index.js';

const endpoint = 'http://127.0.0.1:9';

describe('the one bucket client (core/bucket.ts)', () => {
  it('gives the static output and the blob store the same retry policy: attempts capped, the given credentials', async () => {
    const output = await createS3Client({ endpoint, forcePathStyle: true });
    expect(await output.config.maxAttempts()).toBe(DEFAULT_BUCKET_ATTEMPTS);
    const tuned = await createS3Client({ endpoint }, {}, { maxAttempts: 5, credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
    expect(await tuned.config.maxAttempts()).toBe(5);
    expect((await tuned.config.credentials()).accessKeyId).toBe('AKIDEXAMPLE');

    const store = new S3BlobStore({ bucket: 'some-bucket', prefix: 'p', endpoint, forcePathStyle: true, region: 'us-east-1', maxAttempts: 4, credentials: { accessKeyId: 'AKIDSTORE', secretAccessKey: 'secret' } });
    const client = await store.sdkClient();
    expect(await client.config.maxAttempts()).toBe(4);
    expect((await client.config.credentials()).accessKeyId).toBe('AKIDSTORE');
    expect(await client.config.endpoint?.()).toMatchObject({ hostname: '127.0.0.1', port: 9 });
  });

  it('bounds every request of a bucket client: one that never answers fails after the time-out, not never', async () => {
    const { createServer } = await import('node:net');
    // Accepts the connection and never answers.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const client = await createS3Client({ endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true }, {}, { timeoutMs: 200, maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
      const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
      await expect(client.send(new HeadObjectCommand({ Bucket: 'some-bucket', Key: 'k' }))).rejects.toThrow();
    } finally {
      silent.close();
    }
  });

  it('tells a transient failure (time-out, 5xx, 429, dropped connection) from a final one (403, 404)', () => {
    expect(isTransient({ name: 'TimeoutError' })).toBe(true);
    expect(isTransient({ $metadata: { httpStatusCode: 503 } })).toBe(true);
    expect(isTransient({ $metadata: { httpStatusCode: 429 } })).toBe(true);
    expect(isTransient({ code: 'ECONNRESET' })).toBe(true);
    expect(isTransient({ $metadata: { httpStatusCode: 403 } })).toBe(false);
    expect(isTransient({ $metadata: { httpStatusCode: 404 } })).toBe(false);
  });
});
