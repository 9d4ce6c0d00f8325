/**
 * The consumer commands and signed registries: `create` from a signed static registry (keys pinned
 * on first use), a tampered document refused with "possible man in the middle", `--registry-key`
 * (and TEMPLATE_REGISTRY_KEY) pinning from the start, and a list of registries: the next one asked
 * when one is unreachable, never when one answers with a bad signature.
 */
import { createServer, type Server } from 'node:http';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { example } from '../helpers/example-versions.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { keyFile, privateJwk, publicJwk } from '../helpers/signing-keys.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_KEY', 'TEMPLATE_REGISTRY_MODE'] });

let storeDir = '';
let jwk: Awaited<ReturnType<typeof privateJwk>>;
/** The registry built from the store, signed with `jwk`: copied per test. */
let built = '';

beforeAll(async () => {
  const server = await startRegistryServer();
  const pack = await packTemplate(example, { outDir: await tempDir(), version: '1.1.0' });
  await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  await server.app.close();
  storeDir = server.storeDir;
  jwk = await privateJwk('registry-2026');
  // Kept for every test of the file (tempDir's folders go after each test).
  built = await mkdtemp(path.join(tmpdir(), 'tr-signed-built-'));
  const keys = await mkdtemp(path.join(tmpdir(), 'tr-signed-key-'));
  await writeFile(path.join(keys, 'key.json'), JSON.stringify(jwk));
  const run = await cli('build-registry', '--store', storeDir, '--out', built, '--sign-key', path.join(keys, 'key.json'));
  await rm(keys, { recursive: true, force: true });
  expect(run.code, run.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  await rm(built, { recursive: true, force: true });
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A copy of the signed registry, served as static files. */
async function served(): Promise<{ dir: string; server: FolderServer; url: string }> {
  const dir = await tempDir('tr-signed-copy-');
  await cp(built, dir, { recursive: true });
  const server = await serveFolder(dir, { etags: true });
  closers.push(() => server.close());
  return { dir, server, url: server.url.replace(/\/$/, '') };
}

/** A host that answers every request with `status`, counting them. */
async function failingHost(status: number): Promise<{ url: string; requests: () => number }> {
  let count = 0;
  const server: Server = createServer((_req, res) => {
    count++;
    res.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, requests: () => count };
}

/** A URL nothing listens on. */
async function deadUrl(): Promise<string> {
  const host = await failingHost(200);
  const url = host.url;
  await (closers.pop() as () => Promise<void>)();
  return url;
}

async function tamper(dir: string): Promise<void> {
  const text = await readFile(path.join(dir, 'registry.json'), 'utf8');
  await writeFile(path.join(dir, 'registry.json'), text.replace('"description":"', '"description":"(hacked) '));
  const index = await readFile(path.join(dir, 'index.json'), 'utf8');
  await writeFile(path.join(dir, 'index.json'), index.replace('"description":["', '"description":["(hacked) '));
}

describe('a signed registry', () => {
  it('serves create (keys pinned on first use), then a tampered copy is refused naming the registry', async () => {
    const registry = await served();
    const project = path.join(await tempDir(), 'shop');
    const created = await cli('create', 'node-service', project, '--registry', registry.url, '--defaults', '--set', 'projectName=shop-api');
    expect(created.code, created.stderr).toBe(0);
    expect(registry.server.requests).toEqual(expect.arrayContaining(['/keys.json', '/keys.json.jws', '/index.json.jws']));

    await tamper(registry.dir);
    const list = await cli('list', '--registry', registry.url, '--refresh');
    expect(list.code).toBe(1);
    expect(list.stderr).toMatch(new RegExp(`the registry ${registry.url} served (registry|index)\\.json .*possible man in the middle`));
  });

  it('--registry-key (or TEMPLATE_REGISTRY_KEY) pins the key from the start', async () => {
    const registry = await served();
    const right = await keyFile(publicJwk(jwk));
    const ok = await cli('list', '--registry', registry.url, '--registry-key', right, '--json');
    expect(ok.code, ok.stderr).toBe(0);
    expect((JSON.parse(ok.stdout) as { id: string }[]).map((e) => e.id)).toEqual(['node-service']);

    const wrong = publicJwk(await privateJwk('someone-else'));
    const refused = await cli('list', '--registry', registry.url, '--registry-key', JSON.stringify(wrong));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/signed by key "registry-2026", which is not among the trusted keys \(someone-else\).*possible man in the middle/);

    process.env.TEMPLATE_REGISTRY_KEY = JSON.stringify(wrong);
    expect((await cli('list', '--registry', registry.url)).code).toBe(1);
    process.env.TEMPLATE_REGISTRY_KEY = right;
    expect((await cli('list', '--registry', registry.url)).code).toBe(0);
  });

  it('names --registry-key when the key cannot be read', async () => {
    for (const [value, message] of [
      ['/nowhere/key.json', /--registry-key \/nowhere\/key\.json must be a JSON Web Key .*ENOENT/],
      ['{"kty":"RSA","kid":"r","n":"x","e":"AQAB"}', /--registry-key \(kid r\) must be an Ed25519 key/],
      ['{"kty":"OKP","crv":"Ed25519","x":"abc"}', /--registry-key\.kid is required/],
    ] as const) {
      const run = await cli('list', '--registry', 'https://registry.example', '--registry-key', value);
      expect(run.code, value).toBe(2);
      expect(run.stderr).toMatch(message);
    }
  });
});

describe('a list of registries', () => {
  it('asks the next registry when the first cannot be reached (no answer, or HTTP 5xx)', async () => {
    const mirror = await served();
    const down = await deadUrl();
    const failing = await failingHost(503);
    const run = await cli('list', '--registry', down, '--registry', `${failing.url}/registry.json`, '--registry', mirror.url, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { id: string }[]).map((e) => e.id)).toEqual(['node-service']);
    expect(run.stderr).toMatch(new RegExp(`cannot reach the registry ${down}/registry.json .*trying ${failing.url}/registry.json`));
    expect(run.stderr).toMatch(/HTTP 503/);
    expect(failing.requests()).toBeGreaterThan(0);

    // The same list from TEMPLATE_REGISTRY_URL, comma-separated; create works through it.
    process.env.TEMPLATE_REGISTRY_URL = `${down}, ${mirror.url}`;
    const project = path.join(await tempDir(), 'shop');
    const created = await cli('create', 'node-service', project, '--defaults', '--set', 'projectName=shop-api');
    expect(created.code, created.stderr).toBe(0);
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as { template: { source?: string } };
    expect(JSON.stringify(lock)).toContain(mirror.url);
  });

  it('never asks the next registry when the first answers with a bad signature', async () => {
    const first = await served();
    const second = await served();
    const key = await keyFile(publicJwk(jwk));
    await tamper(first.dir);
    const run = await cli('list', '--registry', first.url, '--registry', second.url, '--registry-key', key);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/possible man in the middle/);
    expect(run.stderr).not.toMatch(/trying/);
    expect(second.server.requests).toEqual([]);
  });
});

describe('template-registry mirror', () => {
  it('copies the signed registry into a folder that a static host serves to create, and copies nothing on a second run', async () => {
    const source = await served();
    const out = await tempDir('tr-mirror-cli-');
    const first = await cli('mirror', source.url, '--out', out, '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ signed: true, templates: 1, entries: 1, copied: ['archives/node-service/1.1.0.tgz'] });

    const again = await cli('mirror', source.url, '--out', out);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/signatures checked and kept; 0 archive\(s\) copied, 1 already there; 0 document\(s\) fetched/);

    // The mirror under another host and path, with the source's key pinned; then as the fallback of a dead registry.
    const mirror = await serveFolder(out, { prefix: '/mirrors/acme/' });
    closers.push(() => mirror.close());
    const project = path.join(await tempDir(), 'shop');
    const key = await keyFile(publicJwk(jwk));
    const created = await cli('create', 'node-service', project, '--registry', mirror.url, '--registry-key', key, '--defaults', '--set', 'projectName=shop-api');
    expect(created.code, created.stderr).toBe(0);
    expect(mirror.requests).toContain('/mirrors/acme/archives/node-service/1.1.0.tgz');

    const fallback = await cli('list', '--registry', await deadUrl(), '--registry', mirror.url, '--json');
    expect(fallback.code, fallback.stderr).toBe(0);
  });

  it('fails with the entry named when an archive does not match its integrity', async () => {
    const source = await served();
    const archive = path.join(source.dir, 'archives', 'node-service', '1.1.0.tgz');
    const bytes = await readFile(archive);
    bytes.writeUInt8((bytes.at(-1) ?? 0) ^ 0xff, bytes.length - 1);
    await writeFile(archive, bytes);
    const run = await cli('mirror', source.url, '--out', await tempDir());
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/integrity mismatch for the archive of node-service@1\.1\.0/);
  });

  it('names --out and <registry-url> when they are wrong', async () => {
    expect((await cli('mirror', 'registry.example', '--out', await tempDir())).stderr).toMatch(/<registry-url> must be an http\(s\) URL/);
    const run = await cli('mirror', 'https://registry.example', '--out', 'gs://bucket/prefix');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--out: must be a folder or an s3:\/\/bucket\/prefix URL/);
  });
});
