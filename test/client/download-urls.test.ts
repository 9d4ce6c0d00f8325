/**
 * Where archives may come from: https:, or http: only from a registry on loopback; every other
 * scheme is refused; a remote registry cannot send a download to loopback or private addresses
 * (literal, or resolved by the default transport, which connects to the address it checked); and
 * redirects follow the same rule.
 */
import { createHash } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { checkDownloadUrl, DownloadError, downloadTemplate } from '../../src/client/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { tempDir } from '../helpers/fixtures.js';

let archive: Buffer;
let integrity: string;
beforeAll(async () => {
  const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
  archive = await readFile(pack.file);
  integrity = `sha512-${createHash('sha512').update(archive).digest('base64')}`;
});

/** A fetch that answers from a table of URL -> response, recording every URL asked for. */
function fakeFetch(routes: Record<string, () => Response>): { fetch: typeof globalThis.fetch; asked: string[] } {
  const asked: string[] = [];
  const fetch = ((input: string | URL | Request) => {
    const url = input instanceof Request ? input.url : input.toString();
    asked.push(url);
    const route = routes[url];
    return Promise.resolve(route ? route() : new Response('missing', { status: 404 }));
  }) as typeof globalThis.fetch;
  return { fetch, asked };
}

const ok = (): Response => new Response(archive, { status: 200, headers: { 'content-type': 'application/gzip' } });
const redirect = (location: string) => (): Response => new Response(null, { status: 302, headers: { location } });

async function download(downloadUrl: string, routes: Record<string, () => Response>, documentUrl?: string) {
  const { fetch, asked } = fakeFetch(routes);
  const dest = path.join(await tempDir(), 'out');
  const result = await downloadTemplate({ id: 'node-service', version: '1.1.0', downloadUrl, integrity }, dest, { fetch, ...(documentUrl ? { documentUrl } : {}) }).then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...result, asked };
}

describe('download URLs', () => {
  it.each(['file:///etc/passwd', 'ftp://mirror.example/a.tgz', 'data:application/gzip;base64,AAAA', 'gopher://x/a'])('refuses %s without fetching it', async (url) => {
    const { error, asked } = await download(url, {});
    expect(error).toBeInstanceOf(DownloadError);
    expect((error as Error).message).toMatch(/scheme is not accepted/);
    expect((error as Error).message).toContain(url.split(':')[0]);
    expect(asked).toEqual([]);
  });

  it('accepts plain http: only from a registry on loopback, not even on a remote registry\'s own origin', async () => {
    const refused = await download('http://cdn.example/a.tgz', { 'http://cdn.example/a.tgz': ok }, 'https://registry.example/registry.json');
    expect((refused.error as Error).message).toMatch(/plain http: is only accepted from a registry on loopback/);
    expect(refused.asked).toEqual([]);
    const sameOrigin = await download('http://registry.example/a.tgz', { 'http://registry.example/a.tgz': ok }, 'http://registry.example/registry.json');
    expect((sameOrigin.error as Error).message).toMatch(/plain http: is only accepted from a registry on loopback/);
    expect(sameOrigin.asked).toEqual([]);
    const fromLoopback = await download('http://cdn.example/a.tgz', { 'http://cdn.example/a.tgz': ok }, 'http://127.0.0.1:4873/registry.json');
    expect(fromLoopback.error).toBeUndefined();
    const loopback = await download('http://127.0.0.1:9/a.tgz', { 'http://127.0.0.1:9/a.tgz': ok });
    expect(loopback.error).toBeUndefined();
    const localhost = await download('http://localhost:9/a.tgz', { 'http://localhost:9/a.tgz': ok }, 'http://localhost:9/registry.json');
    expect(localhost.error).toBeUndefined();
    const secure = await download('https://cdn.example/a.tgz', { 'https://cdn.example/a.tgz': ok });
    expect(secure.error).toBeUndefined();
  });

  it.each(['https://127.0.0.1/a.tgz', 'https://[::1]/a.tgz', 'https://10.0.0.5/a.tgz', 'https://192.168.1.1/a.tgz', 'https://169.254.169.254/latest/a.tgz', 'https://[::ffff:127.0.0.1]/a.tgz', 'https://0.0.0.0/a.tgz'])(
    'refuses %s named by a remote registry, without fetching it',
    async (url) => {
      const { error, asked } = await download(url, { [url]: ok }, 'https://registry.example/registry.json');
      expect(error).toBeInstanceOf(DownloadError);
      expect((error as Error).message).toMatch(/is a (loopback|private-network|link-local|reserved or special-purpose) address: a registry may send downloads only to public addresses/);
      expect(asked).toEqual([]);
    },
  );

  it('lets a registry name addresses of its own kind: a private registry private ones (never loopback), a loopback registry any', async () => {
    const privateRegistry = 'https://10.1.1.1/registry.json';
    expect((await download('https://10.1.1.2/a.tgz', { 'https://10.1.1.2/a.tgz': ok }, privateRegistry)).error).toBeUndefined();
    const toLoopback = await download('https://127.0.0.1/a.tgz', { 'https://127.0.0.1/a.tgz': ok }, privateRegistry);
    expect((toLoopback.error as Error).message).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect((await download('https://10.1.1.2/a.tgz', { 'https://10.1.1.2/a.tgz': ok }, 'http://127.0.0.1:4873/registry.json')).error).toBeUndefined();
  });

  it('follows redirects only where the same rule allows', async () => {
    const toHttps = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('https://cdn.example/b.tgz'), 'https://cdn.example/b.tgz': ok });
    expect(toHttps.error).toBeUndefined();
    expect(toHttps.asked).toEqual(['https://registry.example/a.tgz', 'https://cdn.example/b.tgz']);

    const toFile = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('file:///etc/passwd') });
    expect((toFile.error as Error).message).toMatch(/file: scheme is not accepted/);
    const downgrade = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('http://cdn.example/a.tgz') });
    expect((downgrade.error as Error).message).toMatch(/plain http/);
    expect(downgrade.asked).toEqual(['https://registry.example/a.tgz']);

    // A redirect is held to the rule of the registry that named the first URL.
    const toLoopback = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('http://127.0.0.1:9/a.tgz') });
    expect((toLoopback.error as Error).message).toMatch(/plain http: is only accepted from a registry on loopback/);
    const toLoopbackHttps = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('https://127.0.0.1:9/a.tgz') });
    expect((toLoopbackHttps.error as Error).message).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(toLoopbackHttps.asked).toEqual(['https://registry.example/a.tgz']);

    const loop = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('https://registry.example/a.tgz') });
    expect((loop.error as Error).message).toMatch(/more than 5 redirects/);
  });

  it('checkDownloadUrl says why a URL is refused', () => {
    expect(() => checkDownloadUrl('not a url')).toThrow(/not an absolute URL/);
    expect(checkDownloadUrl('http://localhost:8080/a.tgz').host).toBe('localhost:8080');
    expect(checkDownloadUrl('http://[::1]:8080/a.tgz').hostname).toBe('[::1]');
  });
});

describe('download addresses through the default transport', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  /** An archive server on 127.0.0.1, recording the Host of every request. */
  async function archiveServer(): Promise<{ port: number; hosts: string[] }> {
    const hosts: string[] = [];
    const server = createServer((request, response) => {
      hosts.push(request.headers.host ?? '');
      response.writeHead(200, { 'content-type': 'application/gzip', 'content-length': archive.length }).end(archive);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as AddressInfo).port, hosts };
  }

  function table(answers: Record<string, string>): { resolve: (host: string) => Promise<LookupAddress[]>; asked: string[] } {
    const asked: string[] = [];
    return {
      asked,
      resolve: (host) => {
        asked.push(host);
        const address = answers[host];
        return address ? Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]) : Promise.reject(Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
      },
    };
  }

  it('refuses a host of a remote registry that resolves to loopback, before connecting', async () => {
    const { port, hosts } = await archiveServer();
    const { resolve } = table({ 'registry.test': '93.184.215.14', 'evil.test': '127.0.0.1' });
    const dest = path.join(await tempDir(), 'out');
    const error = await downloadTemplate({ id: 'node-service', version: '1.1.0', downloadUrl: `https://evil.test:${port}/a.tgz`, integrity }, dest, {
      documentUrl: 'https://registry.test/registry.json',
      resolve,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DownloadError);
    expect((error as Error).message).toMatch(/evil\.test resolves to 127\.0\.0\.1, a loopback address/);
    expect(hosts).toEqual([]);
  });

  it('connects a name to the address it resolved and checked (a registry on loopback may name a loopback host)', async () => {
    const { port, hosts } = await archiveServer();
    const { resolve, asked } = table({ 'archive.test': '127.0.0.1' });
    const dest = path.join(await tempDir(), 'out');
    const result = await downloadTemplate({ id: 'node-service', version: '1.1.0', downloadUrl: `http://archive.test:${port}/a.tgz`, integrity }, dest, {
      documentUrl: `http://127.0.0.1:${port}/registry.json`,
      resolve,
    });
    expect(result.integrity).toBe(integrity);
    expect(hosts).toEqual([`archive.test:${port}`]);
    expect(asked).toEqual(['archive.test']);
  });
});
