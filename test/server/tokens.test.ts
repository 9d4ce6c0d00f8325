/**
 * Token lifetimes on a running server: a token revoked by another handle of the store (the CLI,
 * another process) or past its expiry is refused with 401 from the next request on, saying why
 * and revealing nothing secret; the environment's admin token keeps working; tokens are never logged.
 */
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const DAY_MS = 24 * 60 * 60 * 1000;

interface Answer {
  status: number;
  challenge: string | null;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- error envelopes are read field by field below
  body: any;
}

/** GET /webhooks (an admin route) with `token`. */
async function asAdmin(server: TestServer, token: string): Promise<Answer> {
  const response = await fetch(`${server.url}/webhooks`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  return { status: response.status, challenge: response.headers.get('www-authenticate'), text, body: JSON.parse(text) };
}

/** `token create --json` through the CLI, on the server's store folder. */
async function createWithCli(server: TestServer, ...args: string[]): Promise<{ token: string; id: string }> {
  const run = await cli('token', 'create', '--store', server.storeDir, '--json', ...args);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { token: string; id: string };
}

function expectRefused(answer: Answer, code: string, why: RegExp, token: string): void {
  expect(answer.status).toBe(401);
  expect(schemaErrors('error-envelope', answer.body)).toEqual([]);
  expect(answer.body.error).toMatchObject({ code: 'UNAUTHORIZED', details: [{ field: 'Authorization', code }] });
  expect(answer.body.error.message).toMatch(why);
  expect(answer.challenge).toMatch(/^Bearer realm="template-registry", error="invalid_token"/);
  expect(answer.text).not.toContain(token);
  expect(answer.challenge).not.toContain(token);
}

describe('token lifetimes on a running server', () => {
  it('refuses a token revoked with `token revoke` while the server runs, from the next request on', async () => {
    const server = await startRegistryServer();
    const { token, id } = await createWithCli(server, '--role', 'admin');
    expect((await asAdmin(server, token)).status).toBe(200);
    expect((await asAdmin(server, token)).status).toBe(200);

    const revoke = await cli('token', 'revoke', id, '--store', server.storeDir);
    expect(revoke.code, revoke.stderr).toBe(0);

    expectRefused(await asAdmin(server, token), 'TOKEN_REVOKED', /^the bearer token was revoked at \d{4}-\d\d-\d\dT[\d:.]+Z/, token);
    // The record is kept for the audit trail, and other tokens are untouched.
    expect((await server.store.tokens.listTokens()).find((t) => t.id === id)?.revokedAt).toBeDefined();
    expect((await asAdmin(server, (await createWithCli(server, '--role', 'admin')).token)).status).toBe(200);
  });

  it('refuses an upload with a revoked publisher token, and the publish client says why', async () => {
    const server = await startRegistryServer();
    const second = await openSqliteStorage(server.storeDir);
    const { token, record } = await second.tokens.createToken({ role: 'publisher' });
    await second.tokens.revokeToken(record.id);
    await second.close();
    const pack = await packTemplate('examples/templates/node-service', { outDir: await tempDir('tr-pack-') });
    const error = await publishTemplate({ registryUrl: server.url, token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect((error as PublishError).message).toMatch(/revoked/);
    expect((error as PublishError).message).not.toContain(token);
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('refuses a revocation made by another process (the CLI run as its own process) at once', async () => {
    const server = await startRegistryServer();
    const { token, id } = await createWithCli(server, '--role', 'admin');
    expect((await asAdmin(server, token)).status).toBe(200);
    // The installed bin (npm test builds it first), as an operator runs it beside the server.
    const child = await promisify(execFile)(process.execPath, [path.resolve('bin/template-registry.js'), 'token', 'revoke', id, '--store', server.storeDir], {
      timeout: 60_000,
    });
    expect(child.stdout).toMatch(new RegExp(`revoked admin token ${id}`));
    expectRefused(await asAdmin(server, token), 'TOKEN_REVOKED', /revoked/, token);
  }, 90_000);

  it('refuses an expired token with 401 saying it expired, and takes one that has not expired yet', async () => {
    const server = await startRegistryServer();
    const second = await openSqliteStorage(server.storeDir);
    const now = Date.now();
    const expired = await second.tokens.createToken({ role: 'admin', now: new Date(now - 2 * DAY_MS), expiresAt: new Date(now - DAY_MS) });
    const current = await second.tokens.createToken({ role: 'admin', expiresAt: new Date(now + DAY_MS) });
    await second.close();
    const answer = await asAdmin(server, expired.token);
    expectRefused(answer, 'TOKEN_EXPIRED', /^the bearer token expired at /, expired.token);
    expect(answer.body.error.message).toContain(expired.record.expiresAt);
    expect((await asAdmin(server, current.token)).status).toBe(200);
  });

  it('tells an unknown token apart from a missing one, and says nothing about other tokens', async () => {
    const server = await startRegistryServer();
    expectRefused(await asAdmin(server, 'trg_not-a-token'), 'TOKEN_INVALID', /^the bearer token is not valid$/, 'trg_not-a-token');
    const missing = await fetch(`${server.url}/webhooks`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="template-registry"');
  });

  it('keeps the admin token of the environment working; it is not a stored token', async () => {
    const server = await startRegistryServer({ adminToken: 'env-admin-secret-token' });
    expect((await asAdmin(server, 'env-admin-secret-token')).status).toBe(200);
    const list = await cli('token', 'list', '--store', server.storeDir, '--json');
    expect((JSON.parse(list.stdout) as { role: string }[]).map((t) => t.role)).toEqual(['publisher']);
  });

  it('records when a token was last used, visible in `token list`', async () => {
    const server = await startRegistryServer();
    const before = Date.now();
    const used = await createWithCli(server, '--role', 'admin');
    const unused = await createWithCli(server, '--role', 'admin');
    expect((await asAdmin(server, used.token)).status).toBe(200);
    const list = await cli('token', 'list', '--store', server.storeDir, '--json');
    const views = JSON.parse(list.stdout) as { id: string; lastUsedAt: string | null }[];
    expect(views.find((v) => v.id === unused.id)?.lastUsedAt).toBeNull();
    const lastUsed = Date.parse(views.find((v) => v.id === used.id)?.lastUsedAt ?? '');
    expect(lastUsed).toBeGreaterThanOrEqual(before);
    expect(lastUsed).toBeLessThanOrEqual(Date.now());
  });

  it('never writes a token to the log, accepted or refused', async () => {
    let log = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    const server = await startRegistryServer({ logger: { level: 'trace', stream } });
    const second = await openSqliteStorage(server.storeDir);
    const accepted = await second.tokens.createToken({ role: 'admin' });
    const revoked = await second.tokens.createToken({ role: 'admin' });
    await second.tokens.revokeToken(revoked.record.id);
    await second.close();
    expect((await asAdmin(server, accepted.token)).status).toBe(200);
    expect((await asAdmin(server, revoked.token)).status).toBe(401);
    expect((await asAdmin(server, 'trg_unknown-token-value')).status).toBe(401);
    expect(log).toMatch(/webhooks/);
    for (const token of [accepted.token, revoked.token, 'trg_unknown-token-value', server.token]) expect(log).not.toContain(token);
  });
});
