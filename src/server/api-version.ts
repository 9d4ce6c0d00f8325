/**
 * Interface versions, by the spec's "Interface versioning strategies" (docs/spec/registry-spec.md;
 * every spelling a client may use: docs/registry-hosting.md). The server has one version, `1`.
 * A `/v1` prefix is removed by fastify's `rewriteUrl` (no route registered twice); the
 * `api-version` and `version=<major.minor>` query selectors are taken out of `request.query`
 * before a route's query validation runs, except where a route's `config.versionQuery` says
 * `version` is its own parameter. An unknown version is a 400 naming the supported ones; the one
 * used is `request.apiVersion`, reported as `meta.version`.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

import { API_VERSION, ApiError, type ErrorDetail } from './envelope.js';
import { API_VERSION_PARAMETER } from './query.js';

export { API_VERSION_PARAMETER };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What `version` in the query string is on this route, when it is the route's own parameter (see the top of api-version.ts). */
    versionQuery?: VersionQuery;
  }
}

/** A route's own `version` query parameter: always a template version, or a field filter of template versions. */
export type VersionQuery = 'template-version' | 'version-filter';

/** The spec's query parameter selecting the API version (`?version=<major.minor>`). */
export const VERSION_PARAMETER = 'version';

/** The major versions the server answers; each one's full `major.minor` is API_VERSION for 1. */
export const SUPPORTED_API_VERSIONS: readonly string[] = ['1'];

/** The request header selecting the version. */
export const API_VERSION_HEADER = 'api-version';

type Source = 'path' | 'API-Version' | 'Accept' | typeof API_VERSION_PARAMETER | typeof VERSION_PARAMETER;

export interface Selector {
  source: Source;
  value: string;
}

const SELECTORS = Symbol('api-version selectors');
type TaggedRequest = IncomingMessage & { [SELECTORS]?: Selector[] };

/** `/v<version>` at the start of a path, followed by `/`, `?` or nothing. */
const PREFIX = /^\/v(\d+(?:\.\d+)?)(?=[/?]|$)/;

/** True when `value` (`1`, `1.0`, `v1`) names a supported version. */
export function isSupportedApiVersion(value: string): boolean {
  const match = /^v?(\d+)(?:\.(\d+))?$/i.exec(value.trim());
  if (!match) return false;
  const [, major = '', minor] = match;
  return SUPPORTED_API_VERSIONS.includes(String(Number(major))) && (minor === undefined || Number(minor) === 0);
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * fastify's `rewriteUrl`: takes a `/v<n>` prefix off the path and `api-version` parameters out
 * of the query string (the other parameters are kept byte for byte), remembering both on the
 * request for the hook to check. Any other URL is returned unchanged.
 */
export function rewriteVersionedUrl(request: IncomingMessage): string {
  const url = request.url ?? '/';
  if (!url.startsWith('/v') && !url.includes(API_VERSION_PARAMETER)) return url;
  const mark = url.indexOf('?');
  let path = mark === -1 ? url : url.slice(0, mark);
  let query = mark === -1 ? undefined : url.slice(mark + 1);
  const selectors: Selector[] = [];
  const prefix = PREFIX.exec(path);
  if (prefix) {
    selectors.push({ source: 'path', value: prefix[1] ?? '' });
    path = path.slice(prefix[0].length) || '/';
  }
  if (query !== undefined && query.includes(API_VERSION_PARAMETER)) {
    const kept: string[] = [];
    for (const part of query.split('&')) {
      const equals = part.indexOf('=');
      const name = decode(equals === -1 ? part : part.slice(0, equals));
      if (name === API_VERSION_PARAMETER) selectors.push({ source: API_VERSION_PARAMETER, value: equals === -1 ? '' : decode(part.slice(equals + 1)) });
      else kept.push(part);
    }
    query = kept.join('&');
  }
  if (selectors.length > 0) (request as TaggedRequest)[SELECTORS] = selectors;
  return query === undefined || query === '' ? path : `${path}?${query}`;
}

/** The `version` parameters of the media ranges of `Accept`. */
function acceptVersions(accept: string): string[] {
  const versions: string[] = [];
  for (const range of accept.split(',')) {
    for (const parameter of range.split(';').slice(1)) {
      const match = /^\s*version\s*=\s*"?([^"]*)"?\s*$/i.exec(parameter);
      if (match) versions.push(match[1] ?? '');
    }
  }
  return versions;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The selectors of a request's headers. */
function headerSelectors(headers: IncomingHttpHeaders): Selector[] {
  const selectors: Selector[] = [];
  const header = headerText(headers[API_VERSION_HEADER]);
  if (header !== undefined) selectors.push({ source: 'API-Version', value: header });
  const accept = headerText(headers.accept);
  if (accept?.includes('version')) for (const value of acceptVersions(accept)) selectors.push({ source: 'Accept', value });
  return selectors;
}

const SUPPORTED_TEXT = `supported: ${SUPPORTED_API_VERSIONS.join(', ')} (${API_VERSION})`;

const SOURCE_TEXT: Record<Source, string> = {
  path: 'the path prefix /v<version>',
  'API-Version': 'the API-Version header',
  Accept: 'the version parameter of Accept',
  [API_VERSION_PARAMETER]: `the ${API_VERSION_PARAMETER} query parameter`,
  [VERSION_PARAMETER]: `the ${VERSION_PARAMETER} query parameter (a template version is MAJOR.MINOR.PATCH, chosen by the path /templates/{id}/versions/{version})`,
};

/** A template version as the registry writes it: MAJOR.MINOR.PATCH. */
const TEMPLATE_VERSION = /^\d+\.\d+\.\d+$/;

/**
 * The API version selectors of a request's `version` query parameter (the parsed value: a text, or
 * an array when repeated) on a route whose own use of `version` is `own`; undefined when the
 * parameter is the route's (or absent), and then stays in the query.
 */
export function versionQuerySelectors(value: unknown, own: VersionQuery | undefined): Selector[] | undefined {
  if (value === undefined || own === 'template-version') return undefined;
  const values = (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'string' || typeof v === 'number' ? String(v) : ''));
  if (own === 'version-filter') {
    const items = values.flatMap((v) => v.split(',')).map((item) => item.trim()).filter((item) => item !== '');
    if (items.length > 0 && items.every((item) => TEMPLATE_VERSION.test(item))) return undefined;
  }
  return values.map((v) => ({ source: VERSION_PARAMETER, value: v }));
}

/** What a request naming no version at all selects (one object for all of them). */
const DEFAULT_SELECTION: { version: string } = Object.freeze({ version: API_VERSION });

/** True when a request names no API version anywhere (path prefix, api-version, `version` of the query, API-Version, Accept): the common case, decided without allocating. */
function namesNoVersion(raw: IncomingMessage, headers: IncomingHttpHeaders, query: readonly Selector[]): boolean {
  if ((raw as TaggedRequest)[SELECTORS] !== undefined || query.length > 0 || headers[API_VERSION_HEADER] !== undefined) return false;
  const accept = headers.accept;
  return accept === undefined || (typeof accept === 'string' && !accept.includes('version'));
}

/** The version a request selects (API_VERSION when it names none), or the 400 naming the supported versions; `query` are the selectors of its `version` parameter. */
export function selectApiVersion(raw: IncomingMessage, headers: IncomingHttpHeaders, query: readonly Selector[] = []): { version: string } | { error: ApiError } {
  if (namesNoVersion(raw, headers, query)) return DEFAULT_SELECTION;
  const selectors = [...((raw as TaggedRequest)[SELECTORS] ?? []), ...query, ...headerSelectors(headers)];
  const details: ErrorDetail[] = selectors
    .filter((selector) => !isSupportedApiVersion(selector.value))
    .map((selector) => ({
      field: selector.source,
      code: 'UNSUPPORTED_API_VERSION',
      message: `names API version ${JSON.stringify(selector.value)} (from ${SOURCE_TEXT[selector.source]}); ${SUPPORTED_TEXT}`,
    }));
  if (details.length === 0) return { version: API_VERSION };
  const named = [...new Set(selectors.filter((s) => !isSupportedApiVersion(s.value)).map((s) => JSON.stringify(s.value)))].join(', ');
  return { error: new ApiError(400, 'VALIDATION_ERROR', `unsupported API version ${named}: this server supports version ${SUPPORTED_API_VERSIONS.join(', ')} (${API_VERSION})`, details) };
}

/** The hook that checks the selected version of every request (counted by the rate limit first) and records it on `request.apiVersion`. */
export const apiVersionPlugin = fastifyPlugin(
  (app: FastifyInstance, _options: unknown, done: (error?: Error) => void) => {
    app.decorateRequest('apiVersion', undefined);
    // preParsing, not onRequest: after the rate limit (route-level onRequest hooks run after app-level
    // ones), so that requests naming a bad version are counted like any other; before any body is read.
    app.addHook('preParsing', (request, _reply, payload, next) => {
      // `version` in the query: the API version selector unless it is the route's own parameter;
      // taken out of the query before the route's validation and handler read it.
      const query = request.query as Record<string, unknown> | undefined;
      const value = query?.[VERSION_PARAMETER];
      // The route's config only when there is a `version` to judge (request.routeOptions builds an object per call).
      const fromQuery = query && value !== undefined ? versionQuerySelectors(value, request.routeOptions.config.versionQuery) : undefined;
      if (fromQuery && query) delete query[VERSION_PARAMETER];
      const selected = selectApiVersion(request.raw, request.headers, fromQuery);
      if ('error' in selected) {
        next(selected.error);
        return;
      }
      request.apiVersion = selected.version;
      next(null, payload);
    });
    done();
  },
  { name: 'template-registry-api-version' },
);
