/**
 * The shared server suite (backend-suite.ts) on PostgreSQL (a real server from the machine's Debian
 * package, test/helpers/postgres.ts), its bytes in an S3-compatible bucket (s3rver) or in the store
 * folder. Each test gets a fresh database and a prefix of its own in the bucket.
 */
import { afterAll, beforeAll, describe } from 'vitest';

import { openStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { backendSuite } from './backend-suite.js';

const BUCKET = 'backend-suite';

describe.skipIf(postgresSkipReason)('PostgreSQL backends', () => {
  const postgres = usePostgres();
  let s3: FakeS3 | undefined;
  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  afterAll(async () => {
    await s3?.close();
  });

  let prefixes = 0;
  backendSuite('PostgreSQL + S3 (s3rver)', async () =>
    openStorage({
      store: await tempDir('tr-store-'),
      database: await postgres.createDatabase(),
      storage: `s3://${BUCKET}/run-${++prefixes}`,
      s3: { endpoint: s3?.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' },
    }),
  );

  backendSuite('PostgreSQL + folder', async () => openStorage({ store: await tempDir('tr-store-'), database: await postgres.createDatabase() }));
});
