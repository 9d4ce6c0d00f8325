/**
 * Login limits hold under concurrency. A login is counted before its password is
 * checked, atomically with the counts (one transaction of the storage, shared by every instance),
 * so of any number of parallel guesses at most the limit is evaluated. The limits are per (account,
 * address) and per address, with a slower one per account over every address: a guesser locks out
 * its own address, not the account's owner everywhere.
 */
import { expect, it } from 'vitest';

import type { ServerLimits } from '../../src/server/context.js';
import type { PasswordHasher } from '../../src/server/passwords.js';
import type { LoginAttempt, RegistryStorage } from '../../src/store/index.js';
import { describeOnEveryBackend } from '../helpers/backends.js';
import { startServerOn, type StorageTestServer } from '../helpers/registry-server.js';

const PASSWORD = 'correct horse battery staple';
const WRONG = 'wrong password, again';
const OWNER_ADDRESS = '192.0.2.10';
const GUESSER = '203.0.113.66';

/** A hasher that checks instantly (a turn of the event loop, so that parallel logins interleave) and counts every check. */
function countingHasher(): PasswordHasher & { checks: number } {
  const hasher = {
    checks: 0,
    hash: (password: string) => Promise.resolve(`plain$${password}`),
    verify: async (password: string, hash: string | undefined) => {
      hasher.checks++;
      await new Promise((resolve) => setImmediate(resolve));
      return hash === `plain$${password}`;
    },
  };
  return hasher;
}

async function serverWithAccount(storage: RegistryStorage, limits: Partial<ServerLimits> = {}) {
  const hasher = countingHasher();
  const server: StorageTestServer = await startServerOn(storage, { passwordHasher: hasher, limits: { maxConcurrentHashes: 100, hashQueueLength: 100, ...limits } });
  const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
  const created = await server.app.inject({ method: 'POST', url: '/users', headers: { authorization: `Bearer ${admin}` }, payload: { email: 'ada@example.com', password: PASSWORD } });
  expect(created.statusCode).toBe(201);
  const login = (password: string, remoteAddress: string, email = 'ada@example.com') =>
    server.app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress, payload: { email, password } });
  return { server, hasher, login };
}

const attempt = (account: string, address: string, now: Date, max = 3, windowMs = 60_000): LoginAttempt => ({
  account,
  address,
  now,
  limits: { 'account-address': { max, windowMs }, address: { max: 100, windowMs }, account: { max: 100, windowMs: windowMs * 10 } },
});

describeOnEveryBackend('login limits', (openStorage, openPair) => {
  it('hold under concurrency: of 40 parallel guesses (the last one right) only the limit is evaluated, the rest get 429; the owner elsewhere still logs in', async () => {
    const { hasher, login } = await serverWithAccount(await openStorage());
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login(i === 39 ? PASSWORD : WRONG, GUESSER)));
    const statuses = answers.map((answer) => answer.statusCode);
    // Exactly the limit (5 per account and address) was evaluated; the right password is refused like the rest, unless it was among them.
    expect(hasher.checks).toBe(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(35);
    expect(statuses.slice(0, 39).filter((status) => status !== 429).every((status) => status === 401)).toBe(true);
    expect([200, 429]).toContain(statuses[39]);
    const refused = answers.find((answer) => answer.statusCode === 429)!;
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.json().error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retryAfter: Number(refused.headers['retry-after']) });

    // The guesser locked out its own address (unless it got in), not the account: its owner logs in from another one.
    if (statuses[39] === 429) expect((await login(PASSWORD, GUESSER)).statusCode).toBe(429);
    expect((await login(PASSWORD, OWNER_ADDRESS)).statusCode).toBe(200);
    expect(hasher.checks).toBe(6);
  });

  it('count per (account, address), per address and, slower, per account over every address; a success forgets its own failures', async () => {
    const { login } = await serverWithAccount(await openStorage(), { loginFailuresPerAccountAddress: 3, loginFailuresPerAddress: 5, loginFailuresPerAccount: 7 });
    // The owner mistypes twice, then gets in: those failures are forgotten, 2 more mistakes lock nothing.
    for (const password of [WRONG, WRONG, PASSWORD, WRONG, WRONG, PASSWORD]) expect((await login(password, OWNER_ADDRESS)).statusCode).toBe(password === PASSWORD ? 200 : 401);

    // Per address, whatever account: 5 failures from one address, and its next login of anyone is refused.
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com', 'e@example.com']) expect((await login(WRONG, '198.51.100.1', email)).statusCode).toBe(401);
    expect((await login(PASSWORD, '198.51.100.1')).statusCode).toBe(429);

    // Per account over every address: 7 guesses, each from an address of its own, and the account is refused from anywhere.
    for (let i = 2; i <= 8; i++) expect((await login(WRONG, `198.51.100.${i}`)).statusCode).toBe(401);
    const everywhere = await login(PASSWORD, '198.51.100.9');
    expect(everywhere.statusCode).toBe(429);
    expect(everywhere.json().error.message).toMatch(/of this account/);
  });

  it('are atomic in the storage: two instances admitting 40 parallel attempts admit exactly the limit, and the window lets one go when its oldest leaves', async () => {
    const [first, second] = await openPair();
    try {
      const start = new Date('2026-01-01T00:00:00Z');
      const admissions = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? first : second).accounts.admitLogin(attempt('ada@example.com', GUESSER, start))));
      expect(admissions.filter((admission) => admission.admitted)).toHaveLength(3);
      const refusal = admissions.find((admission) => !admission.admitted);
      expect(refusal).toEqual({ admitted: false, scope: 'account-address', retryAfterMs: 60_000 });

      // 30 s later: still 30 s to wait; once the window has passed, one more is admitted.
      expect(await first.accounts.admitLogin(attempt('ada@example.com', GUESSER, new Date(start.getTime() + 30_000)))).toEqual({ admitted: false, scope: 'account-address', retryAfterMs: 30_000 });
      const later = await second.accounts.admitLogin(attempt('ada@example.com', GUESSER, new Date(start.getTime() + 60_000)));
      expect(later.admitted).toBe(true);

      // A success clears the account's attempts from that address; an unchecked one is forgotten.
      if (!later.admitted) throw new Error('unreachable');
      await first.accounts.settleLogin(later.id, 'succeeded');
      const fresh = new Date(start.getTime() + 61_000);
      const again = await Promise.all([1, 2, 3].map(() => first.accounts.admitLogin(attempt('ada@example.com', GUESSER, fresh))));
      expect(again.every((admission) => admission.admitted)).toBe(true);
      const unchecked = again[0]!;
      if (!unchecked.admitted) throw new Error('unreachable');
      await second.accounts.settleLogin(unchecked.id, 'unchecked');
      expect((await first.accounts.admitLogin(attempt('ada@example.com', GUESSER, fresh))).admitted).toBe(true);
      expect((await first.accounts.admitLogin(attempt('ada@example.com', GUESSER, fresh))).admitted).toBe(false);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});
