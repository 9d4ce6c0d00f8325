/**
 * Downloads are counted per client network (IPv4 /24, IPv6 /56), per version, per day, and the
 * client is who the connection (or the trusted proxy hops, and only those) says it is: a client
 * cannot inflate a count by writing X-Forwarded-For or by spreading over its own addresses.
 */
import { describe, expect, it } from 'vitest';

import type { AnalyticsRecord } from '../../src/core/schema-types.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

async function published(options: Parameters<typeof startRegistryServer>[0] = {}): Promise<TestServer> {
  const server = await startRegistryServer({ statsRefreshMs: 0, ...options });
  await publishVersions(server, [
    { version: '1.0.0', files: {} },
    { version: '1.1.0', files: {} },
  ]);
  return server;
}

async function download(server: TestServer, version: string, remoteAddress: string, forwardedFor?: string): Promise<void> {
  const response = await server.app.inject({
    url: `/templates/${TEMPLATE}/versions/${version}/archive`,
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  });
  expect(response.statusCode).toBe(200);
}

async function downloads(server: TestServer, version: string): Promise<number> {
  const response = await server.app.inject({ url: `/templates/${TEMPLATE}/analytics?version=${version}` });
  return response.json<{ data: AnalyticsRecord }>().data.metrics.downloads.total;
}

describe('download counting', () => {
  it('counts one download per IPv4 /24 per version per day', async () => {
    const server = await published();
    for (const address of ['198.51.100.7', '198.51.100.8', '198.51.100.250', '::ffff:198.51.100.9']) await download(server, '1.0.0', address);
    expect(await downloads(server, '1.0.0')).toBe(1);
    await download(server, '1.0.0', '198.51.101.7');
    expect(await downloads(server, '1.0.0')).toBe(2);
    // Another version counts on its own.
    await download(server, '1.1.0', '198.51.100.7');
    expect(await downloads(server, '1.1.0')).toBe(1);
    expect(await downloads(server, '1.0.0')).toBe(2);
  });

  it('counts one download per IPv6 /56', async () => {
    const server = await published();
    for (const address of ['2001:db8:aa:bb01::1', '2001:db8:aa:bb02::1', '2001:db8:aa:bbff:1:2:3:4']) await download(server, '1.0.0', address);
    expect(await downloads(server, '1.0.0')).toBe(1);
    await download(server, '1.0.0', '2001:db8:aa:cc00::1');
    expect(await downloads(server, '1.0.0')).toBe(2);
  });

  it('ignores X-Forwarded-For without a trusted proxy', async () => {
    const server = await published();
    for (const forged of ['203.0.113.1', '192.0.2.1', '100.64.0.1']) await download(server, '1.0.0', '198.51.100.7', forged);
    expect(await downloads(server, '1.0.0')).toBe(1);
  });

  it('with trusted proxy hops, honours only those hops: what a client prepends changes nothing', async () => {
    const server = await published({ trustProxy: 1 });
    // The proxy (the connection, 10.0.0.1) saw 198.51.100.7; the client wrote the values before it.
    for (const forged of ['203.0.113.1', '192.0.2.1', '100.64.0.1']) await download(server, '1.0.0', '10.0.0.1', `${forged}, 198.51.100.7`);
    expect(await downloads(server, '1.0.0')).toBe(1);
    // Another client behind the same proxy counts.
    await download(server, '1.0.0', '10.0.0.1', '198.51.102.7');
    expect(await downloads(server, '1.0.0')).toBe(2);
  });
});
