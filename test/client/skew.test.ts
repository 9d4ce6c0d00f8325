/**
 * A client tolerates skew between the sparse files a cache holds (a fresh
 * `index.json` beside an older template file, or the reverse): it fetches the older one once more
 * with `Cache-Control: no-cache`, once, and answers from what it then has. The host here is a
 * cache in front of the registry's folder that answers one path from an older copy unless the
 * request says `no-cache`, as a CDN that honours it does.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { buildRegistry } from '../../src/registry/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from '../registry/memory-source.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

interface Cache {
  url: string;
  requests: { path: string; headers: IncomingHttpHeaders }[];
  /** Paths answered from `stale` (a copy of the folder at an earlier build) unless the request says no-cache. */
  staleFor: Set<string>;
  /** Whether `no-cache` reaches the origin (false: a CDN that ignores it, as CloudFront does). */
  honoursNoCache: boolean;
}

async function cacheOf(fresh: string, stale: string): Promise<Cache> {
  const cache: Cache = { url: '', requests: [], staleFor: new Set(), honoursNoCache: true };
  const server = createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    cache.requests.push({ path: pathname, headers: req.headers });
    const revalidate = cache.honoursNoCache && /no-cache/.test(String(req.headers['cache-control'] ?? ''));
    const root = cache.staleFor.has(pathname) && !revalidate ? stale : fresh;
    readFile(path.join(root, pathname)).then(
      (bytes) => res.writeHead(200, { 'content-type': 'application/json' }).end(bytes),
      () => res.writeHead(404).end(),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  cache.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return cache;
}

/** A registry built at `before` (the cache's old copy) and at `after` (the origin now). */
async function registryThen(before: ReturnType<typeof version>[], after: ReturnType<typeof version>[]): Promise<Cache> {
  const stale = await tempDir('tr-stale-');
  const fresh = await tempDir('tr-fresh-');
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  await buildRegistry(memorySource(before), { outDir: stale, now: () => new Date((clock += 60_000)) });
  await buildRegistry(memorySource(after), { outDir: fresh, now: () => new Date((clock += 60_000)) });
  return cacheOf(fresh, stale);
}

const client = (cache: Cache, options: { refresh?: boolean } = {}): RegistryClient => new RegistryClient({ registryUrl: `${cache.url}/registry.json`, mode: 'sparse', ...options });
const asked = (cache: Cache): string[] => cache.requests.map((r) => `${r.path}${r.headers['cache-control'] ? ` (${String(r.headers['cache-control'])})` : ''}`);

describe('skew between index.json and a template file', () => {
  it('a fresh index naming a version the cached template file lacks: the file is fetched once more with no-cache', async () => {
    const cache = await registryThen([version('alpha', '1.0.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0')]);
    cache.staleFor.add('/templates/alpha.json');
    expect((await client(cache).getTemplate('alpha'))?.version).toBe('1.1.0');
    expect(asked(cache)).toEqual(['/index.json', '/templates/alpha.json', '/templates/alpha.json (no-cache)']);
  });

  it('an exact version the index names as latest is found the same way', async () => {
    const cache = await registryThen([version('alpha', '1.0.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0')]);
    cache.staleFor.add('/templates/alpha.json');
    expect((await client(cache).getTemplate('alpha', '1.1.0'))?.version).toBe('1.1.0');
    expect(asked(cache).filter((line) => line.includes('no-cache'))).toEqual(['/templates/alpha.json (no-cache)']);
  });

  it('the reverse, an older index beside a fresh file: the index is fetched once more with no-cache, and the file answers', async () => {
    const cache = await registryThen([version('alpha', '1.0.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0')]);
    cache.staleFor.add('/index.json');
    const reader = client(cache);
    expect((await reader.getTemplate('alpha'))?.version).toBe('1.1.0');
    expect(asked(cache)).toEqual(['/index.json', '/templates/alpha.json', '/index.json (no-cache)']);
    expect((await reader.index()).templates.find((line) => line.id === 'alpha')?.version).toBe('1.1.0');
  });

  it('a yank only the index knows (the file is the older one): the index, then the file, each once', async () => {
    const cache = await registryThen([version('alpha', '1.0.0'), version('alpha', '1.1.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0', {}, { yanked: true })]);
    cache.staleFor.add('/templates/alpha.json');
    expect((await client(cache).getTemplate('alpha'))?.version).toBe('1.0.0');
    expect(asked(cache)).toEqual(['/index.json', '/templates/alpha.json', '/index.json (no-cache)', '/templates/alpha.json (no-cache)']);
  });

  it('fetches once more only once, even from a cache that ignores no-cache, and even after a refresh fetched both', async () => {
    const cache = await registryThen([version('alpha', '1.0.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0')]);
    cache.staleFor.add('/templates/alpha.json');
    cache.honoursNoCache = false;
    const reader = client(cache, { refresh: true });
    expect((await reader.getTemplate('alpha'))?.version).toBe('1.0.0');
    expect((await reader.getTemplate('alpha'))?.version).toBe('1.0.0');
    expect(asked(cache)).toEqual(['/index.json', '/templates/alpha.json', '/templates/alpha.json (no-cache)']);
  });

  it('files that agree are read once each, with no no-cache request', async () => {
    const cache = await registryThen([version('alpha', '1.0.0')], [version('alpha', '1.0.0'), version('alpha', '1.1.0')]);
    expect((await client(cache).getTemplate('alpha'))?.version).toBe('1.1.0');
    expect(asked(cache)).toEqual(['/index.json', '/templates/alpha.json']);
  });
});
