import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { createServer, type RegistryServer } from '../../src/server/index.js';
import { openSqliteStorage, type RegistryStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const servers: RegistryServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.app.close()));
});

/** A server whose log lines are collected, on a storage some of whose calls may be replaced. */
async function serverWith(change: (storage: RegistryStorage) => RegistryStorage = (s) => s): Promise<{ server: RegistryServer; logs: Record<string, unknown>[] }> {
  const logs: Record<string, unknown>[] = [];
  const storage = change(await openSqliteStorage(await tempDir('tr-guard-')));
  const server = await createServer({
    store: storage,
    publicUrl: 'http://registry.test',
    logger: { level: 'error', stream: { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) } },
  });
  servers.push(server);
  return { server, logs };
}

describe('schemas declared on routes', () => {
  it('answers a query string that breaks its schema with 400 VALIDATION_ERROR naming the parameter', async () => {
    const { server } = await serverWith();
    const res = await server.app.inject({ url: '/templates?limit=0&page=abc' });
    expect(res.statusCode).toBe(400);
    const { error } = res.json();
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.details.map((d: { field: string }) => d.field).sort()).toEqual(['limit', 'page']);
    expect(error.details.find((d: { field: string }) => d.field === 'limit')).toMatchObject({ code: 'MINIMUM', message: expect.stringMatching(/>= 1/) });
  });

  it('answers a body that is not an object with 400 BAD_REQUEST, one missing fields with 400 and one that breaks its schema with 422, every field named', async () => {
    const { server } = await serverWith();
    const notAnObject = await server.app.inject({ method: 'POST', url: '/events', payload: '"download"', headers: { 'content-type': 'application/json' } });
    expect(notAnObject.statusCode).toBe(400);
    expect(notAnObject.json().error).toMatchObject({ code: 'BAD_REQUEST', message: 'the body must be a JSON analytics event' });

    const missing = await server.app.inject({ method: 'POST', url: '/events', payload: { type: 'download', templateId: 'Bad Id', version: '1' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatchObject({ code: 'VALIDATION_ERROR', message: 'the event is invalid' });
    expect(missing.json().error.details).toContainEqual(expect.objectContaining({ field: 'timestamp', code: 'REQUIRED' }));

    const invalid = await server.app.inject({ method: 'POST', url: '/events', payload: { type: 'download', templateId: '', version: '1', timestamp: 'now', userAgent: 'x', platform: 'linux' } });
    expect(invalid.statusCode).toBe(422);
    const { error } = invalid.json();
    expect(error).toMatchObject({ code: 'VALIDATION_ERROR', message: 'the event is invalid' });
    expect(error.details.length).toBeGreaterThan(1);
    for (const detail of error.details) expect(detail).toEqual({ field: expect.any(String), message: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) });
  });
});

describe('an unexpected failure', () => {
  it('answers 500 INTERNAL_ERROR in the envelope, logs the error, and shows no stack or internal message', async () => {
    const { server: broken, logs } = await serverWith((storage) => ({
      ...storage,
      versions: {
        getVersion: () => Promise.reject(new Error('disk on fire at /secret/path')),
        listVersions: () => storage.versions.listVersions(),
        listPublished: (known) => storage.versions.listPublished(known),
        reserveVersion: (v, t) => storage.versions.reserveVersion(v, t),
        commitVersion: (n, v, f, m) => storage.versions.commitVersion(n, v, f, m),
        abortVersion: (n, v) => storage.versions.abortVersion(n, v),
        readManifest: (n, v) => storage.versions.readManifest(n, v),
        openArchive: (n, v) => storage.versions.openArchive(n, v),
        readAttestation: (n, v) => storage.versions.readAttestation(n, v),
        uploadTempPath: (suffix) => storage.versions.uploadTempPath(suffix),
        updateLifecycle: (n, v, c) => storage.versions.updateLifecycle(n, v, c),
        listLifecycles: () => storage.versions.listLifecycles(),
        purgeVersion: (n, v, now) => storage.versions.purgeVersion(n, v, now),
        purgedAt: (n, v) => storage.versions.purgedAt(n, v),
      },
    }));
    const { token } = await broken.store.tokens.createToken({ role: 'admin' });
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    await broken.app.listen({ host: '127.0.0.1', port: 0 });
    const address = broken.app.addresses()[0] as { port: number };
    const error = await publishTemplate({ registryUrl: `http://127.0.0.1:${address.port}`, token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(500);
    expect((error as PublishError).code).toBe('INTERNAL_ERROR');
    expect((error as PublishError).message).toContain('unexpected server error');
    expect((error as PublishError).message).not.toContain('/secret/path');
    expect(logs.some((line) => JSON.stringify(line).includes('disk on fire'))).toBe(true);
  });
});

describe('a commit that fails', () => {
  it('answers 5xx, leaves no pending version, archive, manifest or temp file, and a retry of the same bytes succeeds', async () => {
    const server = await startRegistryServer({ forceCloseConnections: true });
    const pack = await packTemplate(path.resolve('examples/templates/node-service'), { outDir: await tempDir() });
    const name = pack.manifest.name;
    const version = pack.manifest.version;
    // A file where the archive's folder goes: the manifest is written, then moving the archive fails.
    await mkdir(path.join(server.storeDir, 'archives'), { recursive: true });
    await writeFile(path.join(server.storeDir, 'archives', name), 'in the way');

    const upload = () => publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    const error = await upload().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBeGreaterThanOrEqual(500);
    expect(await server.store.versions.getVersion(name, version)).toBeUndefined();
    expect(await readdir(path.join(server.storeDir, 'manifests', name)).catch(() => [])).toEqual([]);
    expect(await readdir(path.join(server.storeDir, 'tmp'))).toEqual([]);

    await rm(path.join(server.storeDir, 'archives', name));
    const retried = await upload();
    expect(retried).toMatchObject({ uploaded: true, status: 201 });
    expect(await server.store.versions.getVersion(name, version)).toMatchObject({ state: 'complete', integrity: pack.integrity });
  });
});
