/**
 * Our clients against registries we did not write: a document with every shape the specification
 * allows (range objects in compatibility, a prerelease version, a string author, an unknown
 * stability, a date-only lastUpdated) is read as it is, and only an entry that cannot be used is
 * left out and reported once. `create`, `check-update` and `update` work against a registry that
 * serves only registry.json under any path prefix (no index, no shards, no /templates routes, no
 * integrity), and against one that serves only the /templates routes; each missing optional
 * document is asked for once per command.
 */
import { readFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { checkCompatibility } from '../../src/compat/index.js';
import type { TemplateManifest } from '../../src/core/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { startSpecRegistry, type SpecRegistry } from '../helpers/spec-registry.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_MODE'] });

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Serves `body` as JSON at every path; records the paths asked. */
async function serveJson(body: unknown): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? '');
    if (!(req.url ?? '').endsWith('/registry.json')) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/any/prefix/registry.json`, paths };
}

const base = { description: 'An entry from another registry', category: 'backend', stability: 'stable', downloadUrl: 'https://other.example/a.tgz' };

describe('a document with every shape the specification allows', () => {
  const document = {
    templates: [
      { ...base, id: 'plain', name: 'plain', version: '1.0.0' },
      {
        ...base,
        id: 'ranges',
        name: 'ranges',
        version: '2.0.0',
        compatibility: { methodologyVersions: [{ min: '1.0.0', max: '2.0.0', supported: true }], nodeVersions: [{ min: '18.0.0', supported: true }], platforms: [{ name: 'linux', supported: true }] },
      },
      { ...base, id: 'pre', name: 'pre', version: '1.0.0-beta.1', stability: 'beta' },
      { ...base, id: 'stringly', name: 'stringly', version: '1.0.0', author: 'Ada Lovelace' },
      { ...base, id: 'odd', name: 'odd', version: '1.0.0', stability: 'alpha' },
      { ...base, id: 'broken', name: 'broken', version: '1.0.0', downloadUrl: undefined },
      'not even an object',
    ],
    categories: [{ id: 'backend', name: 'Backend', description: 'Servers', icon: 'server', templates: ['plain'] }],
    tags: [],
    lastUpdated: '2026-11-27',
  };

  it('is read entry by entry: every readable entry listed, the others reported once', async () => {
    const { url } = await serveJson(document);
    const notices: string[] = [];
    const client = new RegistryClient({ registryUrl: url, onSkipped: (notice) => notices.push(notice.message) });
    const ids = (await client.listTemplates()).map((e) => e.id).sort();
    expect(ids).toEqual(['odd', 'plain', 'pre', 'ranges', 'stringly']);
    expect((await client.getTemplate('stringly'))?.author).toEqual({ name: 'Ada Lovelace' });
    expect((await client.getTemplate('pre'))?.version).toBe('1.0.0-beta.1');
    await client.search('entry');
    await client.listCategories();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/2 entries of the registry document .* left out: #5 broken@1\.0\.0 \(has no downloadUrl\); #6 \?@\? \(is not an object\)/);

    const result = checkCompatibility(await client.document(), 'ranges', { methodologyVersion: '1.5.0', nodeVersion: '20.0.0', npmVersion: '10.0.0', platform: 'linux' });
    expect(result).toMatchObject({ compatible: true, issues: [] });
  });

  it('is listed by the CLI, with one warning line', async () => {
    const { url } = await serveJson(document);
    const run = await cli('list', '--registry', url, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { id: string }[]).map((e) => e.id).sort()).toEqual(['odd', 'plain', 'pre', 'ranges', 'stringly']);
    expect(run.stderr.match(/cannot be read/g)).toHaveLength(1);
  });
});

async function templateVersion(version: string, text: string): Promise<{ file: string; manifest: TemplateManifest }> {
  const dir = await writeTemplate({
    'template.json': { ...validManifest, version },
    'CHANGELOG.md': `# Changelog\n\n## [${version}] - 2026-01-01\n\n- ${text}\n`,
    'template/app.txt': `${text}\n`,
  });
  return packTemplate(dir, { outDir: await tempDir('tr-pack-') });
}

async function publishBoth(registryUrl: string, token: string): Promise<void> {
  for (const [version, text] of [
    ['1.0.0', 'first'],
    ['1.1.0', 'second'],
  ] as const) {
    const pack = await templateVersion(version, text);
    await publishTemplate({ registryUrl, token, archive: pack.file, manifest: pack.manifest, retries: 0 });
  }
}

/** create at 1.0.0, check-update, update: the journey of a consumer, each command's requests recorded by `requests()`. */
async function journey(registry: string, requests: () => string[]): Promise<Map<string, string[]>> {
  const asked = new Map<string, string[]>();
  const dir = path.join(await tempDir(), 'shop');
  const step = async (name: string, ...argv: string[]) => {
    const before = requests().length;
    const run = await cli(...argv);
    expect(run.code, `${name}: ${run.stderr}`).toBe(0);
    asked.set(name, requests().slice(before));
    return run;
  };
  await step('create', 'create', `${validManifest.name}@1.0.0`, dir, '--registry', registry, '--defaults', '--set', 'projectName=shop');
  expect(await readFile(path.join(dir, 'app.txt'), 'utf8')).toBe('first\n');
  const check = await step('check-update', 'check-update', '--project', dir, '--registry', registry, '--json');
  expect(JSON.parse(check.stdout)).toMatchObject({ currentVersion: '1.0.0', latestVersion: '1.1.0', updateAvailable: true });
  await step('update', 'update', '--project', dir, '--registry', registry);
  expect(await readFile(path.join(dir, 'app.txt'), 'utf8')).toBe('second\n');
  return asked;
}

const timesAsked = (paths: readonly string[], file: string): number => paths.filter((p) => p.split('?')[0]?.endsWith(`/${file}`)).length;

describe('a registry that serves only registry.json', () => {
  let registry: SpecRegistry;

  it('takes create, check-update and update, asking for each missing optional file at most once per command', async () => {
    registry = await startSpecRegistry({ prefix: '/static/host' });
    closers.push(() => registry.close());
    await publishBoth(registry.url, registry.token);
    const asked = await journey(`${registry.url}/registry.json`, () => registry.requests);
    for (const [command, paths] of asked) {
      expect(timesAsked(paths, 'index.json'), command).toBeLessThanOrEqual(1);
      expect(paths.filter((p) => /\/templates\/[^/]+\.json/.test(p)), command).toEqual([]);
    }
  });
});

/** A front of `target` that answers only the /templates routes (and archives): no registry.json, index or shards. */
async function routesOnly(target: string): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    paths.push(`${req.method ?? 'GET'} ${url}`);
    const pathname = url.split('?')[0] ?? '';
    if (!pathname.startsWith('/api/templates') || /\.json$/.test(pathname)) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NOT_FOUND","message":"no such route","details":[],"requestId":"x","timestamp":"2026-01-01T00:00:00Z"}}');
    const upstream = httpRequest(`${target}${url.slice('/api'.length)}`, { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/api`, paths };
}

describe('a registry that serves only the /templates routes', () => {
  it('takes create, check-update and update through those routes', async () => {
    const server = await startRegistryServer();
    await publishBoth(server.url, server.token);
    const front = await routesOnly(server.url);
    const asked = await journey(front.url, () => front.paths);
    for (const [command, paths] of asked) {
      expect(timesAsked(paths, 'registry.json'), command).toBeLessThanOrEqual(1);
      expect(timesAsked(paths, 'index.json'), command).toBeLessThanOrEqual(1);
    }
    expect([...asked.values()].flat().some((p) => p.startsWith('GET /api/templates/demo-template'))).toBe(true);
  });
});
