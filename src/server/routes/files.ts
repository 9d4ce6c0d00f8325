/**
 * Large uploads through `/files` (the spec's file upload routes):
 *
 * - `POST /files/upload-url` `{ filename, contentType }` (a token) stages a file and answers
 *   `{ uploadUrl, fileId }`, and (our addition) `maxBytes`, the most its PUT may send. The URL is
 *   opaque to clients: here it is this server's
 *   `/files/{fileId}/content?sig=<capability>`, the capability a random secret the store keeps as
 *   a hash (so the PUT needs no token, like a presigned S3 URL; another backend may answer one).
 * - `PUT {uploadUrl}` takes the raw bytes, streamed to a temp file of the store (the archive size
 *   limit and the request time-out of uploads; the temp file removed on any failure).
 * - `POST /files/{fileId}/confirm` `{ size?, integrity? }` (the token that staged it) checks them
 *   against the stored bytes (422 on a mismatch) and makes the file usable.
 * - `POST /files` takes multipart `file` + `metadata` (JSON `{ filename, contentType }`) and
 *   answers a confirmed file at once.
 *
 * `POST /templates` with a `fileId` part (routes/upload.ts) publishes a confirmed file of the same
 * token; a successful publish consumes it. A token keeps at most `maxStagedFilesPerToken` files (10;
 * past it 429 QUOTA_EXCEEDED, Retry-After until the first expires) holding at most
 * `maxStagedBytesPerToken` bytes together (200 MiB; past it 413 QUOTA_EXCEEDED), counted by the store
 * in one transaction with each change. Unconfirmed files expire after `pendingTtlMs` (1 hour),
 * confirmed unused ones after `confirmedTtlMs` (24 hours); a sweep removes them at start and every
 * `sweepEveryMs` (10 minutes).
 */
import { link, rm, stat } from 'node:fs/promises';

import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';

import { StagedQuotaError, type StagedFile, type StagedUsage, type StoredStagedFile, type TokenRecord } from '../../store/types.js';
import { CREDENTIAL_CACHE_CONTROL } from '../caching.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, invalidInput, type ErrorDetail } from '../envelope.js';
import { nulDetail, parseClientJson, partText } from '../json-input.js';
import { ArchiveUnpacker } from '../../archive/index.js';
import { CHECK_UNPACK } from '../archive-check.js';
import { closing, MULTIPART_OVERHEAD, multipartError, receiveArchive, uploadGate } from './upload.js';
import { READS, UPLOADS } from '../rate-limit.js';
import { identityOf, type KeptUnpack, type StagedIdentities } from '../staged-identities.js';

export interface FileSettings {
  /** How long a staged file may wait for its bytes and its confirmation, in ms (default 1 hour). */
  pendingTtlMs: number;
  /** How long a confirmed file waits to be used by a publish, in ms (default 24 hours). */
  confirmedTtlMs: number;
  /** How often expired files are removed, in ms (default 10 minutes; also once at start). */
  sweepEveryMs: number;
}

export const DEFAULT_FILE_SETTINGS: FileSettings = {
  pendingTtlMs: 60 * 60 * 1000,
  confirmedTtlMs: 24 * 60 * 60 * 1000,
  sweepEveryMs: 10 * 60 * 1000,
};

const NO_STORE = 'no-store';

/** What clients see of a staged file (never the capability). */
function publicFile(file: StagedFile): Record<string, unknown> {
  return {
    fileId: file.id,
    filename: file.filename,
    contentType: file.contentType,
    state: file.state === 'claimed' ? 'confirmed' : file.state,
    ...(file.size === undefined ? {} : { size: file.size }),
    ...(file.integrity === undefined ? {} : { integrity: file.integrity }),
    createdAt: file.createdAt,
    expiresAt: file.expiresAt,
  };
}

/** Whether an SRI string (`sha512-...`, several hashes allowed) names the stored bytes: one sha512 or sha256 entry must match, none may differ. */
function integrityMatches(expected: string, file: StagedFile): boolean {
  const stored: Record<string, string | undefined> = {
    sha512: file.integrity?.replace(/^sha512-/, ''),
    sha256: file.sha256 === undefined ? undefined : Buffer.from(file.sha256, 'hex').toString('base64'),
  };
  let matched = false;
  for (const token of expected.trim().split(/\s+/)) {
    const found = /^(sha256|sha512)-([A-Za-z0-9+/]+={0,2})(\?.*)?$/.exec(token);
    if (!found) continue;
    if (stored[found[1] as string] !== found[2]) return false;
    matched = true;
  }
  return matched;
}

/** The problems of a client's `{ size, integrity }` against the stored bytes. */
function checkDetails(expected: { size?: number; integrity?: string }, file: StagedFile): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  if (expected.size !== undefined && expected.size !== file.size) {
    details.push({ field: 'size', code: 'SIZE_MISMATCH', message: `the stored file has ${String(file.size)} bytes, not ${expected.size}` });
  }
  if (expected.integrity !== undefined && !integrityMatches(expected.integrity, file)) {
    details.push({ field: 'integrity', code: 'INTEGRITY_MISMATCH', message: `the stored file has integrity ${String(file.integrity)}` });
  }
  return details;
}

/** The file `id` of `token`: 404 when there is none, 403 when another token staged it. */
async function ownFile(context: ServerContext, token: TokenRecord, id: string): Promise<StagedFile> {
  const file = await context.storage.files.getFile(id);
  if (!file || Date.parse(file.expiresAt) <= (context.clock?.() ?? new Date()).getTime()) throw new ApiError(404, 'NOT_FOUND', `there is no file ${id} (files expire, and a used one is consumed)`);
  if (file.tokenId !== token.id) throw new ApiError(403, 'FORBIDDEN', `the file ${id} was staged with another token`);
  return file;
}

/** Reads `source` until `limit` bytes have passed; beyond that it stops and says so in `state.truncated`. */
async function* limited(source: AsyncIterable<Buffer>, limit: number, state: { truncated: boolean }): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > limit) {
      state.truncated = true;
      return;
    }
    yield chunk;
  }
}

const tooLarge = (limit: number): ApiError => closing(new ApiError(413, 'PAYLOAD_TOO_LARGE', `the file is larger than the limit of ${limit} bytes`));

/**
 * The answer to a token past its staging quota: too many files is a 429 (Retry-After: until the
 * first of them expires and frees its place), too many bytes a 413; both QUOTA_EXCEEDED, the
 * connection closed (the rest of the body is never read).
 */
function quotaExceeded(kind: 'files' | 'bytes', limit: number, used: StagedUsage, now = Date.now()): ApiError {
  if (kind === 'files') {
    const retryAfter = used.nextExpiry === undefined ? 60 : Math.max(1, Math.ceil((Date.parse(used.nextExpiry) - now) / 1000));
    const message = `the token has ${used.files} staged files, the most it may keep (${limit}): publish them, or wait until they expire (the first in ${retryAfter} seconds)`;
    return closing(new ApiError(429, 'QUOTA_EXCEEDED', message, [{ field: 'file', code: 'QUOTA_EXCEEDED', message: `at most ${limit} staged files per token` }], { 'Retry-After': String(retryAfter) }, { retryAfter }));
  }
  const message = `the token's staged files would hold more than ${limit} bytes (${used.bytes} staged already): publish them, or wait until they expire`;
  return closing(new ApiError(413, 'QUOTA_EXCEEDED', message, [{ field: 'file', code: 'QUOTA_EXCEEDED', message: `at most ${limit} staged bytes per token` }]));
}

/** A store's StagedQuotaError as its answer; anything else unchanged. */
const quotaAnswer = (error: unknown): unknown => (error instanceof StagedQuotaError ? quotaExceeded(error.kind, error.limit, error.used) : error);

/** How many more bytes `tokenId` may stage, the bytes of `replacing` (being uploaded again) set free. */
async function bytesLeft(context: ServerContext, tokenId: string, replacing?: StagedFile): Promise<{ left: number; used: StagedUsage }> {
  const used = await context.storage.files.usage(tokenId, context.clock?.() ?? new Date());
  return { left: context.limits.maxStagedBytesPerToken - used.bytes + (replacing?.size ?? 0), used };
}

const nameSchema = { type: 'string', minLength: 1, maxLength: 255 } as const;
const metadataSchema = {
  type: 'object',
  required: ['filename', 'contentType'],
  properties: { filename: nameSchema, contentType: nameSchema },
  additionalProperties: false,
} as const;
const confirmSchema = {
  type: ['object', 'null'],
  properties: { size: { type: 'integer', minimum: 0 }, integrity: { type: 'string', minLength: 1, maxLength: 1024 } },
  additionalProperties: false,
} as const;

export const filesRoute: FastifyPluginAsync<{ context: ServerContext; settings?: Partial<FileSettings>; identities?: StagedIdentities }> = async (app, { context, settings, identities }) => {
  const { files } = context.storage;
  const { pendingTtlMs, confirmedTtlMs, sweepEveryMs } = { ...DEFAULT_FILE_SETTINGS, ...settings };
  const maxBytes = context.limits.maxArchiveBytes;
  const requireToken = app.requireToken();
  const now = (): Date => context.clock?.() ?? new Date();

  const sweep = async (): Promise<void> => {
    try {
      const removed = await files.sweepFiles(now());
      if (removed > 0) app.log.info({ removed }, 'expired staged files removed');
      // What this server recorded of files that are gone (swept, here or by another instance) goes too, local copies first of all.
      for (const fileId of identities?.fileIds() ?? []) if (!(await files.getFile(fileId))) identities?.forget(fileId);
    } catch (error) {
      app.log.error({ err: error }, 'removing expired staged files failed');
    }
  };
  await sweep();
  const timer = setInterval(() => void sweep(), sweepEveryMs);
  timer.unref();
  app.addHook('preClose', (done) => {
    clearInterval(timer);
    done();
  });

  /**
   * Stores `temp` as the bytes of `fileId` (`storeContent`, whose errors it throws as they are) and
   * records what this server saw of them (staged-identities.ts): a bucket's bytes leave a local copy
   * here, a second link to the file uploaded, so that their publish need not download them.
   */
  const storeStaged = async (fileId: string, temp: string, digests: { size: number; sha256: string; integrity: string }, unpacked?: KeptUnpack): Promise<StoredStagedFile | undefined> => {
    // Before the store moves it in (a folder store renames it: the same inode).
    const written = identityOf(await stat(temp));
    const copy = identities ? context.storage.versions.uploadTempPath('.staged') : undefined;
    const linked = copy !== undefined && (await link(temp, copy).then(() => copy, () => undefined));
    let stored: StoredStagedFile | undefined;
    try {
      stored = await files.storeContent(fileId, temp, digests, context.limits.maxStagedBytesPerToken);
    } finally {
      // A folder store keeps the file itself; a second link to it is not wanted.
      if (linked && stored?.copyable === undefined) await rm(linked, { force: true });
    }
    if (stored) {
      const local = linked && stored.copyable !== undefined ? { local: { path: linked, copyable: stored.copyable } } : {};
      identities?.keep(stored.id, { sha256: digests.sha256, file: written, ...local, ...(unpacked ? { unpacked } : {}) });
    }
    return stored;
  };

  app.post<{ Body: { filename: string; contentType: string } }>(
    '/files/upload-url',
    { preValidation: requireToken, schema: { body: metadataSchema }, config: { rateLimit: READS, cache: 'dynamic' } },
    async (request, reply) => {
      const token = request.token as TokenRecord;
      const createdAt = now();
      const { file, capability } = await files
        .createFile({
          tokenId: token.id,
          filename: request.body.filename,
          contentType: request.body.contentType,
          expiresAt: new Date(createdAt.getTime() + pendingTtlMs),
          now: createdAt,
          maxFiles: context.limits.maxStagedFilesPerToken,
        })
        .catch((error: unknown) => {
          throw quotaAnswer(error);
        });
      const uploadUrl = `${context.publicUrl}/files/${encodeURIComponent(file.id)}/content?sig=${encodeURIComponent(capability)}`;
      // The most the PUT may send (the archive limit, or the token's quota when it leaves less): a
      // client that knows its size stops before sending bytes that would be refused.
      const quota = await bytesLeft(context, token.id, file);
      const accepted = Math.min(maxBytes, Math.max(0, quota.left));
      return reply
        .code(201)
        .header('Cache-Control', CREDENTIAL_CACHE_CONTROL)
        .send(envelope(request, { uploadUrl, fileId: file.id, method: 'PUT', expiresAt: file.expiresAt, maxBytes: accepted }));
    },
  );

  app.post<{ Params: { fileId: string }; Body: { size?: number; integrity?: string } | null | undefined }>(
    '/files/:fileId/confirm',
    { preValidation: requireToken, schema: { body: confirmSchema }, config: { rateLimit: READS, cache: 'dynamic' } },
    async (request, reply) => {
      const token = request.token as TokenRecord;
      const file = await ownFile(context, token, request.params.fileId);
      if (file.state === 'pending') throw new ApiError(409, 'CONFLICT', `the file ${file.id} has no bytes yet: PUT them to its uploadUrl first`);
      const details = checkDetails(request.body ?? {}, file);
      if (details.length > 0) throw new ApiError(422, 'VALIDATION_ERROR', 'the stored file does not match', details);
      const confirmed = file.state === 'uploaded' ? await files.confirmFile(file.id, new Date(now().getTime() + confirmedTtlMs)) : file;
      if (!confirmed) throw new ApiError(409, 'CONFLICT', `the file ${file.id} changed while it was confirmed`);
      return reply.header('Cache-Control', NO_STORE).send(envelope(request, publicFile(confirmed)));
    },
  );

  // The PUT of the bytes: a capability in the URL instead of a token, and any content type, read as a stream.
  await app.register((raw, _options, registered) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', (_request, _payload, done) => done(null));

    const gate = async (request: FastifyRequest<{ Params: { fileId: string }; Querystring: { sig?: string } }>): Promise<void> => {
      const { fileId } = request.params;
      const sig = request.query.sig;
      const file = typeof sig === 'string' && sig !== '' ? await files.checkCapability(fileId, sig, now()) : undefined;
      if (!file) {
        const known = await files.getFile(fileId);
        throw closing(
          known
            ? new ApiError(403, 'FORBIDDEN', 'the upload URL is not valid (wrong signature, or expired): ask POST /files/upload-url for a new one')
            : new ApiError(404, 'NOT_FOUND', `there is no file ${fileId}`),
        );
      }
      if (file.state !== 'pending' && file.state !== 'uploaded') throw closing(new ApiError(409, 'CONFLICT', `the file ${fileId} is confirmed: its bytes can no longer change`));
      const declared = Number(request.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
      const quota = await bytesLeft(context, file.tokenId, file);
      if (Number.isFinite(declared) && declared > quota.left) throw quotaExceeded('bytes', context.limits.maxStagedBytesPerToken, quota.used);
    };

    raw.put<{ Params: { fileId: string }; Querystring: { sig?: string } }>(
      '/files/:fileId/content',
      { preParsing: gate, schema: { querystring: { type: 'object', properties: { sig: { type: 'string' } }, additionalProperties: false } }, config: { rateLimit: UPLOADS, cache: 'dynamic' } },
      async (request, reply) => {
        const temp = context.storage.versions.uploadTempPath('.upload');
        const timer = setTimeout(() => request.raw.destroy(new Error(`the upload took longer than ${context.limits.requestTimeoutMs} ms`)), context.limits.requestTimeoutMs);
        // Unpacked as they arrive (where a publish can take what this server kept: staged-identities.ts),
        // so that the archive check of its publish need not read and inflate them again.
        let unpackDir = identities ? context.storage.versions.uploadTempPath('.check') : undefined;
        try {
          const file = await files.getFile(request.params.fileId);
          const quota = await bytesLeft(context, file?.tokenId ?? '', file);
          // The archive limit, or the token's quota when it leaves less.
          const limit = Math.min(maxBytes, Math.max(0, quota.left));
          const state = { truncated: false };
          const digests = await receiveArchive(limited(request.raw, limit, state), temp, unpackDir === undefined ? undefined : new ArchiveUnpacker(unpackDir, {}, CHECK_UNPACK));
          if (state.truncated) throw limit < maxBytes ? quotaExceeded('bytes', context.limits.maxStagedBytesPerToken, quota.used) : tooLarge(maxBytes);
          // Only bytes that unpacked are kept so (a refusal or an I/O error is met again by the publish's own pass).
          const unpacked = unpackDir !== undefined && digests.unpacked && 'archive' in digests.unpacked ? { dir: unpackDir, archive: digests.unpacked.archive } : undefined;
          const stored = await storeStaged(request.params.fileId, temp, digests, unpacked).catch((error: unknown) => {
            throw quotaAnswer(error);
          });
          if (!stored) throw new ApiError(409, 'CONFLICT', `the file ${request.params.fileId} expired or was confirmed during the upload`);
          // The identities own the folder from now on.
          if (unpacked) unpackDir = undefined;
          return await reply.header('Cache-Control', NO_STORE).send(envelope(request, publicFile(stored)));
        } finally {
          clearTimeout(timer);
          await rm(temp, { force: true });
          if (unpackDir !== undefined) await rm(unpackDir, { recursive: true, force: true });
        }
      },
    );
    registered();
  });

  // POST /files: bytes and metadata in one multipart request, answered with a confirmed file.
  await app.register(async (form) => {
    await form.register(multipart, { throwFileSizeLimit: false });
    const largest = maxBytes + context.limits.maxManifestBytes + MULTIPART_OVERHEAD;
    const gate = uploadGate(app, largest, () => tooLarge(maxBytes));

    form.post('/files', { preParsing: gate, config: { rateLimit: UPLOADS, cache: 'dynamic' } }, async (request, reply) => {
      const token = request.token as TokenRecord;
      if (!request.isMultipart()) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'POST /files takes multipart/form-data with the parts file and metadata');
      let temp: string | undefined;
      let received: { size: number; sha256: string; integrity: string; filename: string; mimetype: string } | undefined;
      let metadataText: string | undefined;
      // The token's quota before a byte is read: its count of files, and the bytes it has left.
      const quota = await bytesLeft(context, token.id);
      if (quota.used.files >= context.limits.maxStagedFilesPerToken) throw quotaExceeded('files', context.limits.maxStagedFilesPerToken, quota.used);
      if (quota.left <= 0) throw quotaExceeded('bytes', context.limits.maxStagedBytesPerToken, quota.used);
      const fileLimit = Math.min(maxBytes, quota.left);
      const timer = setTimeout(() => request.raw.destroy(new Error(`the upload took longer than ${context.limits.requestTimeoutMs} ms`)), context.limits.requestTimeoutMs);
      try {
        try {
          const parts = request.parts({ limits: { fileSize: fileLimit, files: 2, fields: 4, parts: 6, fieldSize: context.limits.maxManifestBytes } });
          for await (const part of parts) {
            if (part.type === 'file' && part.fieldname === 'file') {
              if (temp !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the file part appears twice');
              temp = context.storage.versions.uploadTempPath('.upload');
              const digests = await receiveArchive(part.file, temp);
              if (part.file.truncated) throw fileLimit < maxBytes ? quotaExceeded('bytes', context.limits.maxStagedBytesPerToken, quota.used) : tooLarge(maxBytes);
              received = { ...digests, filename: part.filename, mimetype: part.mimetype };
            } else if (part.fieldname === 'metadata') {
              if (metadataText !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the metadata part appears twice');
              if (part.type === 'file') {
                const chunks: Buffer[] = [];
                for await (const chunk of part.file as AsyncIterable<Buffer>) chunks.push(chunk);
                if (part.file.truncated) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', 'the metadata part is too large');
                metadataText = Buffer.concat(chunks).toString('utf8');
              } else {
                metadataText = partText(part.value, 'the metadata part', 'metadata');
              }
            } else if (part.type === 'file') {
              part.file.resume();
            }
          }
        } catch (error) {
          throw multipartError(error);
        }
        clearTimeout(timer);
        if (!received || temp === undefined) {
          throw new ApiError(400, 'VALIDATION_ERROR', 'missing parts', [{ field: 'file', code: 'REQUIRED', message: 'the file part is required' }]);
        }
        const metadata = parseMetadata(metadataText, received);
        const createdAt = now();
        const { file } = await files
          .createFile({
            tokenId: token.id,
            filename: metadata.filename,
            contentType: metadata.contentType,
            expiresAt: new Date(createdAt.getTime() + pendingTtlMs),
            now: createdAt,
            maxFiles: context.limits.maxStagedFilesPerToken,
          })
          .catch((error: unknown) => {
            throw quotaAnswer(error);
          });
        const stored = await storeStaged(file.id, temp, received).catch(async (error: unknown) => {
          if (error instanceof StagedQuotaError) await files.deleteFile(file.id);
          throw quotaAnswer(error);
        });
        if (!stored) throw new Error(`the staged file ${file.id} vanished`);
        const details = checkDetails(metadata, stored);
        if (details.length > 0) {
          await files.deleteFile(file.id);
          identities?.forget(file.id);
          throw new ApiError(422, 'VALIDATION_ERROR', 'the uploaded file does not match its metadata', details);
        }
        const confirmed = await files.confirmFile(file.id, new Date(now().getTime() + confirmedTtlMs));
        if (!confirmed) {
          identities?.forget(file.id);
          throw new Error(`the staged file ${file.id} vanished`);
        }
        return await reply.code(201).header('Cache-Control', NO_STORE).send(envelope(request, publicFile(confirmed)));
      } finally {
        clearTimeout(timer);
        if (temp !== undefined) await rm(temp, { force: true });
      }
    });
  });
};

/** The metadata part: `{ filename, contentType, size?, integrity? }`, the file part's own name and type by default. */
function parseMetadata(text: string | undefined, part: { filename: string; mimetype: string }): { filename: string; contentType: string; size?: number; integrity?: string } {
  let value: unknown = {};
  if (text !== undefined) {
    try {
      value = parseClientJson(text, 'the metadata part', 'metadata');
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw new ApiError(400, 'INVALID_JSON', 'the metadata part is not valid JSON', [{ field: 'metadata', code: 'INVALID_JSON', message: 'the metadata part is not valid JSON' }]);
    }
  }
  // A value that breaks its rule is a 422, as in a JSON body (validationStatus); a part that is not an object, a 400.
  const invalid = (field: string, message: string): ApiError => invalidInput('the metadata part is invalid', [{ field: `metadata.${field}`, code: 'INVALID', message }]);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiError(400, 'BAD_REQUEST', 'the metadata part must be a JSON object: { filename?, contentType?, size?, integrity? }', [{ field: 'metadata', code: 'TYPE', message: 'must be a JSON object' }]);
  }
  const record = value as Record<string, unknown>;
  const text255 = (field: string, fallback: string): string => {
    const given = record[field] ?? fallback;
    if (typeof given !== 'string' || given === '' || given.length > 255) throw invalid(field, 'must be a string of 1 to 255 characters');
    // The part's own file name too (busboy decodes filename*=UTF-8''a%00b).
    if (given.includes('\u0000')) throw invalidInput('the metadata part is invalid', [nulDetail(`metadata.${field}`)]);
    return given;
  };
  const result: { filename: string; contentType: string; size?: number; integrity?: string } = {
    filename: text255('filename', part.filename),
    contentType: text255('contentType', part.mimetype),
  };
  if (record.size !== undefined) {
    if (typeof record.size !== 'number' || !Number.isInteger(record.size) || record.size < 0) throw invalid('size', 'must be a whole number of bytes');
    result.size = record.size;
  }
  if (record.integrity !== undefined) {
    if (typeof record.integrity !== 'string' || record.integrity === '') throw invalid('integrity', 'must be an SRI string (sha512-...)');
    result.integrity = record.integrity;
  }
  return result;
}
