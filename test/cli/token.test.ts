/** `template-registry token create|list|revoke`: lifetimes, listing without secrets, revocation, exit codes. */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { openSqliteStorage } from '../../src/store/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { activeToken } from '../helpers/tokens.js';

const DAY_MS = 24 * 60 * 60 * 1000;

interface ListedToken {
  id: string;
  role: string;
  owner: string;
  scope: string[] | 'any';
  state: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

async function create(store: string, ...args: string[]): Promise<{ token: string; id: string; expiresAt?: string }> {
  const run = await cli('token', 'create', '--store', store, '--json', ...args);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { token: string; id: string; expiresAt?: string };
}

async function listJson(store: string): Promise<ListedToken[]> {
  const run = await cli('token', 'list', '--store', store, '--json');
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as ListedToken[];
}

/** The forms a token's secret could leak in: itself, and its sha256 as hex and base64. */
function secretForms(token: string): string[] {
  const digest = createHash('sha256').update(token).digest();
  return [token, digest.toString('hex'), digest.toString('base64'), digest.toString('base64url')];
}

describe('token create --expires-in', () => {
  it('keeps the expiry, that many days from now, and says when it expires', async () => {
    const store = await tempDir('tr-tokens-');
    const before = Date.now();
    const created = await create(store, '--role', 'publisher', '--expires-in', '30');
    const expiresAt = Date.parse(created.expiresAt ?? '');
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30 * DAY_MS);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 30 * DAY_MS);
    expect((await listJson(store)).map((t) => t.expiresAt)).toEqual([created.expiresAt]);

    const human = await cli('token', 'create', '--store', store, '--role', 'admin', '--expires-in', '1');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^trg_\S+\n$/);
    expect(human.stderr).toMatch(/^created admin token tok_[0-9a-f]+; it expires at \d{4}-\d\d-\d\dT\S+Z; it is shown only once\n$/);
  });

  it.each(['0', '-3', '1.5', 'ten', '', '36501'])('refuses --expires-in %j with exit 2, naming the flag and the rule, and creates nothing', async (value) => {
    const store = path.join(await tempDir('tr-tokens-'), 'store');
    const run = await cli('token', 'create', '--store', store, '--role', 'publisher', '--expires-in', value);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: --expires-in must be a whole number of days from 1 to 36500 (got ${JSON.stringify(value)})\n`);
    expect(run.stdout).toBe('');
    expect(existsSync(store)).toBe(false);
  });
});

describe('token list', () => {
  it('shows every token with its role, owner, scope, state, creation, last use and expiry, and never a secret', async () => {
    const store = await tempDir('tr-tokens-');
    const storage = await openSqliteStorage(store);
    const now = Date.now();
    const scoped = await storage.tokens.createToken({ role: 'publisher', templates: ['web-app', 'api'], owner: 'acme', now: new Date(now - 3 * DAY_MS) });
    const expired = await storage.tokens.createToken({ role: 'publisher', now: new Date(now - 2 * DAY_MS), expiresAt: new Date(now - DAY_MS) });
    const revoked = await storage.tokens.createToken({ role: 'admin', now: new Date(now - DAY_MS) });
    await storage.tokens.revokeToken(revoked.record.id);
    const usedAt = new Date(now - 60_000);
    await activeToken(storage.tokens, scoped.token, usedAt);
    await storage.close();

    const json = await cli('token', 'list', '--store', store, '--json');
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    const listed = JSON.parse(json.stdout) as ListedToken[];
    expect(listed).toEqual([
      {
        id: scoped.record.id,
        role: 'publisher',
        owner: 'acme',
        scope: ['web-app', 'api'],
        state: 'active',
        createdAt: scoped.record.createdAt,
        lastUsedAt: usedAt.toISOString(),
        expiresAt: null,
        revokedAt: null,
      },
      {
        id: expired.record.id,
        role: 'publisher',
        owner: expired.record.id,
        scope: 'any',
        state: 'expired',
        createdAt: expired.record.createdAt,
        lastUsedAt: null,
        expiresAt: expired.record.expiresAt,
        revokedAt: null,
      },
      expect.objectContaining({ id: revoked.record.id, role: 'admin', scope: 'any', state: 'revoked', revokedAt: expect.any(String), lastUsedAt: null }),
    ]);

    const table = await cli('token', 'list', '--store', store);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +ROLE +OWNER +SCOPE +STATE +CREATED +LAST USED +EXPIRES$/);
    expect(lines).toHaveLength(4);
    const minute = (iso: string | undefined): string => `${(iso ?? '').slice(0, 10)} ${(iso ?? '').slice(11, 16)}Z`;
    expect(lines[1]).toMatch(new RegExp(`^${scoped.record.id} +publisher +acme +web-app,api +active +${minute(scoped.record.createdAt)} +${minute(usedAt.toISOString())} +never$`));
    expect(lines[2]).toMatch(new RegExp(`^${expired.record.id} +publisher +${expired.record.id} +any +expired +\\S+ \\S+ +never +${minute(expired.record.expiresAt)}$`));
    expect(lines[3]).toMatch(new RegExp(`^${revoked.record.id} +admin +${revoked.record.id} +any +revoked \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ +${minute(revoked.record.createdAt)} +never +never$`));
    // The columns line up: each header starts where its values start.
    const column = lines[0]?.indexOf('STATE') ?? -1;
    for (const line of lines.slice(1)) expect(line.slice(column)).toMatch(/^(active|expired|revoked) /);

    for (const token of [scoped.token, expired.token, revoked.token]) {
      for (const form of secretForms(token)) {
        expect(json.stdout).not.toContain(form);
        expect(table.stdout).not.toContain(form);
      }
    }
  });

  it('says so when the store has no token', async () => {
    const store = await tempDir('tr-tokens-');
    await (await openSqliteStorage(store)).close();
    const run = await cli('token', 'list', '--store', store);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^no tokens in .+ \(create one with: template-registry token create --role publisher\)\n$/);
    expect(await listJson(store)).toEqual([]);
  });

  it('refuses a folder without a store with exit 2 naming --store, and creates nothing there', async () => {
    const store = path.join(await tempDir('tr-tokens-'), 'nothing-here');
    for (const argv of [['token', 'list'], ['token', 'revoke', 'tok_0123456789ab']]) {
      const run = await cli(...argv, '--store', store);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^error: --store: .*nothing-here holds no registry store/);
    }
    expect(existsSync(store)).toBe(false);
  });
});

describe('token revoke', () => {
  it('revokes a token, keeps its record, and says so again (exit 0, nothing changed) the second time', async () => {
    const store = await tempDir('tr-tokens-');
    const created = await create(store, '--role', 'publisher', '--owner', 'acme');
    const other = await create(store, '--role', 'publisher');

    const first = await cli('token', 'revoke', created.id, '--store', store);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(`revoked publisher token ${created.id} (owner acme); a running server refuses it from now on\n`);
    const listed = await listJson(store);
    const revokedAt = listed.find((t) => t.id === created.id)?.revokedAt;
    expect(new Map(listed.map((t) => [t.id, t.state]))).toEqual(new Map([[created.id, 'revoked'], [other.id, 'active']]));

    const second = await cli('token', 'revoke', created.id, '--store', store);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(`token ${created.id} was already revoked at ${revokedAt ?? ''}; nothing changed\n`);
    expect((await listJson(store)).find((t) => t.id === created.id)?.revokedAt).toBe(revokedAt);

    const storage = await openSqliteStorage(store);
    expect(await storage.tokens.checkToken(created.token)).toMatchObject({ valid: false, reason: 'revoked' });
    expect(await storage.tokens.checkToken(other.token)).toMatchObject({ valid: true });
    await storage.close();
  });

  it('prints one JSON document with --json, the revocation and whether it was already revoked', async () => {
    const store = await tempDir('tr-tokens-');
    const created = await create(store, '--role', 'admin');
    const first = await cli('token', 'revoke', created.id, '--store', store, '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ id: created.id, role: 'admin', state: 'revoked', revokedAt: expect.any(String), alreadyRevoked: false });
    const again = await cli('token', 'revoke', created.id, '--store', store, '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ id: created.id, state: 'revoked', alreadyRevoked: true });
    for (const form of secretForms(created.token)) expect(first.stdout + again.stdout).not.toContain(form);
  });

  it('fails with exit 1 and a clear message for an unknown id, changing nothing', async () => {
    const store = await tempDir('tr-tokens-');
    const created = await create(store, '--role', 'publisher');
    const run = await cli('token', 'revoke', 'tok_ffffffffffff', '--store', store);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`error: no token "tok_ffffffffffff" in ${store} (see template-registry token list)\n`);
    expect((await listJson(store)).map((t) => [t.id, t.state])).toEqual([[created.id, 'active']]);
  });

  it('needs an id (exit 2)', async () => {
    const store = await tempDir('tr-tokens-');
    const run = await cli('token', 'revoke', '--store', store);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/missing required argument 'id'/);
  });
});
