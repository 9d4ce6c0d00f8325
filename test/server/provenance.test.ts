/**
 * Build provenance at upload: the registry verifies the Sigstore bundle sent with an archive (a
 * third multipart part `attestation`, also through `/files`) against its trusted root (here a local
 * Sigstore's, `sigstoreTrustedRoot`), the subject digest against the archive's and the signer
 * against the trusted publisher that authenticated the upload; it keeps the bundle immutably, serves
 * it, and names it in the version's entry.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { loadSigstoreTrust, verifyProvenance } from '../../src/archive/index.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { indexLines } from '../../src/core/registry-index.js';
import { packTemplate, type PackResult } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { buildRegistry } from '../../src/registry/index.js';
import { storeSource } from '../../src/store/index.js';
import { startFakeOidc, type FakeOidc, type RunClaims } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore, type FakeSigstore } from '../helpers/fake-sigstore.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

const packDir = mkdtemp(path.join(tmpdir(), 'tr-prov-pack-'));
afterAll(async () => {
  await rm(await packDir, { recursive: true, force: true });
});
const packs = new Map<string, Promise<PackResult>>();
function packed(name: string, version = '1.0.0'): Promise<PackResult> {
  const key = `${name}@${version}`;
  let pack = packs.get(key);
  if (!pack) {
    pack = (async () => {
      const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, name, version } });
      return packTemplate(dir, { outDir: path.join(await packDir, key), version });
    })();
    packs.set(key, pack);
  }
  return pack;
}

interface World {
  server: TestServer;
  oidc: FakeOidc;
  sigstore: FakeSigstore;
  /** A registry token minted for a run of acme/web-app's publish.yml, trusted to publish `name`. */
  trustedToken(name: string): Promise<string>;
  /** The provenance of `pack` signed for a run (the default one, with `run` over it). */
  attest(pack: PackResult, run?: Partial<RunClaims>): Promise<string>;
  get(route: string): Promise<Response>;
}

async function world(options: { publicGood?: boolean } = {}): Promise<World> {
  const [oidc, sigstore] = await Promise.all([startFakeOidc(), startFakeSigstore()]);
  const server = await startRegistryServer({ oidcIssuers: [oidc.issuer], ...(options.publicGood ? {} : { sigstoreTrustedRoot: sigstore.trustedRootFile }) });
  const audience = `template-registry:${new URL(server.url).host}`;
  const json = async (route: string, init: RequestInit): Promise<{ status: number; body: { data: Record<string, unknown> } }> => {
    const response = await fetch(`${server.url}${route}`, init);
    return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> } };
  };
  return {
    server,
    oidc,
    sigstore,
    async trustedToken(name) {
      const saved = await json(`/templates/${name}/trusted-publishers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ issuer: oidc.issuer, repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml' }),
      });
      expect(saved.status).toBe(201);
      const idToken = await oidc.sign(oidc.claims(audience, Math.floor(Date.now() / 1000)));
      const exchanged = await json('/api/oidc/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: idToken }) });
      expect(exchanged.status).toBe(201);
      return exchanged.body.data.token as string;
    },
    attest: (pack, run = {}) => signProvenance(sigstore, oidc, { name: path.basename(pack.file), sha256: pack.sha256 }, run),
    get: (route) => fetch(`${server.url}${route}`),
  };
}

async function upload(w: World, token: string, pack: PackResult, attestation: string | undefined, extra: { largeUploadThreshold?: number } = {}) {
  return publishTemplate({ registryUrl: w.server.url, token, archive: pack.file, manifest: pack.manifest, retries: 0, ...(attestation ? { attestation } : {}), ...extra });
}

async function refusal(promise: Promise<unknown>): Promise<PublishError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

describe('provenance at upload', () => {
  it('keeps a verified bundle, serves it immutably, and names it and its builder in every entry of the version', async () => {
    const w = await world();
    const pack = await packed('signed-app');
    const token = await w.trustedToken('signed-app');
    const bundle = await w.attest(pack);
    const published = await upload(w, token, pack, bundle);
    expect(published).toMatchObject({ uploaded: true, status: 201 });
    const url = `${w.server.url}/templates/signed-app/versions/1.0.0/attestation`;
    const attestations = { url, predicateType: 'https://slsa.dev/provenance/v1' };
    const publisher = { repository: 'acme/web-app', workflow: 'publish.yml', runUrl: 'https://github.com/acme/web-app/actions/runs/8123456789/attempts/1' };
    expect(published.entry).toMatchObject({ attestations, publisher });

    const version = (await (await w.get('/templates/signed-app/versions/1.0.0')).json()) as { data: Record<string, unknown> };
    expect(version.data.attestations).toEqual(attestations);
    expect(version.data.publisher).toMatchObject({ repository: 'acme/web-app', workflow: 'publish.yml' });
    const templateFile = (await (await w.get('/templates/signed-app.json')).json()) as { versions: Record<string, unknown>[] };
    expect(templateFile.versions[0]).toMatchObject({ attestations, publisher });
    const indexJson: unknown = await (await w.get('/index.json')).json();
    expect(schemaErrors('registry-index', indexJson)).toEqual([]);
    const index = indexLines(indexJson) as { templates: Record<string, unknown>[] };
    expect(index.templates.find((t) => t.id === 'signed-app')).toMatchObject({ attestations, publisher });
    const registry = (await (await w.get('/registry.json')).json()) as { templates: Record<string, unknown>[] };
    expect(registry.templates.find((t) => t.id === 'signed-app')).toMatchObject({ attestations, publisher });

    const served = await w.get('/templates/signed-app/versions/1.0.0/attestation');
    expect(served.status).toBe(200);
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const text = await served.text();
    expect(text).toBe(bundle);
    const again = await fetch(url, { headers: { 'if-none-match': served.headers.get('etag') ?? '' } });
    expect(again.status).toBe(304);
    // What the registry serves verifies for what it serves.
    const trust = await loadSigstoreTrust(w.sigstore.trustedRootFile);
    expect((await verifyProvenance(text, { sha256: pack.sha256 }, trust)).signer).toEqual({ repository: 'acme/web-app', workflow: 'publish.yml', issuer: w.oidc.issuer });
    // A version without provenance has none to serve.
    await upload(w, w.server.token, await packed('plain-app'), undefined);
    expect((await w.get('/templates/plain-app/versions/1.0.0/attestation')).status).toBe(404);
    expect(((await (await w.get('/templates/plain-app/versions/1.0.0')).json()) as { data: Record<string, unknown> }).data).not.toHaveProperty('attestations');
  });

  it('refuses (422 PROVENANCE_MISMATCH) a bundle of the right archive from another repository or workflow, and one about other bytes; nothing is stored', async () => {
    const w = await world();
    const pack = await packed('guarded-app');
    const token = await w.trustedToken('guarded-app');
    const cases: [string, Promise<string>][] = [
      ['IDENTITY', w.attest(pack, { repository: 'mallory/web-app' })],
      ['IDENTITY', w.attest(pack, { workflow: 'release.yml' })],
      ['DIGEST', signProvenance(w.sigstore, w.oidc, { name: 'other.tgz', sha256: (await packed('other-app')).sha256 })],
      ['INVALID', Promise.resolve('{"not":"a bundle"}')],
    ];
    for (const [problem, bundle] of cases) {
      const error = await refusal(upload(w, token, pack, await bundle));
      expect(error.status).toBe(422);
      expect(error.code).toBe('PROVENANCE_MISMATCH');
      expect(error.details[0]).toMatchObject({ field: 'attestation', code: problem });
    }
    expect((await refusal(upload(w, token, pack, await w.attest(pack, { repository: 'mallory/web-app' })))).message).toMatch(
      /signed by mallory\/web-app @ publish\.yml .*not by the trusted publisher that authenticated the upload \(acme\/web-app @ publish\.yml/,
    );
    expect(await w.server.store.versions.getVersion('guarded-app', '1.0.0')).toBeUndefined();
    // The right bundle then publishes.
    expect(await upload(w, token, pack, await w.attest(pack))).toMatchObject({ uploaded: true });
  });

  it('refuses an attestation part over 128 KiB (413) and a second one (400)', async () => {
    const w = await world();
    const pack = await packed('bulky-app');
    const tooLarge = await refusal(upload(w, w.server.token, pack, JSON.stringify({ pad: 'x'.repeat(129 * 1024) })));
    expect(tooLarge).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(tooLarge.message).toMatch(/the attestation is larger than 131072 bytes/);
    const boundary = 'tr-boundary';
    const part = (name: string, body: string | Buffer, file?: string) =>
      Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file}"` : ''}\r\n\r\n`), Buffer.from(body), Buffer.from('\r\n')]);
    const body = Buffer.concat([
      part('template', await readFile(pack.file), 'a.tgz'),
      part('manifest', JSON.stringify(pack.manifest)),
      part('attestation', '{}'),
      part('attestation', '{}'),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const twice = await fetch(`${w.server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${w.server.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: { message: string } }).error.message).toBe('the attestation part appears twice');
  });

  it('takes the bundle through the large-upload flow (/files) too', async () => {
    const w = await world();
    const pack = await packed('large-app');
    const token = await w.trustedToken('large-app');
    const published = await upload(w, token, pack, await w.attest(pack), { largeUploadThreshold: 0 });
    expect(published).toMatchObject({ uploaded: true, entry: { attestations: { predicateType: 'https://slsa.dev/provenance/v1' } } });
    expect((await w.server.store.versions.getVersion('large-app', '1.0.0'))?.attestation?.signer).toEqual({ repository: 'acme/web-app', workflow: 'publish.yml', issuer: w.oidc.issuer });
    const wrong = await refusal(upload(w, token, await packed('large-app', '1.0.1'), await w.attest(pack), { largeUploadThreshold: 0 }));
    expect(wrong).toMatchObject({ status: 422, code: 'PROVENANCE_MISMATCH' });
  });

  it('with a stored token: any signer the root vouches for while the name has no trusted publisher, else one of its trusted publishers', async () => {
    const w = await world();
    const open = await packed('open-app');
    expect(await upload(w, w.server.token, open, await w.attest(open, { repository: 'someone/else' }))).toMatchObject({ uploaded: true, entry: { publisher: { repository: 'someone/else' } } });
    const guarded = await packed('kept-app');
    await w.trustedToken('kept-app');
    const error = await refusal(upload(w, w.server.token, guarded, await w.attest(guarded, { repository: 'someone/else' })));
    expect(error).toMatchObject({ status: 422, code: 'PROVENANCE_MISMATCH' });
    expect(error.message).toMatch(/not by a trusted publisher of kept-app/);
    expect(await upload(w, w.server.token, guarded, await w.attest(guarded))).toMatchObject({ uploaded: true });
  });

  it('verifies against the public-good root by default, which does not vouch for another Sigstore', async () => {
    const w = await world({ publicGood: true });
    const pack = await packed('public-app');
    const error = await refusal(upload(w, w.server.token, pack, await w.attest(pack)));
    expect(error).toMatchObject({ status: 422, code: 'PROVENANCE_MISMATCH' });
    expect(error.details[0]).toMatchObject({ code: 'SIGNATURE' });
    expect(error.message).toMatch(/public-good/);
  });

  it('publishes each bundle beside its archive in a static registry (archives/<id>/<version>.sigstore.json)', async () => {
    const w = await world();
    const pack = await packed('static-app');
    const bundle = await w.attest(pack);
    await upload(w, w.server.token, pack, bundle);
    const out = await tempDir('tr-prov-static-');
    const result = await buildRegistry(storeSource(w.server.store, undefined, { layout: 'static' }), { outDir: out });
    expect(result.files).toContain('archives/static-app/1.0.0.sigstore.json');
    expect(await readFile(path.join(out, 'archives/static-app/1.0.0.sigstore.json'), 'utf8')).toBe(bundle);
    expect(result.document.templates[0]).toMatchObject({ attestations: { url: 'archives/static-app/1.0.0.sigstore.json' }, downloadUrl: 'archives/static-app/1.0.0.tgz' });
  });
});
