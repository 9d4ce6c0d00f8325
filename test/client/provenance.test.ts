/**
 * The client's provenance check against a static registry on a host of its own (a CDN, GitHub
 * Pages): the bundles sit beside the archives (`archives/<id>/<version>.sigstore.json`), named by
 * URLs relative to registry.json. A host that swaps a bundle (a compromised CDN) gets a warning, an
 * error under `require`, and a possible-takeover refusal where the lock pins the signer.
 */
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadSigstoreTrust, ProvenanceCheckError, RegistryClient, SignerChangedError } from '../../src/client/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { createProject, updateProject } from '../../src/project/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildRegistry } from '../../src/registry/index.js';
import { storeSource } from '../../src/store/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore } from '../helpers/fake-sigstore.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { serveFolder } from '../helpers/static-server.js';
import { TEMPLATE, templateVersion } from '../project/versions.js';

/** A static registry of demo-template 1.0.0 and 1.1.0, both signed by acme/web-app, built from a store and served from a folder. */
async function staticRegistry() {
  const [sigstore, oidc] = await Promise.all([startFakeSigstore(), startFakeOidc()]);
  const server = await startRegistryServer({ sigstoreTrustedRoot: sigstore.trustedRootFile });
  const earlier: string[] = [];
  for (const version of ['1.0.0', '1.1.0']) {
    const dir = await templateVersion({ version, files: { 'template/app.txt.liquid': `app ${version}\n` } }, earlier);
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version });
    const attestation = await signProvenance(sigstore, oidc, { name: path.basename(pack.file), sha256: pack.sha256 });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, attestation, retries: 0 });
    earlier.push(version);
  }
  const out = await tempDir('tr-static-prov-');
  await buildRegistry(storeSource(server.store, undefined, { layout: 'static' }), { outDir: out });
  const host = await serveFolder(out);
  const client = (): RegistryClient => new RegistryClient({ registryUrl: `${host.url}registry.json` });
  const trust = await loadSigstoreTrust(sigstore.trustedRootFile);
  /** Replaces the bundle of `version` by `other`'s (a host serving something else). */
  const swap = (version: string, other: string) => copyFile(path.join(out, `archives/${TEMPLATE}/${other}.sigstore.json`), path.join(out, `archives/${TEMPLATE}/${version}.sigstore.json`));
  return { host, client, trust, swap, issuer: oidc.issuer };
}

const lockOf = async (dir: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(dir, '.template-lock.json'), 'utf8')) as TemplateLock;

describe('provenance from a static registry', () => {
  it('fetches the bundle beside the archive (a URL relative to registry.json) and verifies it', async () => {
    const { host, client, trust, issuer } = await staticRegistry();
    const dir = path.join(await tempDir(), 'shop');
    const created = await createProject({ client: client(), id: TEMPLATE, version: '1.0.0', dir, doNotTrack: true, provenance: { mode: 'require', trust } });
    expect(created.entry.attestations?.url).toBe(`archives/${TEMPLATE}/1.0.0.sigstore.json`);
    expect(created.provenance).toMatchObject({ status: 'verified', signer: { repository: 'acme/web-app', workflow: 'publish.yml', issuer } });
    expect(host.requests).toContain(`/archives/${TEMPLATE}/1.0.0.sigstore.json`);
    expect((await lockOf(dir)).signer).toEqual({ repository: 'acme/web-app', workflow: 'publish.yml', issuer });
  });

  it('a swapped bundle (about another archive): a warning, an error under require, a possible takeover where the lock pins the signer', async () => {
    const { client, trust, swap } = await staticRegistry();
    const dir = path.join(await tempDir(), 'shop');
    await createProject({ client: client(), id: TEMPLATE, version: '1.0.0', dir, doNotTrack: true, provenance: { mode: 'warn', trust } });
    await swap('1.1.0', '1.0.0');

    const warnings: string[] = [];
    const warned = await createProject({ client: client(), id: TEMPLATE, version: '1.1.0', dir: path.join(await tempDir(), 'other'), doNotTrack: true, provenance: { mode: 'warn', trust, onWarning: (m) => warnings.push(m) } });
    expect(warned.provenance).toMatchObject({ status: 'unverified' });
    expect(warnings).toEqual([expect.stringMatching(/the provenance of demo-template@1\.1\.0 does not verify: the attestation is about other bytes/)]);
    expect((await lockOf(warned.project.outDir)).signer).toBeUndefined();

    const required = await createProject({ client: client(), id: TEMPLATE, version: '1.1.0', dir: path.join(await tempDir(), 'strict'), doNotTrack: true, provenance: { mode: 'require', trust } }).catch((e: unknown) => e);
    expect(required).toBeInstanceOf(ProvenanceCheckError);
    expect((required as ProvenanceCheckError).code).toBe('DIGEST');

    const takeover = await updateProject({ client: client(), projectDir: dir, provenance: { mode: 'warn', trust } }).catch((e: unknown) => e);
    expect(takeover).toBeInstanceOf(SignerChangedError);
    expect((takeover as SignerChangedError).message).toMatch(/possible takeover: demo-template@1\.1\.0 is not signed by anyone \(the provenance of demo-template@1\.1\.0 does not verify: the attestation is about other bytes/);
    expect((await lockOf(dir)).template.version).toBe('1.0.0');
  });
});
