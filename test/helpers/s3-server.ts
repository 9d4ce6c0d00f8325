import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The part of s3rver's API the tests use (the package ships no types). */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

/** s3rver's fixed credentials: it checks every request's signature against them. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface FakeS3 {
  /** `http://127.0.0.1:<port>` (address buckets path-style). */
  endpoint: string;
  close(): Promise<void>;
}

/**
 * An in-process s3rver on 127.0.0.1 with the given buckets, its objects in a temp folder. It does
 * not check Content-MD5 nor enforce conditional writes: tests never rely on either. Its folder
 * lives as long as the server (not removed after each test), so one server can serve a whole file.
 */
export async function startFakeS3(buckets: string[]): Promise<FakeS3> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;
  const directory = await mkdtemp(path.join(tmpdir(), 'tr-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    close: async () => {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
