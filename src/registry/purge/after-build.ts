/**
 * The purge that follows a static build (`build-registry --purge`, the registry action's `purge`
 * input): the URLs of the files the build wrote or removed, at every target, each retried with
 * backoff (`purgeWithRetries`). A purge that still fails is not lost: its URLs are kept in the
 * output itself (`.template-registry-purge.json`, the outbox of a tool that does not stay running)
 * and the next build purges them first, with its own changes; the file is removed once they went
 * through.
 */
import { randomUUID } from 'node:crypto';

import type { RegistryOutput } from '../output.js';
import { purgeWithRetries, type PurgeRunOptions } from './run.js';
import { purgeUrlsOf, type PurgeTarget } from './target.js';

/** Where the URLs of purges that failed wait for the next build. */
export const PENDING_PURGES_FILE = '.template-registry-purge.json';

interface PendingPurges {
  formatVersion: 1;
  /** target -> URLs still to purge there */
  pending: Record<string, string[]>;
}

/** The pending purges an output holds; none when the file is missing or unreadable. */
async function readPending(output: RegistryOutput): Promise<Map<string, string[]>> {
  const bytes = await output.read(PENDING_PURGES_FILE).catch(() => undefined);
  if (!bytes) return new Map();
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as Partial<PendingPurges> | null;
    if (parsed?.formatVersion !== 1 || typeof parsed.pending !== 'object' || parsed.pending === null) return new Map();
    return new Map(Object.entries(parsed.pending).filter((entry): entry is [string, string[]] => Array.isArray(entry[1]) && entry[1].every((url) => typeof url === 'string')));
  } catch {
    return new Map();
  }
}

export interface PurgeAfterBuildOptions extends Omit<PurgeRunOptions, 'reference'> {
  output: RegistryOutput;
  targets: readonly PurgeTarget[];
  /** The public base URL the CDN serves the registry at. */
  publicUrl: string;
  /** The build's changes (`BuildResult.written` and `removed`). */
  written: readonly string[];
  removed: readonly string[];
  /** CloudFront's CallerReference base (default a random UUID). */
  reference?: string;
}

export interface PurgeAfterBuildResult {
  /** Each target with the number of URLs purged there (this build's and the ones left by a previous one). */
  purged: { target: string; urls: number }[];
  /** Targets that still failed: their URLs are kept in the output for the next build. */
  failed: { target: string; error: string; urls: number }[];
}

/** Purges what the build changed (and what a previous build could not purge) at every target. */
export async function purgeAfterBuild(options: PurgeAfterBuildOptions): Promise<PurgeAfterBuildResult> {
  const { output, targets } = options;
  const changed = purgeUrlsOf(options.publicUrl, [...options.written, ...options.removed]);
  const pending = await readPending(output);
  const result: PurgeAfterBuildResult = { purged: [], failed: [] };
  const reference = options.reference ?? randomUUID();
  for (const target of targets) {
    const urls = [...new Set([...(pending.get(target.spec) ?? []), ...changed])].sort();
    if (urls.length === 0) continue;
    const run = await purgeWithRetries([target], urls, { ...options, reference });
    const failure = run.failed[0];
    if (failure) {
      result.failed.push({ ...failure, urls: urls.length });
      pending.set(target.spec, urls);
    } else {
      result.purged.push({ target: target.spec, urls: urls.length });
      pending.delete(target.spec);
    }
  }
  if (pending.size === 0) {
    await output.remove([PENDING_PURGES_FILE]);
  } else {
    const data = Buffer.from(`${JSON.stringify({ formatVersion: 1, pending: Object.fromEntries(pending) } satisfies PendingPurges)}\n`, 'utf8');
    await output.put({ name: PENDING_PURGES_FILE, data, contentType: 'application/json; charset=utf-8', cacheControl: 'no-store' }, { durable: true });
  }
  return result;
}
