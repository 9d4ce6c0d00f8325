/**
 * `template-registry user create|list`: accounts made on a store by whoever runs the server, that
 * then log in through the running server's login route.
 */
import { describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/program.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function user(argv: string[], stdin?: string): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['user', ...argv], {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    ...(stdin === undefined ? {} : { readStdin: () => Promise.resolve(stdin) }),
  });
  return { code, stdout, stderr };
}

describe('template-registry user', () => {
  it('creates an account whose password (from stdin) logs in on a server running on the same store', async () => {
    const storeDir = await tempDir('tr-store-');
    const created = await user(['create', '--email', 'Ada@Example.com', '--owner', 'ada', '--password-stdin', '--store', storeDir, '--json'], 'a long enough password\n');
    expect(created.code).toBe(0);
    const account = JSON.parse(created.stdout) as Record<string, unknown>;
    expect(account).toMatchObject({ email: 'ada@example.com', role: 'publisher', owner: 'ada' });
    expect(account).not.toHaveProperty('password');
    const server = await startRegistryServer({ storeDir });
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ada@example.com', password: 'a long enough password' }),
    });
    expect(login.status).toBe(200);
  });

  it('makes up a password when none is piped in, prints it once, and refuses a taken e-mail with exit 1', async () => {
    const storeDir = await tempDir('tr-store-');
    const created = await user(['create', '--email', 'bob@example.com', '--role', 'admin', '--store', storeDir]);
    expect(created.code).toBe(0);
    const password = created.stdout.trim();
    expect(password.length).toBeGreaterThanOrEqual(20);
    expect(created.stderr).toMatch(/created admin account usr_\w+ for bob@example.com \(owner bob@example.com\); its password is shown only once/);
    const store = await openSqliteStorage(storeDir);
    try {
      expect((await store.accounts.findCredentials('bob@example.com'))?.passwordHash).not.toContain(password);
    } finally {
      await store.close();
    }
    const again = await user(['create', '--email', 'BOB@example.com', '--store', storeDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/EMAIL_EXISTS/);
    const listed = await user(['list', '--store', storeDir, '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ email: 'bob@example.com', role: 'admin' })]);
  });

  it('refuses a short password, a bad e-mail and an unknown role with exit 2, naming the flag', async () => {
    const storeDir = await tempDir('tr-store-');
    const short = await user(['create', '--email', 'ada@example.com', '--password-stdin', '--store', storeDir], 'short\n');
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/--password must be at least 12 characters/);
    const email = await user(['create', '--email', 'not-an-email', '--store', storeDir]);
    expect(email.code).toBe(2);
    expect(email.stderr).toMatch(/--email must be an e-mail address/);
    const role = await user(['create', '--email', 'ada@example.com', '--role', 'root', '--store', storeDir]);
    expect(role.code).toBe(2);
    expect(role.stderr).toMatch(/--role must be publisher or admin/);
    expect((await user(['list', '--store', storeDir])).stdout).toMatch(/no accounts/);
  });
});

describe('template-registry user create --password', () => {
  it('takes the password from the flag, and refuses it together with --password-stdin', async () => {
    const storeDir = await tempDir('tr-store-');
    const created = await user(['create', '--email', 'eve@example.com', '--password', 'another long password', '--store', storeDir]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toMatch(/^usr_/);
    const server = await startRegistryServer({ storeDir });
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'eve@example.com', password: 'another long password' }),
    });
    expect(login.status).toBe(200);
    const both = await user(['create', '--email', 'fay@example.com', '--password', 'another long password', '--password-stdin', '--store', storeDir], 'x\n');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--password or --password-stdin/);
  });
});
