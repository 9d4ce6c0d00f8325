/**
 * Where each backend keeps its bytes in its BlobStore: one layout for both, so a store's bytes can be
 * copied (or a folder shared) as they are. The keys are the paths the embedded store kept its files
 * at before blob stores, so a folder blob store on the store folder reads old stores unchanged.
 */
import type { TemplateManifest } from '../core/schema-types.js';
import { isLooseVersion, isTemplateName } from '../core/versions.js';
import type { BlobStore } from './types.js';

/**
 * Names and versions become key segments: only ones following the manifest's rules do (versions by
 * the spec's looser pattern, so that bytes a store kept before strict versions stay readable).
 */
function checkedName(name: string, version: string): string {
  if (!isTemplateName(name) || !isLooseVersion(version)) throw new Error(`not a template name and version: ${name}@${version}`);
  return name;
}

export const archiveKey = (name: string, version: string): string => `archives/${checkedName(name, version)}/${version}.tgz`;
export const manifestKey = (name: string, version: string): string => `manifests/${checkedName(name, version)}/${version}.json`;
/** The Sigstore bundle of a version's build provenance, kept as uploaded (never rewritten). */
export const attestationKey = (name: string, version: string): string => `attestations/${checkedName(name, version)}/${version}.sigstore.json`;

/** The bytes a manifest is stored as. */
export const manifestText = (manifest: TemplateManifest): string => `${JSON.stringify(manifest, null, 2)}\n`;

/** The top folders of every key above: where a folder blob store's bytes (and a killed writer's temp files) are. */
export const BLOB_TOP_FOLDERS = ['archives', 'manifests', 'files'] as const;

/** Staged files (`/files`) live below this prefix, one key per file id. */
export const FILES_PREFIX = 'files/';

/** File ids are UUIDs: only those become blob keys. */
const FILE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const isStagedFileId = (id: string): boolean => FILE_ID.test(id);

export function stagedFileKey(id: string): string {
  if (!isStagedFileId(id)) throw new Error(`not a file id: ${id}`);
  return `${FILES_PREFIX}${id}`;
}

/**
 * Deletes every blob of a version (archive, manifest, provenance bundle; missing ones are fine), each
 * tried whatever the others did; the first failure is thrown after all were tried. What a purge
 * removes, on both backends.
 */
export async function removeBlobs(blobs: BlobStore, name: string, version: string): Promise<void> {
  const results = await Promise.allSettled([archiveKey, manifestKey, attestationKey].map((key) => blobs.delete(key(name, version))));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}
