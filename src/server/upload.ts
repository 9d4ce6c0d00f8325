import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';

import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { errorDetails } from '../core/validation.js';
import { scanArchive, UnsafeArchiveError } from '../archive/scan.js';
import { REQUIRED_FILES } from '../template/validate.js';
import type { ServerContext } from './context.js';
import { ApiError, envelope, type ErrorDetail } from './envelope.js';
import { secretsEqual, type TokenRecord } from './store.js';
import { errorMessage } from '../core/errors.js';

const ADMIN_FROM_ENVIRONMENT: TokenRecord = { id: 'env-admin', role: 'admin', owner: 'admin', createdAt: new Date(0).toISOString() };

function unauthorized(message: string): ApiError {
  return new ApiError(401, 'UNAUTHORIZED', message, [], { 'WWW-Authenticate': 'Bearer realm="template-registry"' });
}

/** The token record behind the request's bearer token; 401 when missing or unknown. */
export function authenticate(request: FastifyRequest, context: ServerContext): TokenRecord {
  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthorized('a bearer token is required: Authorization: Bearer <token>');
  const token = match[1];
  if (context.adminToken && secretsEqual(token, context.adminToken)) return ADMIN_FROM_ENVIRONMENT;
  const record = context.store.authenticate(token);
  if (!record) throw unauthorized('the bearer token is not valid');
  return record;
}

function manifestDetails(manifest: unknown): ErrorDetail[] {
  return errorDetails(describeSchemaErrors(schemaErrors('template-manifest', manifest)), 'manifest');
}

interface ReceivedUpload {
  archive?: { path: string; size: number; sha256: string; integrity: string };
  manifestText?: string;
}

async function receiveParts(request: FastifyRequest, context: ServerContext): Promise<ReceivedUpload> {
  const received: ReceivedUpload = {};
  const parts = request.parts({
    limits: { fileSize: context.limits.maxArchiveBytes, files: 2, fields: 4, parts: 6, fieldSize: context.limits.maxManifestBytes },
  });
  for await (const part of parts) {
    if (part.type === 'file' && part.fieldname === 'template') {
      if (received.archive) throw new ApiError(400, 'BAD_REQUEST', 'the template part appears twice');
      const temp = context.store.tempPath('.tgz');
      const sha256 = createHash('sha256');
      const sha512 = createHash('sha512');
      let size = 0;
      const hasher = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          sha256.update(chunk);
          sha512.update(chunk);
          callback(null, chunk);
        },
      });
      received.archive = { path: temp, size: 0, sha256: '', integrity: '' };
      await pipeline(part.file, hasher, createWriteStream(temp));
      if (part.file.truncated) {
        throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the archive is larger than the limit of ${context.limits.maxArchiveBytes} bytes`);
      }
      received.archive = { path: temp, size, sha256: sha256.digest('hex'), integrity: `sha512-${sha512.digest('base64')}` };
    } else if (part.fieldname === 'manifest') {
      if (received.manifestText !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the manifest part appears twice');
      if (part.type === 'file') {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of part.file as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > context.limits.maxManifestBytes) {
            throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the manifest is larger than ${context.limits.maxManifestBytes} bytes`);
          }
          chunks.push(chunk);
        }
        received.manifestText = Buffer.concat(chunks).toString('utf8');
      } else {
        if (part.valueTruncated) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the manifest is larger than ${context.limits.maxManifestBytes} bytes`);
        // A field sent as application/json arrives already parsed.
        received.manifestText = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
      }
    } else if (part.type === 'file') {
      part.file.resume();
    }
  }
  return received;
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

/** Checks the archive: a gzip tar holding the required files, whose template.json agrees with the manifest part. */
async function checkArchive(file: string, manifest: TemplateManifest): Promise<void> {
  let summary;
  try {
    summary = await scanArchive(file);
  } catch (error) {
    const message = error instanceof UnsafeArchiveError ? error.message : String(error);
    throw new ApiError(422, 'VALIDATION_ERROR', 'the template part is not a valid template archive', [
      { field: 'template', code: 'INVALID_ARCHIVE', message },
    ]);
  }
  const present = new Set(summary.files);
  const details: ErrorDetail[] = REQUIRED_FILES.filter((f) => !present.has(f)).map((f) => ({
    field: `template/${f}`,
    code: 'MISSING_FILE',
    message: `the archive has no ${f}`,
  }));
  if (summary.manifestText !== undefined) {
    let packed: Partial<TemplateManifest> = {};
    try {
      packed = JSON.parse(summary.manifestText) as Partial<TemplateManifest>;
    } catch {
      details.push({ field: 'template/template.json', code: 'INVALID_JSON', message: 'template.json in the archive is not valid JSON' });
    }
    for (const key of ['name', 'version'] as const) {
      if (packed[key] !== undefined && packed[key] !== manifest[key]) {
        details.push({
          field: `template/template.json.${key}`,
          code: 'MISMATCH',
          message: `the archive's template.json has ${key} ${JSON.stringify(packed[key])}, the manifest part ${JSON.stringify(manifest[key])}`,
        });
      }
    }
  }
  if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the archive does not match the manifest', details);
}

/** `POST /templates`: the spec's operation 2. */
export const uploadRoute: FastifyPluginAsync<{ context: ServerContext }> = async (app, { context }) => {
  await app.register(multipart, { throwFileSizeLimit: false });

  app.post('/templates', async (request, reply) => {
    const token = authenticate(request, context);
    if (!request.isMultipart()) {
      throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'POST /templates takes multipart/form-data with the parts template and manifest');
    }
    let received: ReceivedUpload = {};
    try {
      received = await receiveParts(request, context).catch((error: unknown) => {
        throw multipartError(error);
      });
      const missing = [
        ...(received.archive ? [] : [{ field: 'template', code: 'REQUIRED', message: 'the template part (the gzip tar archive) is required' }]),
        ...(received.manifestText === undefined ? [{ field: 'manifest', code: 'REQUIRED', message: 'the manifest part (template.json) is required' }] : []),
      ];
      if (missing.length > 0 || !received.archive || received.manifestText === undefined) {
        throw new ApiError(400, 'VALIDATION_ERROR', 'missing parts', missing);
      }
      const manifestValue = parseManifest(received.manifestText);
      const details = manifestDetails(manifestValue);
      if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the manifest is invalid', details);
      const manifest = manifestValue as TemplateManifest;

      const permission = context.store.canPublish(token, manifest.name);
      if (!permission.allowed) throw new ApiError(403, 'FORBIDDEN', permission.reason);
      const existing = context.store.getVersion(manifest.name, manifest.version);
      if (existing) throw versionExists(manifest, existing.integrity);

      await checkArchive(received.archive.path, manifest);

      const reservation = context.store.reserveVersion(
        { name: manifest.name, version: manifest.version, integrity: received.archive.integrity, sha256: received.archive.sha256, size: received.archive.size, owner: token.owner },
        token,
      );
      if (!reservation.reserved) {
        if ('forbidden' in reservation) throw new ApiError(403, 'FORBIDDEN', reservation.forbidden);
        throw versionExists(manifest, reservation.existing.integrity);
      }
      try {
        await context.store.commitVersion(manifest.name, manifest.version, received.archive.path, manifest);
      } catch (error) {
        await context.store.abortVersion(manifest.name, manifest.version);
        throw error;
      }
      await context.rebuild();
      const entry = context.registry().document.templates.find((e) => e.id === manifest.name && e.version === manifest.version);
      if (entry) void context.webhooks?.dispatch('template.published', entry);
      const location = `${context.publicUrl}/templates/${manifest.name}/versions/${manifest.version}`;
      return reply.code(201).header('Location', location).header('Cache-Control', 'no-store').send(envelope(request, entry));
    } finally {
      if (received.archive) await rm(received.archive.path, { force: true });
    }
  });
};

function versionExists(manifest: TemplateManifest, storedIntegrity: string): ApiError {
  return new ApiError(
    409,
    'VERSION_EXISTS',
    `${manifest.name}@${manifest.version} is already published; published versions are immutable`,
    [{ field: 'integrity', code: 'VERSION_EXISTS', message: storedIntegrity }],
  );
}

/** @fastify/multipart's own errors, in the registry's terms. */
function multipartError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') {
    return new ApiError(400, 'INVALID_JSON', 'the manifest part is not valid JSON', [
      { field: 'manifest', code: 'INVALID_JSON', message: 'the manifest part is not valid JSON' },
    ]);
  }
  if (code === 'FST_PROTO_VIOLATION') return new ApiError(400, 'BAD_REQUEST', 'a part has a forbidden name');
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ApiError(413, 'PAYLOAD_TOO_LARGE', 'too many parts: send the parts template and manifest');
  }
  return error;
}
