/**
 * The sync action and build provenance: the project's lock pins the signer of the version it was
 * created from; a newer version signed by another identity fails the run as a possible takeover,
 * pushing and opening nothing (whatever the mode but `off`); one signed by the pinned identity is
 * proposed as usual, its signer pinned in the updated lock.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { SignerChangedError } from '../../src/client/index.js';
import { createGitHubClient } from '../../src/github/client.js';
import { parseSyncInputs } from '../../src/sync-action/inputs.js';
import { octokitPullRequestApi, syncProject } from '../../src/sync-action/main.js';
import type { TemplateLock } from '../../src/template/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore } from '../helpers/fake-sigstore.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { APP_V1, TEMPLATE, templateVersion } from '../project/versions.js';
import { startFakeGitHub } from '../helpers/fake-github.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_PROVENANCE', 'TEMPLATE_REGISTRY_PROVENANCE_REQUIRE', 'TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT'] });

const TOKEN = 'ghs_sync_provenance_secret';
const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const remoteRef = (bare: string, ref: string): string => {
  try {
    return git(bare, 'rev-parse', '--verify', '--quiet', ref);
  } catch {
    return '';
  }
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A project created (signer pinned) from 1.0.0 signed by acme/web-app, pushed; then 1.1.0 signed by `laterBy` published. */
async function setup(laterBy: string) {
  const [sigstore, oidc] = await Promise.all([startFakeSigstore(), startFakeOidc()]);
  const server = await startRegistryServer({ sigstoreTrustedRoot: sigstore.trustedRootFile });
  const publish = async (version: string, by: string, earlier: string[]): Promise<void> => {
    const dir = await templateVersion({ version, files: { 'template/app.txt.liquid': version === '1.0.0' ? APP_V1 : APP_V1.replace('line 6', 'line 6 from the template') } }, earlier);
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version });
    const attestation = await signProvenance(sigstore, oidc, { name: path.basename(pack.file), sha256: pack.sha256 }, { repository: by });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, attestation, retries: 0 });
  };
  await publish('1.0.0', 'acme/web-app', []);
  const root = await tempDir('tr-sync-prov-');
  const bare = path.join(root, 'remote.git');
  const workspace = path.join(root, 'workspace');
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  git(root, 'init', '--quiet', '--initial-branch=main', workspace);
  git(workspace, 'remote', 'add', 'origin', bare);
  const project = path.join(workspace, 'shop');
  const created = await cli('create', `${TEMPLATE}@1.0.0`, project, '--registry', `${server.url}/registry.json`, '--defaults', '--set', 'projectName=shop', '--sigstore-trusted-root', sigstore.trustedRootFile);
  expect(created.code, created.stderr).toBe(0);
  git(workspace, 'add', '-A');
  git(workspace, 'commit', '--quiet', '-m', 'Generated shop');
  git(workspace, 'push', '--quiet', 'origin', 'main');
  await publish('1.1.0', laterBy, ['1.0.0']);
  const github = await startFakeGitHub({ owner: 'acme', repo: 'shop', token: TOKEN, branchExists: (branch) => remoteRef(bare, `refs/heads/${branch}`) !== '' });
  closers.push(() => github.close());
  const api = octokitPullRequestApi(createGitHubClient({ token: TOKEN, baseUrl: github.url, retries: 0, throttle: { enabled: false }, log: () => undefined }), 'acme', 'shop');
  const warnings: string[] = [];
  const log = { info: () => undefined, warning: (message: string) => void warnings.push(message), startGroup: () => undefined, endGroup: () => undefined };
  const sync = (provenance?: 'off' | 'warn' | 'require', registryKeys?: Parameters<typeof syncProject>[0]['registryKeys']) =>
    syncProject({ workspace, projectDir: project, owner: 'acme', api, log, sigstoreTrustedRoot: sigstore.trustedRootFile, ...(provenance ? { provenance } : {}), ...(registryKeys ? { registryKeys } : {}) });
  return { bare, github, sync, warnings };
}

describe('the sync action and provenance', () => {
  it('fails as a possible takeover when the newer version is signed by another identity, pushing and opening nothing', async () => {
    const { bare, github, sync } = await setup('mallory/web-app');
    for (const mode of [undefined, 'require'] as const) {
      const error = await sync(mode).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SignerChangedError);
      expect((error as Error).message).toMatch(/possible takeover: demo-template@1\.1\.0 is signed by mallory\/web-app @ publish\.yml .*pins the signer acme\/web-app @ publish\.yml/);
    }
    expect(remoteRef(bare, `refs/heads/template-update/${TEMPLATE}-1.1.0`)).toBe('');
    expect(github.writes()).toEqual([]);
    // provenance: off checks nothing.
    expect(await sync('off')).toMatchObject({ status: 'updated', version: '1.1.0' });
  });

  it('proposes a version signed by the pinned identity, keeping the signer in the lock', async () => {
    const { bare, sync, warnings } = await setup('acme/web-app');
    expect(await sync()).toMatchObject({ status: 'updated', version: '1.1.0', pushed: true });
    expect(warnings).toEqual([]);
    const lock = JSON.parse(git(bare, 'show', `refs/heads/template-update/${TEMPLATE}-1.1.0:shop/.template-lock.json`)) as TemplateLock;
    expect(lock.signer).toMatchObject({ repository: 'acme/web-app', workflow: 'publish.yml' });
  });

  it('reads the provenance and sigstore-trusted-root inputs', () => {
    const env = { GITHUB_REPOSITORY: 'acme/shop', 'INPUT_GITHUB-TOKEN': TOKEN, GITHUB_WORKSPACE: '/ws' };
    expect(parseSyncInputs({ ...env, INPUT_PROVENANCE: 'require', 'INPUT_SIGSTORE-TRUSTED-ROOT': 'ci/root.json' })).toMatchObject({ provenance: 'require', sigstoreTrustedRoot: '/ws/ci/root.json' });
    expect(() => parseSyncInputs({ ...env, INPUT_PROVENANCE: 'strict' })).toThrow(/input provenance must be off, warn or require/);
  });
});

describe('the sync action and signed registries', () => {
  it('reads the registry-key input inline or from a workspace file, and refuses a bad one naming the input', async () => {
    const { privateJwk, publicJwk } = await import('../helpers/signing-keys.js');
    const { writeFile } = await import('node:fs/promises');
    const workspace = await tempDir('tr-sync-key-');
    const jwk = publicJwk(await privateJwk('registry-2026'));
    const env = { GITHUB_WORKSPACE: workspace, GITHUB_REPOSITORY: 'acme/shop', 'INPUT_GITHUB-TOKEN': TOKEN };
    expect(parseSyncInputs({ ...env, 'INPUT_REGISTRY-KEY': JSON.stringify(jwk) }).registryKeys?.map((key) => key.kid)).toEqual(['registry-2026']);
    await writeFile(path.join(workspace, 'registry.jwk.json'), JSON.stringify({ keys: [jwk] }));
    expect(parseSyncInputs({ ...env, 'INPUT_REGISTRY-KEY': 'registry.jwk.json' }).registryKeys?.map((key) => key.kid)).toEqual(['registry-2026']);
    expect(() => parseSyncInputs({ ...env, 'INPUT_REGISTRY-KEY': '../outside.json' })).toThrow(/input registry-key must be a JWK \(JSON\) or a file inside the workspace/);
    expect(() => parseSyncInputs({ ...env, 'INPUT_REGISTRY-KEY': '{"kty":' })).toThrow(/input registry-key must be a JSON Web Key/);
  });

  it('with registry-key, refuses a registry whose documents are not signed by it, pushing nothing', async () => {
    const { privateJwk, publicJwk } = await import('../helpers/signing-keys.js');
    const { readPublicKeys } = await import('../../src/core/registry-signatures.js');
    const { bare, github, sync } = await setup('acme/web-app');
    const registryKeys = readPublicKeys(publicJwk(await privateJwk('registry-2026')), 'test key');
    const error = await sync(undefined, registryKeys).catch((e: unknown) => e);
    const { RegistryTrustError } = await import('../../src/client/index.js');
    expect(error).toBeInstanceOf(RegistryTrustError);
    expect((error as Error).message).toMatch(/not signed|signature/i);
    expect(remoteRef(bare, `refs/heads/template-update/${TEMPLATE}-1.1.0`)).toBe('');
    expect(github.writes()).toEqual([]);
  });
});
