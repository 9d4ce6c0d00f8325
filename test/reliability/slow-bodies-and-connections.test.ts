/**
 * A slow or greedy client holds only so much of the server. A request body must
 * arrive within `bodyTimeoutMs` (60 s by default; here a small one) or the request is answered 408
 * and its connection closed; one client address holds at most `maxConnectionsPerAddress`
 * connections at once, and a request on one more is answered 429 and closed, while other addresses
 * and the address's other connections are served.
 */
import { connect, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';

import { describe, expect, it, vi } from 'vitest';

import { DEFAULT_LIMITS } from '../../src/server/context.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

interface Connection {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  closed: Promise<void>;
}

/** A raw connection to the server from `localAddress` (any 127.x address is this machine's). */
async function open(server: TestServer, localAddress = '127.0.0.1'): Promise<Connection> {
  const { port } = new URL(server.url);
  const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress });
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed };
}

/** Sends a keep-alive GET on `connection` and waits for its whole answer (a Content-Length body). */
async function get(connection: Connection, path: string): Promise<string> {
  const before = connection.received().length;
  connection.socket.write(`GET ${path} HTTP/1.1\r\nHost: registry.test\r\n\r\n`);
  let answer = '';
  await vi.waitFor(() => {
    answer = connection.received().slice(before);
    const length = /content-length: (\d+)/i.exec(answer)?.[1];
    const head = answer.indexOf('\r\n\r\n');
    expect(length !== undefined && head >= 0 && answer.length - head - 4 >= Number(length)).toBe(true);
  });
  return answer;
}

describe('a request body must arrive in time', () => {
  it('answers a body that stops half-way with 408 REQUEST_TIMEOUT and closes the connection; the default is 60 s', async () => {
    const server = await startRegistryServer({ limits: { bodyTimeoutMs: 200 } });
    const connection = await open(server);
    // An unauthenticated login whose body never comes in full.
    connection.socket.write('POST /api/auth/login HTTP/1.1\r\nHost: registry.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
    await connection.closed;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408/);
    expect(connection.received()).toMatch(/connection: close/i);
    expect(connection.received()).toMatch(/"code":"REQUEST_TIMEOUT"/);
    // A request within time is answered as before.
    const timely = await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a@example.com', password: 'not a password at all' } });
    expect(timely.statusCode).toBe(401);
    expect(DEFAULT_LIMITS.bodyTimeoutMs).toBe(60_000);
  });

  it('answers the same through the routes (a body stream that never ends), with the error envelope', async () => {
    const server = await startRegistryServer({ limits: { bodyTimeoutMs: 100 } });
    const body = new PassThrough();
    body.write('{"events":');
    const res = await server.app.inject({ method: 'POST', url: '/events', headers: { 'content-type': 'application/json', 'content-length': '100' }, payload: body });
    expect(res.statusCode).toBe(408);
    expect(res.json().error).toMatchObject({ code: 'REQUEST_TIMEOUT', message: expect.stringMatching(/0\.1 seconds/) });
  });
});

describe('connections per client address', () => {
  it('are at most maxConnectionsPerAddress: one more gets 429 TOO_MANY_CONNECTIONS and is closed, other addresses are served, a closed one frees its place; the default is 64', async () => {
    const server = await startRegistryServer({ limits: { maxConnectionsPerAddress: 3 } });
    const held = [await open(server), await open(server), await open(server)];
    for (const connection of held) expect(await get(connection, '/healthz')).toMatch(/^HTTP\/1\.1 200/);

    // The fourth connection of 127.0.0.1: its request is refused and the connection closed.
    const fourth = await open(server);
    fourth.socket.write('GET /registry.json HTTP/1.1\r\nHost: registry.test\r\n\r\n');
    await fourth.closed;
    expect(fourth.received()).toMatch(/^HTTP\/1\.1 429/);
    expect(fourth.received()).toMatch(/retry-after: 1/i);
    expect(fourth.received()).toMatch(/"code":"TOO_MANY_CONNECTIONS"/);

    // Another address is not counted with it; the held connections keep working.
    const neighbour = await open(server, '127.0.0.2');
    expect(await get(neighbour, '/healthz')).toMatch(/^HTTP\/1\.1 200/);
    expect(await get(held[0]!, '/registry.json')).toMatch(/^HTTP\/1\.1 200/);

    // One closed: its place is free again.
    held[2]!.socket.end();
    await held[2]!.closed;
    await vi.waitFor(async () => {
      const again = await open(server);
      try {
        expect(await get(again, '/healthz')).toMatch(/^HTTP\/1\.1 200/);
      } finally {
        again.socket.destroy();
      }
    });
    for (const connection of [...held, neighbour]) connection.socket.destroy();
    expect(DEFAULT_LIMITS.maxConnectionsPerAddress).toBe(64);
  });
});
