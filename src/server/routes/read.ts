/**
 * The read routes of the registry server: the files of the static registry (registry.json, the
 * sparse index.json and templates/<id>.json, the catalog page), answered from the build's snapshot
 * in memory with conditional requests and the precompressed variants; the template list with the
 * spec's query conventions, single templates and versions, archive downloads, categories and a
 * health check.
 */
import { createHash } from 'node:crypto';

import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';

import { isYanked, selectLatest, versionsOf } from '../../core/listing.js';
import { DOWNLOAD_PURPOSE_HEADER } from '../../core/routes.js';
import { isTemplateName } from '../../core/versions.js';
import type { TemplateEntry } from '../../core/schema-types.js';
import { clientId } from '../client-id.js';
import type { ServerContext } from '../context.js';
import { selectApiVersion } from '../api-version.js';
import { ApiError, envelope, requestId } from '../envelope.js';
import { checkedListQuery } from '../list-route.js';
import { CATEGORY_LIST, runList, runListQuery, showsYanked, TEMPLATE_LIST, VERSION_LIST } from '../query.js';
import {
  CATALOG_FILE,
  chooseRepresentation,
  ifNoneMatchMatches,
  INDEX_FILE,
  isNotModified,
  REGISTRY_FILE,
  templateFileName,
  type StaticFile,
  type StaticFiles,
} from '../static-files.js';
import { TEMPLATE_PARAMS, VERSION_PARAMS } from '../params.js';
import { appendRateLimitHeaders, READS } from '../rate-limit.js';

export const ENVELOPE_CACHE_CONTROL = 'public, max-age=60';
export const ARCHIVE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const HEALTH_CACHE_CONTROL = 'no-cache, no-store, must-revalidate';
export const ERROR_CACHE_CONTROL = 'no-store';


/**
 * Answers a static file: the representation the client accepts, or a 304. Written straight to the
 * response (reply.hijack) with the headers computed once per build, those every answer carries
 * (the request id, the rate limit: set by onSend hooks on other answers) and `hookHeaders`, those a
 * hook set on the reply that the file's own do not replace: the hottest answers of the server skip
 * fastify's send pipeline (serialization, the onSend hooks). fastify still logs the request, as any other.
 */
function sendStaticFile(request: FastifyRequest, reply: FastifyReply, file: StaticFile, hookHeaders: HookHeaders = NO_HEADERS): void {
  const chosen = chooseRepresentation(file, request.headers['accept-encoding']);
  const notModified = isNotModified(file, chosen, request.headers['if-none-match'], request.headers['if-modified-since']);
  const own = notModified ? chosen.notModifiedHeaderPairs : chosen.headerPairs;
  const headers = ['x-request-id', requestId(request)];
  if (request.rateLimit !== null) appendRateLimitHeaders(headers, request.rateLimit);
  if (hookHeaders !== NO_HEADERS) appendHookHeaders(headers, hookHeaders, own);
  headers.push(...own);
  reply.hijack();
  reply.raw.writeHead(notModified ? 304 : 200, headers);
  if (notModified || request.method === 'HEAD') reply.raw.end();
  else reply.raw.end(chosen.bytes);
}

/** The headers hooks set on a reply (`reply.getHeaders()`). */
type HookHeaders = Readonly<Partial<ReturnType<FastifyReply['getHeaders']>>>;

const NO_HEADERS: HookHeaders = Object.freeze({});

/** Appends to `pairs` the headers of `hookHeaders` whose name `own` (name/value pairs) does not set: the file's own win. */
function appendHookHeaders(pairs: string[], hookHeaders: HookHeaders, own: readonly string[]): void {
  for (const [name, value] of Object.entries(hookHeaders)) {
    if (value === undefined || own.some((item, i) => i % 2 === 0 && item === name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) pairs.push(name, String(item));
  }
}

function notBuiltYet(name: string): ApiError {
  return new ApiError(503, 'SERVICE_UNAVAILABLE', `${name} has not been built yet`, [], { 'Retry-After': '5', 'Cache-Control': ERROR_CACHE_CONTROL });
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------


function sendEnvelope(request: FastifyRequest, reply: FastifyReply, data: unknown, extra: Record<string, unknown> = {}): FastifyReply {
  return reply.header('Cache-Control', ENVELOPE_CACHE_CONTROL).send(envelope(request, data, extra));
}

function notFound(what: string): ApiError {
  return new ApiError(404, 'NOT_FOUND', `${what} not found`);
}

function findVersion(context: ServerContext, id: string, version: string): TemplateEntry {
  const entry = context.registry().document.templates.find((e) => e.id === id && e.version === version);
  if (!entry) throw notFound(`template ${id} version ${version}`);
  return entry;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The public static files, answered from memory by every server alike (logging or not, behind
 * proxies or not). Kept cheap: every header is computed once per build, the answer is written
 * without fastify's send pipeline (sendStaticFile), and the API routes' onSend hook does not run for
 * them (their errors carry `no-store` themselves).
 *
 * A plain read (GET or HEAD, no query string, no API version the server lacks) is answered by the
 * route's own onRequest hook (`answerPlainRead`), which runs after the rate limit's (counted and
 * refused as every request) and ends the request's
 * lifecycle: the later app-wide hooks have nothing to do for it (the API version is checked here by
 * api-version.ts's own function, the NUL check of json-input.ts has no query to look at and finds
 * none in a file's name, no body is read). No hook before it sets a reply header (the rate limit's
 * count keeps its state on the request), so it has none to pass on; the route's handler, which runs
 * after every hook, passes on those set. Anything else (a query string, a version to refuse, a
 * file not built or not found) goes on through every hook to the route's handler, as any request.
 */
const STATIC_FILE_CONFIG = { rateLimit: READS, cache: 'static-file' } as const;

const staticFileRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  /** The files of the last build; none before the first build is loaded. */
  const staticFiles = (): StaticFiles | undefined => {
    try {
      return context.registry().files;
    } catch {
      return undefined;
    }
  };
  /**
   * The GET (and HEAD) route of `path`: `fileOf` finds its file among the build's (undefined: none),
   * `missing` is the error when there is none.
   */
  const staticFileRoute = <Params>(path: string, fileOf: (files: StaticFiles, params: Params) => StaticFile | undefined, missing: (params: Params) => ApiError): void => {
    const answerPlainRead: onRequestHookHandler = (request, reply, done) => {
      const files = request.raw.url?.includes('?') === false ? staticFiles() : undefined;
      const file = files && fileOf(files, request.params as Params);
      if (file === undefined) return done();
      const selected = selectApiVersion(request.raw, request.headers);
      if ('error' in selected) return done();
      request.apiVersion = selected.version;
      sendStaticFile(request, reply, file);
    };
    app.get(path, { config: STATIC_FILE_CONFIG, onRequest: answerPlainRead }, (request, reply) => {
      const files = staticFiles();
      const params = request.params as Params;
      const file = files && fileOf(files, params);
      if (!file) throw missing(params);
      sendStaticFile(request, reply, file, reply.getHeaders());
    });
  };
  /** A file of the build at a fixed name (503 with Retry-After until it is built). */
  const entryPoint = (path: string, name: string): void => staticFileRoute(path, (files) => files.get(name), () => notBuiltYet(name));
  entryPoint('/registry.json', REGISTRY_FILE);
  entryPoint('/', REGISTRY_FILE);
  // The catalog page at both paths: relative URLs (index.json, templates/<id>.json, registry.json)
  // resolve to the same files from /catalog as from /index.html.
  entryPoint('/index.html', CATALOG_FILE);
  entryPoint('/catalog', CATALOG_FILE);
  entryPoint('/index.json', INDEX_FILE);
  // Template ids never contain a dot, so /templates/<id>.json never takes an id of /templates/:id.
  // Looked up by name among the build's files, never opened by path: no id reaches the disk.
  staticFileRoute<{ id: string }>(
    '/templates/:id.json',
    (files, { id }) => (isTemplateName(id) ? files.get(templateFileName(id)) : undefined),
    ({ id }) =>
      staticFiles() === undefined
        ? notBuiltYet(INDEX_FILE)
        : new ApiError(404, 'NOT_FOUND', `${templateFileName(id)} not found`, [], { 'Cache-Control': ERROR_CACHE_CONTROL }),
  );
  return Promise.resolve();
};

const apiReadRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  // Errors of these routes (thrown before or after headers were set) are never cached.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (reply.statusCode >= 400) void reply.header('Cache-Control', ERROR_CACHE_CONTROL);
    done(null, payload);
  });

  // The list routes: every rule of their query strings is in query.ts (list conventions).
  // `version=1.2.3` is the field filter here; `version=1.0` the API version selector (api-version.ts).
  app.get('/templates', { config: { rateLimit: READS, cache: 'registry-data', versionQuery: 'version-filter' } }, async (request, reply) => {
    const result = runListQuery(context.registry().document, checkedListQuery(TEMPLATE_LIST, request.query));
    return sendEnvelope(request, reply, result.data, { pagination: result.pagination });
  });

  app.get<{ Params: { id: string } }>('/templates/:id', { schema: { params: TEMPLATE_PARAMS }, config: { rateLimit: READS, cache: 'registry-data' } }, async (request, reply) => {
    const entry = selectLatest(context.registry().document.templates, request.params.id);
    if (!entry) throw notFound(`template ${request.params.id}`);
    return sendEnvelope(request, reply, entry);
  });

  app.get<{ Params: { id: string } }>('/templates/:id/versions', { schema: { params: TEMPLATE_PARAMS }, config: { rateLimit: READS, cache: 'registry-data' } }, async (request, reply) => {
    const query = checkedListQuery(VERSION_LIST, request.query, request.params.id);
    const all = versionsOf(context.registry().document.templates, request.params.id);
    if (all.length === 0) throw notFound(`template ${request.params.id}`);
    // Yanked versions only with include=yanked (each is still served at its own URL).
    const versions = showsYanked(query) ? all : all.filter((entry) => !isYanked(entry));
    const result = runList(VERSION_LIST, versions, query);
    return sendEnvelope(request, reply, result.data, { pagination: result.pagination });
  });

  app.get<{ Params: { id: string; version: string } }>('/templates/:id/versions/:version', { schema: { params: VERSION_PARAMS }, config: { rateLimit: READS, cache: 'registry-data' } }, async (request, reply) => {
    const { id, version } = request.params;
    const entry = findVersion(context, id, version);
    // The CI run that published it through trusted publishing (never changes once published).
    const publisher = (await context.storage.versions.getVersion(id, version))?.publisher;
    return sendEnvelope(request, reply, publisher ? { ...entry, publisher } : entry);
  });

  app.get<{ Params: { id: string; version: string } }>(
    '/templates/:id/versions/:version/archive',
    { schema: { params: VERSION_PARAMS }, config: { rateLimit: READS, cache: 'archive' } },
    async (request, reply) => {
      const { id, version } = request.params;
      const entry = findVersion(context, id, version);
      const archive = await context.storage.versions.openArchive(id, version);
      if (!archive) throw notFound(`archive of ${id}@${version}`);
      try {
        void reply.header('Cache-Control', ARCHIVE_CACHE_CONTROL);
        if (typeof entry.sha256 === 'string') {
          const etag = `"${entry.sha256}"`;
          void reply.header('ETag', etag);
          if (ifNoneMatchMatches(headerText(request.headers['if-none-match']), [etag])) {
            archive.stream.destroy();
            return reply.code(304).send();
          }
        }
        // A client reading the template without using it (info showing its questions) is not a download.
        const inspecting = headerText(request.headers[DOWNLOAD_PURPOSE_HEADER])?.trim().toLowerCase() === 'inspect';
        if (request.method !== 'HEAD' && !inspecting) {
          const platform = headerText(request.headers['x-platform'])?.trim();
          await context.storage.events.recordEvent({
            type: 'download',
            templateId: id,
            version,
            timestamp: new Date().toISOString(),
            userAgent: (headerText(request.headers['user-agent']) ?? '').slice(0, 512),
            platform: (platform || 'unknown').slice(0, 64),
          }, { client: clientId(request) });
          context.downloadRecorded?.();
        }
        return reply
          .type('application/gzip')
          .header('Content-Length', String(archive.size))
          .header('Content-Disposition', `attachment; filename="${id}-${version}.tgz"`)
          .send(archive.stream);
      } catch (error) {
        archive.stream.destroy();
        throw error;
      }
    },
  );

  // The Sigstore bundle of a version's build provenance, as uploaded and verified: immutable.
  app.get<{ Params: { id: string; version: string } }>('/templates/:id/versions/:version/attestation', { schema: { params: VERSION_PARAMS }, config: { rateLimit: READS, cache: 'attestation' } }, async (request, reply) => {
    const { id, version } = request.params;
    const entry = findVersion(context, id, version);
    const bundle = entry.attestations ? await context.storage.versions.readAttestation(id, version) : undefined;
    if (!bundle) throw notFound(`attestation of ${id}@${version}`);
    const etag = `"${createHash('sha256').update(bundle).digest('hex')}"`;
    void reply.header('Cache-Control', ARCHIVE_CACHE_CONTROL).header('ETag', etag);
    if (ifNoneMatchMatches(headerText(request.headers['if-none-match']), [etag])) return reply.code(304).send();
    return reply.type('application/json').header('Content-Length', String(bundle.length)).send(bundle);
  });

  app.get('/categories', { config: { rateLimit: READS, cache: 'registry-data' } }, async (request, reply) => {
    const result = runList(CATEGORY_LIST, context.registry().document.categories, checkedListQuery(CATEGORY_LIST, request.query));
    return sendEnvelope(request, reply, result.data, { pagination: result.pagination });
  });

  app.get('/healthz', { config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const { document } = context.registry();
    const templates = new Set(document.templates.map((e) => e.id)).size;
    return reply
      .header('Cache-Control', HEALTH_CACHE_CONTROL)
      .send(envelope(request, { status: 'ok', templates, lastUpdated: document.lastUpdated }));
  });
  return Promise.resolve();
};

/** The static files (in a scope of their own, without the API routes' onSend hook) and the API's read routes. */
export const readRoutes: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  await app.register(staticFileRoutes, { context });
  await app.register(apiReadRoutes, { context });
};
