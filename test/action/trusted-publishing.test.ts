/**
 * The publish action with trusted publishing, end to end and offline: `run()` with no
 * registry-token asks the runner's ID-token endpoint (a loopback OIDC provider, through
 * ACTIONS_ID_TOKEN_REQUEST_URL / ACTIONS_ID_TOKEN_REQUEST_TOKEN) right before the upload, exchanges
 * the token once with a local registry server, uploads with what it got, creates the release with
 * the GitHub token, and revokes the registry token at the end.
 */
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import type { ReleaseApi } from '../../src/github/index.js';
import { memoryReleaseApi } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { DEFAULT_RUN, startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

/** A core that keeps the log, the annotations, the masked secrets and the failures. */
function recordingCore() {
  const calls = { log: [] as string[], errors: [] as { message: string; title?: string }[], warnings: [] as string[], secrets: [] as string[], failed: [] as string[], outputs: {} as Record<string, string> };
  const core: ActionCore = {
    setOutput: (name, value) => void (calls.outputs[name] = value),
    setSecret: (secret) => void calls.secrets.push(secret),
    setFailed: (message) => void calls.failed.push(message),
    info: (message) => void calls.log.push(message),
    warning: (message) => void calls.warnings.push(message),
    error: (message, properties) => void calls.errors.push({ message, ...(properties?.title ? { title: properties.title } : {}) }),
    startGroup: (name) => void calls.log.push(`group ${name}`),
    endGroup: () => void calls.log.push('endgroup'),
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, calls };
}

/** A release API in memory, recording the token it was made with. */
function memoryReleases() {
  const made: { token: string; owner: string; repo: string }[] = [];
  const { api, releases } = memoryReleaseApi();
  const factory = (token: string, owner: string, repo: string): ReleaseApi => {
    made.push({ token, owner, repo });
    return api;
  };
  return { factory, made, releases };
}

/** The runner's environment of a publish job on tag v1.0.0 of acme/web-app with `permissions: id-token: write` and no registry-token. */
async function jobEnv(server: TestServer, oidc: FakeOidc, templateDir: string): Promise<Record<string, string>> {
  return {
    GITHUB_WORKSPACE: path.dirname(templateDir),
    GITHUB_REPOSITORY: DEFAULT_RUN.repository,
    GITHUB_REF: DEFAULT_RUN.ref,
    'INPUT_TEMPLATE-PATH': path.basename(templateDir),
    'INPUT_REGISTRY-URL': server.url,
    'INPUT_GITHUB-TOKEN': 'ghs_job_token',
    'INPUT_CREATE-RELEASE': 'true',
    RUNNER_TEMP: await tempDir('tr-runner-'),
    // Build provenance is test/action/provenance.test.ts's (it would sign with the public-good Sigstore).
    INPUT_ATTEST: 'false',
    ...oidc.runnerEnv,
  };
}

describe('the publish action with trusted publishing', () => {
  it('publishes without a registry token: ID token -> exchange -> upload -> release -> revoke, the version showing the run', async () => {
    const oidc = await startFakeOidc();
    const server = await startRegistryServer({ oidcIssuers: [oidc.issuer] });
    // The name's pending trusted publisher: the first publish through it claims the name.
    await server.store.trustedPublishers.addTrustedPublisher(
      { template: publishableManifest.name, issuer: oidc.issuer, repository: DEFAULT_RUN.repository, repositoryOwnerId: DEFAULT_RUN.repositoryOwnerId, workflow: DEFAULT_RUN.workflow, ref: 'refs/tags/v*' },
      (await server.store.tokens.listTokens())[0]!,
    );
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const releases = memoryReleases();

    const outcome = await run({ env: await jobEnv(server, oidc, dir), core, releaseApi: releases.factory, setExitCode: () => undefined });

    expect(calls.failed).toEqual([]);
    expect(calls.errors).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(outcome.outputs).toMatchObject({ uploaded: 'true', version: '1.0.0' });
    // One ID token, for this registry's audience, asked for once the checks passed (inside the Upload group).
    const audience = `template-registry:${new URL(server.url).host}`;
    expect(oidc.requested).toEqual([audience]);
    const upload = calls.log.indexOf('group Upload');
    expect(calls.log.findIndex((line) => line.startsWith('trusted publishing: asking'))).toBeGreaterThan(upload);
    expect(upload).toBeGreaterThan(calls.log.indexOf('group Lint'));

    const version = await (await fetch(`${server.url}/templates/${publishableManifest.name}/versions/1.0.0`)).json() as { data: { publisher: Record<string, string> } };
    expect(version.data.publisher).toMatchObject({ repository: DEFAULT_RUN.repository, workflow: DEFAULT_RUN.workflow, sha: DEFAULT_RUN.sha, runId: DEFAULT_RUN.runId, ref: 'refs/tags/v1.0.0' });
    // The release is the GitHub token's business.
    expect(releases.made).toEqual([{ token: 'ghs_job_token', owner: 'acme', repo: 'web-app' }]);
    expect(releases.releases.map((r) => r.tag_name)).toEqual(['v1.0.0']);

    // The exchanged token is revoked at the end; both tokens were masked in the log.
    const minted = (await server.store.tokens.listTokens()).filter((token) => token.publisher);
    expect(minted).toHaveLength(1);
    expect(minted[0]!.revokedAt).toBeDefined();
    expect(calls.log).toContain('trusted publishing: the registry token was revoked');
    expect(calls.secrets.filter((secret) => secret.split('.').length === 3)).toHaveLength(1);
    expect(calls.secrets.some((secret) => secret.startsWith('trg_'))).toBe(true);
    for (const secret of calls.secrets) expect(calls.log.join('\n')).not.toContain(secret);
  });

  it('fails the upload step naming the claim the registry refused, uploads nothing, and has nothing to revoke', async () => {
    const oidc = await startFakeOidc();
    const server = await startRegistryServer({ oidcIssuers: [oidc.issuer] });
    await server.store.trustedPublishers.addTrustedPublisher(
      { template: publishableManifest.name, issuer: oidc.issuer, repository: DEFAULT_RUN.repository, repositoryOwnerId: DEFAULT_RUN.repositoryOwnerId, workflow: DEFAULT_RUN.workflow, environment: 'release' },
      (await server.store.tokens.listTokens())[0]!,
    );
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const exitCodes: number[] = [];

    const outcome = await run({ env: await jobEnv(server, oidc, dir), core, releaseApi: memoryReleases().factory, setExitCode: (code) => void exitCodes.push(code) });

    expect(outcome.ok).toBe(false);
    expect(exitCodes).toEqual([1]);
    expect(calls.errors).toEqual([{ message: expect.stringMatching(/^environment CLAIM_MISMATCH: demo-template: the job runs in no environment; the trusted publisher requires release$/), title: 'upload: INVALID_ID_TOKEN' }]);
    expect(await server.store.versions.listVersions()).toEqual([]);
    expect((await server.store.tokens.listTokens()).filter((token) => token.publisher)).toEqual([]);
    expect(calls.log.some((line) => line.includes('revoked'))).toBe(false);
  });

  it('refuses to start without a registry token when the job has no id-token permission', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const env = { GITHUB_WORKSPACE: path.dirname(dir), 'INPUT_TEMPLATE-PATH': path.basename(dir), GITHUB_REF: 'refs/tags/v1.0.0', 'INPUT_REGISTRY-URL': 'http://127.0.0.1:9', 'INPUT_CREATE-RELEASE': 'false' };
    const outcome = await run({ env, core, setExitCode: () => undefined });
    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual([expect.stringMatching(/registry-token is empty .*permissions: id-token: write/)]);
    expect(calls.log.filter((line) => line.startsWith('group '))).toEqual([]);
  });
});
