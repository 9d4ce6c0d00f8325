/**
 * `--out <dir|s3://bucket/prefix>` of the commands that write a static registry (`build-registry`,
 * `mirror`): which output it names, checked with the S3 flags before anything is read, and that
 * output opened. `s3-output.js` is light: it loads the AWS SDK only when a client is made, so a
 * folder output never loads it.
 */
import { FolderOutput } from '../../registry/folder-output.js';
import type { RegistryOutput } from '../../registry/output.js';
import { createS3Client, parseOutputTarget, S3Output, S3UrlError, type OutputTarget } from '../../registry/s3-output.js';
import { UsageError } from '../io.js';
import { isHttpUrl } from './backends.js';

export interface OutputFlags {
  out: string;
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
}

/**
 * The output `--out` names (a UsageError naming the flag). The S3 flags need a bucket: `--out`'s, or
 * the one another flag names (`otherBucket`: build-registry's `--storage`, said in the message).
 */
export function checkOutputTarget(flags: OutputFlags, otherBucket?: { given: boolean; flag: string }): OutputTarget {
  let target: OutputTarget;
  try {
    target = parseOutputTarget(flags.out, '--out');
  } catch (error) {
    if (error instanceof S3UrlError) throw new UsageError(error.message);
    throw error;
  }
  if (target.kind === 'folder' && otherBucket?.given !== true) {
    const needs = `needs --out s3://bucket/prefix${otherBucket ? ` (or ${otherBucket.flag} s3://bucket/prefix)` : ''}`;
    if (flags.s3Endpoint !== undefined) throw new UsageError(`--s3-endpoint ${needs}`);
    if (flags.s3ForcePathStyle) throw new UsageError(`--s3-force-path-style ${needs}`);
  } else if (flags.s3Endpoint !== undefined && !isHttpUrl(flags.s3Endpoint)) {
    throw new UsageError(`--s3-endpoint must be an http(s) URL (got "${flags.s3Endpoint}")`);
  }
  return target;
}

/** The output opened; `close()` releases it (an S3 client's keep-alive sockets would hold the process open a while). */
export async function openOutputTarget(
  target: OutputTarget,
  flags: OutputFlags,
  folder: { syncHelper?: 'now' | 'when-many' } = {},
): Promise<{ output: RegistryOutput; close: () => Promise<void> }> {
  if (target.kind === 'folder') {
    const output = new FolderOutput(target.dir, folder);
    return { output, close: () => output.close() };
  }
  const settings = { ...(flags.s3Endpoint !== undefined ? { endpoint: flags.s3Endpoint } : {}), ...(flags.s3ForcePathStyle ? { forcePathStyle: true } : {}) };
  const client = await createS3Client(settings).catch((error: unknown) => {
    throw error instanceof S3UrlError ? new UsageError(error.message) : error; // a bad $AWS_ENDPOINT_URL
  });
  return { output: new S3Output({ client, bucket: target.bucket, prefix: target.prefix }), close: () => Promise.resolve(client.destroy()) };
}
