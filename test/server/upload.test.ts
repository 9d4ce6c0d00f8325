import { createHash } from 'node:crypto';
import { cp, open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request as httpRequest } from 'node:http';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { packTemplate } from '../../src/pack/index.js';
import { DEFAULT_RENDER_LIMITS } from '../../src/template/expression.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

async function packed(dir = example, version?: string) {
  if (!version) return packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  // A copy whose change log has a section for the stamped version, as lint (and so the server) wants.
  const copy = await tempDir('tr-copy-');
  await cp(dir, copy, { recursive: true });
  const changelog = path.join(copy, 'CHANGELOG.md');
  await writeFile(changelog, (await readFile(changelog, 'utf8')).replace(/^## /m, `## [${version}] - 2026-01-01\n\n- Stamped by the test\n\n## `));
  return packTemplate(copy, { outDir: await tempDir('tr-pack-'), version });
}

/** A raw multipart POST, for bodies the publish client would never send. */
function rawUpload(
  url: string,
  parts: { name: string; filename?: string; type: string; body: Buffer | string }[],
  headers: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- error envelopes are read field by field below
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }> {
  const boundary = `----tr${Date.now()}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}\r\nContent-Type: ${part.type}\r\n\r\n`,
      ),
      Buffer.from(part.body),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  const body = Buffer.concat(chunks);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/templates`,
      { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': body.length, ...headers } },
      (res) => {
        const received: Buffer[] = [];
        res.on('data', (c: Buffer) => received.push(c));
        res.on('end', () => {
          const text = Buffer.concat(received).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('POST /templates', () => {
  it('publishes the example; registry.json lists it and the archive downloads with the same integrity', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const result = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    expect(result).toMatchObject({ uploaded: true, status: 201 });
    expect(result.location).toBe(`${server.url}/templates/node-service/versions/1.1.0`);

    const registry = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
    expect(schemaErrors('registry-document', registry)).toEqual([]);
    const entry = registry.templates.find((e) => e.id === 'node-service')!;
    expect(entry).toMatchObject({ version: '1.1.0', integrity: pack.integrity, sha256: pack.sha256, size: pack.size });
    expect(entry.downloadUrl).toBe(`${server.url}/templates/node-service/versions/1.1.0/archive`);

    const archive = Buffer.from(await (await fetch(entry.downloadUrl)).arrayBuffer());
    expect(`sha512-${createHash('sha512').update(archive).digest('base64')}`).toBe(pack.integrity);
  });

  it('answers a re-upload with 409 VERSION_EXISTS carrying the stored integrity, and keeps the first', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    const rerun = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    expect(rerun).toMatchObject({ uploaded: false, status: 409 });

    const other = await writeTemplate({ 'template.json': { ...validManifest, name: 'node-service', version: '1.1.0' } });
    const otherPack = await packed(other);
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive: otherPack.file, manifest: otherPack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(409);
    expect((error as PublishError).details).toEqual([
      { field: 'integrity', code: 'VERSION_EXISTS', message: pack.integrity },
      { field: 'state', code: 'VERSION_EXISTS', message: 'complete' },
    ]);
    const stored = await readFile(server.store.archivePath('node-service', '1.1.0'));
    expect(createHash('sha256').update(stored).digest('hex')).toBe(pack.sha256);
  });

  it('refuses a missing or invalid token with 401 and WWW-Authenticate: Bearer', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const parts = [
      { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(pack.file) },
      { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
    ];
    const none = await rawUpload(server.url, parts);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(none.body.error).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(none.body.error.requestId).toBe(none.headers['x-request-id']);
    const wrong = await rawUpload(server.url, parts, { authorization: 'Bearer trg_not_a_token' });
    expect(wrong.status).toBe(401);
  });

  it('refuses with 403 a token limited to another name, and a name claimed by another publisher', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const limited = (await server.store.tokens.createToken({ role: 'publisher', templates: ['other-template'] })).token;
    const error = await publishTemplate({ registryUrl: server.url, token: limited, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect((error as PublishError).status).toBe(403);

    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    const stranger = (await server.store.tokens.createToken({ role: 'publisher' })).token;
    const next = await packed(example, '1.2.0');
    const claimed = await publishTemplate({ registryUrl: server.url, token: stranger, archive: next.file, manifest: next.manifest, retries: 0 }).catch((e: unknown) => e);
    expect((claimed as PublishError).status).toBe(403);
    expect((claimed as PublishError).message).toMatch(/belongs to another publisher/);
    const admin = (await server.store.tokens.createToken({ role: 'admin' })).token;
    expect((await publishTemplate({ registryUrl: server.url, token: admin, archive: next.file, manifest: next.manifest })).uploaded).toBe(true);
  });

  it('lists every bad manifest field in a 422, and answers a manifest missing a field 400', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const bad = { ...pack.manifest, version: '1.0', description: 'short', category: 'cli' };
    const result = await rawUpload(
      server.url,
      [
        { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(pack.file) },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(bad) },
      ],
      { authorization: `Bearer ${server.token}` },
    );
    expect(result.status).toBe(422);
    expect(result.body.error.code).toBe('VALIDATION_ERROR');
    const details = result.body.error.details.map((d: { field: string; code: string }) => `${d.field}:${d.code}`).sort();
    expect(details).toEqual(['category:ENUM', 'description:MIN_LENGTH', 'version:PATTERN']);
    // A missing field: 400, every problem still listed (the spec's "400: invalid JSON or missing fields").
    const lacking = await rawUpload(
      server.url,
      [
        { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(pack.file) },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify({ ...bad, name: undefined }) },
      ],
      { authorization: `Bearer ${server.token}` },
    );
    expect(lacking.status).toBe(400);
    expect(lacking.body.error.code).toBe('VALIDATION_ERROR');
    expect(lacking.body.error.details.map((d: { field: string; code: string }) => `${d.field}:${d.code}`).sort()).toEqual(['category:ENUM', 'description:MIN_LENGTH', 'name:REQUIRED', 'version:PATTERN']);
  });

  it('answers 400 for a missing part or a manifest that is not JSON, and 415 for another content type', async () => {
    const server = await startRegistryServer();
    const auth = { authorization: `Bearer ${server.token}` };
    const missing = await rawUpload(server.url, [{ name: 'manifest', type: 'application/json', body: '{}' }], auth);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toContainEqual(expect.objectContaining({ field: 'template', code: 'REQUIRED' }));
    const notJson = await rawUpload(
      server.url,
      [
        { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: Buffer.from('x') },
        { name: 'manifest', type: 'application/json', body: '{nope' },
      ],
      auth,
    );
    expect(notJson.status).toBe(400);
    const json = await fetch(`${server.url}/templates`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(415);
    expect(((await json.json()) as { error: { code: string } }).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses an archive that is not a gzip tar, lacks required files or disagrees with the manifest', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const auth = { authorization: `Bearer ${server.token}` };
    const manifestPart = { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) };
    const garbage = await rawUpload(server.url, [{ name: 'template', filename: 'a.tgz', type: 'application/gzip', body: Buffer.from('not a tarball') }, manifestPart], auth);
    expect(garbage.status).toBe(422);
    expect(garbage.body.error.details[0]).toMatchObject({ field: 'template', code: 'INVALID_ARCHIVE' });

    const wrongVersion = await packed(example, '9.9.9');
    const mismatch = await rawUpload(server.url, [{ name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(wrongVersion.file) }, manifestPart], auth);
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error.details).toContainEqual(expect.objectContaining({ code: 'MISMATCH' }));

    const noReadme = await writeTemplate({ 'template.json': { ...validManifest, name: 'node-service', version: '1.1.0' }, 'README.md': null });
    const incomplete = await packed(noReadme);
    const lacking = await rawUpload(server.url, [{ name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(incomplete.file) }, manifestPart], auth);
    expect(lacking.status).toBe(422);
    expect(lacking.body.error.details).toContainEqual(expect.objectContaining({ field: 'template/README.md', code: 'MISSING_FILE' }));
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('refuses with 422, naming the file, a content file create could not render (over the Liquid parse limit)', async () => {
    const server = await startRegistryServer();
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'huge-text' }, 'template/data/big.txt': 'a'.repeat(DEFAULT_RENDER_LIMITS.parseLimit + 1) });
    const pack = await packed(dir);
    const auth = { authorization: `Bearer ${server.token}` };
    const answer = await rawUpload(
      server.url,
      [
        { name: 'template', filename: 'a.tgz', type: 'application/gzip', body: await readFile(pack.file) },
        { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
      ],
      auth,
    );
    expect(answer.status).toBe(422);
    expect(answer.body.error.details).toEqual([
      expect.objectContaining({ field: 'template/template/data/big.txt', message: expect.stringContaining(`more than Liquid's parse limit of ${DEFAULT_RENDER_LIMITS.parseLimit}`) }),
    ]);
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('answers 413 for an archive over the size limit and stores nothing', async () => {
    const server = await startRegistryServer();
    const pack = await packed();
    const big = path.join(await tempDir(), 'big.tgz');
    const handle = await open(big, 'w');
    await handle.truncate(51 * 1024 * 1024);
    await handle.close();
    const error = await publishTemplate({ registryUrl: server.url, token: server.token, archive: big, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect((error as PublishError).status).toBe(413);
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('lets exactly one of ten concurrent uploads of one version win; the others end with 409 once it is complete', async () => {
    const server = await startRegistryServer();
    const packs = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'race', version: '1.0.0' }, 'README.md': `# copy ${i}\n` });
        return packed(dir);
      }),
    );
    const results = await Promise.all(
      packs.map((p) =>
        // While the winner is being stored the others get 503 VERSION_IN_PROGRESS, and retry.
        publishTemplate({ registryUrl: server.url, token: server.token, archive: p.file, manifest: p.manifest, retries: 20, minDelayMs: 5, maxDelayMs: 20 }).then(
          (r) => r.status,
          (e: PublishError) => e.status,
        ),
      ),
    );
    expect(results.filter((s) => s === 201)).toHaveLength(1);
    expect(results.filter((s) => s === 409)).toHaveLength(9);
    expect(await server.store.versions.listVersions()).toHaveLength(1);
  });

  it('answers If-None-Match with the current ETag by 304', async () => {
    const server = await startRegistryServer();
    const first = await fetch(`${server.url}/registry.json`);
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"/);
    const second = await fetch(`${server.url}/registry.json`, { headers: { 'if-none-match': etag } });
    expect(second.status).toBe(304);
  });

  it('takes a token created while the server runs without a restart', async () => {
    const server = await startRegistryServer();
    const other = await openSqliteStorage(server.storeDir);
    const { token } = await other.tokens.createToken({ role: 'publisher', templates: ['node-service'] });
    await other.close();
    const pack = await packed();
    expect((await publishTemplate({ registryUrl: server.url, token, archive: pack.file, manifest: pack.manifest })).uploaded).toBe(true);
  });

  it('stores tokens hashed, never in clear', async () => {
    const server = await startRegistryServer();
    const { token } = (await server.store.tokens.createToken({ role: 'admin' }));
    for (const file of ['registry.sqlite', 'registry.sqlite-wal']) {
      const bytes = await readFile(path.join(server.storeDir, file)).catch(() => Buffer.alloc(0));
      expect(bytes.includes(Buffer.from(token)), file).toBe(false);
    }
    expect(bytesContainHash(await readFile(path.join(server.storeDir, 'registry.sqlite-wal')).catch(() => Buffer.alloc(0)), token) ||
      bytesContainHash(await readFile(path.join(server.storeDir, 'registry.sqlite')), token)).toBe(true);
  });
});

function bytesContainHash(bytes: Buffer, token: string): boolean {
  return bytes.includes(createHash('sha256').update(token).digest());
}
