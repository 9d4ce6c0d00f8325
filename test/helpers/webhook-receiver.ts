/**
 * HTTP receivers for tests (webhooks, a registry's write API): a server on 127.0.0.1 recording every
 * request and answering the n-th (1-based) as a test chooses; closed after each test.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach } from 'vitest';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Receiver {
  url: string;
  requests: Received[];
  /** Resolves with the n-th request (1-based) once it has arrived. */
  request(n: number): Promise<Received>;
}

const receivers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    receivers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/**
 * An HTTP server on 127.0.0.1 (on `port`, default any) that reads each request whole, records it,
 * and lets `answer` write the response of the n-th (1-based); closed after each test.
 */
export async function startRecorder(
  answer: (request: Received, n: number, res: ServerResponse) => void | Promise<void>,
  port = 0,
): Promise<{ origin: string; requests: Received[]; request: (n: number) => Promise<Received> }> {
  const requests: Received[] = [];
  const waiting: { n: number; resolve: (r: Received) => void }[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(received);
      const n = requests.length;
      for (const waiter of waiting.filter((w) => w.n === n)) waiter.resolve(received);
      void answer(received, n, res);
    });
  });
  receivers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${bound}`,
    requests,
    request: (n) => {
      const arrived = requests[n - 1];
      return arrived ? Promise.resolve(arrived) : new Promise((resolve) => waiting.push({ n, resolve }));
    },
  };
}

/** An HTTP server on 127.0.0.1 (on `port`, default any) answering the n-th request (1-based) with `status(n)`. */
export async function startReceiver(status: (n: number) => number | Promise<number> = () => 200, port = 0): Promise<Receiver> {
  const recorder = await startRecorder(async (_request, n, res) => {
    const code = await status(n);
    if (!res.destroyed) res.writeHead(code, { 'content-type': 'text/plain' }).end('ok');
  }, port);
  return { url: `${recorder.origin}/hook`, requests: recorder.requests, request: recorder.request };
}
