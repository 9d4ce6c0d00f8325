/**
 * One suite on every storage a server runs on: the embedded store (SQLite + folder) and PostgreSQL
 * with its bytes in an S3-compatible bucket (s3rver). The PostgreSQL part is skipped, saying why,
 * only when the machine has no PostgreSQL (test/helpers/postgres.ts).
 */
import { afterAll, beforeAll, describe } from 'vitest';

import { openStorage, type RegistryStorage } from '../../src/store/index.js';
import { tempDir } from './fixtures.js';
import { postgresSkipReason, usePostgres } from './postgres.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from './s3-server.js';

/** Opens a fresh, empty storage (a server started on it closes it). */
export type OpenStorage = () => Promise<RegistryStorage>;

const BUCKET = 'every-backend';

/** Opens two storages on one fresh store, as two server instances (or processes) on it have them. */
export type OpenStoragePair = () => Promise<[RegistryStorage, RegistryStorage]>;

/** `suite` inside one `describe` per backend, each named `${title} on <backend>`. */
export function describeOnEveryBackend(title: string, suite: (openStorage: OpenStorage, openPair: OpenStoragePair) => void): void {
  describe(`${title} on the embedded store`, () => {
    suite(
      async () => openStorage({ store: await tempDir('tr-store-') }),
      async () => {
        const store = await tempDir('tr-store-');
        return [await openStorage({ store }), await openStorage({ store })];
      },
    );
  });
  describe.skipIf(postgresSkipReason)(`${title} on PostgreSQL + S3 (s3rver)`, () => {
    const postgres = usePostgres();
    let s3: FakeS3 | undefined;
    beforeAll(async () => {
      s3 = await startFakeS3([BUCKET]);
    });
    afterAll(async () => {
      await s3?.close();
    });
    let prefixes = 0;
    const open = async (database: string, prefix: number): Promise<RegistryStorage> =>
      openStorage({
        store: await tempDir('tr-store-'),
        database,
        storage: `s3://${BUCKET}/run-${prefix}`,
        s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
      });
    suite(
      async () => open(await postgres.createDatabase(), ++prefixes),
      async () => {
        const [database, prefix] = [await postgres.createDatabase(), ++prefixes];
        return [await open(database, prefix), await open(database, prefix)];
      },
    );
  });
}
