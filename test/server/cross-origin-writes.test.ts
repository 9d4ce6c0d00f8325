/**
 * A write authenticated by the session cookie (tr_session) checks where the
 * browser says it comes from (Sec-Fetch-Site, else Origin): a page of another site, or of another
 * port of the registry's host (same-site: SameSite=Strict still sends the cookie), cannot publish,
 * change or end anything as the logged-in user, with JSON or with a multipart form.
 */
import { readFile } from 'node:fs/promises';

import { expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { describeOnEveryBackend } from '../helpers/backends.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startServerOn, type StorageTestServer } from '../helpers/registry-server.js';
import { multipartBody } from '../helpers/multipart.js';

const PASSWORD = 'correct horse battery staple';

async function packed(version: string) {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'csrf-demo', version }, 'template/README.md': `# ${version}\n` });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  return multipartBody([
    { name: 'template', filename: 'template.tgz', type: 'application/gzip', body: await readFile(pack.file) },
    { name: 'manifest', filename: 'template.json', type: 'application/json', body: JSON.stringify(pack.manifest) },
  ]);
}

describeOnEveryBackend('cookie-authenticated writes from another origin', (openStorage) => {
  it('are refused with 403 (publish by multipart form, lifecycle change, logout); the same writes from the registry’s own origin, or with a token, go through', async () => {
    const server: StorageTestServer = await startServerOn(await openStorage());
    const own = server.url.replace('localhost', '127.0.0.1');
    const otherPort = `http://127.0.0.1:${Number(new URL(own).port) + 1}`;
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const created = await server.app.inject({ method: 'POST', url: '/users', headers: { authorization: `Bearer ${admin}` }, payload: { email: 'ada@example.com', password: PASSWORD } });
    expect(created.statusCode).toBe(201);
    const session = await server.app.inject({ method: 'POST', url: '/api/auth/session', payload: { email: 'ada@example.com', password: PASSWORD } });
    expect(session.statusCode).toBe(204);
    const cookie = String(session.headers['set-cookie']).split(';')[0] ?? '';

    const publish = async (version: string, headers: Record<string, string>) => {
      const form = await packed(version);
      return server.app.inject({ method: 'POST', url: '/templates', payload: form.payload, headers: { cookie, 'content-type': form.type, ...headers } });
    };
    const foreign: Record<string, string>[] = [
      { origin: otherPort },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'same-site', origin: otherPort },
      { 'sec-fetch-site': 'cross-site' },
      // Sec-Fetch-Site decides when a browser sends it, whatever Origin says.
      { 'sec-fetch-site': 'same-site', origin: own },
    ];
    for (const headers of foreign) {
      const refused = await publish('1.0.0', headers);
      expect(refused.statusCode, `${JSON.stringify(headers)}: ${refused.body.slice(0, 300)}`).toBe(403);
      expect(refused.json().error.details[0]).toMatchObject({ code: 'CROSS_ORIGIN' });
    }
    expect(await server.store.versions.getVersion('csrf-demo', '1.0.0')).toBeUndefined();

    // From the registry's own pages (or a client that is not a browser): published.
    expect((await publish('1.0.0', { origin: own })).statusCode).toBe(201);
    expect((await publish('1.1.0', { 'sec-fetch-site': 'same-origin' })).statusCode).toBe(201);
    expect((await publish('1.2.0', {})).statusCode).toBe(201);

    // A JSON write: the same rule.
    const patch = (headers: Record<string, string>) =>
      server.app.inject({ method: 'PATCH', url: '/templates/csrf-demo/versions/1.0.0', payload: { stability: 'deprecated' }, headers: { cookie, ...headers } });
    expect((await patch({ origin: otherPort })).statusCode).toBe(403);
    expect((await server.store.versions.getVersion('csrf-demo', '1.0.0'))?.stability).toBeUndefined();
    expect((await patch({ origin: own })).statusCode).toBe(200);

    // A token is not sent by a browser on its own: a foreign Origin does not matter to it.
    const withToken = await server.app.inject({ method: 'PATCH', url: '/templates/csrf-demo/versions/1.1.0', payload: { stability: 'deprecated' }, headers: { authorization: `Bearer ${admin}`, origin: otherPort } });
    expect(withToken.statusCode).toBe(200);

    // Reads stay open to the cookie from anywhere (nothing changes).
    expect((await server.app.inject({ url: '/users/me', headers: { cookie, origin: otherPort } })).statusCode).toBe(200);

    // Another origin cannot end the session either; the registry's own page can.
    expect((await server.app.inject({ method: 'DELETE', url: '/api/auth/session', headers: { cookie, 'sec-fetch-site': 'cross-site' } })).statusCode).toBe(403);
    expect((await server.app.inject({ url: '/users/me', headers: { cookie } })).statusCode).toBe(200);
    expect((await server.app.inject({ method: 'DELETE', url: '/api/auth/session', headers: { cookie, origin: own } })).statusCode).toBe(204);
    expect((await server.app.inject({ url: '/users/me', headers: { cookie } })).statusCode).toBe(401);
  });
});
