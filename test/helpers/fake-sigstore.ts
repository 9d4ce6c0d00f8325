/**
 * A Sigstore instance on 127.0.0.1, for tests: `@sigstore/mock`'s Fulcio (with its CT log), Rekor
 * and timestamp authority behind one HTTP server (`/api/v2/signingCert`, `/api/v1/log/entries`,
 * `/api/v1/timestamp`), and the trusted root made of their keys, written to a file as an operator
 * would give it (`--sigstore-trusted-root`).
 *
 * Two things differ from the mock as shipped, each what the real services do:
 * - Rekor stores a DSSE entry as the real one does (envelope and payload hashes, the signature with
 *   its verifier), not as proposed: `@sigstore/verify` compares the entry with the bundle.
 * - every clock is pinned to a whole second: the mock's timestamp authority writes milliseconds
 *   without trailing zeros, which its own parser then fails to read about one time in ten.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { fulcioHandler, initializeCA, initializeCTLog, initializeTLog, initializeTSA, rekorHandler, tsaHandler, type HandlerFn } from '@sigstore/mock';
import { afterEach } from 'vitest';

import { attestProvenance, SIGSTORE_AUDIENCE } from '../../src/publish/attest.js';
import type { FakeOidc, RunClaims } from './fake-oidc.js';
import { tempDir } from './fixtures.js';

const running: FakeSigstore[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((sigstore) => sigstore.close()));
});

export interface FakeSigstore {
  /** `http://127.0.0.1:<port>`: Fulcio, Rekor and the timestamp authority all answer here. */
  url: string;
  /** The trusted root of this instance (JSON), and the file it was written to. */
  trustedRoot: unknown;
  trustedRootFile: string;
  /** Requests by path, in order. */
  requests: string[];
  close(): Promise<void>;
}

const keyPair = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

/** A DSSE proposed entry stored as the real Rekor stores it. */
function storedDsseEntry(proposed: unknown): unknown {
  const entry = proposed as { kind?: string; apiVersion?: string; spec?: { proposedContent?: { envelope: string; verifiers: string[] } } };
  const content = entry.spec?.proposedContent;
  if (entry.kind !== 'dsse' || !content) return proposed;
  const envelope = JSON.parse(content.envelope) as { payload: string; signatures: { sig: string }[] };
  const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
  return {
    apiVersion: entry.apiVersion,
    kind: 'dsse',
    spec: {
      envelopeHash: { algorithm: 'sha256', value: sha256(content.envelope) },
      payloadHash: { algorithm: 'sha256', value: sha256(Buffer.from(envelope.payload, 'base64')) },
      signatures: envelope.signatures.map((signature, index) => ({ signature: signature.sig, verifier: content.verifiers[index] ?? content.verifiers[0] })),
    },
  };
}

const base64 = (bytes: ArrayBufferView | ArrayBuffer): string =>
  (bytes instanceof ArrayBuffer ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('base64');

/** Starts the instance, closed after the test (`keep`: by the caller). */
export async function startFakeSigstore(options: { keep?: boolean } = {}): Promise<FakeSigstore> {
  const validSince = new Date(Date.now() - 24 * 3600_000).toISOString();
  // The mock's services read this Date when they sign. It is set once their root certificates exist
  // (each valid from the moment it is made): a slow start, on a busy machine, must not date a
  // signature before its root.
  const clock = new Date(0);
  const holder: { server?: Server; url: string } = { url: '' };
  const server = createServer();
  holder.server = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  holder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const caKeys = keyPair();
  const ctKeys = keyPair();
  const ctlog = await initializeCTLog(ctKeys, clock);
  const ca = await initializeCA(caKeys, ctlog, clock);
  const tlogKeys = keyPair();
  const tlog = await initializeTLog(holder.url, tlogKeys, clock);
  const tsa = await initializeTSA(keyPair(), clock);
  clock.setTime((Math.floor(Date.now() / 1000) + 1) * 1000);
  const realRekor: typeof tlog = { ...tlog, publicKey: tlog.publicKey, log: (proposed: object) => tlog.log(storedDsseEntry(proposed) as object), logV2: (request) => tlog.logV2(request) };
  const handlers = new Map<string, HandlerFn>(
    [fulcioHandler(ca), rekorHandler(realRekor), tsaHandler(tsa)].map((handler) => [handler.path, handler.fn]),
  );

  const requests: string[] = [];
  server.on('request', (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const pathname = new URL(request.url ?? '/', holder.url).pathname;
      requests.push(pathname);
      const handler = request.method === 'POST' ? handlers.get(pathname) : undefined;
      if (!handler) return void response.writeHead(404).end();
      void handler(Buffer.concat(chunks).toString('utf8')).then(({ statusCode, response: body, contentType }) => {
        response.writeHead(statusCode, { 'content-type': contentType ?? 'text/plain' }).end(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      });
    });
  });

  const logKey = (publicKey: ArrayBufferView | ArrayBuffer, logId: ArrayBufferView | ArrayBuffer) => ({
    baseUrl: holder.url,
    hashAlgorithm: 'SHA2_256',
    publicKey: { rawBytes: base64(publicKey), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start: validSince } },
    logId: { keyId: base64(logId) },
  });
  const trustedRoot = {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [logKey(tlog.publicKey, createHash('sha256').update(tlog.publicKey).digest())],
    certificateAuthorities: [
      {
        subject: { organization: 'sigstore.mock', commonName: 'sigstore' },
        uri: holder.url,
        certChain: { certificates: [{ rawBytes: base64(ca.rootCertificate) }] },
        validFor: { start: validSince },
      },
    ],
    ctlogs: [logKey(ctlog.publicKey, ctlog.logID)],
    timestampAuthorities: [
      {
        subject: { organization: 'sigstore.mock', commonName: 'tsa' },
        uri: holder.url,
        certChain: { certificates: [{ rawBytes: base64(tsa.intCertificate) }, { rawBytes: base64(tsa.rootCertificate) }] },
        validFor: { start: validSince },
      },
    ],
  };
  const trustedRootFile = path.join(await tempDir('tr-sigstore-'), 'trusted_root.json');
  await writeFile(trustedRootFile, JSON.stringify(trustedRoot, null, 2));

  const sigstore: FakeSigstore = {
    url: holder.url,
    trustedRoot,
    trustedRootFile,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  if (!options.keep) running.push(sigstore);
  return sigstore;
}

/**
 * Build provenance of `subject` signed on `sigstore` for a run of `oidc` (the default run, with
 * `run` laid over it), as the publish action signs it: the bundle's JSON text.
 */
export async function signProvenance(
  sigstore: FakeSigstore,
  oidc: FakeOidc,
  subject: { name: string; sha256: string },
  run: Partial<RunClaims> = {},
  endpoints: { rekor?: boolean; tsa?: boolean } = { rekor: true, tsa: true },
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const { bundle } = await attestProvenance({
    subject,
    idToken: () => oidc.sign(oidc.claims(SIGSTORE_AUDIENCE, now, run)),
    endpoints: { fulcioUrl: sigstore.url, ...(endpoints.rekor ? { rekorUrl: sigstore.url } : {}), ...(endpoints.tsa ? { tsaUrl: sigstore.url } : {}) },
  });
  return bundle;
}
