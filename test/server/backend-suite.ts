/**
 * The backend-independent behaviour of the registry server, through HTTP, run
 * against every storage (the embedded store, PostgreSQL with a bucket or a folder) from this one
 * suite: publish and its rules (duplicate 409, another owner 403), the read routes and archive
 * bytes, registry.json, the lifecycle (deprecate, yank, latest selection), a signed webhook
 * delivery, analytics from an event, and an account's access token publishing.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { verifyWebhookSignature } from '../../src/server/webhooks.js';
import type { RegistryStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { startServerOn, type StorageTestServer } from '../helpers/registry-server.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { deliveriesSettled } from '../helpers/outbox.js';

const SECRET = 'backend-suite-signing-secret';
const PASSWORD = 'correct horse battery staple';

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field
  body: any;
}

async function call(server: StorageTestServer, method: string, route: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url}${route}`, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as unknown) };
}

/** A packed template `name@version` (its change log has the version's section, as lint wants). */
async function packed(name: string, version: string, readme = `# ${name} ${version}\n`) {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version }, 'template/README.md': readme });
  return packTemplate(dir, { outDir: await tempDir('tr-pack-') });
}

async function publish(server: StorageTestServer, pack: Awaited<ReturnType<typeof packed>>, token = server.token) {
  return publishTemplate({ registryUrl: server.url, token, archive: pack.file, manifest: pack.manifest, retries: 0 });
}

async function formOf(pack: Awaited<ReturnType<typeof packed>>): Promise<FormData> {
  const form = new FormData();
  form.append('manifest', new Blob([JSON.stringify(pack.manifest)], { type: 'application/json' }), 'template.json');
  form.append('template', new Blob([await readFile(pack.file)], { type: 'application/gzip' }), 'template.tgz');
  return form;
}

async function registryDocument(server: StorageTestServer): Promise<RegistryDocument> {
  const response = await fetch(`${server.url}/registry.json`);
  expect(response.status).toBe(200);
  return (await response.json()) as RegistryDocument;
}

/**
 * The shared suite, as `describe(name)`. `openStorage` opens a fresh, empty storage for each test
 * (the server closes it when the test ends).
 */
export function backendSuite(name: string, openStorage: () => Promise<RegistryStorage>): void {
  describe(`registry server on ${name}`, () => {
    const start = async (): Promise<StorageTestServer> =>
      // No retention pass of its own: the tests record old events and prune them themselves.
      startServerOn(await openStorage(), { webhooks: { retryDelaysMs: [20, 40] }, rebuildRetry: { minDelayMs: 20, maxDelayMs: 100 }, eventRetentionDays: 0 });

    it('publishes, refuses a duplicate (409) and another owner (403), serves the read routes, the archive bytes, registry.json and analytics', async () => {
      const server = await start();
      const pack = await packed('suite-read', '1.0.0');
      const result = await publish(server, pack);
      expect(result).toMatchObject({ uploaded: true, status: 201 });

      // The same version again: 409 (the first kept), by the same or another owner.
      expect(await publish(server, pack)).toMatchObject({ uploaded: false, status: 409 });
      const other = await packed('suite-read', '1.0.0', '# other bytes\n');
      const duplicate = await publish(server, other).catch((error: unknown) => error);
      expect(duplicate).toBeInstanceOf(PublishError);
      expect((duplicate as PublishError).status).toBe(409);
      const { token: stranger } = await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' });
      const forbidden = await publish(server, await packed('suite-read', '1.1.0'), stranger).catch((error: unknown) => error);
      expect(forbidden).toBeInstanceOf(PublishError);
      expect((forbidden as PublishError).status).toBe(403);

      // Read routes.
      const list = await call(server, 'GET', '/templates');
      expect(list.status).toBe(200);
      expect(list.body.data.map((item: { id: string }) => item.id)).toEqual(['suite-read']);
      const template = await call(server, 'GET', '/templates/suite-read');
      expect(template.body.data).toMatchObject({ id: 'suite-read', version: '1.0.0', integrity: pack.integrity });
      const versions = await call(server, 'GET', '/templates/suite-read/versions');
      expect(versions.body.data.map((entry: { version: string }) => entry.version)).toEqual(['1.0.0']);
      expect((await call(server, 'GET', '/templates/suite-read/versions/1.0.0')).body.data).toMatchObject({ version: '1.0.0', sha256: pack.sha256, size: pack.size });
      expect((await call(server, 'GET', '/templates/no-such-template')).status).toBe(404);

      // registry.json lists the version with the archive's integrity.
      const document = await registryDocument(server);
      const entry = document.templates.find((e) => e.id === 'suite-read');
      expect(entry).toMatchObject({ version: '1.0.0', integrity: pack.integrity, sha256: pack.sha256, size: pack.size });
      expect(entry?.downloadUrl).toBe(`${server.url}/templates/suite-read/versions/1.0.0/archive`);

      // Analytics: a download event is counted (before any archive download from this client, which would be the same client's same day).
      const event = await call(server, 'POST', '/events', { body: { type: 'download', templateId: 'suite-read', version: '1.0.0', timestamp: new Date().toISOString(), userAgent: 'backend-suite', platform: 'linux' } });
      expect(event.status).toBe(202);
      const analytics = await call(server, 'GET', '/templates/suite-read/analytics');
      expect(analytics.status).toBe(200);
      expect(analytics.body.data).toMatchObject({ templateId: 'suite-read', version: '1.0.0', metrics: { downloads: { total: 1 } } });

      // The archive: the published bytes, byte for byte.
      const archive = await fetch(entry?.downloadUrl ?? '');
      expect(archive.status).toBe(200);
      const bytes = Buffer.from(await archive.arrayBuffer());
      expect(bytes.equals(await readFile(pack.file))).toBe(true);
      expect(`sha512-${createHash('sha512').update(bytes).digest('base64')}`).toBe(pack.integrity);
    }, 30_000);

    it('publishes 20 distinct templates at once: every upload answers 201 listed, and registry.json lists all 20 (none lost to a shared build)', async () => {
      const server = await start();
      const packs = await Promise.all(Array.from({ length: 20 }, (_, i) => packed(`suite-many-${i}`, '1.0.0')));
      const forms = await Promise.all(packs.map((pack) => formOf(pack)));
      const answers = await Promise.all(
        forms.map(async (form) => {
          const response = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: form });
          return { status: response.status, body: (await response.json()) as { data: { id: string; version: string }; meta: { listed?: boolean } } };
        }),
      );
      expect(answers.map((answer) => answer.status)).toEqual(packs.map(() => 201));
      // 201 with listed: each answer came after a build that saw its version.
      expect(answers.map((answer) => answer.body.meta.listed)).toEqual(packs.map(() => true));
      const listed = (await registryDocument(server)).templates.map((entry) => `${entry.id}@${entry.version}`).sort();
      expect(listed).toEqual(packs.map((pack) => `${pack.manifest.name}@1.0.0`).sort());
      for (const pack of packs) {
        expect((await call(server, 'GET', `/templates/${pack.manifest.name}`)).body.data).toMatchObject({ version: '1.0.0', integrity: pack.integrity });
      }
    }, 60_000);

    it('deprecates (PATCH) and yanks (DELETE) versions; the latest skips the yanked one; registry.json shows both', async () => {
      const server = await start();
      for (const version of ['1.0.0', '1.1.0']) expect((await publish(server, await packed('suite-life', version))).status).toBe(201);
      const route = '/templates/suite-life/versions';
      expect((await call(server, 'GET', '/templates/suite-life')).body.data.version).toBe('1.1.0');

      const deprecated = await call(server, 'PATCH', `${route}/1.0.0`, { token: server.token, body: { stability: 'deprecated', deprecationMessage: 'use 1.1' } });
      expect(deprecated.status).toBe(200);
      expect(deprecated.body.data).toMatchObject({ version: '1.0.0', stability: 'deprecated', deprecationMessage: 'use 1.1' });
      const { token: stranger } = await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' });
      expect((await call(server, 'DELETE', `${route}/1.1.0`, { token: stranger })).status).toBe(403);
      const yanked = await call(server, 'DELETE', `${route}/1.1.0`, { token: server.token });
      expect(yanked.status).toBe(200);
      expect(yanked.body.data).toMatchObject({ version: '1.1.0', yanked: true });

      expect((await call(server, 'GET', '/templates/suite-life')).body.data.version).toBe('1.0.0');
      expect((await call(server, 'GET', route)).body.data.map((entry: { version: string }) => entry.version)).toEqual(['1.0.0']);
      expect((await call(server, 'GET', `${route}?include=yanked`)).body.data.map((entry: { version: string }) => entry.version)).toEqual(['1.1.0', '1.0.0']);
      // A yanked version stays downloadable by its exact version.
      expect((await fetch(`${server.url}${route}/1.1.0/archive`)).status).toBe(200);
      const document = await registryDocument(server);
      expect(document.templates.find((e) => e.id === 'suite-life' && e.version === '1.0.0')).toMatchObject({ stability: 'deprecated', deprecationMessage: 'use 1.1' });
      expect(document.templates.find((e) => e.id === 'suite-life' && e.version === '1.1.0')).toMatchObject({ yanked: true });
    }, 30_000);

    it('keeps one spelling per version: a yanked 1.0.0 never comes back, 01.0.0 is refused as invalid (422) and as a route parameter (400)', async () => {
      const server = await start();
      const pack = await packed('suite-spelling', '1.0.0');
      expect((await publish(server, pack)).status).toBe(201);
      expect((await call(server, 'DELETE', '/templates/suite-spelling/versions/1.0.0', { token: server.token })).status).toBe(200);

      const again = await publish(server, await packed('suite-spelling', '1.0.0', '# new bytes\n')).catch((error: unknown) => error);
      expect(again).toBeInstanceOf(PublishError);
      expect((again as PublishError).status).toBe(409);
      expect((again as PublishError).message).toMatch(/was yanked/);

      // The same version under another spelling: not a new version, not a version at all.
      for (const spelling of ['01.0.0', '1.00.0', '1.0.00']) {
        const respelled = await publish(server, { ...pack, manifest: { ...pack.manifest, version: spelling } }).catch((error: unknown) => error);
        expect(respelled).toBeInstanceOf(PublishError);
        expect((respelled as PublishError).status).toBe(422);
        expect((respelled as PublishError).details).toContainEqual(
          expect.objectContaining({ field: 'version', message: `must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "${spelling}")` }),
        );
        expect((await call(server, 'GET', `/templates/suite-spelling/versions/${spelling}`)).status).toBe(400);
      }
      expect((await server.store.versions.listVersions()).map((v) => v.version)).toEqual(['1.0.0']);
      expect((await registryDocument(server)).templates.filter((e) => e.id === 'suite-spelling')).toEqual([expect.objectContaining({ version: '1.0.0', yanked: true })]);
    }, 30_000);

    it('delivers a signed template.published to a registered webhook; an account logs in and its access token publishes', async () => {
      const server = await start();
      const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
      const receiver = await startReceiver();
      const registered = await call(server, 'POST', '/webhooks', { token: admin, body: { url: receiver.url, events: ['template.published'], secret: SECRET, active: true } });
      expect(registered.status).toBe(201);

      const created = await call(server, 'POST', '/users', { token: admin, body: { email: 'ada@example.com', password: PASSWORD, owner: 'ada' } });
      expect(created.status).toBe(201);
      const login = await call(server, 'POST', '/api/auth/login', { body: { email: 'ada@example.com', password: PASSWORD } });
      expect(login.status).toBe(200);
      const { accessToken } = login.body.data as { accessToken: string };

      const pack = await packed('suite-account', '1.0.0');
      expect(await publish(server, pack, accessToken)).toMatchObject({ uploaded: true, status: 201 });
      expect(await server.store.tokens.ownerOf('suite-account')).toBe('ada');

      const received = await receiver.request(1);
      expect(received.headers['x-webhook-event']).toBe('template.published');
      expect(verifyWebhookSignature(received.body, String(received.headers['x-webhook-signature']), SECRET)).toBe(true);
      expect(JSON.parse(received.body.toString('utf8'))).toMatchObject({ event: 'template.published', data: { id: 'suite-account', version: '1.0.0' } });
      await deliveriesSettled(server.store.webhooks);
      const deliveries = await call(server, 'GET', `/webhooks/${registered.body.data.id as string}/deliveries`, { token: admin });
      expect(deliveries.body.data).toEqual([expect.objectContaining({ event: 'template.published', status: 200 })]);
    }, 30_000);

    it('PUT /webhooks/{id} rotates the secret: both sign for the overlap, the delivery log stays (store migration: previous secret columns)', async () => {
      const server = await start();
      const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
      const receiver = await startReceiver();
      const registered = await call(server, 'POST', '/webhooks', { token: admin, body: { url: receiver.url, events: ['template.deprecated'], secret: SECRET, active: true } });
      const id = registered.body.data.id as string;
      await server.context.webhooks.enqueue('template.deprecated', { id: 'suite-rotation', version: '1.0.0' });
      await deliveriesSettled(server.store.webhooks);

      const replaced = await call(server, 'PUT', `/webhooks/${id}`, { token: admin, body: { url: receiver.url, events: ['template.deprecated'], secret: 'suite-new-secret', active: true } });
      expect(replaced.status).toBe(200);
      expect(await server.store.webhooks.getWebhook(id)).toMatchObject({ secret: 'suite-new-secret', previousSecret: SECRET, previousSecretExpiresAt: expect.any(String) });
      await server.context.webhooks.enqueue('template.deprecated', { id: 'suite-rotation', version: '1.1.0' });
      await deliveriesSettled(server.store.webhooks);
      const rotated = await receiver.request(2);
      expect(verifyWebhookSignature(rotated.body, String(rotated.headers['x-webhook-signature']), 'suite-new-secret')).toBe(true);
      expect(verifyWebhookSignature(rotated.body, String(rotated.headers['x-webhook-signature-previous']), SECRET)).toBe(true);

      const off = await call(server, 'PATCH', `/webhooks/${id}`, { token: admin, body: { active: false } });
      expect(off.body.data).toMatchObject({ id, active: false, createdAt: registered.body.data.createdAt });
      expect((await call(server, 'GET', `/webhooks/${id}/deliveries`, { token: admin })).body.data).toHaveLength(2);
    }, 30_000);

    it('purges a version for good (admin only, 204): archive, manifest and entry gone, its name and version never reusable; DELETE without /purge stays the yank', async () => {
      const server = await start();
      const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
      const packs = { old: await packed('suite-purge', '1.0.0'), leaked: await packed('suite-purge', '1.1.0', '# a leaked secret\n') };
      for (const pack of Object.values(packs)) expect((await publish(server, pack)).status).toBe(201);
      const route = '/templates/suite-purge/versions/1.1.0';
      const staticArchive = 'archives/suite-purge/1.1.0.tgz';
      const output = server.store.staticOutput;
      if (output) await vi.waitFor(async () => expect((await output.inventory()).has(staticArchive)).toBe(true), { timeout: 10_000, interval: 50 });

      // Only an admin purges: not the template's owner, nor an unknown version.
      expect((await call(server, 'DELETE', `${route}/purge`, { token: server.token })).status).toBe(403);
      expect((await call(server, 'DELETE', '/templates/suite-purge/versions/9.9.9/purge', { token: admin })).status).toBe(404);
      const purged = await fetch(`${server.url}${route}/purge`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
      expect(purged.status).toBe(204);
      expect(await purged.text()).toBe('');

      // Gone from every read, the store's bytes included.
      expect((await call(server, 'GET', route)).status).toBe(404);
      expect((await fetch(`${server.url}${route}/archive`)).status).toBe(404);
      expect((await call(server, 'GET', '/templates/suite-purge')).body.data.version).toBe('1.0.0');
      expect((await call(server, 'GET', '/templates/suite-purge/versions?include=yanked')).body.data.map((e: { version: string }) => e.version)).toEqual(['1.0.0']);
      expect((await registryDocument(server)).templates.filter((e) => e.id === 'suite-purge').map((e) => e.version)).toEqual(['1.0.0']);
      expect(await server.store.versions.getVersion('suite-purge', '1.1.0')).toBeUndefined();
      expect(await server.store.versions.openArchive('suite-purge', '1.1.0')).toBeUndefined();
      await expect(server.store.versions.readManifest('suite-purge', '1.1.0')).rejects.toMatchObject({ code: 'ENOENT' });
      if (output) expect((await output.inventory()).has(staticArchive)).toBe(false);
      // The other version is whole.
      expect(Buffer.from(await (await fetch(`${server.url}/templates/suite-purge/versions/1.0.0/archive`)).arrayBuffer()).equals(await readFile(packs.old.file))).toBe(true);

      // Never reusable, with other bytes or the same; purging again answers the same; the yank route finds nothing.
      for (const pack of [await packed('suite-purge', '1.1.0', '# clean bytes\n'), packs.leaked]) {
        const again = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: await formOf(pack) });
        expect(again.status).toBe(409);
        const refusal = (await again.json()) as { error: { code: string; message: string; details: unknown[] } };
        expect(refusal.error).toMatchObject({ code: 'VERSION_EXISTS', message: expect.stringMatching(/^suite-purge@1\.1\.0 was purged; a purged version is never reusable/) });
        expect(refusal.error.details).toEqual([expect.objectContaining({ field: 'version', code: 'VERSION_PURGED' })]);
      }
      expect((await call(server, 'DELETE', `${route}/purge`, { token: admin })).status).toBe(204);
      expect((await call(server, 'DELETE', route, { token: admin })).status).toBe(404);
      expect((await server.store.versions.listVersions()).map((v) => `${v.name}@${v.version}`)).toEqual(['suite-purge@1.0.0']);
    }, 30_000);

    it('caps names at 214 characters (422 beyond), and one template whose files cannot be written leaves the rest built and uploads going', async () => {
      const server = await start();
      const longest = `t${'x'.repeat(213)}`;
      expect(await publish(server, await packed(longest, '1.0.0'))).toMatchObject({ status: 201 });
      expect((await fetch(`${server.url}/templates/${longest}/versions/1.0.0/archive`)).status).toBe(200);
      const tooLong = await packed('suite-short', '1.0.0');
      const refused = await publishTemplate({ registryUrl: server.url, token: server.token, archive: tooLong.file, manifest: { ...tooLong.manifest, name: `${longest}x` }, retries: 0 }).catch((error: unknown) => error);
      expect((refused as PublishError).status).toBe(422);

      expect(await publish(server, await packed('suite-beta', '1.0.0'))).toMatchObject({ status: 201 });
      const blocked = path.join(server.store.publicDir, 'templates', 'suite-beta.json');
      await rm(blocked, { force: true });
      await mkdir(blocked, { recursive: true });
      await writeFile(path.join(blocked, 'in-the-way'), 'x');
      // Its next version is stored (201) though its files cannot be written, and the answer says it is not listed yet; every other template is built.
      const unlisted = await publish(server, await packed('suite-beta', '1.1.0'));
      expect(unlisted).toMatchObject({ status: 201, warning: expect.stringMatching(/^suite-beta@1\.1\.0 is stored, but registry\.json does not list it yet/) });
      expect(await publish(server, await packed('suite-gamma', '1.0.0'))).toMatchObject({ status: 201 });
      const ids = (await registryDocument(server)).templates.map((t) => `${t.id}@${t.version}`);
      expect(ids).toEqual(expect.arrayContaining([`${longest}@1.0.0`, 'suite-gamma@1.0.0']));
      expect(ids.filter((id) => id.startsWith('suite-beta'))).toEqual([]);
    }, 30_000);

    it('trusted publishing: a pending trusted publisher, an ID token exchanged once for a token that publishes and claims the name, the run shown on the version', async () => {
      const oidc = await startFakeOidc();
      const server = await startServerOn(await openStorage(), { oidcIssuers: [oidc.issuer] });
      const saved = await call(server, 'POST', '/templates/suite-trusted/trusted-publishers', {
        token: server.token,
        body: { issuer: oidc.issuer, repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml' },
      });
      expect(saved.status).toBe(201);
      const idToken = await oidc.sign(oidc.claims(`template-registry:${new URL(server.url).host}`, Math.floor(Date.now() / 1000)));
      const exchanged = await call(server, 'POST', '/api/oidc/token', { body: { token: idToken } });
      expect(exchanged.status).toBe(201);
      expect((await call(server, 'POST', '/api/oidc/token', { body: { token: idToken } })).body.error.details[0].field).toBe('jti');
      const token = exchanged.body.data.token as string;
      expect(await publish(server, await packed('suite-trusted', '1.0.0'), token)).toMatchObject({ uploaded: true, status: 201 });
      expect(await server.store.tokens.ownerOf('suite-trusted')).toBe((await server.store.tokens.listTokens())[0]!.owner);
      const version = await call(server, 'GET', '/templates/suite-trusted/versions/1.0.0');
      expect(version.body.data.publisher).toMatchObject({ repository: 'acme/web-app', workflow: 'publish.yml', runId: '8123456789' });
      expect((await call(server, 'DELETE', '/api/oidc/token', { token })).status).toBe(204);
      expect((await call(server, 'DELETE', '/api/oidc/token', { token })).status).toBe(401);
    }, 30_000);

    it('answers 201 for a version stored while registry.json cannot be written (listed: false, the entry it will have), and lists it once a retried build can', async () => {
      const server = await start();
      expect(await publish(server, await packed('suite-early', '1.0.0'))).toMatchObject({ status: 201 });
      // registry.json cannot be replaced: a folder is in its way (as a full disk would refuse its bytes).
      const registryFile = path.join(server.store.publicDir, 'registry.json');
      await rm(registryFile, { force: true });
      await mkdir(registryFile);
      await writeFile(path.join(registryFile, 'in-the-way'), 'x');
      const pack = await packed('suite-stored', '1.0.0');
      const response = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: await formOf(pack) });
      expect(response.status).toBe(201);
      const body = (await response.json()) as { data: { id: string; version: string; integrity: string; downloadUrl: string }; meta: { listed: boolean; warning: string } };
      expect(body.meta.listed).toBe(false);
      expect(body.meta.warning).toMatch(/^suite-stored@1\.0\.0 is stored, but registry\.json does not list it yet: the registry could not be rebuilt .*; the server rebuilds it until it does$/);
      expect(body.data).toMatchObject({ id: 'suite-stored', version: '1.0.0', integrity: pack.integrity, downloadUrl: `${server.url}/templates/suite-stored/versions/1.0.0/archive` });
      // Stored: another upload of it is a 409 (not a 503 for a version in progress); read once listed.
      expect(await publish(server, pack)).toMatchObject({ uploaded: false, status: 409 });
      expect((await registryDocument(server)).templates.map((t) => t.id)).not.toContain('suite-stored');

      // Room again: the build tried again on its own lists it, with the entry the answer gave.
      await rm(registryFile, { recursive: true, force: true });
      await vi.waitFor(async () => expect((await registryDocument(server)).templates.find((t) => t.id === 'suite-stored')).toEqual(body.data), { timeout: 10_000, interval: 50 });
      expect(createHash('sha256').update(Buffer.from(await (await fetch(body.data.downloadUrl)).arrayBuffer())).digest('hex')).toBe(pack.sha256);
      // And a normal upload says so.
      const listed = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: await formOf(await packed('suite-later', '1.0.0')) });
      const { meta } = (await listed.json()) as { meta: { listed: boolean; warning?: string } };
      expect(meta.listed).toBe(true);
      expect(meta).not.toHaveProperty('warning');
    }, 30_000);

    it('answers analytics and download stats from the aggregates, never the events, and keeps them when the retention removes the events', async () => {
      const server = await start();
      const pack = await packed('suite-usage', '1.0.0');
      expect(await publish(server, pack)).toMatchObject({ status: 201 });
      const day = 24 * 60 * 60 * 1000;
      const now = Date.now();
      for (const back of [500, 450, 30, 3, 0]) {
        const receivedAt = new Date(now - back * day);
        const base = { templateId: 'suite-usage', version: '1.0.0', timestamp: receivedAt.toISOString() };
        await server.store.events.recordEvent({ type: 'download', ...base, userAgent: 'suite', platform: 'linux' }, { client: `c${back}`, receivedAt });
        await server.store.events.recordEvent({ type: 'feedback', ...base, rating: 5, comment: `good ${back}`, userId: `u${back}` }, { receivedAt });
      }
      const listEvents = vi.spyOn(server.store.events, 'listEvents');
      const analytics = async () => (await call(server, 'GET', '/templates/suite-usage/analytics')).body.data as { metrics: { downloads: { total: number; lastMonth: number } }; feedback: { totalRatings: number } };
      await server.context.rebuild();
      const before = await analytics();
      expect(before.metrics.downloads).toMatchObject({ total: 5, lastMonth: 2 });
      expect(before.feedback.totalRatings).toBe(5);
      expect((await registryDocument(server)).templates.find((t) => t.id === 'suite-usage')?.stats).toMatchObject({ downloads: 5 });
      expect(listEvents).not.toHaveBeenCalled();
      listEvents.mockRestore();

      expect(await server.store.events.pruneEvents(new Date(now - 400 * day))).toBe(4);
      expect(await server.store.events.countEvents()).toBe(6);
      await server.context.rebuild();
      expect(await analytics()).toEqual(before);
      expect((await registryDocument(server)).templates.find((t) => t.id === 'suite-usage')?.stats).toMatchObject({ downloads: 5 });
    }, 30_000);
  });
}
