import type { RegistryDocument } from '../../src/core/schema-types.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, readFile, readdir, stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { freePort } from '../helpers/registry-server.js';
import { serveProcess } from '../helpers/serve-process.js';

const bin = path.resolve('bin/template-registry.js');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

async function serve(store: string, port: number): Promise<ChildProcess> {
  const child = await serveProcess(store, port);
  children.push(child);
  return child;
}

/** Starts an upload that sends its headers and part of its body, then stalls. */
function stalledUpload(url: string, token: string, archive: Buffer, manifest: object): void {
  const boundary = 'stall-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="manifest"; filename="template.json"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(manifest)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="template"; filename="t.tgz"\r\nContent-Type: application/gzip\r\n\r\n`,
  );
  const req = httpRequest(`${url}/templates`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': head.length + archive.length + 100,
    },
  });
  req.on('error', () => undefined);
  req.write(head);
  req.write(archive.subarray(0, Math.floor(archive.length / 2)));
}

describe('template-registry serve', () => {
  it('serves an empty store; publish with the CLI; registry.json lists the entry whose archive matches its integrity', async () => {
    const store = await tempDir('tr-serve-store-');
    const setup = await openSqliteStorage(store);
    const { token } = await setup.tokens.createToken({ role: 'publisher' });
    await setup.close();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    await serve(store, port);
    const empty = (await (await fetch(`${url}/registry.json`)).json()) as RegistryDocument;
    expect(empty.templates).toEqual([]);

    const published = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [bin, 'publish', path.resolve('examples/templates/node-service'), '--registry', url], {
        env: { ...process.env, TEMPLATE_REGISTRY_TOKEN: token },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      child.on('close', (code) => resolve({ code, output }));
    });
    expect(published.code, published.output).toBe(0);
    expect(published.output).not.toContain(token);

    const registry = (await (await fetch(`${url}/registry.json`)).json()) as RegistryDocument;
    const entry = registry.templates.find((e) => e.id === 'node-service');
    expect(entry?.version).toBe('1.1.0');
    const archive = Buffer.from(await (await fetch(entry?.downloadUrl ?? '')).arrayBuffer());
    expect(`sha512-${createHash('sha512').update(archive).digest('base64')}`).toBe(entry?.integrity);
  }, 60_000);
});

describe('crash safety', () => {
  it('a server killed with SIGKILL during uploads restarts with a registry.json that lists only complete uploads', async () => {
    const store = await tempDir('tr-crash-store-');
    const setup = await openSqliteStorage(store);
    const { token } = await setup.tokens.createToken({ role: 'admin' });
    await setup.close();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = await serve(store, port);

    const done = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'complete-one' } }), { outDir: await tempDir() });
    await publishTemplate({ registryUrl: url, token, archive: done.file, manifest: done.manifest });
    for (let i = 0; i < 3; i++) {
      const partial = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: `partial-${i}` } }), { outDir: await tempDir() });
      stalledUpload(url, token, await readFile(partial.file), partial.manifest);
    }
    // Killed while the three uploads are being received: their temp archives are in the store (each beside the folder it is unpacked into as it arrives).
    await vi.waitFor(async () => expect((await readdir(path.join(store, 'tmp'))).filter((name) => name.endsWith('.tgz'))).toHaveLength(3), { timeout: 10_000 });
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    await serve(store, port);
    const registry = (await (await fetch(`${url}/registry.json`)).json()) as RegistryDocument;
    expect(schemaErrors('registry-document', registry)).toEqual([]);
    expect(registry.templates.map((e: { id: string }) => e.id)).toEqual(['complete-one']);
    const onDisk = JSON.parse(await readFile(path.join(store, 'public', 'registry.json'), 'utf8'));
    expect(onDisk.templates.map((e: { id: string }) => e.id)).toEqual(['complete-one']);
    // Nothing the killed uploads left behind survives the restart: neither their archives nor their unpacked folders.
    expect(await readdir(path.join(store, 'tmp'))).toEqual([]);
  }, 60_000);

  it('completes a reserved upload whose files are in place and drops one whose archive is missing', async () => {
    const dir = await tempDir('tr-recover-');
    const store = await openSqliteStorage(dir);
    const { record } = await store.tokens.createToken({ role: 'admin' });
    const a = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'kept' } }), { outDir: await tempDir() });
    const b = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: 'dropped' } }), { outDir: await tempDir() });
    for (const p of [a, b]) {
      await store.versions.reserveVersion({ name: p.manifest.name, version: '1.0.0', integrity: p.integrity, sha256: p.sha256, size: p.size, owner: record.owner }, record);
    }
    // "kept" crashed after its files were moved into place, "dropped" before.
    const temp = store.versions.uploadTempPath('.tgz');
    await copyFile(a.file, temp);
    await store.versions.commitVersion('kept', '1.0.0', temp, a.manifest);
    await store.close();
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.prepare("UPDATE versions SET state = 'pending' WHERE name = 'kept'").run();
    db.close();

    const reopened = await openSqliteStorage(dir);
    await reopened.recover();
    expect((await reopened.versions.listVersions()).map((v) => v.name)).toEqual(['kept']);
    expect(await reopened.versions.getVersion('dropped', '1.0.0')).toBeUndefined();
    await expect(stat(reopened.archivePath('dropped', '1.0.0'))).rejects.toThrow();
    await reopened.close();
  });
});
