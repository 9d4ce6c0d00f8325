/**
 * Sparse mode: a client that needs one template reads the small index and that template's file,
 * never the whole registry.json; `auto` finds out whether the registry publishes an index.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { buildRegistry } from '../../src/registry/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from '../registry/memory-source.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A static host of `root` that records the path of every request. */
async function countingHost(root: string): Promise<{ url: string; requests: string[] }> {
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

async function builtRegistry(): Promise<{ root: string }> {
  const root = await tempDir('tr-sparse-');
  const source = memorySource([
    version('alpha', '1.0.0', {}, { downloadUrl: 'archives/alpha/1.0.0.tgz' }),
    version('alpha', '2.0.0', { stability: 'beta' }, { downloadUrl: 'archives/alpha/2.0.0.tgz' }),
    version('beta-one', '0.1.0', { keywords: ['go'] }, { downloadUrl: 'archives/beta-one/0.1.0.tgz' }),
  ]);
  await buildRegistry(source, { outDir: path.join(root, 'reg') });
  return { root };
}

describe('the sparse index', () => {
  it('lists every template once with its latest version and its summed downloads', async () => {
    const { root } = await builtRegistry();
    const host = await countingHost(root);
    const client = new RegistryClient({ registryUrl: `${host.url}/reg/registry.json`, mode: 'sparse' });
    const index = await client.index();
    expect(index.templates.map((line) => `${line.id}@${line.version}`)).toEqual(['alpha@1.0.0', 'beta-one@0.1.0']);
    expect(index.templates[1]).toMatchObject({ stability: 'stable', category: 'backend', tags: ['go'] });
  });
});

describe('RegistryClient in sparse mode', () => {
  it('answers getTemplate from index.json and templates/<id>.json only, with absolute URLs', async () => {
    const { root } = await builtRegistry();
    const host = await countingHost(root);
    const client = new RegistryClient({ registryUrl: `${host.url}/reg/registry.json`, mode: 'sparse' });
    expect(await client.getTemplate('alpha')).toMatchObject({ version: '1.0.0', downloadUrl: `${host.url}/reg/archives/alpha/1.0.0.tgz` });
    expect(await client.getTemplate('alpha', '2.0.0')).toMatchObject({ stability: 'beta' });
    expect(await client.getTemplate('alpha', '9.9.9')).toBeNull();
    expect(await client.getTemplate('nobody')).toBeNull();
    expect(host.requests).toEqual(['/reg/index.json', '/reg/templates/alpha.json']);
  });

  it('auto: uses the index when the registry has one, the whole document when it has none', async () => {
    const { root } = await builtRegistry();
    const host = await countingHost(root);
    const sparse = new RegistryClient({ registryUrl: `${host.url}/reg/registry.json`, mode: 'auto' });
    expect((await sparse.getTemplate('beta-one'))?.version).toBe('0.1.0');
    expect(host.requests).not.toContain('/reg/registry.json');

    const { rm } = await import('node:fs/promises');
    await rm(path.join(root, 'reg', 'index.json'));
    host.requests.length = 0;
    const full = new RegistryClient({ registryUrl: `${host.url}/reg/registry.json`, mode: 'auto' });
    expect((await full.getTemplate('beta-one'))?.version).toBe('0.1.0');
    expect(host.requests).toEqual(['/reg/index.json', '/reg/registry.json']);
  });

  it('keeps the cached template file when the host fails, as it does the document', async () => {
    const { root } = await builtRegistry();
    const host = await countingHost(root);
    let now = 1_000_000;
    const client = new RegistryClient({ registryUrl: `${host.url}/reg/registry.json`, mode: 'sparse', now: () => now });
    expect((await client.getTemplate('alpha'))?.version).toBe('1.0.0');
    const { rm } = await import('node:fs/promises');
    await rm(path.join(root, 'reg', 'templates'), { recursive: true });
    now += 4_000_000;
    expect((await client.getTemplate('alpha'))?.version).toBe('1.0.0');
  });

  it('lets the CLI show one template reading no registry.json', async () => {
    const { root } = await builtRegistry();
    const host = await countingHost(root);
    const previous = process.env.TEMPLATE_REGISTRY_CACHE;
    process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-sparse-cache-');
    try {
      const info = await cli('info', 'alpha', '--registry', `${host.url}/reg/registry.json`, '--json');
      expect(info.code, info.stderr).toBe(0);
      expect(JSON.parse(info.stdout)).toMatchObject({ id: 'alpha', version: '1.0.0' });
      // The index and the template's file, then its archive for the questions: never registry.json.
      // (keys.json between them: the CLI looks once for the registry's signing keys, none here.)
      expect(host.requests.slice(0, 3)).toEqual(['/reg/index.json', '/reg/keys.json', '/reg/templates/alpha.json']);
      expect(host.requests).not.toContain('/reg/registry.json');
    } finally {
      if (previous === undefined) delete process.env.TEMPLATE_REGISTRY_CACHE;
      else process.env.TEMPLATE_REGISTRY_CACHE = previous;
    }
  });
});
