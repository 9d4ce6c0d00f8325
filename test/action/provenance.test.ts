/**
 * The publish action attests each archive: with `id-token: write` it asks the runner for an ID
 * token for the audience `sigstore`, has a Fulcio certify an ephemeral key for it, signs SLSA
 * provenance v1 of the archive's sha256, has it logged in Rekor and timestamped (here a local
 * Sigstore, its endpoints given as inputs or through SIGSTORE_*_URL), and sends the bundle with the
 * upload; the registry (trusting that Sigstore's root) verifies it against the trusted publisher.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { sigstoreEndpoints } from '../../src/action/inputs.js';
import { run, type ActionCore } from '../../src/action/main.js';
import { loadSigstoreTrust, verifyProvenance } from '../../src/archive/index.js';
import { InputError } from '../../src/github/inputs.js';
import { DEFAULT_RUN, startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { startFakeSigstore, type FakeSigstore } from '../helpers/fake-sigstore.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

function recordingCore() {
  const calls = { log: [] as string[], errors: [] as string[], warnings: [] as string[], secrets: [] as string[], failed: [] as string[] };
  const core: ActionCore = {
    setOutput: () => undefined,
    setSecret: (secret) => void calls.secrets.push(secret),
    setFailed: (message) => void calls.failed.push(message),
    info: (message) => void calls.log.push(message),
    warning: (message) => void calls.warnings.push(message),
    error: (message) => void calls.errors.push(message),
    startGroup: (name) => void calls.log.push(`group ${name}`),
    endGroup: () => void calls.log.push('endgroup'),
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, calls };
}

interface Setup {
  server: TestServer;
  oidc: FakeOidc;
  sigstore: FakeSigstore;
  env: Record<string, string>;
}

async function setup(): Promise<Setup> {
  const [oidc, sigstore] = await Promise.all([startFakeOidc(), startFakeSigstore()]);
  const server = await startRegistryServer({ oidcIssuers: [oidc.issuer], sigstoreTrustedRoot: sigstore.trustedRootFile });
  await server.store.trustedPublishers.addTrustedPublisher(
    { template: publishableManifest.name, issuer: oidc.issuer, repository: DEFAULT_RUN.repository, repositoryOwnerId: DEFAULT_RUN.repositoryOwnerId, workflow: DEFAULT_RUN.workflow },
    (await server.store.tokens.listTokens())[0]!,
  );
  const dir = await writePublishableTemplate();
  const env = {
    GITHUB_WORKSPACE: path.dirname(dir),
    GITHUB_REPOSITORY: DEFAULT_RUN.repository,
    GITHUB_REF: DEFAULT_RUN.ref,
    'INPUT_TEMPLATE-PATH': path.basename(dir),
    'INPUT_REGISTRY-URL': server.url,
    'INPUT_CREATE-RELEASE': 'false',
    RUNNER_TEMP: await tempDir('tr-runner-'),
    ...oidc.runnerEnv,
  };
  return { server, oidc, sigstore, env };
}

describe('the publish action attests each archive', () => {
  it('signs SLSA provenance of the archive with the configured Sigstore and uploads it; the registry keeps and names it', async () => {
    const { server, oidc, sigstore, env } = await setup();
    const { core, calls } = recordingCore();
    const outcome = await run({
      env: { ...env, 'INPUT_SIGSTORE-FULCIO-URL': sigstore.url, 'INPUT_SIGSTORE-REKOR-URL': sigstore.url, 'INPUT_SIGSTORE-TSA-URL': sigstore.url },
      core,
      setExitCode: () => undefined,
    });
    expect(calls.failed).toEqual([]);
    expect(calls.errors).toEqual([]);
    expect(outcome.ok).toBe(true);
    // One ID token for Sigstore, one for the registry's exchange; both masked.
    expect(oidc.requested).toEqual(['sigstore', `template-registry:${new URL(server.url).host}`]);
    expect(sigstore.requests).toEqual(['/api/v2/signingCert', '/api/v1/log/entries', '/api/v1/timestamp']);
    for (const secret of calls.secrets) expect(calls.log.join('\n')).not.toContain(secret);

    // The bundle beside the archive (output `attestation`) is the one the registry serves, and it verifies.
    const bundle = await readFile(outcome.outputs.attestation!, 'utf8');
    const served = await (await fetch(`${server.url}/templates/${publishableManifest.name}/versions/1.0.0/attestation`)).text();
    expect(served).toBe(bundle);
    const verified = await verifyProvenance(bundle, { sha256: outcome.outputs.sha256! }, await loadSigstoreTrust(sigstore.trustedRootFile));
    expect(verified).toMatchObject({ signer: { repository: 'acme/web-app', workflow: 'publish.yml', issuer: oidc.issuer }, predicateType: 'https://slsa.dev/provenance/v1' });
    const statement = JSON.parse(Buffer.from(JSON.parse(bundle).dsseEnvelope.payload, 'base64').toString('utf8'));
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: `${publishableManifest.name}-1.0.0.tgz`, digest: { sha256: outcome.outputs.sha256 } }],
      predicate: {
        buildDefinition: { buildType: 'https://actions.github.io/buildtypes/workflow/v1', externalParameters: { workflow: { path: '.github/workflows/publish.yml', ref: 'refs/tags/v1.0.0', repository: 'https://github.com/acme/web-app' } } },
        runDetails: { builder: { id: 'https://github.com/acme/web-app/.github/workflows/publish.yml@refs/tags/v1.0.0' }, metadata: { invocationId: 'https://github.com/acme/web-app/actions/runs/8123456789/attempts/1' } },
      },
    });
    const entry = (await (await fetch(`${server.url}/templates/${publishableManifest.name}.json`)).json()) as { versions: Record<string, unknown>[] };
    expect(entry.versions[0]).toMatchObject({ attestations: { predicateType: 'https://slsa.dev/provenance/v1' }, publisher: { repository: 'acme/web-app', workflow: 'publish.yml' } });
  });

  it('takes the endpoints from SIGSTORE_FULCIO_URL, SIGSTORE_REKOR_URL and SIGSTORE_TSA_URL (none leaves one out)', async () => {
    const { server, sigstore, env } = await setup();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: { ...env, SIGSTORE_FULCIO_URL: sigstore.url, SIGSTORE_REKOR_URL: 'none', SIGSTORE_TSA_URL: sigstore.url }, core, setExitCode: () => undefined });
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(sigstore.requests).toEqual(['/api/v2/signingCert', '/api/v1/timestamp']);
    expect((await server.store.versions.getVersion(publishableManifest.name, '1.0.0'))?.attestation).toBeDefined();
  });

  it('fails the upload step, uploading nothing, when the attestation cannot be signed', async () => {
    const { server, env } = await setup();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: { ...env, 'INPUT_SIGSTORE-FULCIO-URL': 'http://127.0.0.1:9', 'INPUT_SIGSTORE-REKOR-URL': 'http://127.0.0.1:9' }, core, setExitCode: () => undefined });
    expect(outcome.ok).toBe(false);
    expect(calls.errors.join('\n')).toMatch(/signing the attestation failed/);
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('reads the attest input and the endpoints, naming the one at fault', () => {
    expect(sigstoreEndpoints({})).toEqual({ fulcioUrl: 'https://fulcio.sigstore.dev', rekorUrl: 'https://rekor.sigstore.dev' });
    expect(sigstoreEndpoints({ 'INPUT_SIGSTORE-FULCIO-URL': 'https://fulcio.ghes.example', 'INPUT_SIGSTORE-REKOR-URL': 'none', SIGSTORE_TSA_URL: 'https://tsa.ghes.example' })).toEqual({
      fulcioUrl: 'https://fulcio.ghes.example',
      tsaUrl: 'https://tsa.ghes.example',
    });
    expect(() => sigstoreEndpoints({ SIGSTORE_REKOR_URL: 'ftp://x' })).toThrow(/SIGSTORE_REKOR_URL must be an http\(s\) URL/);
    expect(() => sigstoreEndpoints({ 'INPUT_SIGSTORE-REKOR-URL': 'none' })).toThrow(InputError);
  });
});
