/**
 * Build provenance on the consumer side, through the CLI against a registry server whose versions
 * were published with attestations signed on a local Sigstore (its trusted root given with
 * --sigstore-trusted-root or TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT): `create`, `info`, `update`
 * and `check-update` verify digest and identity (`--provenance off|warn|require`), the lock pins the
 * signer, and a later version signed by another identity, or not signed, is refused as a possible
 * takeover unless `--accept-new-signer`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore, type FakeSigstore } from '../helpers/fake-sigstore.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { TEMPLATE, templateVersion } from '../project/versions.js';

isolateConsumerEnvironment({
  unset: ['TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_PROVENANCE', 'TEMPLATE_REGISTRY_PROVENANCE_REQUIRE', 'TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT'],
});

/** A version and who signs it: a repository of the run (its workflow publish.yml), or nobody. */
interface Signed {
  version: string;
  by?: string;
}

interface World {
  server: TestServer;
  sigstore: FakeSigstore;
  oidc: FakeOidc;
  registry: string;
  /** The flag that trusts the local Sigstore. */
  root: string[];
}

/** A registry holding demo-template at each version, signed as told (with a stored token: any signer is accepted). */
async function registryWith(versions: Signed[]): Promise<World> {
  const [sigstore, oidc] = await Promise.all([startFakeSigstore(), startFakeOidc()]);
  const server = await startRegistryServer({ sigstoreTrustedRoot: sigstore.trustedRootFile });
  const earlier: string[] = [];
  for (const { version, by } of versions) {
    const dir = await templateVersion({ version, files: { 'template/app.txt.liquid': `app ${version}\n` } }, earlier);
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version });
    const attestation = by ? await signProvenance(sigstore, oidc, { name: path.basename(pack.file), sha256: pack.sha256 }, { repository: by }) : undefined;
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0, ...(attestation ? { attestation } : {}) });
    earlier.push(version);
  }
  return { server, sigstore, oidc, registry: `${server.url}/registry.json`, root: ['--sigstore-trusted-root', sigstore.trustedRootFile] };
}

async function createAt(w: World, version: string, ...flags: string[]): Promise<{ dir: string; run: Awaited<ReturnType<typeof cli>> }> {
  const dir = path.join(await tempDir(), 'shop');
  const run = await cli('create', `${TEMPLATE}@${version}`, dir, '--registry', w.registry, '--defaults', ...w.root, ...flags);
  return { dir, run };
}

const lockOf = async (dir: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(dir, '.template-lock.json'), 'utf8')) as TemplateLock;

describe('provenance of a template on the consumer side', () => {
  it('create verifies it, says who built it and pins the signer in the lock; info shows the builder', async () => {
    const w = await registryWith([{ version: '1.0.0', by: 'acme/web-app' }]);
    const { dir, run } = await createAt(w, '1.0.0');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/provenance verified: built by acme\/web-app @ publish\.yml \(http:\/\/127\.0\.0\.1:\d+\) in https:\/\/github\.com\/acme\/web-app\/actions\/runs\/8123456789\/attempts\/1/);
    expect(run.stderr).toBe('');
    expect((await lockOf(dir)).signer).toEqual({ repository: 'acme/web-app', workflow: 'publish.yml', issuer: w.oidc.issuer });

    const info = await cli('info', TEMPLATE, '--registry', w.registry, ...w.root);
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toMatch(/built by: {2}acme\/web-app @ publish\.yml \(https:\/\/github\.com\/acme\/web-app\/actions\/runs\/8123456789\/attempts\/1\)/);
    expect(info.stdout).toMatch(/provenance verified: built by acme\/web-app/);
  });

  it('refuses, against the default public-good root, a bundle it does not vouch for under require; warns under warn; checks nothing under off', async () => {
    const w = await registryWith([{ version: '1.0.0', by: 'acme/web-app' }]);
    const required = await cli('create', `${TEMPLATE}@1.0.0`, path.join(await tempDir(), 'a'), '--registry', w.registry, '--defaults', '--provenance', 'require');
    expect(required.code).toBe(1);
    expect(required.stderr).toMatch(/the provenance of demo-template@1\.0\.0 does not verify: .*public-good/);
    const warned = await createAt({ ...w, root: [] }, '1.0.0');
    expect(warned.run.code, warned.run.stderr).toBe(0);
    expect(warned.run.stderr).toMatch(/warning: the provenance of demo-template@1\.0\.0 does not verify/);
    expect((await lockOf(warned.dir)).signer).toBeUndefined();
    const off = await createAt({ ...w, root: [] }, '1.0.0', '--provenance', 'off');
    expect(off.run.code, off.run.stderr).toBe(0);
    expect(off.run.stderr).toBe('');
    expect(off.run.stdout).not.toMatch(/provenance/);
  });

  it('an unsigned version: taken silently by default (unsigned in --json), an error under require, also when TEMPLATE_REGISTRY_PROVENANCE_REQUIRE names the registry', async () => {
    const w = await registryWith([{ version: '1.0.0' }]);
    const warned = await createAt(w, '1.0.0');
    expect(warned.run.code, warned.run.stderr).toBe(0);
    expect(warned.run.stderr).toBe('');
    const described = await cli('info', TEMPLATE, '--registry', w.registry, '--json');
    expect(JSON.parse(described.stdout).provenance).toMatchObject({ status: 'unsigned' });
    const required = await createAt(w, '1.0.0', '--provenance', 'require');
    expect(required.run.code).toBe(1);
    expect(required.run.stderr).toMatch(/demo-template@1\.0\.0 has no build provenance.*--provenance warn or off accepts it/);

    process.env.TEMPLATE_REGISTRY_PROVENANCE_REQUIRE = `https://elsewhere.example, ${w.server.url}`;
    expect((await createAt(w, '1.0.0')).run.code).toBe(1);
    // The flag wins over the environment.
    expect((await createAt(w, '1.0.0', '--provenance', 'warn')).run.code).toBe(0);
    process.env.TEMPLATE_REGISTRY_PROVENANCE_REQUIRE = 'https://elsewhere.example';
    process.env.TEMPLATE_REGISTRY_PROVENANCE = 'require';
    expect((await createAt(w, '1.0.0')).run.code).toBe(1);
    process.env.TEMPLATE_REGISTRY_PROVENANCE = 'strict';
    const bad = await createAt(w, '1.0.0');
    expect(bad.run.code).toBe(2);
    expect(bad.run.stderr).toMatch(/TEMPLATE_REGISTRY_PROVENANCE must be off, warn or require/);
  });

  it('updates to a version signed by the pinned identity, and keeps it pinned', async () => {
    const w = await registryWith([
      { version: '1.0.0', by: 'acme/web-app' },
      { version: '1.1.0', by: 'acme/web-app' },
    ]);
    const { dir } = await createAt(w, '1.0.0');
    const check = await cli('check-update', '--project', dir, ...w.root);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/1\.0\.0 -> 1\.1\.0 available\n {2}provenance verified: built by acme\/web-app @ publish\.yml/);
    const update = await cli('update', '--project', dir, ...w.root);
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toMatch(/provenance verified: built by acme\/web-app/);
    expect(await lockOf(dir)).toMatchObject({ template: { version: '1.1.0' }, signer: { repository: 'acme/web-app', workflow: 'publish.yml' } });
  });

  it('refuses a version signed by another identity as a possible takeover naming both, until --accept-new-signer, which pins the new one', async () => {
    const w = await registryWith([
      { version: '1.0.0', by: 'acme/web-app' },
      { version: '2.0.0', by: 'mallory/web-app' },
    ]);
    const { dir } = await createAt(w, '1.0.0');
    const before = await lockOf(dir);
    for (const command of ['check-update', 'update']) {
      const refused = await cli(command, '--project', dir, ...w.root);
      expect(refused.code, command).toBe(1);
      expect(refused.stderr).toMatch(/possible takeover: demo-template@2\.0\.0 is signed by mallory\/web-app @ publish\.yml .*but the project's lock pins the signer acme\/web-app @ publish\.yml .*--accept-new-signer/);
    }
    // Even with provenance only warned about.
    expect((await cli('update', '--project', dir, '--provenance', 'warn', ...w.root)).code).toBe(1);
    expect(await lockOf(dir)).toEqual(before);
    expect(await readFile(path.join(dir, 'app.txt'), 'utf8')).toBe('app 1.0.0\n');

    const accepted = await cli('update', '--project', dir, '--accept-new-signer', ...w.root);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(await lockOf(dir)).toMatchObject({ template: { version: '2.0.0' }, signer: { repository: 'mallory/web-app' } });
  });

  it('refuses a version without provenance after a signed one (unsigned after signed), until --accept-new-signer, which drops the pin', async () => {
    const w = await registryWith([{ version: '1.0.0', by: 'acme/web-app' }, { version: '1.1.0' }]);
    const { dir } = await createAt(w, '1.0.0');
    const refused = await cli('update', '--project', dir, ...w.root);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/possible takeover: demo-template@1\.1\.0 is not signed by anyone \(demo-template@1\.1\.0 has no build provenance.*\), but the project's lock pins the signer acme\/web-app @ publish\.yml/);
    // --provenance off checks nothing, and keeps the pin for later.
    const off = await cli('check-update', '--project', dir, '--provenance', 'off', ...w.root);
    expect(off.code, off.stderr).toBe(0);
    const accepted = await cli('update', '--project', dir, '--accept-new-signer', ...w.root);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect((await lockOf(dir)).signer).toBeUndefined();
  });

  it('names the trusted root that cannot be read', async () => {
    const w = await registryWith([{ version: '1.0.0' }]);
    const run = await createAt({ ...w, root: ['--sigstore-trusted-root', '/nonexistent/root.json'] }, '1.0.0');
    expect(run.run.code).toBe(2);
    expect(run.run.stderr).toMatch(/--sigstore-trusted-root: cannot read the Sigstore trusted root \/nonexistent\/root\.json/);
  });
});
