/**
 * Local fakes of the CDN purge APIs (CloudFront, Cloudflare, Fastly) and of a cache taking HTTP
 * PURGE: an HTTP server on 127.0.0.1 that records every request (method, path, headers, body) and
 * answers as the vendor does, or with the failure a test asks for. Closed after each test.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach } from 'vitest';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface FakeApi {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  requests: RecordedRequest[];
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** A server answering the n-th request (1-based) with `answer(request, n)`. */
export async function startFakeApi(answer: (request: RecordedRequest, n: number) => FakeAnswer): Promise<FakeApi> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(recorded);
      const { status, headers = {}, body = '' } = answer(recorded, requests.length);
      res.writeHead(status, headers).end(body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** CloudFront's answer to CreateInvalidation: 201 with the invalidation as XML. */
export function cloudFrontCreated(request: RecordedRequest): FakeAnswer {
  const distribution = /\/distribution\/([^/]+)\/invalidation$/.exec(request.path)?.[1] ?? '';
  const batch = /<InvalidationBatch[^>]*>([\s\S]*)<\/InvalidationBatch>/.exec(request.body)?.[1] ?? '';
  return {
    status: 201,
    headers: { 'content-type': 'text/xml', location: `https://cloudfront.amazonaws.com/2020-05-31/distribution/${distribution}/invalidation/I2J0I21PCUYOIK` },
    body: `<?xml version="1.0"?><Invalidation xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Id>I2J0I21PCUYOIK</Id><Status>InProgress</Status><CreateTime>2026-01-01T00:00:00.000Z</CreateTime><InvalidationBatch>${batch}</InvalidationBatch></Invalidation>`,
  };
}

/** CloudFront's refusal while too many invalidations run. */
export function cloudFrontTooMany(): FakeAnswer {
  return {
    status: 400,
    headers: { 'content-type': 'text/xml' },
    body: '<?xml version="1.0"?><ErrorResponse xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Error><Type>Sender</Type><Code>TooManyInvalidationsInProgress</Code><Message>Processing your request will cause you to exceed the maximum number of in-progress wildcard invalidations.</Message></Error><RequestId>r1</RequestId></ErrorResponse>',
  };
}

/** Cloudflare's answer to purge_cache. */
export function cloudflareOk(): FakeAnswer {
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ success: true, errors: [], messages: [], result: { id: 'purge-1' } }) };
}

/** Fastly's answer to a URL purge. */
export function fastlyOk(): FakeAnswer {
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'ok', id: '108-1391560174-974124' }) };
}
