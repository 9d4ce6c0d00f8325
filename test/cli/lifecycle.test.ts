/** `template-registry deprecate <id>@<range>` and `yank <id>@<version>` against a running server; `info` and `list` show the lifecycle. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL'] });

async function serverWithVersions(): Promise<TestServer> {
  const server = await startRegistryServer();
  await publishVersions(server, ['1.0.0', '1.1.0', '2.0.0'].map((version) => ({ version, files: {} })));
  return server;
}

describe('template-registry deprecate', () => {
  it('deprecates the versions in a range with a message, and info and list show it', async () => {
    const server = await serverWithVersions();
    const run = await cli('deprecate', `${TEMPLATE}@<2.0.0`, '--message', 'upgrade to 2.x', '--registry', server.url, '--token', server.token, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ id: TEMPLATE, range: '<2.0.0', changed: 2, versions: ['1.0.0', '1.1.0'] });

    const again = await cli('deprecate', `${TEMPLATE}@<2.0.0`, '--message', 'upgrade to 2.x', '--registry', server.url, '--token', server.token);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/no version .* changed/);

    const info = await cli('info', `${TEMPLATE}@1.0.0`, '--registry', `${server.url}/registry.json`, '--no-questions');
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toContain('deprecated: upgrade to 2.x');
    expect(info.stdout).toContain('1.0.0 (deprecated)');

    const list = await cli('list', '--all-versions', '--registry', `${server.url}/registry.json`);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('[deprecated: upgrade to 2.x]');
  });

  it('exits 2 on usage errors and 1 when the server refuses', async () => {
    const server = await serverWithVersions();
    expect((await cli('deprecate', `${TEMPLATE}@not a range`, '--registry', server.url, '--token', server.token)).code).toBe(2);
    expect((await cli('deprecate', `${TEMPLATE}@1.x`, '--registry', server.url)).code).toBe(2);
    const other = (await server.store.tokens.createToken({ role: 'publisher', owner: 'someone-else' })).token;
    const refused = await cli('deprecate', `${TEMPLATE}@1.x`, '--registry', server.url, '--token', other, '--json');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/403/);
    expect(refused.stderr).not.toContain(other);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { exitCode: 1 } });
  });
});

describe('template-registry yank', () => {
  it('yanks one version: info of the exact version marks it, the latest is the next one', async () => {
    const server = await serverWithVersions();
    const run = await cli('yank', `${TEMPLATE}@2.0.0`, '--registry', server.url, '--token', server.token, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ id: TEMPLATE, version: '2.0.0', yanked: true });

    const latest = await cli('info', TEMPLATE, '--registry', `${server.url}/registry.json`, '--no-questions', '--json');
    expect(latest.code, latest.stderr).toBe(0);
    expect(JSON.parse(latest.stdout)).toMatchObject({ version: '1.1.0' });

    const exact = await cli('info', `${TEMPLATE}@2.0.0`, '--registry', `${server.url}/registry.json`, '--no-questions');
    expect(exact.code, exact.stderr).toBe(0);
    expect(exact.stdout).toContain('yanked: this version was withdrawn');
    expect(exact.stdout).toContain('2.0.0 (yanked)');

    const list = await cli('list', '--all-versions', '--registry', `${server.url}/registry.json`, '--json');
    expect((JSON.parse(list.stdout) as { version: string }[]).map((e) => e.version)).not.toContain('2.0.0');
  });

  it('needs an exact version (exit 2) and reports an unknown one (exit 1)', async () => {
    const server = await serverWithVersions();
    expect((await cli('yank', `${TEMPLATE}@1.x`, '--registry', server.url, '--token', server.token)).code).toBe(2);
    expect((await cli('yank', TEMPLATE, '--registry', server.url, '--token', server.token)).code).toBe(2);
    expect((await cli('yank', `${TEMPLATE}@02.0.0`, '--registry', server.url, '--token', server.token)).code).toBe(2);
    const missing = await cli('yank', `${TEMPLATE}@9.9.9`, '--registry', server.url, '--token', server.token);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404/);
  });
});

describe('template-registry owner', () => {
  it('lists, adds (by owner name or account e-mail) and removes owners; a stranger is refused with exit 1', async () => {
    const server = await serverWithVersions();
    const owners = async (): Promise<string[]> => {
      const run = await cli('owner', 'ls', TEMPLATE, '--registry', server.url, '--json');
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as { owners: { owner: string }[] }).owners.map((entry) => entry.owner);
    };
    const [claimer] = await owners();
    expect(claimer).toBeDefined();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const account = await fetch(`${server.url}/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ada@example.com', password: 'a long enough password', owner: 'ada-team' }),
    });
    expect(account.status).toBe(201);

    const added = await cli('owner', 'add', TEMPLATE, 'ada@example.com', '--registry', server.url, '--token', server.token);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe(`${claimer ?? ''} (first publisher)\nada-team\n`);
    expect((await cli('owner', 'add', TEMPLATE, 'beta', '--registry', server.url, '--token', server.token)).code).toBe(0);
    expect(await owners()).toEqual([claimer, 'ada-team', 'beta']);

    const { token: stranger } = await server.store.tokens.createToken({ role: 'publisher', owner: 'stranger' });
    const refused = await cli('owner', 'rm', TEMPLATE, 'beta', '--registry', server.url, '--token', stranger);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/403 only an owner of demo-template/);
    expect(refused.stderr).not.toContain(stranger);

    const removed = await cli('owner', 'rm', TEMPLATE, 'ada@example.com', '--registry', server.url, '--token', server.token, '--json');
    expect(removed.code, removed.stderr).toBe(0);
    expect(await owners()).toEqual([claimer, 'beta']);
    expect((await cli('owner', 'add', TEMPLATE, 'x', '--registry', server.url)).code).toBe(2);
  });
});

describe('the write commands go through the write API client', () => {
  it("deprecate shows the registry's details and request id, and never the token it echoes", async () => {
    const token = 'tr_cli_secret_0123456789abcdef';
    const received: { method?: string; url?: string; authorization?: string }[] = [];
    const registry = http.createServer((req, res) => {
      received.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
      req.resume();
      req.on('end', () => {
        res.writeHead(422, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'VALIDATION_ERROR', message: `token ${token} may not do that`, details: [{ field: 'update.deprecationMessage', message: 'too long', code: 'MAX_LENGTH' }], requestId: 'req-7' } }));
      });
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
      const run = await cli('deprecate', `${TEMPLATE}@1.x`, '--message', 'x', '--registry', url, '--token', token);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('error: PATCH /templates/bulk: 422 token *** may not do that\n  update.deprecationMessage: too long\n  request id: req-7\n');
      expect(received).toEqual([{ method: 'PATCH', url: '/templates/bulk', authorization: `Bearer ${token}` }]);
    } finally {
      registry.closeAllConnections();
      await new Promise<void>((resolve) => registry.close(() => resolve()));
    }
  });
});
