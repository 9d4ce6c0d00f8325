/**
 * `check-update` and `update` always revalidate what they read: a copy of the
 * registry cached a minute earlier (by `create`) does not hide a version published since.
 */
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

let saved: Record<string, string | undefined>;
beforeEach(async () => {
  saved = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-reval-cache-');
  process.env.DO_NOT_TRACK = '1';
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function publish(server: TestServer, version: string): Promise<void> {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'revalidated', version } });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  expect(await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).toMatchObject({ status: 201 });
}

describe('check-update and update revalidate the registry', () => {
  it('see a version published after create cached the registry, within the cache lifetime', async () => {
    const server = await startRegistryServer();
    await publish(server, '1.0.0');
    const project = path.join(await tempDir(), 'app');
    const created = await cli('create', 'revalidated', project, '--registry', server.url, '--defaults');
    expect(created.code, created.stderr).toBe(0);

    await publish(server, '1.1.0');
    const check = await cli('check-update', '--project', project, '--registry', server.url, '--json');
    expect(check.code, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ currentVersion: '1.0.0', latestVersion: '1.1.0', updateAvailable: true });

    await publish(server, '1.2.0');
    const update = await cli('update', '--project', project, '--registry', server.url, '--dry-run', '--json');
    expect(update.code, update.stderr).toBe(0);
    expect(JSON.parse(update.stdout)).toMatchObject({ status: 'planned', fromVersion: '1.0.0', toVersion: '1.2.0' });
  });
});
