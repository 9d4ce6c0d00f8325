/**
 * Outgoing requests that connect only where the policy allows: every address of a host checked,
 * the connection made to a checked address (no second resolution), literal addresses checked too.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { EgressRefusedError, egressPolicy, guardedRequest } from '../../src/core/egress.js';
import { parseAddressRanges } from '../../src/core/ip-addresses.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function localServer(): Promise<{ port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(`${request.method ?? ''} ${request.headers.host ?? ''}${request.url ?? ''} ${request.headers['content-length'] ?? ''}`);
    request.resume();
    request.on('end', () => response.writeHead(200, { 'x-seen': 'yes' }).end('hello'));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, hits };
}

function table(answers: Record<string, string[]>): { resolve: (host: string) => Promise<LookupAddress[]>; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    resolve: (host) => {
      asked.push(host);
      return Promise.resolve((answers[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
    },
  };
}

describe('guardedRequest', () => {
  it('connects a name to the address its own resolution checked', async () => {
    const { port, hits } = await localServer();
    const { resolve, asked } = table({ 'archive.test': ['127.0.0.1'] });
    const send = guardedRequest(egressPolicy({ allowKinds: ['public', 'loopback'] }), { resolve });
    const response = await send(`http://archive.test:${port}/a.tgz`, { method: 'POST', body: Buffer.from('four'), headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-seen')).toBe('yes');
    expect(await response.text()).toBe('hello');
    expect(hits).toEqual([`POST archive.test:${port}/a.tgz 4`]);
    expect(asked).toEqual(['archive.test']);
  });

  it('refuses, before connecting, a host one of whose addresses the policy refuses', async () => {
    const { port, hits } = await localServer();
    const { resolve } = table({ 'split.test': ['8.8.8.8', '127.0.0.1'] });
    const send = guardedRequest(egressPolicy(), { resolve });
    const error = await send(`http://split.test:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EgressRefusedError);
    expect((error as Error).message).toBe('split.test resolves to 127.0.0.1, a loopback address');
    for (const literal of [`http://127.0.0.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`]) {
      await expect(send(literal)).rejects.toThrow(/is a loopback address/);
    }
    expect(hits).toEqual([]);
  });

  it('lets through the ranges an operator allows', async () => {
    const { port, hits } = await localServer();
    const send = guardedRequest(egressPolicy({ allowRanges: parseAddressRanges('127.0.0.1'), hint: 'allow it with --x' }));
    expect((await send(`http://127.0.0.1:${port}/ok`)).status).toBe(200);
    expect(hits).toHaveLength(1);
    const other = guardedRequest(egressPolicy({ hint: 'allow it with --x' }));
    await expect(other(`http://127.0.0.1:${port}/`)).rejects.toThrow('127.0.0.1 is a loopback address: allow it with --x');
  });
});
