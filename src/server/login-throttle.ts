/**
 * Failed logins, counted per account (its e-mail) and per client address, in windows of the
 * server's `loginWindowMs`: past either limit, logins are refused with 429 until the window ends,
 * whether the password is right or not (a guesser learns nothing). A successful login clears its
 * account's count. Counts are per server instance (in memory), like the other rate limits.
 */
import type { ServerLimits } from './context.js';
import { WindowCounter } from './rate-limit.js';

export class LoginThrottle {
  readonly #accounts: WindowCounter;
  readonly #addresses: WindowCounter;

  constructor(private readonly limits: Pick<ServerLimits, 'loginFailuresPerAccount' | 'loginFailuresPerAddress' | 'loginWindowMs'>) {
    this.#accounts = new WindowCounter(limits.loginWindowMs);
    this.#addresses = new WindowCounter(limits.loginWindowMs);
  }

  /** Milliseconds until a login of `email` from `address` may be tried again; 0: now. */
  blockedFor(email: string, address: string, now = Date.now()): number {
    const account = this.#accounts.peek(accountKey(email), now);
    const client = this.#addresses.peek(address, now);
    const waits = [account.current >= this.limits.loginFailuresPerAccount ? account.ttl : 0, client.current >= this.limits.loginFailuresPerAddress ? client.ttl : 0];
    return Math.max(...waits);
  }

  recordFailure(email: string, address: string, now = Date.now()): void {
    this.#accounts.hit(accountKey(email), now);
    this.#addresses.hit(address, now);
  }

  recordSuccess(email: string): void {
    this.#accounts.reset(accountKey(email));
  }
}

const accountKey = (email: string): string => email.trim().toLowerCase();
