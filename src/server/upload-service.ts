/**
 * Publishing one version (the spec's operation 2, after the multipart parts were received): the
 * manifest's rules, the token's permission, the duplicate check, the archive check, then the
 * version is reserved, committed with its `template.published` webhook deliveries (or the
 * reservation undone), the registry rebuilt and the webhook dispatcher woken. Every refusal is an ApiError with the spec's envelope fields.
 */
import path from 'node:path';

import type { UnpackedArchive } from '../archive/index.js';
import { errorMessage, isStorageFull } from '../core/errors.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { errorDetails } from '../core/validation.js';
import { entryViolations, toEntry } from '../registry/document.js';
import type { BlobCopySource, StoredVersion, TokenRecord } from '../store/types.js';
import type { ServerContext } from './context.js';
import { checkUploadedArchive } from './archive-check.js';
import { checkUploadedProvenance } from './provenance-check.js';
import { ApiError, invalidInput } from './envelope.js';
import { nulDetail, nulPath, parseClientJson } from './json-input.js';
import { publishedEntry } from './webhooks/payloads.js';
import { webhookEvent } from './webhooks.js';

/** What unpacking an archive as it was received came to: what it holds, or why it is refused (UnsafeArchiveError, or an I/O error). */
export type UnpackOutcome = { archive: UnpackedArchive } | { error: unknown };

/** An archive received to a local temp file, with its digests. */
export interface ReceivedArchive {
  path: string;
  size: number;
  sha256: string;
  integrity: string;
  /** The archive unpacked in the same pass as it was received; when absent, the check unpacks the file. */
  unpacked?: UnpackOutcome;
  /** The same bytes in the blob store (a staged file in a bucket, as read): copied there instead of uploaded again. */
  copyOf?: BlobCopySource;
}

export interface PublishedVersion {
  manifest: TemplateManifest;
  /** The version's registry entry after the rebuild; when it is not listed yet, the entry it will have. */
  entry: TemplateEntry | undefined;
  /**
   * Whether registry.json lists the version. False when the version is stored but the rebuild
   * failed (a full disk): the server tries the build again until it lists it (rebuild-retry.ts).
   */
  listed: boolean;
  /** Why the version is not listed yet, in words for the publisher. */
  warning?: string;
}

/** An error's code (`EISDIR`), never its message: messages name the server's own paths. */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(code) ? code : undefined;
}

/** The manifest part, parsed: 400 when it is not JSON or nests too deep, 422 when a text holds U+0000. */
function parseManifest(text: string): unknown {
  let value: unknown;
  try {
    value = parseClientJson(text, 'the manifest part', 'manifest');
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError(400, 'INVALID_JSON', 'the manifest part is not valid JSON', [
      { field: 'manifest', code: 'INVALID_JSON', message: errorMessage(error) },
    ]);
  }
  const nul = nulPath(value);
  if (nul !== undefined) throw new ApiError(422, 'VALIDATION_ERROR', 'the manifest is invalid', [nulDetail(nul.length === 0 ? 'manifest' : nul.join('.'))]);
  return value;
}

/** The answer to an upload of a version that is there: 409 when complete, 503 while another upload of it is under way. */
function versionExists(manifest: TemplateManifest, existing: StoredVersion): ApiError {
  const label = `${manifest.name}@${manifest.version}`;
  if (existing.state !== 'complete') {
    return new ApiError(503, 'VERSION_IN_PROGRESS', `${label} is being published by another upload; retry in a moment`, [], { 'Retry-After': '5' });
  }
  const why = existing.yankedAt ? `${label} was yanked; a yanked version is never reusable: publish a new version` : `${label} is already published; published versions are immutable`;
  return new ApiError(409, 'VERSION_EXISTS', why, [
    { field: 'integrity', code: 'VERSION_EXISTS', message: existing.integrity },
    { field: 'state', code: 'VERSION_EXISTS', message: 'complete' },
    ...(existing.yankedAt ? [{ field: 'yanked', code: 'VERSION_YANKED', message: existing.yankedAt }] : []),
  ]);
}

/** The answer to an upload of a purged version: 409, its name and version are never used again. */
function versionPurged(manifest: TemplateManifest, purgedAt: string): ApiError {
  const label = `${manifest.name}@${manifest.version}`;
  return new ApiError(409, 'VERSION_EXISTS', `${label} was purged; a purged version is never reusable: publish a new version`, [
    { field: 'version', code: 'VERSION_PURGED', message: purgedAt },
  ]);
}

/**
 * Publishes `archive` with the manifest text as `token`. The archive file is moved into the
 * storage on success; on any failure after the reservation, the reservation is undone.
 */
export async function publishVersion(
  context: Pick<ServerContext, 'storage' | 'rebuild' | 'registry' | 'webhooks' | 'publicUrl' | 'requireChangelogEntry' | 'buildFailure' | 'sigstore' | 'clock'>,
  token: TokenRecord,
  archive: ReceivedArchive,
  manifestText: string,
  /** The Sigstore bundle of the archive's build provenance (JSON text), when one was uploaded. */
  attestation?: string,
): Promise<PublishedVersion> {
  const { tokens, versions } = context.storage;
  const manifestValue = parseManifest(manifestText);
  const details = errorDetails(describeSchemaErrors(schemaErrors('template-manifest', manifestValue)), 'manifest');
  if (details.length > 0) throw invalidInput('the manifest is invalid', details);
  const manifest = manifestValue as TemplateManifest;
  // The registry entry this version would become must be valid, or every later build would leave it out.
  const entryProblems = entryViolations(
    toEntry({ manifest, downloadUrl: 'https://registry.invalid/archive', createdAt: new Date().toISOString(), stats: { downloads: 0, stars: 0, forks: 0, issues: 0 } }),
  );
  if (entryProblems.length > 0) throw invalidInput('the manifest would make an invalid registry entry', errorDetails(entryProblems, 'manifest'));

  const permission = await tokens.canPublish(token, manifest.name);
  if (!permission.allowed) throw new ApiError(403, 'FORBIDDEN', permission.reason);
  const existing = await versions.getVersion(manifest.name, manifest.version);
  if (existing) throw versionExists(manifest, existing);
  const purgedAt = await versions.purgedAt(manifest.name, manifest.version);
  if (purgedAt !== undefined) throw versionPurged(manifest, purgedAt);

  // Provenance first: it is cheaper than unpacking and linting the archive.
  const attested = attestation === undefined ? undefined : await checkUploadedProvenance(context.sigstore, context.storage, token, manifest.name, archive.sha256, attestation);
  // Unpacked as it was received; else beside the upload, in the storage's temp folder: a kill leaves it where the next start cleans.
  await checkUploadedArchive(archive.unpacked ?? archive.path, manifest, { requireChangelogEntry: context.requireChangelogEntry === true }, path.dirname(archive.path));

  const createdAt = (context.clock?.() ?? new Date()).toISOString();
  const reservation = await versions.reserveVersion(
    { name: manifest.name, version: manifest.version, integrity: archive.integrity, sha256: archive.sha256, size: archive.size, owner: token.owner, createdAt, ...(attested ? { attestation: attested } : {}) },
    token,
  );
  if (!reservation.reserved) {
    if ('forbidden' in reservation) throw new ApiError(403, 'FORBIDDEN', reservation.forbidden);
    if ('purged' in reservation) throw versionPurged(manifest, reservation.purged);
    throw versionExists(manifest, reservation.existing);
  }
  const willBe = publishedEntry(manifest, { ...archive, createdAt }, context.publicUrl);
  try {
    // template.published goes to the webhook outbox in the commit's transaction: stored and told, or neither.
    await versions.commitVersion(manifest.name, manifest.version, archive.copyOf ? { file: archive.path, copyOf: archive.copyOf } : archive.path, manifest, [webhookEvent('template.published', willBe)], attestation);
  } catch (error) {
    await versions.abortVersion(manifest.name, manifest.version);
    throw error;
  }
  // Stored from here on: whatever the rebuild does, the answer is 201 (201 means stored).
  let failure: unknown;
  try {
    await context.rebuild();
  } catch (error) {
    // Logged, and tried again until it succeeds, by the server's build.
    failure = error;
  }
  const entry = context.registry().document.templates.find((e) => e.id === manifest.name && e.version === manifest.version);
  if (!entry) {
    const label = `${manifest.name}@${manifest.version}`;
    // Why, without the server's paths: a full disk, or the plain error.
    const templateFailure = context.buildFailure?.(manifest.name);
    const full = failure === undefined ? /\b(ENOSPC|EDQUOT|SQLITE_FULL)\b/.test(templateFailure ?? '') : isStorageFull(failure);
    const why = full
      ? "the registry's storage is full"
      : failure === undefined
        ? "its template's files could not be written"
        : `the registry could not be rebuilt (${errorCode(failure) ?? 'an unexpected error; see the server log'})`;
    return { manifest, entry: willBe, listed: false, warning: `${label} is stored, but registry.json does not list it yet: ${why}; the server rebuilds it until it does` };
  }
  // Delivered once the registry lists the version (a crash before: the outbox is resumed on start;
  // a failed build: when the build retried lists it).
  context.webhooks.kick();
  return { manifest, entry, listed: true };
}
