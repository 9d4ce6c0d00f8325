import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';

import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';

import { ArchiveUnpacker, MAX_ATTESTATION_BYTES } from '../../archive/index.js';
import { versionUrl } from '../../core/routes.js';
import type { BlobCopySource, StagedFile, TokenRecord } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, beforeBody, envelope } from '../envelope.js';
import { partText } from '../json-input.js';
import { CHECK_UNPACK } from '../archive-check.js';
import { publishVersion, type ReceivedArchive, type UnpackOutcome } from '../upload-service.js';
import { UPLOADS } from '../rate-limit.js';
import { sameFile, type StagedIdentities } from '../staged-identities.js';

interface ReceivedUpload {
  archive?: ReceivedArchive;
  manifestText?: string;
  /** A confirmed file staged through /files, in place of the template part. */
  fileId?: string;
  /** The Sigstore bundle of the archive's build provenance (JSON), when one was sent. */
  attestation?: string;
  /** The folder the archive is unpacked in as it is received. */
  unpackDir?: string;
}

/** A text part (sent as a file or a field) read whole, refused past `limit` bytes. */
async function readTextPart(part: { type: 'file'; file: AsyncIterable<Buffer> } | { type: 'field'; value: unknown; valueTruncated: boolean }, name: string, limit: number): Promise<string> {
  const tooLarge = (): ApiError => new ApiError(413, 'PAYLOAD_TOO_LARGE', `the ${name} is larger than ${limit} bytes`);
  if (part.type === 'field') {
    // A field sent as application/json arrives already parsed (its depth is checked before it is written back).
    const text = partText(part.value, `the ${name} part`, name);
    // The parser's field limit is the largest of the text parts': each part has its own.
    if (part.valueTruncated || Buffer.byteLength(text) > limit) throw tooLarge();
    return text;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of part.file) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Size and digests of an archive's bytes, as they were received. */
export interface ReceivedDigests {
  size: number;
  sha256: string;
  integrity: string;
}

/** Ends `unpacker` (after the last byte) as the outcome a publish checks: what the archive holds, or why it is refused. */
async function unpackOutcome(unpacker: ArchiveUnpacker | undefined): Promise<UnpackOutcome | undefined> {
  if (unpacker === undefined) return undefined;
  return unpacker.end().then(
    (archive) => ({ archive }),
    (error: unknown) => ({ error }),
  );
}

/**
 * Writes the archive part to `temp` with its digests and, given an `unpacker`, unpacks it in the
 * same pass (archive/unpack.ts), so that its bytes are read once. When writing fails (a full disk),
 * the rest of the part is still read, and thrown away, so that the client gets the answer instead of
 * a broken connection; then the write error is thrown. Bytes whose integrity is `recorded` (read
 * back from a store) get the SHA-256 alone, which is enough to tell that they changed, and twice as
 * fast as the SHA-512; they are answered with the recorded integrity.
 */
export async function receiveArchive(source: AsyncIterable<Buffer>, temp: string, unpacker?: ArchiveUnpacker, recorded?: string): Promise<ReceivedDigests & { unpacked?: UnpackOutcome }> {
  const sha256 = createHash('sha256');
  const sha512 = recorded === undefined ? createHash('sha512') : undefined;
  let size = 0;
  let failure: Error | undefined;
  const out = createWriteStream(temp, { flags: 'wx', mode: 0o600 });
  const failed = new Promise<void>((resolve) =>
    out.on('error', (error) => {
      failure ??= error;
      resolve();
    }),
  );
  try {
    for await (const chunk of source) {
      size += chunk.length;
      // Written and inflated on the thread pool while it is hashed here.
      const wrote = failure === undefined ? out.write(chunk) : true;
      const unpacking = failure === undefined ? unpacker?.write(chunk) : undefined;
      sha256.update(chunk);
      sha512?.update(chunk);
      await unpacking;
      // Still full now (it may have drained while the unpacker was awaited: its 'drain' then came and went).
      if (failure === undefined && !wrote && out.writableNeedDrain) await Promise.race([once(out, 'drain'), failed]);
    }
  } catch (error) {
    // The source failed (an aborted connection, a time-out): the caller removes the files.
    out.destroy();
    await unpacker?.abort();
    throw error;
  }
  if (failure === undefined) {
    out.end();
    await Promise.race([finished(out).catch(() => undefined), failed]);
  }
  if (failure !== undefined) {
    out.destroy();
    await unpacker?.abort();
    throw failure;
  }
  const unpacked = await unpackOutcome(unpacker);
  return { size, sha256: sha256.digest('hex'), integrity: sha512 ? `sha512-${sha512.digest('base64')}` : (recorded as string), ...(unpacked ? { unpacked } : {}) };
}

/**
 * The size of a stream's bytes, and their SHA-256 unless `hash` is false, unpacked in the same pass,
 * without writing them anywhere: a staged file linked in, whose recorded digests this checks (one
 * hash is enough to tell that the bytes changed, and the cheapest of them).
 */
async function readStaged(source: AsyncIterable<Buffer>, unpacker: ArchiveUnpacker, hash: boolean): Promise<{ size: number; sha256?: string; unpacked?: UnpackOutcome }> {
  const sha256 = hash ? createHash('sha256') : undefined;
  let size = 0;
  try {
    for await (const chunk of source) {
      size += chunk.length;
      // Hashed while the unpacker's thread inflates it.
      const unpacking = unpacker.write(chunk);
      sha256?.update(chunk);
      await unpacking;
    }
  } catch (error) {
    await unpacker.abort();
    throw error;
  }
  const unpacked = await unpackOutcome(unpacker);
  return { size, ...(sha256 ? { sha256: sha256.digest('hex') } : {}), ...(unpacked ? { unpacked } : {}) };
}

/** The chunks a staged file is read in (a stream's default, 64 KiB, costs 1,600 round trips for 100 MB). */
const READ_CHUNK_BYTES = 1024 * 1024;

/** A new unpacker of the upload into a fresh folder of the store's temp folder (removed by the route whatever happens). */
function newUnpacker(context: ServerContext, received: ReceivedUpload): ArchiveUnpacker {
  // Named after this process, so that a start after a kill removes it (core/temp-owner.ts).
  received.unpackDir ??= context.storage.versions.uploadTempPath('.check');
  return new ArchiveUnpacker(received.unpackDir, {}, CHECK_UNPACK);
}

/**
 * Reads the parts into `received` (filled as they arrive, so that the caller can remove a temp file
 * whatever makes the request fail half-way: a limit, a duplicate part, an aborted connection).
 */
async function receiveParts(request: FastifyRequest, context: ServerContext, received: ReceivedUpload): Promise<void> {
  const parts = request.parts({
    limits: { fileSize: context.limits.maxArchiveBytes, files: 3, fields: 4, parts: 7, fieldSize: Math.max(context.limits.maxManifestBytes, MAX_ATTESTATION_BYTES) },
  });
  for await (const part of parts) {
    if (part.type === 'file' && part.fieldname === 'template') {
      if (received.archive) throw new ApiError(400, 'BAD_REQUEST', 'the template part appears twice');
      const temp = context.storage.versions.uploadTempPath('.tgz');
      received.archive = { path: temp, size: 0, sha256: '', integrity: '' };
      const digests = await receiveArchive(part.file, temp, newUnpacker(context, received));
      if (part.file.truncated) {
        throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the archive is larger than the limit of ${context.limits.maxArchiveBytes} bytes`);
      }
      received.archive = { path: temp, ...digests };
    } else if (part.fieldname === 'manifest') {
      if (received.manifestText !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the manifest part appears twice');
      received.manifestText = await readTextPart(
        part.type === 'file' ? { type: 'file', file: part.file as AsyncIterable<Buffer> } : { type: 'field', value: part.value, valueTruncated: part.valueTruncated },
        'manifest',
        context.limits.maxManifestBytes,
      );
    } else if (part.fieldname === 'attestation') {
      if (received.attestation !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the attestation part appears twice');
      received.attestation = await readTextPart(part.type === 'file' ? { type: 'file', file: part.file as AsyncIterable<Buffer> } : { type: 'field', value: part.value, valueTruncated: part.valueTruncated }, 'attestation', MAX_ATTESTATION_BYTES);
    } else if (part.fieldname === 'fileId' && part.type === 'field') {
      if (received.fileId !== undefined) throw new ApiError(400, 'BAD_REQUEST', 'the fileId part appears twice');
      if (typeof part.value !== 'string' || part.value === '') throw new ApiError(400, 'VALIDATION_ERROR', 'fileId must be the id of a confirmed file', [{ field: 'fileId', code: 'INVALID', message: 'fileId must be a non-empty string' }]);
      received.fileId = part.value;
    } else if (part.type === 'file') {
      part.file.resume();
    }
  }
}

/**
 * Claims the confirmed file `fileId` of `token` and copies its bytes to a temp file (digests
 * computed again on the way, unless this server wrote that very file: staged-identities.ts), which
 * `received.archive` then names. The caller deletes the file (consumed) when the publish succeeds,
 * and releases it otherwise.
 */
async function takeStagedFile(context: ServerContext, token: TokenRecord, fileId: string, received: ReceivedUpload, identities: StagedIdentities | undefined): Promise<void> {
  const { files } = context.storage;
  const file = await files.getFile(fileId);
  if (!file) throw new ApiError(404, 'NOT_FOUND', `there is no file ${fileId} (files expire, and a used one is consumed)`);
  if (Date.parse(file.expiresAt) <= Date.now()) throw new ApiError(404, 'NOT_FOUND', `the file ${fileId} expired`);
  if (file.tokenId !== token.id) throw new ApiError(403, 'FORBIDDEN', `the file ${fileId} was uploaded with another token`);
  if (file.state === 'pending' || file.state === 'uploaded') throw new ApiError(409, 'CONFLICT', `the file ${fileId} is not confirmed: POST /files/${fileId}/confirm first`);
  if (!(await files.claimFile(fileId))) throw new ApiError(409, 'CONFLICT', `the file ${fileId} is being used by another publish`);
  try {
    if (await takeLocalCopy(context, fileId, file, received, identities)) return;
    const reader = await files.openFile(fileId);
    if (!reader) throw new ApiError(404, 'NOT_FOUND', `the bytes of the file ${fileId} are gone`);
    const temp = context.storage.versions.uploadTempPath('.tgz');
    received.archive = { path: temp, size: 0, sha256: '', integrity: '' };
    // A staged file in a local folder is linked, not copied (its bytes are read once more, for the
    // archive check, and for their SHA-256 unless this server wrote that very file); elsewhere (a
    // bucket), or across file systems, its bytes are copied to the temp file, with their SHA-256.
    // Either way unpacked in the same pass, for the archive check.
    const linked = reader.file !== undefined && (await link(reader.file, temp).then(() => true, () => false));
    if (linked) {
      // The link itself is read (the same bytes, and the file that is stored), in large chunks.
      reader.stream.destroy();
      // The file this server wrote at the PUT, unchanged since: its recorded digest stands.
      const known = identities?.get(fileId, file.sha256);
      await readLinked(context, fileId, file, temp, received, known !== undefined && (await sameFile(temp, known.file)), identities);
    } else {
      const digests = await receiveArchive(reader.stream as AsyncIterable<Buffer>, temp, newUnpacker(context, received), file.integrity);
      if (digests.sha256 !== file.sha256 || digests.size !== file.size || digests.integrity !== file.integrity) throw bytesChanged(fileId);
      // The bytes checked are the version of the staged object read: the store copies that version, or stores the temp file.
      received.archive = { path: temp, ...digests, ...(reader.copyable ? { copyOf: reader.copyable } : {}) };
    }
  } catch (error) {
    await files.releaseFile(fileId);
    throw error;
  }
}

/**
 * The local copy this server kept of a staged file it stored in a bucket (staged-identities.ts),
 * linked to a temp file and unpacked for the archive check, without downloading the bytes it
 * uploaded: `received.archive` then names it, to be copied within the bucket (while the staged
 * object is still the one stored; this checked copy is stored otherwise). False when there is none,
 * or it changed: the caller reads the bucket's bytes instead.
 */
async function takeLocalCopy(context: ServerContext, fileId: string, file: StagedFile, received: ReceivedUpload, identities: StagedIdentities | undefined): Promise<boolean> {
  const known = identities?.get(fileId, file.sha256);
  if (known?.local === undefined || file.sha256 === undefined || file.integrity === undefined || known.file.size !== file.size) return false;
  const temp = context.storage.versions.uploadTempPath('.tgz');
  if (!(await link(known.local.path, temp).then(() => true, () => false))) return false;
  if (!(await sameFile(temp, known.file))) {
    await rm(temp, { force: true });
    return false;
  }
  received.archive = { path: temp, size: 0, sha256: '', integrity: '' };
  await readLinked(context, fileId, file, temp, received, true, identities, known.local.copyable);
  return true;
}

const bytesChanged = (fileId: string): Error => new Error(`the stored bytes of the file ${fileId} changed since they were uploaded`);

/**
 * Reads the bytes of the staged file `file` linked at `temp` once, unpacking them for the archive
 * check, with their SHA-256 unless `trusted` (the very file this server wrote, unchanged since):
 * `received.archive` then names them with the recorded digests (and `copyOf`: where the store holds
 * the same bytes).
 */
async function readLinked(context: ServerContext, fileId: string, file: StagedFile, temp: string, received: ReceivedUpload, trusted: boolean, identities: StagedIdentities | undefined, copyOf?: BlobCopySource): Promise<void> {
  const { size, sha256, integrity } = file;
  if (trusted && size !== undefined && sha256 !== undefined && integrity !== undefined) {
    // The very file this server wrote, unpacked as it arrived: the check takes that folder (the route removes it).
    const kept = identities?.takeUnpacked(fileId, sha256);
    if (kept) {
      received.unpackDir = kept.dir;
      received.archive = { path: temp, size, sha256, integrity, ...(copyOf ? { copyOf } : {}), unpacked: { archive: kept.archive } };
      return;
    }
  }
  const read = await readStaged(createReadStream(temp, { highWaterMark: READ_CHUNK_BYTES }) as AsyncIterable<Buffer>, newUnpacker(context, received), !trusted);
  if ((!trusted && read.sha256 !== file.sha256) || read.size !== file.size || file.sha256 === undefined || file.integrity === undefined) throw bytesChanged(fileId);
  received.archive = { path: temp, size: read.size, sha256: file.sha256, integrity: file.integrity, ...(copyOf ? { copyOf } : {}), ...(read.unpacked ? { unpacked: read.unpacked } : {}) };
}

/** Multipart framing around the parts: boundaries, part headers. */
export const MULTIPART_OVERHEAD = 64 * 1024;

/**
 * The same refusal, with the connection closed after it: the rest of a large body is never read
 * (one of at most LINGER_MAX_BYTES is read and dropped, so that its client gets the answer: envelope.ts).
 */
export function closing(error: ApiError): ApiError {
  return beforeBody(new ApiError(error.statusCode, error.code, error.message, error.details, { ...error.headers, Connection: 'close' }, error.extra));
}

/**
 * The hook an upload runs before its body is read: a stranger (no valid token) or a declared size
 * over `largest` is answered at once, with the connection closed, and the body never read.
 */
export function uploadGate(app: FastifyInstance, largest: number, tooLarge: (declared: number) => ApiError): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const requireToken = app.requireToken();
  return async (request, reply) => {
    try {
      await requireToken.call(app, request, reply);
    } catch (error) {
      throw error instanceof ApiError ? closing(error) : error;
    }
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > largest) throw closing(tooLarge(declared));
  };
}

/** Removes what an upload left in the store's temp folder: the archive's temp file and the folder it was unpacked in. */
async function removeTemps(received: ReceivedUpload): Promise<void> {
  if (received.archive) await rm(received.archive.path, { force: true });
  if (received.unpackDir !== undefined) await rm(received.unpackDir, { recursive: true, force: true });
}

/** `POST /templates`: the spec's operation 2. */
export const uploadRoute: FastifyPluginAsync<{ context: ServerContext; identities?: StagedIdentities }> = async (app, { context, identities }) => {
  await app.register(multipart, { throwFileSizeLimit: false });
  const largest = context.limits.maxArchiveBytes + context.limits.maxManifestBytes + MAX_ATTESTATION_BYTES + MULTIPART_OVERHEAD;

  const gate = uploadGate(
    app,
    largest,
    (declared) => new ApiError(413, 'PAYLOAD_TOO_LARGE', `the upload is ${declared} bytes; at most ${largest} are accepted (archive limit ${context.limits.maxArchiveBytes} bytes)`),
  );

  app.post('/templates', { preParsing: gate, config: { rateLimit: UPLOADS, cache: 'dynamic' } }, async (request, reply) => {
    const token = request.token as TokenRecord;
    if (!request.isMultipart()) {
      throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'POST /templates takes multipart/form-data with the parts template (or fileId) and manifest');
    }
    const received: ReceivedUpload = {};
    let fileId: string | undefined;
    // A body trickling in slower than the limit allows is cut off; the finally below removes its temp file.
    const timer = setTimeout(() => request.raw.destroy(new Error(`the upload took longer than ${context.limits.requestTimeoutMs} ms`)), context.limits.requestTimeoutMs);
    try {
      await receiveParts(request, context, received).catch((error: unknown) => {
        throw multipartError(error);
      });
      clearTimeout(timer);
      if (received.fileId !== undefined && received.archive) {
        throw new ApiError(400, 'VALIDATION_ERROR', 'send either the template part or fileId, not both', [
          { field: 'fileId', code: 'CONFLICT', message: 'fileId replaces the template part: send one of them' },
        ]);
      }
      if (received.fileId !== undefined && received.manifestText !== undefined) {
        fileId = received.fileId;
        await takeStagedFile(context, token, fileId, received, identities);
      }
      const missing = [
        ...(received.archive || received.fileId !== undefined ? [] : [{ field: 'template', code: 'REQUIRED', message: 'the template part (the gzip tar archive) or a fileId is required' }]),
        ...(received.manifestText === undefined ? [{ field: 'manifest', code: 'REQUIRED', message: 'the manifest part (template.json) is required' }] : []),
      ];
      if (missing.length > 0 || !received.archive || received.manifestText === undefined) {
        throw new ApiError(400, 'VALIDATION_ERROR', 'missing parts', missing);
      }
      const published = publishVersion(context, token, received.archive, received.manifestText, received.attestation);
      const staged = fileId;
      const { manifest, entry, listed, warning } =
        staged === undefined
          ? await published
          : await published.then(
              async (result) => {
                await context.storage.files.deleteFile(staged);
                identities?.forget(staged);
                return result;
              },
              async (error: unknown) => {
                await context.storage.files.releaseFile(staged);
                throw error;
              },
            );
      const location = versionUrl(context.publicUrl, manifest.name, manifest.version);
      const body = envelope(request, entry);
      // Stored either way; `listed: false` (with the reason) when registry.json does not list it yet.
      body.meta.listed = listed;
      if (warning !== undefined) body.meta.warning = warning;
      // Gone before the client hears of the version (and again below, whatever failed).
      await removeTemps(received);
      return reply.code(201).header('Location', location).header('Cache-Control', 'no-store').send(body);
    } finally {
      clearTimeout(timer);
      await removeTemps(received);
    }
  });
};

/** @fastify/multipart's own errors, in the registry's terms. */
export function multipartError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') {
    return new ApiError(400, 'INVALID_JSON', 'the manifest part is not valid JSON', [
      { field: 'manifest', code: 'INVALID_JSON', message: 'the manifest part is not valid JSON' },
    ]);
  }
  if (code === 'FST_PROTO_VIOLATION') return new ApiError(400, 'BAD_REQUEST', 'a part has a forbidden name');
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ApiError(413, 'PAYLOAD_TOO_LARGE', 'too many parts: send the parts template (or fileId), manifest and attestation');
  }
  return error;
}
