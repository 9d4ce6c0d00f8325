import type { RegistryDocument } from '../../src/core/schema-types.js';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { startFakeGitHub } from '../helpers/fake-github.js';
import { startFakeRegistry } from '../helpers/fake-registry.js';
import { tempDir } from '../helpers/fixtures.js';
import { buildFreshBundle, runBundledAction, type ActionRun, type FreshBundle } from '../helpers/run-bundled-action.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { startFakeSigstore } from '../helpers/fake-sigstore.js';

let bundle: FreshBundle;
const example = path.resolve('examples/templates/node-service');
const REGISTRY_TOKEN = 'tr_e2e_registry_secret_123';
const GITHUB_TOKEN = 'ghs_e2e_github_secret_456';

/** A template repository as a user has it: the example plus VCS data, dependencies and workflows. */
async function templateRepository(versions: string[]): Promise<string> {
  const repo = await tempDir('tr-e2e-repo-');
  await cp(example, repo, { recursive: true });
  await mkdir(path.join(repo, '.git'), { recursive: true });
  await writeFile(path.join(repo, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  await mkdir(path.join(repo, 'node_modules', 'left-pad'), { recursive: true });
  await writeFile(path.join(repo, 'node_modules', 'left-pad', 'index.js'), 'module.exports = 1;\n');
  await mkdir(path.join(repo, '.github', 'workflows'), { recursive: true });
  await writeFile(path.join(repo, '.github', 'workflows', 'publish.yml'), 'on: push\n');
  const changelog = await readFile(path.join(repo, 'CHANGELOG.md'), 'utf8');
  const sections = versions.map((v) => `## [${v}] - 2026-11-22\n\n### Added\n\n- Release ${v} notes.\n\n`).join('');
  await writeFile(path.join(repo, 'CHANGELOG.md'), changelog.replace(/^## \[/m, `${sections}## [`));
  return repo;
}

async function runAction(env: Record<string, string>, options: { cwd?: string } = {}): Promise<ActionRun> {
  const work = await tempDir('tr-e2e-event-');
  const eventFile = path.join(work, 'event.json');
  const ref = env.GITHUB_REF ?? 'refs/tags/v1.2.3';
  await writeFile(eventFile, JSON.stringify({ ref, created: true, deleted: false, repository: { full_name: 'acme/node-service' } }));
  const runnerEnv = {
    GITHUB_REPOSITORY: 'acme/node-service',
    GITHUB_EVENT_NAME: 'push',
    GITHUB_EVENT_PATH: eventFile,
    GITHUB_WORKSPACE: path.dirname(env['INPUT_TEMPLATE-PATH'] ?? work),
    GITHUB_REF: ref,
    'INPUT_GITHUB-TOKEN': GITHUB_TOKEN,
    'INPUT_CREATE-RELEASE': 'true',
    'INPUT_DRY-RUN': 'false',
  };
  return runBundledAction(bundle.file, { ...runnerEnv, ...env }, options);
}

/** The `::error` workflow commands of a run: its error annotations. */
const errorLines = (stdout: string): string[] => stdout.split('\n').filter((line) => line.startsWith('::error'));

/** The log group (`::group::<name>` ... `::endgroup::`) a line of the log is in, or undefined outside every group. */
function groupOf(stdout: string, line: string): string | undefined {
  let current: string | undefined;
  for (const text of stdout.split('\n')) {
    if (text.startsWith('::group::')) current = text.slice('::group::'.length);
    else if (text === '::endgroup::') current = undefined;
    else if (text === line) return current;
  }
  return undefined;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function servers(): Promise<{ registry: Awaited<ReturnType<typeof startFakeRegistry>>; github: Awaited<ReturnType<typeof startFakeGitHub>> }> {
  const registry = await startFakeRegistry({ token: REGISTRY_TOKEN });
  const github = await startFakeGitHub({ token: GITHUB_TOKEN });
  closers.push(() => registry.close(), () => github.close());
  return { registry, github };
}

function inputs(repo: string, registryUrl: string, githubUrl: string): Record<string, string> {
  return {
    'INPUT_TEMPLATE-PATH': repo,
    'INPUT_REGISTRY-URL': registryUrl,
    'INPUT_REGISTRY-TOKEN': REGISTRY_TOKEN,
    GITHUB_API_URL: githubUrl,
  };
}

describe('the bundled publish action, run as the runner runs it', () => {
  beforeAll(async () => {
    bundle = await buildFreshBundle('action/index');
  });
  afterAll(async () => {
    await bundle.remove();
  });

  it('validates, packs, uploads to the registry server and releases; a re-run changes nothing', async () => {
    const server = await startRegistryServer();
    const github = await startFakeGitHub({ token: GITHUB_TOKEN });
    closers.push(() => github.close());
    const repo = await templateRepository(['1.2.3']);
    const env = { ...inputs(repo, server.url, github.url), 'INPUT_REGISTRY-TOKEN': server.token };
    const first = await runAction(env);
    expect(first.stderr).not.toMatch(/Error/);
    expect(first.code, first.stdout).toBe(0);

    const archive = first.outputs.archive ?? '';
    const bytes = await readFile(archive);
    expect(first.outputs).toMatchObject({
      version: '1.2.3',
      uploaded: 'true',
      size: String(bytes.length),
      sha256: createHash('sha256').update(bytes).digest('hex'),
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
    });
    expect(first.outputs['download-url']).toMatch(/\/templates\/node-service\/versions\/1\.2\.3\/archive$/);
    expect(first.outputs['release-id']).toMatch(/^\d+$/);
    expect(first.outputs['release-url']).toBeTruthy();

    expect(await server.store.versions.listVersions()).toMatchObject([{ name: 'node-service', version: '1.2.3', integrity: first.outputs.integrity }]);
    const registryDocument = (await (await fetch(`${server.url}/registry.json`)).json()) as RegistryDocument;
    expect(registryDocument.templates).toMatchObject([{ id: 'node-service', version: '1.2.3', downloadUrl: first.outputs['download-url'] }]);
    const served = Buffer.from(await (await fetch(first.outputs['download-url'] ?? '')).arrayBuffer());
    expect(served.equals(bytes)).toBe(true);

    const listing = (await promisify(execFile)('tar', ['-tzf', archive])).stdout.split('\n').filter(Boolean);
    expect(listing).toContain('template.json');
    expect(listing).toContain('template/package.json.liquid');
    expect(listing.some((e) => e.startsWith('.git/') || e === '.git')).toBe(false);
    expect(listing.some((e) => e.includes('node_modules'))).toBe(false);
    expect(listing.some((e) => e.startsWith('.github/workflows'))).toBe(false);
    const extracted = await tempDir('tr-e2e-extract-');
    await promisify(execFile)('tar', ['-xzf', archive, '-C', extracted]);
    expect(JSON.parse(await readFile(path.join(extracted, 'template.json'), 'utf8')).version).toBe('1.2.3');
    expect(JSON.parse(await readFile(path.join(repo, 'template.json'), 'utf8')).version).toBe('1.1.0');

    const calls = github.requests.map((r) => `${r.method} ${r.path.replace(/\d+/g, ':id')}`);
    const create = github.requests.find((r) => r.method === 'POST' && r.path.endsWith('/releases'));
    expect(create?.body).toMatchObject({ tag_name: 'v1.2.3', draft: true });
    expect(JSON.stringify(create?.body)).toContain('Release 1.2.3 notes.');
    expect(calls.filter((c) => c.startsWith('POST /upload/'))).toHaveLength(2);
    const publish = github.requests.filter((r) => r.method === 'PATCH').at(-1);
    expect(publish?.body).toMatchObject({ draft: false });
    expect(calls.indexOf(`PATCH ${publish?.path.replace(/\d+/g, ':id')}`)).toBeGreaterThan(calls.lastIndexOf('POST /upload/repos/acme/node-service/releases/:id/assets'));

    expect(first.summary).toMatch(/Validate/);
    expect(first.summary).toMatch(/Upload/);
    expect(first.summary).toMatch(/Release/);
    const tokenLines = first.stdout.split('\n').filter((l) => l.includes(server.token) || l.includes(GITHUB_TOKEN));
    expect(tokenLines.every((l) => l.startsWith('::add-mask::'))).toBe(true);
    expect(tokenLines.length).toBeGreaterThanOrEqual(2);

    const second = await runAction(env);
    expect(second.code, second.stdout).toBe(0);
    expect(second.outputs.uploaded).toBe('false');
    expect(second.outputs.integrity).toBe(first.outputs.integrity);
    expect(await server.store.versions.listVersions()).toHaveLength(1);
    expect(github.releases.size).toBe(1);
    expect(second.outputs['release-id']).toBe(first.outputs['release-id']);
    const assets = [...github.releases.values()][0]?.assets ?? [];
    expect(assets.map((a: { name: string }) => a.name).sort()).toEqual(['node-service-1.2.3.tgz', 'template.json']);
  }, 120_000);

  it('attests the archive as bundled (id-token: write, a Sigstore given through SIGSTORE_*_URL) and the registry keeps the bundle', async () => {
    const [oidc, sigstore] = await Promise.all([startFakeOidc(), startFakeSigstore()]);
    const server = await startRegistryServer({ sigstoreTrustedRoot: sigstore.trustedRootFile });
    const github = await startFakeGitHub({ token: GITHUB_TOKEN });
    closers.push(() => github.close());
    const repo = await templateRepository(['1.2.3']);
    const env = {
      ...inputs(repo, server.url, github.url),
      'INPUT_REGISTRY-TOKEN': server.token,
      ...oidc.runnerEnv,
      SIGSTORE_FULCIO_URL: sigstore.url,
      SIGSTORE_REKOR_URL: sigstore.url,
      SIGSTORE_TSA_URL: sigstore.url,
    };
    const run = await runAction(env);
    expect(errorLines(run.stdout)).toEqual([]);
    expect(run.code, run.stdout).toBe(0);
    expect(sigstore.requests).toEqual(['/api/v2/signingCert', '/api/v1/log/entries', '/api/v1/timestamp']);
    const bundle = await readFile(run.outputs.attestation ?? '', 'utf8');
    const served = await (await fetch(`${server.url}/templates/node-service/versions/1.2.3/attestation`)).text();
    expect(served).toBe(bundle);
    expect((await server.store.versions.getVersion('node-service', '1.2.3'))?.attestation?.signer).toEqual({ repository: 'acme/web-app', workflow: 'publish.yml', issuer: oidc.issuer });
  });

  it('retries a registry 500 and a dropped connection', async () => {
    const { registry, github } = await servers();
    const repo = await templateRepository(['1.2.3']);
    registry.fail(['500', 'drop']);
    const result = await runAction(inputs(repo, registry.url, github.url));
    expect(result.code, result.stdout).toBe(0);
    expect(result.outputs.uploaded).toBe('true');
    expect(registry.uploads).toHaveLength(1);
    expect(result.stdout).toMatch(/retrying/);
  }, 120_000);

  it('fails on a 409 from the registry server for the same version with other content, and creates no release', async () => {
    const server = await startRegistryServer();
    const github = await startFakeGitHub({ token: GITHUB_TOKEN });
    closers.push(() => github.close());
    const repo = await templateRepository(['1.2.3']);
    const env = { ...inputs(repo, server.url, github.url), 'INPUT_REGISTRY-TOKEN': server.token };
    expect((await runAction({ ...env, 'INPUT_CREATE-RELEASE': 'false' })).code).toBe(0);
    await writeFile(path.join(repo, 'README.md'), '# changed after publishing\n');
    const result = await runAction(env);
    expect(result.code).not.toBe(0);
    // One problem, one annotation, inside the Upload group.
    expect(errorLines(result.stdout)).toEqual([expect.stringMatching(/^::error title=upload failed::.*different content/)]);
    expect(groupOf(result.stdout, errorLines(result.stdout)[0] ?? '')).toBe('Upload');
    expect(github.requests).toHaveLength(0);
    expect(await server.store.versions.listVersions()).toHaveLength(1);
  }, 120_000);

  it('does every check and packs on a dry run, and sends nothing', async () => {
    const { registry, github } = await servers();
    const repo = await templateRepository(['1.2.3']);
    const result = await runAction({ ...inputs(repo, registry.url, github.url), 'INPUT_DRY-RUN': 'true' });
    expect(result.code, result.stdout).toBe(0);
    expect(result.outputs.uploaded).toBe('false');
    expect(result.outputs.integrity).toMatch(/^sha512-/);
    expect(await readFile(result.outputs.archive ?? '')).toBeTruthy();
    expect(registry.requests).toBe(0);
    expect(github.requests).toHaveLength(0);
    expect(result.summary).toMatch(/dry-run/);
  }, 120_000);

  it('finds a relative template-path in GITHUB_WORKSPACE, wherever it is started, and names files relative to it', async () => {
    const { registry, github } = await servers();
    const repo = await templateRepository([]);
    const env = { ...inputs(path.basename(repo), registry.url, github.url), GITHUB_WORKSPACE: path.dirname(repo), 'INPUT_DRY-RUN': 'true' };
    const result = await runAction(env, { cwd: await tempDir('tr-e2e-elsewhere-') });
    // A change log without the version's section is a warning (the spec does not ask for one), annotated at its file.
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain(`::warning title=release notes,file=${path.basename(repo)}/CHANGELOG.md::CHANGELOG.md has no section for 1.2.3`);
    expect(errorLines(result.stdout)).toHaveLength(0);
    expect(result.outputs.archive).toBeDefined();
    expect(registry.requests).toBe(0);
  }, 60_000);

  it('refuses a pre-release tag with a clear error before doing anything', async () => {
    const { registry, github } = await servers();
    const repo = await templateRepository(['1.2.3']);
    const result = await runAction({ ...inputs(repo, registry.url, github.url), GITHUB_REF: 'refs/tags/v1.2.0-beta.1' });
    expect(result.code).not.toBe(0);
    expect(result.stdout).toMatch(/::error::version must be MAJOR.MINOR.PATCH/);
    expect(registry.requests).toBe(0);
  }, 60_000);

  it('reports validation findings as annotations with file and line', async () => {
    const { registry, github } = await servers();
    const repo = await templateRepository(['1.2.3']);
    const manifest = JSON.parse(await readFile(path.join(repo, 'template.json'), 'utf8'));
    await writeFile(path.join(repo, 'template.json'), JSON.stringify({ ...manifest, category: 'cli' }, null, 2));
    const result = await runAction(inputs(repo, registry.url, github.url));
    expect(result.code).not.toBe(0);
    const line = (await readFile(path.join(repo, 'template.json'), 'utf8')).split('\n').findIndex((l) => l.includes('"category"')) + 1;
    const annotation = result.stdout.split('\n').find((l) => l.startsWith('::error title=template validation%3A ENUM'));
    expect(errorLines(result.stdout)).toEqual([annotation]);
    expect(groupOf(result.stdout, annotation ?? '')).toBe('Validate');
    expect(annotation).toContain(`file=${path.relative(path.dirname(repo), path.join(repo, 'template.json'))},line=${line},col=`);
    expect(annotation).toMatch(/::template\.json \/category: must be one of/);
    expect(registry.requests).toBe(0);
  }, 60_000);
});
