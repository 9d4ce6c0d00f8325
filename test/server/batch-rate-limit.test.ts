/**
 * The operations of a batch (POST /templates/batch) count against the caller's own
 * rate limit, not against the server's own address that replays them: one caller's batches never
 * make everyone else's requests 429.
 */
import { describe, expect, it } from 'vitest';

import { startRegistryServer } from '../helpers/registry-server.js';

const CALLER = '203.0.113.7';
const NEIGHBOUR = '198.51.100.9';

describe('batch sub-requests count against the caller’s own rate limit', () => {
  it('spends the caller’s budget with every operation, refuses the caller past it, and leaves every other client (127.0.0.1 too) untouched', async () => {
    const server = await startRegistryServer({ limits: { readPerMinute: 10 } });
    const headers = { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' };
    const batch = (count: number) =>
      server.app.inject({
        method: 'POST',
        url: '/templates/batch',
        remoteAddress: CALLER,
        headers,
        payload: JSON.stringify({ operations: Array.from({ length: count }, () => ({ method: 'GET', path: '/categories' })) }),
      });

    // The batch itself is one read, its 9 operations 9 more: the caller's 10 are spent.
    const first = await batch(9);
    expect(first.statusCode).toBe(200);
    expect(first.json().data.results.map((result: { status: number }) => result.status)).toEqual(Array(9).fill(200));
    expect((await server.app.inject({ url: '/categories', remoteAddress: CALLER })).statusCode).toBe(429);

    // Past the limit, the batch is refused, and so would each operation be.
    expect((await batch(5)).statusCode).toBe(429);

    // Nobody else paid for it: the address the server replays operations from, and a neighbour.
    for (const remoteAddress of ['127.0.0.1', NEIGHBOUR]) {
      const res = await server.app.inject({ url: '/categories', remoteAddress });
      expect(res.statusCode, remoteAddress).toBe(200);
      expect(res.headers['x-ratelimit-remaining'], remoteAddress).toBe('9');
    }
  });

  it('answers an operation past the caller’s limit with its own 429 inside the batch', async () => {
    const server = await startRegistryServer({ limits: { readPerMinute: 4 } });
    const res = await server.app.inject({
      method: 'POST',
      url: '/templates/batch',
      remoteAddress: CALLER,
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ operations: Array.from({ length: 5 }, () => ({ method: 'GET', path: '/categories' })) }),
    });
    expect(res.statusCode).toBe(200);
    const statuses = res.json().data.results.map((result: { status: number }) => result.status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(res.json().data.results[3].body.error.code).toBe('RATE_LIMIT_EXCEEDED');
  });
});
