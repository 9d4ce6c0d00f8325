/**
 * Failed logins are limited in three counts, kept by the storage (so every instance on it shares
 * them), each in a window of its own:
 *
 * - one account from one client address (`loginFailuresPerAccountAddress`, default 5 per 15 minutes):
 *   a guesser locks out only its own address, never the account's owner elsewhere;
 * - one client address, any account (`loginFailuresPerAddress`, 20 per 15 minutes);
 * - one account from every address together (`loginFailuresPerAccount`, 50 per hour): the slower
 *   limit of guesses spread over many addresses.
 *
 * A login is counted before its password is checked, in the same transaction as the counts it is
 * checked against (`AccountStore.admitLogin`): of any number of concurrent logins at most each
 * limit's worth is evaluated, and the rest get 429 with Retry-After, whether their password is right
 * or not (a guesser learns nothing). A successful login forgets its account's failures from its
 * address; a login never evaluated (the hash queue was full) is forgotten.
 */
import type { AccountStore, LoginOutcome, LoginScope } from '../store/types.js';
import type { ServerLimits } from './context.js';
import { ApiError } from './envelope.js';

export type LoginLimits = Pick<
  ServerLimits,
  'loginFailuresPerAccountAddress' | 'loginFailuresPerAddress' | 'loginWindowMs' | 'loginFailuresPerAccount' | 'loginAccountWindowMs'
>;

const WHOSE: Record<LoginScope, string> = {
  'account-address': 'of this account from your address',
  address: 'from your address',
  account: 'of this account',
};

function tooManyFailures(scope: LoginScope, waitMs: number): ApiError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiError(429, 'RATE_LIMIT_EXCEEDED', `too many failed logins ${WHOSE[scope]}: retry in ${retryAfter} seconds`, [], { 'Retry-After': String(retryAfter) }, { retryAfter });
}

/** The key of an account in the counts: its e-mail as accounts store it (trimmed, lower-cased). */
export const accountKey = (email: string): string => email.trim().toLowerCase();

export class LoginThrottle {
  constructor(
    private readonly accounts: AccountStore,
    private readonly limits: LoginLimits,
  ) {}

  /** Counts a login of `email` from `address` before its password is checked: the attempt's id, or a 429 ApiError. */
  async admit(email: string, address: string, now = new Date()): Promise<string> {
    const { limits } = this;
    const admission = await this.accounts.admitLogin({
      account: accountKey(email),
      address,
      limits: {
        'account-address': { max: limits.loginFailuresPerAccountAddress, windowMs: limits.loginWindowMs },
        address: { max: limits.loginFailuresPerAddress, windowMs: limits.loginWindowMs },
        account: { max: limits.loginFailuresPerAccount, windowMs: limits.loginAccountWindowMs },
      },
      now,
    });
    if (!admission.admitted) throw tooManyFailures(admission.scope, admission.retryAfterMs);
    return admission.id;
  }

  settle(id: string, outcome: LoginOutcome): Promise<void> {
    return this.accounts.settleLogin(id, outcome);
  }
}
