/**
 * Publishing one version (the spec's operation 2, after the multipart parts were received): the
 * manifest's rules, the token's permission, the duplicate check, the archive check, then the
 * version is reserved, committed with its `template.published` webhook deliveries (or the
 * reservation undone), the registry rebuilt and the webhook dispatcher woken. Every refusal is an ApiError with the spec's envelope fields.
 */
import { errorMessage } from '../core/errors.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { errorDetails } from '../core/validation.js';
import { entryViolations, toEntry } from '../registry/document.js';
import type { StoredVersion, TokenRecord } from '../store/types.js';
import type { ServerContext } from './context.js';
import { checkUploadedArchive } from './archive-check.js';
import { checkUploadedProvenance } from './provenance-check.js';
import { ApiError } from './envelope.js';
import { publishedEntry } from './webhook-events.js';
import { webhookEvent } from './webhooks.js';

/** An archive received to a local temp file, with its digests. */
export interface ReceivedArchive {
  path: string;
  size: number;
  sha256: string;
  integrity: string;
}

export interface PublishedVersion {
  manifest: TemplateManifest;
  /** The version's registry entry after the rebuild. */
  entry: TemplateEntry | undefined;
}

function parseManifest(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ApiError(400, 'INVALID_JSON', 'the manifest part is not valid JSON', [
      { field: 'manifest', code: 'INVALID_JSON', message: errorMessage(error) },
    ]);
  }
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

/**
 * Publishes `archive` with the manifest text as `token`. The archive file is moved into the
 * storage on success; on any failure after the reservation, the reservation is undone.
 */
export async function publishVersion(
  context: Pick<ServerContext, 'storage' | 'rebuild' | 'registry' | 'webhooks' | 'publicUrl' | 'sigstore'>,
  token: TokenRecord,
  archive: ReceivedArchive,
  manifestText: string,
  /** The Sigstore bundle of the archive's build provenance (JSON text), when one was uploaded. */
  attestation?: string,
): Promise<PublishedVersion> {
  const { tokens, versions } = context.storage;
  const manifestValue = parseManifest(manifestText);
  const details = errorDetails(describeSchemaErrors(schemaErrors('template-manifest', manifestValue)), 'manifest');
  if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the manifest is invalid', details);
  const manifest = manifestValue as TemplateManifest;
  // The registry entry this version would become must be valid, or every later build would leave it out.
  const entryProblems = entryViolations(
    toEntry({ manifest, downloadUrl: 'https://registry.invalid/archive', createdAt: new Date().toISOString(), stats: { downloads: 0, stars: 0, forks: 0, issues: 0 } }),
  );
  if (entryProblems.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the manifest would make an invalid registry entry', errorDetails(entryProblems, 'manifest'));

  const permission = await tokens.canPublish(token, manifest.name);
  if (!permission.allowed) throw new ApiError(403, 'FORBIDDEN', permission.reason);
  const existing = await versions.getVersion(manifest.name, manifest.version);
  if (existing) throw versionExists(manifest, existing);

  // Provenance first: it is cheaper than unpacking and linting the archive.
  const attested = attestation === undefined ? undefined : await checkUploadedProvenance(context.sigstore, context.storage, token, manifest.name, archive.sha256, attestation);
  await checkUploadedArchive(archive.path, manifest);

  const createdAt = new Date().toISOString();
  const reservation = await versions.reserveVersion(
    { name: manifest.name, version: manifest.version, integrity: archive.integrity, sha256: archive.sha256, size: archive.size, owner: token.owner, createdAt, ...(attested ? { attestation: attested } : {}) },
    token,
  );
  if (!reservation.reserved) {
    if ('forbidden' in reservation) throw new ApiError(403, 'FORBIDDEN', reservation.forbidden);
    throw versionExists(manifest, reservation.existing);
  }
  try {
    // template.published goes to the webhook outbox in the commit's transaction: stored and told, or neither.
    const published = webhookEvent('template.published', publishedEntry(manifest, { ...archive, createdAt }, context.publicUrl));
    await versions.commitVersion(manifest.name, manifest.version, archive.path, manifest, [published], attestation);
  } catch (error) {
    await versions.abortVersion(manifest.name, manifest.version);
    throw error;
  }
  await context.rebuild();
  const entry = context.registry().document.templates.find((e) => e.id === manifest.name && e.version === manifest.version);
  // Delivered once the registry lists the version (a crash before: the outbox is resumed on start).
  context.webhooks.kick();
  return { manifest, entry };
}
