/**
 * Where archives may come from: https:, or http: on loopback or the registry document's own
 * origin; every other scheme is refused, and redirects follow the same rule.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

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

  it('refuses plain http: on another host, and accepts it on loopback or the registry document origin', async () => {
    const refused = await download('http://cdn.example/a.tgz', { 'http://cdn.example/a.tgz': ok }, 'https://registry.example/registry.json');
    expect((refused.error as Error).message).toMatch(/plain http: is only accepted on loopback or on the registry document's own origin/);
    expect(refused.asked).toEqual([]);
    const sameOrigin = await download('http://registry.example/a.tgz', { 'http://registry.example/a.tgz': ok }, 'http://registry.example/registry.json');
    expect(sameOrigin.error).toBeUndefined();
    const loopback = await download('http://127.0.0.1:9/a.tgz', { 'http://127.0.0.1:9/a.tgz': ok });
    expect(loopback.error).toBeUndefined();
    const secure = await download('https://cdn.example/a.tgz', { 'https://cdn.example/a.tgz': ok });
    expect(secure.error).toBeUndefined();
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

    const loop = await download('https://registry.example/a.tgz', { 'https://registry.example/a.tgz': redirect('https://registry.example/a.tgz') });
    expect((loop.error as Error).message).toMatch(/more than 5 redirects/);
  });

  it('checkDownloadUrl says why a URL is refused', () => {
    expect(() => checkDownloadUrl('not a url')).toThrow(/not an absolute URL/);
    expect(checkDownloadUrl('http://localhost:8080/a.tgz').host).toBe('localhost:8080');
    expect(checkDownloadUrl('http://[::1]:8080/a.tgz').hostname).toBe('[::1]');
  });
});
