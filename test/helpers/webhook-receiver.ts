/**
 * Webhook receivers for tests: an HTTP server on 127.0.0.1 recording every request and answering
 * the n-th (1-based) with the status a test chooses; closed after each test.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach } from 'vitest';

export interface Received {
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

/** An HTTP server on 127.0.0.1 (on `port`, default any) answering the n-th request (1-based) with `status(n)`. */
export async function startReceiver(status: (n: number) => number | Promise<number> = () => 200, port = 0): Promise<Receiver> {
  const requests: Received[] = [];
  const waiting: { n: number; resolve: (r: Received) => void }[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(received);
      const n = requests.length;
      for (const waiter of waiting.filter((w) => w.n === n)) waiter.resolve(received);
      void Promise.resolve(status(n)).then((code) => {
        if (!res.destroyed) res.writeHead(code, { 'content-type': 'text/plain' }).end('ok');
      });
    });
  });
  receivers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    requests,
    request: (n) => {
      const arrived = requests[n - 1];
      return arrived ? Promise.resolve(arrived) : new Promise((resolve) => waiting.push({ n, resolve }));
    },
  };
}
