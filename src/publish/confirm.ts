/**
 * What a 409 on an upload means, found out from the registry's read side: any registry that follows
 * the specification answers a duplicate with its error envelope alone, so whether the version it
 * holds is the one we sent is asked of the routes every such registry has. The version's entry
 * (`GET <base>/templates/<id>/versions/<version>`, the conventional nested fetch, when the registry
 * has it; else the registry document) and its `integrity`; without one, the bytes at its
 * `downloadUrl`, hashed. A registry's own detail saying so is a shortcut taken before this.
 */
import { createHash } from 'node:crypto';

import { registryDocumentUrl } from '../core/registry-url.js';
import { isRecord } from '../core/is-record.js';
import { readBodyCapped } from '../core/response-body.js';

/** What the registry holds under the name and version that answered 409. */
export type PublishedCheck =
  /** The same bytes: a re-run of a publish that already happened. */
  | { kind: 'same'; source: string }
  /** The version is yanked: never published again. */
  | { kind: 'yanked'; source: string }
  /** Other bytes, or no such version listed: an existing version is never overwritten. */
  | { kind: 'different'; reason: string };

export interface ConfirmOptions {
  /** The registry's base URL (the upload went to `<base>/templates`). */
  base: string;
  /** The URL the user gave (base or document), for the document's address. */
  registryUrl: string;
  name: string;
  version: string;
  /** `sha512-<base64>` of the archive sent. */
  integrity: string;
  /** The archive's size: a download is never read beyond it. */
  size: number;
  /** Sent only to the registry's own origin. */
  token: string;
  timeoutMs: number;
  userAgent: string;
}

/** The largest registry document read to find the entry. */
const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;


/** The body of `url` up to `limit` bytes, or undefined for a non-2xx answer, an error or a longer body. */
async function readBounded(url: string, options: ConfirmOptions, limit: number): Promise<Buffer | undefined> {
  const sameOrigin = new URL(url).origin === new URL(options.base).origin;
  const headers: Record<string, string> = { 'user-agent': options.userAgent, accept: 'application/json, application/gzip, */*' };
  if (sameOrigin) headers.authorization = `Bearer ${options.token}`;
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(options.timeoutMs), redirect: 'follow' });
  } catch {
    return undefined;
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  try {
    return await readBodyCapped(response, limit, () => new Error('too large'));
  } catch {
    return undefined;
  }
}

function parse(bytes: Buffer | undefined): unknown {
  if (!bytes) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The version's entry from the nested fetch route (an envelope or the entry itself). */
async function entryFromRoute(options: ConfirmOptions): Promise<Record<string, unknown> | undefined> {
  const url = `${options.base}/templates/${encodeURIComponent(options.name)}/versions/${encodeURIComponent(options.version)}`;
  const body = parse(await readBounded(url, options, 1024 * 1024));
  const entry = isRecord(body) && isRecord(body.data) ? body.data : body;
  return isRecord(entry) && (entry.id === options.name || entry.name === options.name) && entry.version === options.version ? entry : undefined;
}

/** The version's entry from the registry document. */
async function entryFromDocument(options: ConfirmOptions): Promise<Record<string, unknown> | undefined> {
  const document = parse(await readBounded(registryDocumentUrl(options.registryUrl), options, MAX_DOCUMENT_BYTES));
  const templates = isRecord(document) && Array.isArray(document.templates) ? document.templates : [];
  return templates.find((entry): entry is Record<string, unknown> => isRecord(entry) && (entry.id === options.name || entry.name === options.name) && entry.version === options.version);
}

const sha512 = (bytes: Buffer): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

/**
 * After a 409: whether the registry already holds exactly the archive sent (a re-run), a yanked
 * version, or something else (and what differs).
 */
export async function confirmPublished(options: ConfirmOptions): Promise<PublishedCheck> {
  const label = `${options.name}@${options.version}`;
  const fromRoute = await entryFromRoute(options);
  const entry = fromRoute ?? (await entryFromDocument(options));
  const source = fromRoute ? 'its version route' : 'its registry document';
  if (!entry) return { kind: 'different', reason: `the registry answered 409 but neither its version route nor its registry document lists ${label} (it may still be being published)` };
  if (entry.yanked === true) return { kind: 'yanked', source };
  if (typeof entry.integrity === 'string' && entry.integrity.startsWith('sha512-')) {
    return entry.integrity === options.integrity
      ? { kind: 'same', source }
      : { kind: 'different', reason: `${source} gives ${label} the integrity ${entry.integrity}, this archive has ${options.integrity}` };
  }
  if (typeof entry.downloadUrl !== 'string') return { kind: 'different', reason: `${source} lists ${label} without an integrity or a downloadUrl to compare with` };
  let downloadUrl: string;
  try {
    downloadUrl = new URL(entry.downloadUrl, registryDocumentUrl(options.registryUrl)).href;
  } catch {
    return { kind: 'different', reason: `${source} gives ${label} a downloadUrl that is not a URL` };
  }
  // One byte more than ours is enough to know they differ.
  const bytes = await readBounded(downloadUrl, options, options.size + 1);
  if (!bytes) return { kind: 'different', reason: `the archive of ${label} at ${new URL(downloadUrl).origin}${new URL(downloadUrl).pathname} could not be read, or is larger than this one` };
  const theirs = sha512(bytes);
  return theirs === options.integrity
    ? { kind: 'same', source: `${source} and its archive` }
    : { kind: 'different', reason: `the archive the registry serves for ${label} has the integrity ${theirs}, this archive has ${options.integrity}` };
}
