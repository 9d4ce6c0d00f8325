/**
 * The read routes of the registry server: the static registry document and catalog page (with
 * conditional requests and precompressed variants), the template list with the spec's query
 * conventions, single templates and versions, archive downloads, categories and a health check.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import { readIfExists } from '../../core/files.js';
import { selectLatest, versionsOf } from '../../core/listing.js';
import type { TemplateEntry } from '../../core/schema-types.js';
import { clientId } from '../client-id.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';
import { MAX_LIMIT, parseListQuery, runListQuery } from '../query.js';

export const ENVELOPE_CACHE_CONTROL = 'public, max-age=60';
export const DOCUMENT_CACHE_CONTROL = 'public, max-age=300';
export const ARCHIVE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const HEALTH_CACHE_CONTROL = 'no-cache, no-store, must-revalidate';
export const ERROR_CACHE_CONTROL = 'no-store';

export type ContentCoding = 'br' | 'gzip' | 'identity';

// ---------------------------------------------------------------------------------------------
// Conditional requests and content negotiation (exported for the tests)
// ---------------------------------------------------------------------------------------------

/** `"tag"` for a bare tag, the tag as is when already quoted (or weak). */
export function quoteEtag(tag: string): string {
  return tag.startsWith('"') || tag.startsWith('W/') ? tag : `"${tag}"`;
}

/** The opaque part of an entity tag, without `W/` and the quotes. */
function opaque(tag: string): string {
  const strong = tag.trim().replace(/^W\//, '');
  return strong.startsWith('"') && strong.endsWith('"') && strong.length >= 2 ? strong.slice(1, -1) : strong;
}

/**
 * True when `If-None-Match` names one of `etags` (weak comparison, as RFC 9110 asks for
 * If-None-Match) or is `*`. A list may mix weak and strong tags.
 */
export function ifNoneMatchMatches(header: string | undefined, etags: readonly string[]): boolean {
  if (header === undefined) return false;
  const wanted = new Set(etags.map(opaque));
  // Entity tags may contain commas only inside quotes; split on commas outside them.
  const candidates = header.match(/(?:W\/)?"[^"]*"|[^,\s]+/g) ?? [];
  return candidates.some((candidate) => candidate.trim() === '*' || wanted.has(opaque(candidate)));
}

/** True when `If-Modified-Since` is a valid date at or after `lastModified` (HTTP dates have whole seconds). */
export function notModifiedSince(header: string | undefined, lastModified: Date): boolean {
  if (header === undefined) return false;
  const since = Date.parse(header);
  if (Number.isNaN(since)) return false;
  return Math.floor(lastModified.getTime() / 1000) * 1000 <= since;
}

/**
 * The codings to try, best first, from `Accept-Encoding`: br and gzip by their q-values (br
 * first on a tie, `*` standing in for an unnamed one, `q=0` ruling one out), then identity.
 */
export function negotiateEncoding(header: string | undefined): ContentCoding[] {
  if (header === undefined || header.trim() === '') return ['identity'];
  const q = new Map<string, number>();
  for (const part of header.split(',')) {
    const [token = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (token === '') continue;
    let value = 1;
    for (const param of params) {
      const match = /^q\s*=\s*([0-9.]+)$/.exec(param);
      if (match) value = Math.min(1, Math.max(0, Number(match[1]) || 0));
    }
    const name = token === 'x-gzip' ? 'gzip' : token;
    q.set(name, Math.max(value, q.get(name) ?? -1));
  }
  const star = q.get('*');
  const weight = (coding: 'br' | 'gzip'): number => q.get(coding) ?? star ?? 0;
  const compressed = (['br', 'gzip'] as const)
    .filter((coding) => weight(coding) > 0)
    .sort((a, b) => weight(b) - weight(a)); // stable: br stays first on a tie
  return [...compressed, 'identity'];
}

// ---------------------------------------------------------------------------------------------
// Static files
// ---------------------------------------------------------------------------------------------

const SUFFIX: Record<ContentCoding, string> = { br: '.br', gzip: '.gz', identity: '' };

/** The first variant of `file` the client accepts and that exists (identity last). */
async function pickVariant(file: string, accepted: readonly ContentCoding[]): Promise<{ coding: ContentCoding; bytes: Buffer } | undefined> {
  for (const coding of accepted) {
    const bytes = await readIfExists(file + SUFFIX[coding]);
    if (bytes) return { coding, bytes };
  }
  return undefined;
}

/** A strong tag for one coding of a representation: compressed variants get their own (RFC 9110 8.8.3). */
function variantEtag(base: string, coding: ContentCoding): string {
  const tag = opaque(base);
  return coding === 'identity' ? `"${tag}"` : `"${tag}-${coding}"`;
}

interface StaticFile {
  file: string;
  contentType: string;
  /** The representation's tag (identity coding); undefined: the served bytes' sha256. */
  etag?: string;
  /** Default: the file's modification time. */
  lastModified?: Date;
}

async function sendStatic(request: FastifyRequest, reply: FastifyReply, options: StaticFile): Promise<FastifyReply> {
  const variant = await pickVariant(options.file, negotiateEncoding(request.headers['accept-encoding']));
  if (!variant) throw new ApiError(503, 'SERVICE_UNAVAILABLE', `${path.basename(options.file)} has not been built yet`, [], { 'Retry-After': '5' });

  let etag: string;
  let allTags: string[];
  if (options.etag !== undefined) {
    etag = variantEtag(options.etag, variant.coding);
    allTags = (['identity', 'br', 'gzip'] as const).map((coding) => variantEtag(options.etag as string, coding));
  } else {
    etag = `"${createHash('sha256').update(variant.bytes).digest('base64url')}"`;
    allTags = [etag];
  }
  const lastModified = options.lastModified ?? (await stat(options.file + SUFFIX[variant.coding])).mtime;

  void reply
    .header('ETag', etag)
    .header('Last-Modified', lastModified.toUTCString())
    .header('Cache-Control', DOCUMENT_CACHE_CONTROL)
    .header('Vary', 'Accept-Encoding');

  const ifNoneMatch = request.headers['if-none-match'];
  const notModified =
    ifNoneMatch !== undefined ? ifNoneMatchMatches(ifNoneMatch, allTags) : notModifiedSince(request.headers['if-modified-since'], lastModified);
  if (notModified) return reply.code(304).send();

  if (variant.coding !== 'identity') void reply.header('Content-Encoding', variant.coding);
  return reply
    .type(options.contentType)
    .header('Content-Length', String(variant.bytes.length))
    .send(variant.bytes);
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

const TEMPLATE_PARAMS = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1 } },
} as const;

const VERSION_PARAMS = {
  type: 'object',
  required: ['id', 'version'],
  properties: { id: { type: 'string', minLength: 1 }, version: { type: 'string', minLength: 1 } },
} as const;

/** Types of the list parameters a schema can check; the rest is checked by parseListQuery. */
export const LIST_QUERY_SCHEMA = {
  type: 'object',
  properties: {
    page: { type: 'integer', minimum: 1 },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
    cursor: { type: 'string' },
    sort: { type: 'string' },
    order: { type: 'string', enum: ['asc', 'desc'] },
    fields: { type: 'string' },
    q: { type: 'string' },
    search: { type: 'string' },
    searchFields: { type: 'string' },
    category: { type: 'string' },
    stability: { type: 'string' },
    tags: { type: 'string' },
    features: { type: 'string' },
    author: { type: 'string' },
    createdAfter: { type: 'string' },
    createdBefore: { type: 'string' },
  },
} as const;

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

export const readRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  // Errors of these routes (thrown before or after headers were set) are never cached.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode >= 400) void reply.header('Cache-Control', ERROR_CACHE_CONTROL);
    return payload;
  });

  const registryDocument = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const current = context.registry();
    return sendStatic(request, reply, {
      file: path.join(context.storage.publicDir, 'registry.json'),
      contentType: 'application/json; charset=utf-8',
      etag: quoteEtag(current.etag),
      lastModified: current.lastModified,
    });
  };
  app.get('/registry.json', registryDocument);
  app.get('/', registryDocument);

  const catalogPage = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
    sendStatic(request, reply, { file: path.join(context.storage.publicDir, 'index.html'), contentType: 'text/html; charset=utf-8' });
  app.get('/index.html', catalogPage);
  app.get('/catalog', catalogPage);

  app.get('/templates', { schema: { querystring: LIST_QUERY_SCHEMA } }, async (request, reply) => {
    const parsed = parseListQuery(request.query as Record<string, unknown>);
    if (!parsed.ok) throw new ApiError(400, 'VALIDATION_ERROR', 'invalid query parameters', parsed.details);
    const result = runListQuery(context.registry().document, parsed.query);
    return sendEnvelope(request, reply, result.data, { pagination: result.pagination });
  });

  app.get<{ Params: { id: string } }>('/templates/:id', { schema: { params: TEMPLATE_PARAMS } }, async (request, reply) => {
    const entry = selectLatest(context.registry().document.templates, request.params.id);
    if (!entry) throw notFound(`template ${request.params.id}`);
    return sendEnvelope(request, reply, entry);
  });

  app.get<{ Params: { id: string } }>('/templates/:id/versions', { schema: { params: TEMPLATE_PARAMS } }, async (request, reply) => {
    const versions = versionsOf(context.registry().document.templates, request.params.id);
    if (versions.length === 0) throw notFound(`template ${request.params.id}`);
    return sendEnvelope(request, reply, versions);
  });

  app.get<{ Params: { id: string; version: string } }>('/templates/:id/versions/:version', { schema: { params: VERSION_PARAMS } }, async (request, reply) => {
    return sendEnvelope(request, reply, findVersion(context, request.params.id, request.params.version));
  });

  app.get<{ Params: { id: string; version: string } }>(
    '/templates/:id/versions/:version/archive',
    { schema: { params: VERSION_PARAMS } },
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
        if (request.method !== 'HEAD') {
          const platform = headerText(request.headers['x-platform'])?.trim();
          await context.storage.events.recordEvent({
            type: 'download',
            templateId: id,
            version,
            timestamp: new Date().toISOString(),
            userAgent: (headerText(request.headers['user-agent']) ?? '').slice(0, 512),
            platform: (platform || 'unknown').slice(0, 64),
          }, { client: clientId(request) });
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

  app.get('/categories', async (request, reply) => sendEnvelope(request, reply, context.registry().document.categories));

  app.get('/healthz', async (request, reply) => {
    const { document } = context.registry();
    const templates = new Set(document.templates.map((e) => e.id)).size;
    return reply
      .header('Cache-Control', HEALTH_CACHE_CONTROL)
      .send(envelope(request, { status: 'ok', templates, lastUpdated: document.lastUpdated }));
  });
  return Promise.resolve();
};
