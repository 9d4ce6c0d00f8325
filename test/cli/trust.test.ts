/** `template-registry trust add|list|remove <id>` against a running server, and `serve --oidc-issuer` and `--sigstore-trusted-root`. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL', 'REGISTRY_OIDC_ISSUERS', 'REGISTRY_SIGSTORE_TRUSTED_ROOT'] });

describe('template-registry trust', () => {
  it('adds, lists and removes the trusted publishers of a template its owner publishes', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    const auth = ['--registry', server.url, '--token', server.token];

    const added = await cli('trust', 'add', TEMPLATE, '--repo', 'acme/web-app', '--workflow', '.github/workflows/publish.yml', '--environment', 'release', '--ref', 'refs/tags/v*', '--owner-id', '4242', ...auth);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(new RegExp(`^${TEMPLATE} trusts tp_[0-9a-f]{12}  acme/web-app  \\.github/workflows/publish\\.yml, environment release, ref refs/tags/v\\*, owner id 4242\\n$`));
    const json = await cli('trust', 'add', TEMPLATE, '--repo', 'acme/tools', '--workflow', 'release.yaml', '--owner-id', '4242', '--json', ...auth);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ template: TEMPLATE, repository: 'acme/tools', workflow: 'release.yaml', pending: false });

    const list = await cli('trust', 'list', TEMPLATE, '--json', ...auth);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { repository: string }[]).map((p) => p.repository)).toEqual(['acme/web-app', 'acme/tools']);
    // The server keeps them: a token exchange would find them.
    expect((await server.store.trustedPublishers.listTrustedPublishers(TEMPLATE)).map((p) => p.workflow)).toEqual(['publish.yml', 'release.yaml']);

    const removed = await cli('trust', 'remove', TEMPLATE, '--repo', 'acme/web-app', '--workflow', 'publish.yml', ...auth);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`removed; ${TEMPLATE} has 1 trusted publisher left\n`);
    const again = await cli('trust', 'remove', TEMPLATE, '--repo', 'acme/web-app', '--workflow', 'publish.yml', ...auth);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/404 no trusted publisher of .* matches/);
    const byId = (JSON.parse(list.stdout) as { id: string }[])[1]!.id;
    expect((await cli('trust', 'remove', TEMPLATE, '--id', byId, ...auth)).code).toBe(0);
    expect((await cli('trust', 'list', TEMPLATE, ...auth)).stdout).toMatch(/has no trusted publishers/);
  });

  it('saves a pending trusted publisher on a name nobody has published, saying the first publish claims it', async () => {
    const server = await startRegistryServer();
    const run = await cli('trust', 'add', 'brand-new', '--repo', 'acme/brand-new', '--workflow', 'publish.yml', '--owner-id', '77', '--registry', server.url, '--token', server.token);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/pending \(the first publish through it claims the name\)/);
    expect(run.stdout).toMatch(/nobody has published brand-new yet: the first publish through this workflow claims it for you/);
  });

  it('exits 2 on usage errors and 1 with the server\'s reasons when it refuses', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [{ version: '1.0.0', files: {} }]);
    const auth = ['--registry', server.url, '--token', server.token];
    for (const args of [
      ['--repo', 'acme', '--workflow', 'publish.yml'],
      ['--repo', 'acme/web-app', '--workflow', 'sub/publish.yml'],
      ['--repo', 'acme/web-app'],
      ['--repo', 'acme/web-app', '--workflow', 'publish.yml', '--ref', 'v*'],
      ['--repo', 'acme/web-app', '--workflow', 'publish.yml', '--owner-id', 'acme'],
    ]) {
      const run = await cli('trust', 'add', TEMPLATE, ...args, ...auth);
      expect(run.code, args.join(' ')).toBe(2);
    }
    expect((await cli('trust', 'add', TEMPLATE, '--repo', 'acme/web-app', '--workflow', 'publish.yml', '--registry', server.url)).stderr).toMatch(/TEMPLATE_REGISTRY_TOKEN/);
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const refused = await cli('trust', 'add', TEMPLATE, '--repo', 'acme/web-app', '--workflow', 'publish.yml', '--owner-id', '1', '--registry', server.url, '--token', other);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/403 only an owner of/);
    expect(refused.stderr).not.toContain(other);
    const issuer = await cli('trust', 'add', TEMPLATE, '--repo', 'acme/web-app', '--workflow', 'publish.yml', '--owner-id', '1', '--issuer', 'https://ghes.example.com/_services/token', ...auth);
    expect(issuer.code).toBe(1);
    expect(issuer.stderr).toMatch(/422 the trusted publisher is invalid\n {2}issuer: this registry trusts ID tokens of https:\/\/token\.actions\.githubusercontent\.com only/);
  });
});

describe('template-registry serve --sigstore-trusted-root', () => {
  it('refuses a trusted root that cannot be read or is not one, from the flag or REGISTRY_SIGSTORE_TRUSTED_ROOT', async () => {
    const store = await tempDir('tr-serve-root-');
    const missing = await cli('serve', '--store', store, '--sigstore-trusted-root', '/nonexistent/trusted_root.json');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--sigstore-trusted-root \/ REGISTRY_SIGSTORE_TRUSTED_ROOT: cannot read the Sigstore trusted root \/nonexistent\/trusted_root\.json/);
    const notRoot = path.join(store, 'root.json');
    await writeFile(notRoot, '{"hello":"world"}');
    process.env.REGISTRY_SIGSTORE_TRUSTED_ROOT = notRoot;
    try {
      const env = await cli('serve', '--store', store);
      expect(env.code).toBe(2);
      expect(env.stderr).toMatch(/root\.json is not a Sigstore trusted root: it has no certificateAuthorities list/);
    } finally {
      delete process.env.REGISTRY_SIGSTORE_TRUSTED_ROOT;
    }
  });
});

describe('template-registry serve --oidc-issuer', () => {
  it('refuses an issuer that is not https (http only on a loopback address), from the flag or REGISTRY_OIDC_ISSUERS', async () => {
    const store = await tempDir('tr-serve-issuer-');
    const flag = await cli('serve', '--store', store, '--oidc-issuer', 'http://token.example.com');
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--oidc-issuer \/ REGISTRY_OIDC_ISSUERS: OIDC issuer "http:\/\/token\.example\.com" must be an https URL/);
    process.env.REGISTRY_OIDC_ISSUERS = 'https://ghes.example.com/_services/token, ftp://x';
    const env = await cli('serve', '--store', store);
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/"ftp:\/\/x" must be an https URL/);
  });
});
