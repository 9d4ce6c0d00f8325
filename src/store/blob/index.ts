/** Where a backend keeps bytes: a local folder or an S3-compatible bucket, behind `BlobStore`. */
import { parseOutputTarget } from '../../registry/s3-output.js';
import type { BlobStore } from '../types.js';

import { FolderBlobStore } from './folder.js';
import { S3BlobStore, type S3BlobSettings } from './s3.js';

export { FolderBlobStore } from './folder.js';
export { S3BlobStore, S3BlobError, type S3BucketProblem, type S3BlobStoreOptions, type S3BlobSettings } from './s3.js';
export { BlobKeyError, checkBlobKey } from './keys.js';
export { claimBlobStore, claimLockFile, type Claimable, type ClaimResult, type CopyClaim } from './claim.js';

/**
 * The BlobStore at `location`: an `s3://bucket/prefix` URL (reached with `s3`), or else a local
 * folder. Another URL scheme is refused rather than taken for a folder of that name; the error
 * (S3UrlError) names `argument`.
 */
export function openBlobStore(location: string, s3: S3BlobSettings = {}, argument = '--storage'): BlobStore {
  const target = parseOutputTarget(location, argument);
  return target.kind === 's3' ? new S3BlobStore({ ...s3, bucket: target.bucket, prefix: target.prefix }) : new FolderBlobStore(target.dir);
}
