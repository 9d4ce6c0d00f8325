/**
 * A second registry, written from the specification alone (no project code): a static registry
 * document with only the fields the specification's template entry lists (no `integrity`, no
 * index, no shards), the archives beside it, and the specification's upload route: `POST
 * {registry_url}/templates`, multipart parts `template` and `manifest`, `Authorization: Bearer`.
 * A duplicate name and version is a 409 with the specification's error envelope and nothing more.
 * Everything sits under an arbitrary path prefix, as on any static host.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

import busboy from 'busboy';

export interface SpecRegistry {
  /** `http://127.0.0.1:<port><prefix>`: the registry_url base (the document is `<url>/registry.json`). */
  url: string;
  token: string;
  /** Requests as `METHOD path`, in order. */
  requests: string[];
  /** Leaves a version out of the document (as a registry whose listing lags behind its uploads). */
  unlist: (id: string, version: string) => void;
  /** The document as served. */
  document: () => { templates: Record<string, unknown>[]; categories: unknown[]; tags: string[]; lastUpdated: string };
  close: () => Promise<void>;
}

export interface SpecRegistryOptions {
  /** Path prefix of every route (default `/some/prefix`). */
  prefix?: string;
  /** Serve the upload route (default true). */
  upload?: boolean;
}

const CATEGORIES = ['frontend', 'backend', 'fullstack', 'mobile', 'desktop'].map((id) => ({ id, name: id, description: `${id} templates`, icon: id, templates: [] as string[] }));

function errorEnvelope(code: string, message: string, details: { field: string; message: string; code: string }[] = []) {
  return { error: { code, message, details, requestId: randomUUID(), timestamp: new Date().toISOString() } };
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json; charset=utf-8'): void {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': type, 'content-length': bytes.length }).end(bytes);
}

/** Reads the multipart parts of an upload (files and fields alike) into buffers. */
function readParts(req: IncomingMessage): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    const parts = new Map<string, Buffer>();
    const parser = busboy({ headers: req.headers, limits: { fileSize: 64 * 1024 * 1024 } });
    parser.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => parts.set(name, Buffer.concat(chunks)));
    });
    parser.on('field', (name, value) => parts.set(name, Buffer.from(value)));
    parser.on('close', () => resolve(parts));
    parser.on('error', reject);
    req.pipe(parser);
  });
}

export async function startSpecRegistry(options: SpecRegistryOptions = {}): Promise<SpecRegistry> {
  const prefix = (options.prefix ?? '/some/prefix').replace(/\/+$/, '');
  const token = `spec-${randomUUID()}`;
  const requests: string[] = [];
  const entries: Record<string, unknown>[] = [];
  const archives = new Map<string, Buffer>();
  const unlisted = new Set<string>();
  let lastUpdated = new Date('2026-01-01T00:00:00.000Z').toISOString();
  let base = '';

  const document = () => {
    const categories = CATEGORIES.map((c) => ({ ...c, templates: [...new Set(entries.filter((e) => e.category === c.id).map((e) => String(e.id)))] }));
    const listed = entries.filter((e) => !unlisted.has(`${String(e.id)}@${String(e.version)}`));
    return { templates: listed, categories, tags: [...new Set(entries.flatMap((e) => (e.tags as string[] | undefined) ?? []))], lastUpdated };
  };

  const upload = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, errorEnvelope('UNAUTHORIZED', 'missing or invalid token'));
    const parts = await readParts(req);
    const archive = parts.get('template');
    const manifestBytes = parts.get('manifest');
    if (!archive || !manifestBytes) {
      return send(res, 400, errorEnvelope('VALIDATION_ERROR', 'the template and manifest parts are required', [{ field: archive ? 'manifest' : 'template', message: 'is required', code: 'REQUIRED' }]));
    }
    let manifest: Record<string, unknown>;
    try {
      manifest = JSON.parse(manifestBytes.toString('utf8')) as Record<string, unknown>;
    } catch {
      return send(res, 400, errorEnvelope('VALIDATION_ERROR', 'the manifest is not JSON'));
    }
    const { name, version } = manifest;
    if (typeof name !== 'string' || !/^[a-z][a-z0-9-]*$/.test(name) || typeof version !== 'string' || !/^\d+\.\d+\.\d+$/.test(version)) {
      return send(res, 422, errorEnvelope('VALIDATION_ERROR', 'the manifest is invalid', [{ field: 'name', message: 'must follow the rules', code: 'PATTERN' }]));
    }
    if (entries.some((e) => e.id === name && e.version === version)) {
      return send(res, 409, errorEnvelope('CONFLICT', `${name}@${version} already exists`));
    }
    const file = `archives/${name}-${version}.tgz`;
    archives.set(`${prefix}/${file}`, archive);
    const now = new Date().toISOString();
    lastUpdated = now;
    const author = manifest.author as { name?: string } | undefined;
    entries.push({
      id: name,
      name,
      version,
      description: manifest.description,
      category: manifest.category,
      stability: manifest.stability ?? 'stable',
      downloadUrl: `${base}/${file}`,
      documentationUrl: `${base}/docs/${name}`,
      repositoryUrl: (manifest.repository as { url?: string } | undefined)?.url ?? `${base}/repo/${name}`,
      author: { name: author?.name ?? 'unknown' },
      license: manifest.license ?? 'UNLICENSED',
      tags: manifest.keywords ?? [],
      features: manifest.features ?? [],
      dependencies: { methodology: typeof manifest.methodologyVersion === 'string' ? manifest.methodologyVersion : '*' },
      compatibility: { methodologyVersions: [], nodeVersions: [], platforms: [], breaking: false, deprecated: [], removed: [] },
      stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
      createdAt: now,
      updatedAt: now,
    });
    send(res, 201, { data: entries.at(-1), meta: { timestamp: now, requestId: randomUUID(), version: '1.0' } });
  };

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests.push(`${req.method ?? 'GET'} ${path}`);
    if (req.method === 'POST' && path === `${prefix}/templates` && options.upload !== false) {
      upload(req, res).catch(() => send(res, 500, errorEnvelope('INTERNAL', 'unexpected error')));
      return;
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      if (path === `${prefix}/registry.json`) {
        const body = Buffer.from(JSON.stringify(document()));
        const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
        if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
        return void res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length, etag, 'cache-control': 'private, max-age=60' }).end(req.method === 'HEAD' ? undefined : body);
      }
      const archive = archives.get(path);
      if (archive) return send(res, 200, archive, 'application/gzip');
    }
    send(res, 404, errorEnvelope('NOT_FOUND', `${path} does not exist`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}${prefix}`;
  return {
    url: base,
    token,
    requests,
    unlist: (id, version) => void unlisted.add(`${id}@${version}`),
    document,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
