/**
 * A NUL (U+0000) in any text a client sends (a JSON field, a query or path
 * parameter, a multipart part) is a 4xx naming the field, never a 500: PostgreSQL cannot store it,
 * and the embedded store answers the same.
 */
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { describeOnEveryBackend } from '../helpers/backends.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, startServerOn, type StorageTestServer } from '../helpers/registry-server.js';
import { multipartBody } from '../helpers/multipart.js';

const NUL = 'a\u0000b';
const PASSWORD = 'correct horse battery staple';
const example = path.resolve('examples/templates/node-service');

interface Probe {
  what: string;
  method: 'GET' | 'POST' | 'DELETE' | 'PATCH';
  url: string;
  body?: unknown;
  /** The multipart parts instead of a JSON body. */
  parts?: { name: string; filename?: string; disposition?: string; type?: string; body: Buffer | string }[];
  auth: 'admin' | 'publisher' | 'none';
  field: string;
}

describeOnEveryBackend('a NUL in any text field', (openStorage) => {
  it('is a 4xx naming the field on every route that stores or looks up text (unauthenticated logins too), and nothing is stored', async () => {
    const server: StorageTestServer = await startServerOn(await openStorage());
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    const archive = await import('node:fs/promises').then((fs) => fs.readFile(pack.file));
    const probes: Probe[] = [
      { what: 'an account name', method: 'POST', url: '/users', auth: 'admin', body: { email: 'ada@example.com', password: PASSWORD, name: NUL }, field: 'name' },
      { what: 'an account owner', method: 'POST', url: '/users', auth: 'admin', body: { email: 'bob@example.com', password: PASSWORD, owner: NUL }, field: 'owner' },
      { what: 'a login e-mail (no credential needed)', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: `x${NUL}@example.com`, password: PASSWORD }, field: 'email' },
      { what: 'a session login e-mail', method: 'POST', url: '/api/auth/session', auth: 'none', body: { email: `x${NUL}@example.com`, password: PASSWORD }, field: 'email' },
      { what: 'a staged file name', method: 'POST', url: '/files/upload-url', auth: 'publisher', body: { filename: NUL, contentType: 'application/gzip' }, field: 'filename' },
      { what: 'a webhook id', method: 'GET', url: '/webhooks/a%00b', auth: 'admin', field: 'id' },
      { what: 'a webhook id (delete)', method: 'DELETE', url: '/webhooks/a%00b', auth: 'admin', field: 'id' },
      { what: 'a webhook id (deliveries)', method: 'GET', url: '/webhooks/a%00b/deliveries', auth: 'admin', field: 'id' },
      { what: 'a search', method: 'GET', url: '/templates?q=a%00b', auth: 'none', field: 'q' },
      { what: 'a deprecation message', method: 'PATCH', url: `/templates/${pack.manifest.name}/versions/${pack.manifest.version}`, auth: 'publisher', body: { stability: 'deprecated', deprecationMessage: NUL }, field: 'deprecationMessage' },
      {
        what: 'the metadata of a staged file',
        method: 'POST',
        url: '/files',
        auth: 'publisher',
        parts: [
          { name: 'file', filename: 't.tgz', type: 'application/gzip', body: archive },
          { name: 'metadata', body: JSON.stringify({ filename: NUL, contentType: 'application/gzip' }) },
        ],
        field: 'metadata.filename',
      },
      {
        what: "a staged file's own part name (filename*=)",
        method: 'POST',
        url: '/files',
        auth: 'publisher',
        parts: [{ name: 'file', disposition: `form-data; name="file"; filename*=UTF-8''a%00b.tgz`, type: 'application/gzip', body: archive }],
        field: 'metadata.filename',
      },
      {
        what: 'a manifest text',
        method: 'POST',
        url: '/templates',
        auth: 'publisher',
        parts: [
          { name: 'template', filename: 't.tgz', type: 'application/gzip', body: archive },
          { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify({ ...pack.manifest, version: '9.9.9', description: NUL }) },
        ],
        field: 'description',
      },
    ];
    // One version to deprecate.
    const published = multipartBody([
      { name: 'template', filename: 't.tgz', type: 'application/gzip', body: archive },
      { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
    ]);
    const publish = await server.app.inject({ method: 'POST', url: '/templates', payload: published.payload, headers: { 'content-type': published.type, authorization: `Bearer ${server.token}` } });
    expect(publish.statusCode, publish.body).toBe(201);

    for (const probe of probes) {
      const token = probe.auth === 'admin' ? admin : probe.auth === 'publisher' ? server.token : undefined;
      const form = probe.parts ? multipartBody(probe.parts) : undefined;
      const res = await server.app.inject({
        method: probe.method,
        url: probe.url,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(form ? { 'content-type': form.type } : probe.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(form ? { payload: form.payload } : probe.body === undefined ? {} : { payload: JSON.stringify(probe.body) }),
      });
      expect([400, 404, 422], `${probe.what}: ${res.statusCode} ${res.body.slice(0, 300)}`).toContain(res.statusCode);
      expect(res.json().error.details, probe.what).toContainEqual({ field: probe.field, code: 'NUL_CHARACTER', message: expect.stringMatching(/NUL/) });
    }

    // Nothing was stored: no account, no staged file, no version 9.9.9, the message unchanged.
    expect(await server.store.accounts.listUsers()).toEqual([]);
    expect((await server.store.versions.getVersion(pack.manifest.name, '9.9.9'))).toBeUndefined();
    expect((await server.store.versions.getVersion(pack.manifest.name, pack.manifest.version))?.deprecationMessage).toBeUndefined();
  });
});

describe('a NUL the edge did not refuse', () => {
  it("is still the client's 400 when PostgreSQL refuses the text (SQLSTATE 22021 or 22P05), not a 500", async () => {
    const server = await startRegistryServer();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    for (const code of ['22021', '22P05']) {
      server.store.accounts.listUsers = () => Promise.reject(Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code }));
      const res = await server.app.inject({ url: '/users', headers: { authorization: `Bearer ${admin}` } });
      expect(res.statusCode, code).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/NUL/) });
    }
  });
});
