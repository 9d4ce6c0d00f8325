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
