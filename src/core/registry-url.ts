/**
 * The one rule for a registry's URL, as a user gives it (`--registry`, `TEMPLATE_REGISTRY_URL`,
 * the action's `registry-url`): either the registry's base URL (`https://registry.example`, the
 * server's root or the folder of a static registry) or the URL of its document
 * (`https://registry.example/registry.json`). Readers need the document, publishing needs the base
 * (it POSTs to `<base>/templates`), so one setting serves both.
 *
 * - A URL whose last path segment ends in `.json` names a file: `registry.json`, or any other name
 *   a static host gives the document, is the document; `index.json` (the sparse index beside it)
 *   stands for the `registry.json` of the same folder. Its base is that folder.
 * - Any other URL is a base: its document is `<base>/registry.json`.
 *
 * Only the path changes: the query (a signed URL's signature) is kept, the fragment (never sent)
 * dropped. A value that is not an http(s) URL is returned as it is, for the caller's own check
 * (`registryUrlProblem`) to name.
 */

import { parseHttpUrl } from './http-url.js';

/** The document's file name under a registry's base URL. */
const REGISTRY_DOCUMENT_FILE = 'registry.json';
/** The sparse index's file name, beside the document. */
const SPARSE_INDEX_FILE = 'index.json';

const httpUrl = (value: string): URL | undefined => parseHttpUrl(value.trim());

/** The last segment of a URL's path (`''` for a path ending in `/`). */
function lastSegment(url: URL): string {
  return url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
}

/** Why `value` cannot be a registry URL, or undefined when it can. */
export function registryUrlProblem(value: string): string | undefined {
  return httpUrl(value) ? undefined : `must be an http(s) URL such as https://registry.example or https://registry.example/registry.json (got ${JSON.stringify(value)})`;
}

/** The URL of the registry document for a base or document URL (see the module's rule). */
export function registryDocumentUrl(value: string): string {
  const url = httpUrl(value);
  if (!url) return value;
  url.hash = '';
  const last = lastSegment(url);
  if (last === SPARSE_INDEX_FILE) url.pathname = `${url.pathname.slice(0, -last.length)}${REGISTRY_DOCUMENT_FILE}`;
  else if (!last.endsWith('.json')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/${REGISTRY_DOCUMENT_FILE}`;
  return url.href;
}

/** The registry's base URL (no trailing slash) for a base or document URL (see the module's rule). */
export function registryBaseUrl(value: string): string {
  const url = httpUrl(value);
  if (!url) return value;
  url.hash = '';
  const last = lastSegment(url);
  if (last.endsWith('.json')) url.pathname = url.pathname.slice(0, -last.length);
  url.pathname = url.pathname.replace(/\/+$/, '');
  // `new URL` keeps a bare host's path as `/`: drop it, so `<base>/templates` has one slash.
  const withoutQuery = url.href.slice(0, url.href.length - url.search.length);
  return `${withoutQuery.replace(/\/$/, '')}${url.search}`;
}
