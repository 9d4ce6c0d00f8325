/**
 * After any refresh every later command sees what the refresh saw, whichever of the registry's
 * files each reads (registry.json, index.json, templates/<id>.json); and a template or an exact
 * version the cache does not know is fetched once more before the answer is "not found".
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { RegistryClient, type RegistryClientOptions } from '../../src/client/index.js';
import { buildRegistry } from '../../src/registry/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from '../registry/memory-source.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A static host of `root` that records the path of every request. */
async function host(root: string): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const relative = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(relative);
    const file = path.join(root, path.normalize(relative));
    stat(file).then(
      (info) => {
        if (!info.isFile()) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': info.size });
        createReadStream(file).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, requests };
}

/** A static registry of `alpha` 1.0.0 (and `beta` 1.0.0), served; `publish` adds a version and rebuilds it. */
async function staticRegistry(): Promise<{ registryUrl: string; requests: string[]; publish: (id: string, v: string) => Promise<void> }> {
  const root = await tempDir('tr-consistency-');
  const source = memorySource([version('alpha', '1.0.0'), version('beta', '1.0.0')]);
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  const build = (): Promise<unknown> => buildRegistry(source, { outDir: root, now: () => new Date((clock += 60_000)) });
  await build();
  const served = await host(root);
  return {
    registryUrl: `${served.url}/registry.json`,
    requests: served.requests,
    publish: async (id, v) => {
      source.list.push(version(id, v));
      await build();
    },
  };
}

/** One command of the CLI: a new client on the shared cache folder, at time `at`. */
function command(registryUrl: string, cacheDir: string, at: number, options: Partial<RegistryClientOptions> = {}): RegistryClient {
  return new RegistryClient({ registryUrl, cacheDir, mode: 'auto', now: () => at, ...options });
}

describe('after a refresh, every later command sees what it saw', () => {
  it('an update after `check-update --refresh` (index.json and the template file) does not answer from an older registry.json', async () => {
    const registry = await staticRegistry();
    const cacheDir = await tempDir('tr-cache-');
    const start = 1_000_000;
    // `list` caches the whole registry.json with alpha 1.0.0.
    expect((await command(registry.registryUrl, cacheDir, start).listTemplates()).map((e) => `${e.id}@${e.version}`)).toEqual(['alpha@1.0.0', 'beta@1.0.0']);

    await registry.publish('alpha', '1.0.1');
    // `check-update --refresh` reads the sparse files afresh and sees 1.0.1.
    expect((await command(registry.registryUrl, cacheDir, start + 60_000, { refresh: true }).getTemplate('alpha'))?.version).toBe('1.0.1');

    // `update`, ten minutes later and well within the hour registry.json is cached for, sees 1.0.1 too.
    const update = command(registry.registryUrl, cacheDir, start + 600_000);
    expect((await update.getTemplate('alpha'))?.version).toBe('1.0.1');
    expect((await update.listVersions('alpha')).map((e) => e.version)).toEqual(['1.0.1', '1.0.0']);
    // And so does `list`, which reads registry.json: revalidated once, not answered from the older copy.
    const list = command(registry.registryUrl, cacheDir, start + 600_000);
    expect((await list.listTemplates()).filter((e) => e.id === 'alpha').map((e) => e.version).sort()).toEqual(['1.0.0', '1.0.1']);
  });

  it('the files read after the refresh are asked for once each, then answered from the cache', async () => {
    const registry = await staticRegistry();
    const cacheDir = await tempDir('tr-cache-');
    await command(registry.registryUrl, cacheDir, 1_000_000).listTemplates();
    await command(registry.registryUrl, cacheDir, 1_060_000, { refresh: true }).getTemplate('alpha');
    registry.requests.length = 0;
    await command(registry.registryUrl, cacheDir, 1_120_000).listTemplates();
    await command(registry.registryUrl, cacheDir, 1_180_000).listTemplates();
    expect(registry.requests).toEqual(['/registry.json']);
  });

  it('a refresh of registry.json (`list --refresh`) makes a later sparse read revalidate a template file cached before it', async () => {
    const registry = await staticRegistry();
    const cacheDir = await tempDir('tr-cache-');
    expect((await command(registry.registryUrl, cacheDir, 1_000_000, { mode: 'sparse' }).getTemplate('beta'))?.version).toBe('1.0.0');
    await registry.publish('beta', '1.1.0');
    await command(registry.registryUrl, cacheDir, 1_060_000, { refresh: true }).listTemplates();
    expect((await command(registry.registryUrl, cacheDir, 1_120_000, { mode: 'sparse' }).getTemplate('beta'))?.version).toBe('1.1.0');
  });

  it('RegistryClient.refresh() marks a refresh as --refresh does', async () => {
    const registry = await staticRegistry();
    const cacheDir = await tempDir('tr-cache-');
    await command(registry.registryUrl, cacheDir, 1_000_000, { mode: 'sparse' }).getTemplate('alpha');
    await registry.publish('alpha', '1.0.1');
    await command(registry.registryUrl, cacheDir, 1_060_000, { mode: 'full' }).refresh();
    expect((await command(registry.registryUrl, cacheDir, 1_120_000, { mode: 'sparse' }).getTemplate('alpha'))?.version).toBe('1.0.1');
  });
});

describe('a version or template the cache does not know', () => {
  for (const mode of ['full', 'sparse', 'auto'] as const) {
    it(`is fetched once more before "not found" (${mode})`, async () => {
      const registry = await staticRegistry();
      const cacheDir = await tempDir('tr-cache-');
      const first = command(registry.registryUrl, cacheDir, 1_000_000, { mode });
      expect((await first.getTemplate('alpha'))?.version).toBe('1.0.0');
      if (mode === 'auto') await first.listTemplates();

      await registry.publish('alpha', '1.0.1');
      await registry.publish('gamma', '0.1.0');
      const create = command(registry.registryUrl, cacheDir, 1_060_000, { mode });
      expect((await create.getTemplate('alpha', '1.0.1'))?.version).toBe('1.0.1');
      expect((await command(registry.registryUrl, cacheDir, 1_070_000, { mode }).getTemplate('gamma'))?.version).toBe('0.1.0');

      // A version nobody published: asked for once (the cache is then current), then "not found" without more requests.
      const missing = command(registry.registryUrl, cacheDir, 1_080_000, { mode });
      registry.requests.length = 0;
      expect(await missing.getTemplate('alpha', '9.9.9')).toBeNull();
      const asked = registry.requests.length;
      expect(asked).toBeGreaterThan(0);
      expect(asked).toBeLessThanOrEqual(2);
      expect(await missing.getTemplate('alpha', '9.9.9')).toBeNull();
      expect(registry.requests).toHaveLength(asked);
    });
  }
});
