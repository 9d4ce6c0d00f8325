/**
 * The registry server's resource paths that other parts of the project link to: a published
 * version and its archive (immutable per version).
 */

/** `<base>/templates/<id>/versions/<version>`. */
export function versionUrl(baseUrl: string, id: string, version: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/templates/${encodeURIComponent(id)}/versions/${encodeURIComponent(version)}`;
}

/** `<base>/templates/<id>/versions/<version>/archive`. */
export function archiveUrl(baseUrl: string, id: string, version: string): string {
  return `${versionUrl(baseUrl, id, version)}/archive`;
}

/** `<base>/templates/<id>/versions/<version>/attestation`: the Sigstore bundle of the version's build provenance. */
export function attestationUrl(baseUrl: string, id: string, version: string): string {
  return `${versionUrl(baseUrl, id, version)}/attestation`;
}

/** Where a static registry keeps the provenance bundle of a version, beside its archive (immutable). */
export function staticAttestationPath(id: string, version: string): string {
  return `archives/${encodeURIComponent(id)}/${encodeURIComponent(version)}.sigstore.json`;
}

/** Where a static registry keeps the archive of a version, relative to registry.json (immutable). */
export function staticArchivePath(id: string, version: string): string {
  return `archives/${encodeURIComponent(id)}/${encodeURIComponent(version)}.tgz`;
}

/** The catalog page's section of a template, relative to registry.json: what `documentationUrl` points a person at. */
export function catalogPagePath(id: string): string {
  return `index.html#t-${encodeURIComponent(id)}`;
}

/** `relative` under `baseUrl` when there is one; else as it is (relative to registry.json). */
export function underBase(baseUrl: string | undefined, relative: string): string {
  return baseUrl === undefined || baseUrl === '' ? relative : `${baseUrl.replace(/\/+$/, '')}/${relative}`;
}

/** Request header a client sets to `inspect` on an archive download that is not a use (not counted). */
export const DOWNLOAD_PURPOSE_HEADER = 'x-download-purpose';
