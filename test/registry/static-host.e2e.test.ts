/**
 * A registry built from the server's store is self-contained: served by a plain static file server
 * under a path prefix, with no registry server running, it serves list, search, info, create,
 * check-compat and migrate.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { example, nextVersion } from '../helpers/example-versions.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { startStaticServer, type StaticServer } from '../helpers/static-server.js';

let host: StaticServer;
let registryUrl = '';
let outDir = '';
let storeDir = '';
let savedEnv: Record<string, string | undefined>;

beforeEach(async () => {
  savedEnv = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
  process.env.DO_NOT_TRACK = '1';
  const server = await startRegistryServer();
  for (const [dir, version] of [[example, '1.1.0'], [await nextVersion(), '1.2.0']] as const) {
    const pack = await packTemplate(dir, { outDir: await tempDir(), version });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  }
  await server.app.close();
  storeDir = server.storeDir;

  const root = await tempDir('tr-static-root-');
  outDir = path.join(root, 'mirrors', 'acme');
  const built = await cli('build-registry', '--store', server.storeDir, '--out', outDir);
  expect(built.code, built.stderr).toBe(0);
  host = await startStaticServer(root);
  registryUrl = `${host.url}/mirrors/acme/registry.json`;
});

afterEach(async () => {
  await host.close();
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('a static registry built from a store', () => {
  it('holds the archives, and URLs relative to registry.json that never name an API route', async () => {
    const document = JSON.parse(await readFile(path.join(outDir, 'registry.json'), 'utf8')) as RegistryDocument;
    for (const entry of document.templates) {
      expect(entry.downloadUrl).toBe(`archives/node-service/${entry.version}.tgz`);
      expect(entry.documentationUrl).not.toMatch(/\/templates\/|\/versions\//);
      const archive = await readFile(path.join(outDir, entry.downloadUrl));
      expect(archive.length).toBe(entry.size);
    }
  });

  it('serves list, search, info, check-compat, create and migrate from a plain static host under a path prefix', async () => {
    const list = await cli('list', '--registry', registryUrl, '--json');
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { id: string; version: string }[]).map((e) => `${e.id}@${e.version}`)).toEqual(['node-service@1.2.0']);
    const search = await cli('search', 'node', '--registry', registryUrl, '--json');
    expect(search.code, search.stderr).toBe(0);
    const info = await cli('info', 'node-service', '--registry', registryUrl, '--json');
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ version: '1.2.0', downloadUrl: `${host.url}/mirrors/acme/archives/node-service/1.2.0.tgz` });
    const compat = await cli('check-compat', 'node-service', '--registry', registryUrl);
    expect([0, 1]).toContain(compat.code);
    expect(compat.stderr).not.toMatch(/cannot load|404/);

    const project = path.join(await tempDir(), 'shop');
    const created = await cli('create', 'node-service@1.1.0', project, '--registry', registryUrl, '--defaults', '--set', 'projectName=shop-api');
    expect(created.code, created.stderr).toBe(0);
    const migrated = await cli('migrate', '--project', project, '--registry', registryUrl, '--yes');
    expect(migrated.code, migrated.stderr).toBe(0);
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lock.template.version).toBe('1.2.0');
    expect(await readFile(path.join(project, '.editorconfig'), 'utf8')).toContain('root = true');
  });

  it('writes absolute URLs under --public-url', async () => {
    const out = await tempDir('tr-static-abs-');
    const built = await cli('build-registry', '--store', storeDir, '--out', out, '--public-url', 'https://cdn.example/registry/');
    expect(built.code, built.stderr).toBe(0);
    const document = JSON.parse(await readFile(path.join(out, 'registry.json'), 'utf8')) as RegistryDocument;
    expect(document.templates.map((e) => e.downloadUrl).sort()).toEqual(['https://cdn.example/registry/archives/node-service/1.1.0.tgz', 'https://cdn.example/registry/archives/node-service/1.2.0.tgz']);
    expect(document.templates[0]?.documentationUrl).toMatch(/^https:\/\/cdn\.example\/registry\/index\.html#t-node-service$|^https?:\/\/github/);
  });
});
