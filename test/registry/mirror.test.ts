/**
 * Mirroring a registry: documents and signatures copied byte for byte, archives copied and checked
 * against their integrity, incremental runs with conditional requests, into a folder or a bucket;
 * a source that fails a check is refused before any document is written.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { readPublicKeys } from '../../src/core/registry-signatures.js';
import { buildRegistry } from '../../src/registry/index.js';
import { MIRROR_STATE_FILE, MirrorError, mirrorRegistry } from '../../src/registry/mirror.js';
import { FolderOutput } from '../../src/registry/folder-output.js';
import { createS3Client, S3Output } from '../../src/registry/s3-output.js';
import type { SourceVersion } from '../../src/registry/source.js';
import { tempDir } from '../helpers/fixtures.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { privateJwk, publicJwk, signingKeys } from '../helpers/signing-keys.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { memorySource, version } from './memory-source.js';

const servers: FolderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A version whose archive (`bytes`) the build publishes beside registry.json, with its integrity. */
function withArchive(name: string, v: string, bytes: Buffer): SourceVersion {
  return version(
    name,
    v,
    {},
    {
      downloadUrl: `archives/${name}/${v}.tgz`,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      openArchive: () => Promise.resolve({ stream: Readable.from([bytes]), size: bytes.length }),
    },
  );
}

async function sourceRegistry(options: { sign?: boolean } = {}) {
  const dir = await tempDir('tr-mirror-source-');
  const jwk = await privateJwk('source-key');
  // Not memorySource: its copies would drop openArchive.
  const list = [withArchive('alpha', '1.0.0', Buffer.from('alpha one')), withArchive('alpha', '1.1.0', Buffer.from('alpha two')), withArchive('beta', '0.1.0', Buffer.from('beta'))];
  const source = { list, versions: () => Promise.resolve([...list]) };
  const build = async () => buildRegistry(source, { outDir: dir, ...(options.sign === false ? {} : { signing: await signingKeys(jwk) }) });
  await build();
  const server = await serveFolder(dir, { etags: true });
  servers.push(server);
  return { dir, jwk, source, build, server, url: `${server.url}registry.json` };
}

/** Every file of a folder (not the generator's or the mirror's own state), relative, sorted. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.template-registry'))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

describe('mirrorRegistry into a folder', () => {
  it('copies a signed registry byte for byte (signatures included) with its archives, readable with the source key pinned', async () => {
    const source = await sourceRegistry();
    const out = await tempDir('tr-mirror-out-');
    const result = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    expect(result).toMatchObject({ signed: true, templates: 2, entries: 3, kept: 0, external: [] });
    expect(result.copied.sort()).toEqual(['archives/alpha/1.0.0.tgz', 'archives/alpha/1.1.0.tgz', 'archives/beta/0.1.0.tgz']);
    for (const file of ['registry.json', 'registry.json.jws', 'index.json', 'index.json.jws', 'keys.json', 'keys.json.jws', 'templates/alpha.json', 'templates/alpha.json.jws', 'archives/beta/0.1.0.tgz']) {
      expect(await readFile(path.join(out, file)), file).toEqual(await readFile(path.join(source.dir, file)));
    }
    expect(await files(out)).toEqual(expect.arrayContaining(['registry.json.gz', 'registry.json.br', 'templates/beta.json.jws']));

    // Served from another host, it is the same registry to a client that pinned the source's key.
    const host = await serveFolder(out, { prefix: '/copy/' });
    servers.push(host);
    const client = new RegistryClient({ registryUrl: `${host.url}registry.json`, signatures: { keys: readPublicKeys(publicJwk(source.jwk), 'test') } });
    expect((await client.listTemplates({})).map((e) => `${e.id}@${e.version}`)).toEqual(['alpha@1.0.0', 'alpha@1.1.0', 'beta@0.1.0']);
    expect((await client.getTemplate('beta'))?.downloadUrl).toBe(`${host.url}archives/beta/0.1.0.tgz`);
  });

  it('copies nothing new on a second run, asking with If-None-Match; then only what changed', async () => {
    const source = await sourceRegistry();
    const out = await tempDir('tr-mirror-out-');
    await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    source.server.requests.length = 0;
    source.server.conditional.length = 0;

    const again = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    expect(again).toMatchObject({ copied: [], kept: 3, fetched: 0, written: [] });
    expect(again.notModified).toBeGreaterThanOrEqual(8);
    expect(source.server.requests.some((request) => request.endsWith('.tgz'))).toBe(false);
    expect(source.server.conditional).toEqual(expect.arrayContaining(['/registry.json', '/registry.json.jws', '/index.json', '/keys.json', '/templates/alpha.json']));

    source.source.list.push(withArchive('beta', '0.2.0', Buffer.from('beta two')));
    await source.build();
    const third = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    expect(third.copied).toEqual(['archives/beta/0.2.0.tgz']);
    expect(third.written).toEqual(expect.arrayContaining(['templates/beta.json', 'templates/beta.json.jws', 'registry.json', 'registry.json.jws']));
    expect(third.written).not.toContain('templates/alpha.json');
    expect(await readFile(path.join(out, 'registry.json'))).toEqual(await readFile(path.join(source.dir, 'registry.json')));
  });

  it('refuses an archive that does not match its integrity, writing no document', async () => {
    const source = await sourceRegistry();
    await writeFile(path.join(source.dir, 'archives/beta/0.1.0.tgz'), 'evil');
    const out = await tempDir('tr-mirror-out-');
    const error = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MirrorError);
    expect((error as Error).message).toMatch(/no document was written .*integrity mismatch for the archive of beta@0\.1\.0/);
    expect(await files(out)).not.toContain('registry.json');
    expect(await files(out)).not.toContain('archives/beta/0.1.0.tgz');
  });

  it('refuses a document that fails its signature, and a source that stops signing', async () => {
    const source = await sourceRegistry();
    const out = await tempDir('tr-mirror-out-');
    await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    const before = await readFile(path.join(out, 'registry.json'));

    const registry = path.join(source.dir, 'registry.json');
    await writeFile(registry, (await readFile(registry, 'utf8')).replace('"beta"', '"beta" '));
    const tampered = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) }).catch((e: unknown) => e);
    expect((tampered as Error).message).toMatch(/registry\.json fails its signature check: .*SHA-256 differs/);
    expect(await readFile(path.join(out, 'registry.json'))).toEqual(before);

    const { rm } = await import('node:fs/promises');
    await rm(path.join(source.dir, 'keys.json'));
    const unsigned = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) }).catch((e: unknown) => e);
    expect((unsigned as Error).message).toMatch(/keys\.json is gone: the source stopped signing/);
  });

  it('refuses a source signed by another key than the one given', async () => {
    const source = await sourceRegistry();
    const other = readPublicKeys(publicJwk(await privateJwk('other')), 'test');
    const error = await mirrorRegistry({ source: source.url, output: new FolderOutput(await tempDir()), keys: other }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/keys\.json cannot be trusted: .*none of them a trusted key \(other\)/);
  });

  it('rewrites the absolute download URLs of an unsigned registry to the mirror, relative to registry.json', async () => {
    const source = await sourceRegistry({ sign: false });
    // The archives are named by absolute URLs (as a registry server's registry.json names them).
    const registry = path.join(source.dir, 'registry.json');
    await writeFile(registry, (await readFile(registry, 'utf8')).replaceAll('"downloadUrl":"archives/', `"downloadUrl":"${source.server.url}archives/`));
    const out = await tempDir('tr-mirror-out-');
    const result = await mirrorRegistry({ source: source.url, output: new FolderOutput(out) });
    expect(result.signed).toBe(false);
    const document = JSON.parse(await readFile(path.join(out, 'registry.json'), 'utf8')) as { templates: { downloadUrl: string }[] };
    expect(document.templates.map((e) => e.downloadUrl).sort()).toEqual(['archives/alpha/1.0.0.tgz', 'archives/alpha/1.1.0.tgz', 'archives/beta/0.1.0.tgz']);
    expect(await readFile(path.join(out, 'archives/alpha/1.1.0.tgz'), 'utf8')).toBe('alpha two');
    expect(await files(out)).not.toContain('registry.json.jws');
  });

  it('keeps the absolute URLs of a signed registry (its signature holds) and says so', async () => {
    const dir = await tempDir('tr-mirror-source-');
    const jwk = await privateJwk('k');
    await buildRegistry(memorySource([version('remote', '1.0.0', {}, { downloadUrl: 'https://releases.example/remote-1.0.0.tgz', integrity: `sha512-${createHash('sha512').update('x').digest('base64')}` })]), {
      outDir: dir,
      signing: await signingKeys(jwk),
    });
    const server = await serveFolder(dir, { etags: true });
    servers.push(server);
    const out = await tempDir();
    const result = await mirrorRegistry({ source: server.url, output: new FolderOutput(out) });
    expect(result.external).toEqual(['remote@1.0.0']);
    expect(result.warnings.join('\n')).toMatch(/1 signed entry names an absolute download URL .*rewriting them would break the registry's signature/);
    expect(await readFile(path.join(out, 'registry.json'))).toEqual(await readFile(path.join(dir, 'registry.json')));
  });

  it('names the entry that gives no integrity', async () => {
    const dir = await tempDir();
    await buildRegistry(memorySource([version('bare', '1.0.0', {}, { downloadUrl: 'archives/bare/1.0.0.tgz' })]), { outDir: dir });
    const server = await serveFolder(dir);
    servers.push(server);
    const error = await mirrorRegistry({ source: server.url, output: new FolderOutput(await tempDir()) }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/bare@1\.0\.0 gives neither integrity nor sha256: its archive cannot be verified/);
  });
});

describe('mirrorRegistry into a bucket', () => {
  let s3: FakeS3;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    s3 = await startFakeS3(['mirror']);
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) saved[name] = process.env[name];
    process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
    process.env.AWS_REGION = 'us-east-1';
  });
  afterAll(async () => {
    await s3.close();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('writes the same files to s3://bucket/prefix, and nothing on a second run', async () => {
    const source = await sourceRegistry();
    const client = await createS3Client({ endpoint: s3.endpoint, forcePathStyle: true });
    try {
      const output = () => new S3Output({ client, bucket: 'mirror', prefix: 'copy/' });
      const first = await mirrorRegistry({ source: source.url, output: output() });
      expect(first.copied).toHaveLength(3);
      expect(await output().read('registry.json.jws')).toEqual(await readFile(path.join(source.dir, 'registry.json.jws')));
      expect(await output().read('archives/alpha/1.0.0.tgz')).toEqual(Buffer.from('alpha one'));
      const second = await mirrorRegistry({ source: source.url, output: output() });
      expect(second).toMatchObject({ copied: [], written: [], fetched: 0 });
      expect((await output().inventory()).has(MIRROR_STATE_FILE)).toBe(true);
    } finally {
      client.destroy();
    }
  });
});
