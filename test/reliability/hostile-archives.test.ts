/**
 * The hostile-archive corpus against both doors: an upload of any of them is a 422 that stores
 * nothing, a download of any of them is refused and writes nothing (least of all outside the
 * destination). `./`-prefixed archives, as GNU tar writes them, are accepted at both.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { downloadTemplate } from '../../src/client/index.js';
import type { TemplateManifest } from '../../src/core/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { checkStore } from '../helpers/store-check.js';
import { gzipTar, hostileArchives, templateEntries, type HostileArchive, type TarEntry } from '../helpers/tar-builder.js';

const manifest: TemplateManifest = { ...validManifest, name: 'hostile' };
let base: TarEntry[];
let corpus: HostileArchive[];
let archiveHost: Server;
let archiveHostUrl = '';
const served = new Map<string, Buffer>();

beforeAll(async () => {
  const dir = await writeTemplate({ 'template.json': manifest });
  base = await templateEntries(dir);
  corpus = hostileArchives(base);
  archiveHost = createServer((req, res) => {
    const bytes = served.get(req.url ?? '');
    if (!bytes) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': bytes.length }).end(bytes);
  });
  await new Promise<void>((resolve) => archiveHost.listen(0, '127.0.0.1', resolve));
  const address = archiveHost.address();
  archiveHostUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => new Promise<void>((resolve) => archiveHost.close(() => resolve())));

const integrityOf = (bytes: Buffer): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

async function upload(server: TestServer, bytes: Buffer): Promise<number> {
  const file = path.join(await tempDir(), 'upload.tgz');
  await writeFile(file, bytes);
  try {
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: file, manifest, retries: 0 });
    return 201;
  } catch (error) {
    return error instanceof PublishError ? (error.status ?? 0) : 0;
  }
}

/** Downloads `bytes` as a registry entry would name it, into a fresh folder inside a fresh parent. */
async function download(name: string, bytes: Buffer): Promise<{ error: unknown; parent: string; dest: string }> {
  const route = `/${encodeURIComponent(name)}.tgz`;
  served.set(route, bytes);
  const parent = await tempDir('tr-hostile-download-');
  const dest = path.join(parent, 'project');
  const error = await downloadTemplate({ id: 'hostile', version: '1.0.0', downloadUrl: `${archiveHostUrl}${route}`, integrity: integrityOf(bytes) }, dest).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, parent, dest };
}

describe('the hostile-archive corpus', () => {
  it('has every kind the issue names', () => {
    expect(corpus.map((c) => c.name)).toEqual(
      expect.arrayContaining(['path traversal', 'absolute path', 'symlink outside', 'symlink inside', 'hardlink outside', 'hardlink inside', 'link chain (DAG)', 'character device', 'FIFO', 'duplicate entry', 'PAX path override', 'gzip bomb', 'truncated gzip', 'trailing data']),
    );
  });

  it('is refused at upload with a 422, and nothing is stored', async () => {
    const server = await startRegistryServer();
    for (const archive of corpus) expect(await upload(server, archive.bytes), archive.name).toBe(422);
    expect(await server.store.versions.listVersions()).toEqual([]);
    expect((await checkStore(server.storeDir)).problems).toEqual([]);
    expect(existsSync('/tmp/tr-absolute-escape.txt')).toBe(false);
  }, 120_000);

  it('is refused at download, and nothing is written in or beside the destination', async () => {
    for (const archive of corpus) {
      const { error, parent, dest } = await download(archive.name, archive.bytes);
      expect(error, archive.name).toBeInstanceOf(Error);
      expect(await readdir(parent), archive.name).toEqual([]);
      expect(existsSync(dest), archive.name).toBe(false);
    }
    expect(existsSync('/tmp/tr-absolute-escape.txt')).toBe(false);
  }, 120_000);
});

describe('./-prefixed archives', () => {
  const dotted = (): Buffer => gzipTar([{ path: './', type: '5' }, ...base.map((entry) => ({ ...entry, path: `./${entry.path}` }))]);

  it('are published like package/-prefixed ones', async () => {
    const server = await startRegistryServer();
    expect(await upload(server, dotted())).toBe(201);
    expect((await server.store.versions.listVersions()).map((v) => v.name)).toEqual(['hostile']);
  });

  it('unpack exactly like package/-prefixed ones', async () => {
    const plain = await download('plain', gzipTar(base));
    const prefixed = await download('dotted', dotted());
    expect(plain.error).toBeUndefined();
    expect(prefixed.error).toBeUndefined();
    const list = async (dir: string) => (await readdir(dir, { recursive: true })).sort();
    expect(await list(prefixed.dest)).toEqual(await list(plain.dest));
    expect(await readFile(path.join(prefixed.dest, 'template.json'), 'utf8')).toBe(await readFile(path.join(plain.dest, 'template.json'), 'utf8'));
  });
});
