/**
 * The storage rules every backend shares (the SQLite and PostgreSQL stores both call these): how a
 * token and an account record are made, who may publish a name, what a session's state is, the
 * exact body a webhook delivery sends, and when a login is refused for too many failures.
 */
import { randomBytes } from 'node:crypto';

import { isTemplateName, NAME_PATTERN } from '../core/versions.js';
import type { LoginLimit, LoginScope, NewToken, NewUser, Permission, SessionKind, TokenRecord, UserRecord, WebhookEventRecord } from './types.js';

/** A new token (returned once; only its hash is stored) and its record; throws on a role, name or expiry that breaks the rules. */
export function newTokenRecord(options: NewToken): { token: string; record: TokenRecord } {
  if (options.role !== 'publisher' && options.role !== 'admin') throw new Error(`role must be publisher or admin (got ${String(options.role)})`);
  for (const name of options.templates ?? []) {
    if (!isTemplateName(name)) throw new Error(`template name ${JSON.stringify(name)} must match ${NAME_PATTERN.source}`);
  }
  const now = options.now ?? new Date();
  const expiresAt = options.expiresAt;
  if (expiresAt !== undefined && !(expiresAt.getTime() > now.getTime())) {
    throw new Error(`expiresAt must be a date after the token's creation (${now.toISOString()})`);
  }
  const id = `tok_${randomBytes(6).toString('hex')}`;
  const token = `trg_${randomBytes(32).toString('base64url')}`;
  const record: TokenRecord = {
    id,
    role: options.role,
    ...(options.templates && options.templates.length > 0 ? { templates: [...options.templates] } : {}),
    owner: options.owner ?? id,
    createdAt: now.toISOString(),
    ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
  };
  return { token, record };
}

/** The record of a new account (its e-mail lower-cased). */
export function newUserRecord(user: NewUser): UserRecord {
  return {
    id: `usr_${randomBytes(6).toString('hex')}`,
    email: user.email.trim().toLowerCase(),
    role: user.role,
    owner: user.owner,
    ...(user.name !== undefined ? { name: user.name } : {}),
    createdAt: (user.now ?? new Date()).toISOString(),
  };
}

/** The publishing rule: admins publish anything; a publisher its listed names, if unclaimed or one of its owners'. */
export function permission(token: TokenRecord, name: string, owners: readonly string[]): Permission {
  if (token.role === 'admin') return { allowed: true };
  if (token.templates && !token.templates.includes(name)) {
    return { allowed: false, reason: `this token may publish only ${token.templates.join(', ')}` };
  }
  if (owners.length > 0 && !owners.includes(token.owner)) return { allowed: false, reason: `template ${name} belongs to another publisher` };
  return { allowed: true };
}

/** A session secret: what the client keeps (only its sha256 is stored). */
export const newSessionSecret = (kind: SessionKind): string => `${kind === 'refresh' ? 'trr' : 'trs'}_${randomBytes(32).toString('base64url')}`;

/** The stored state of a session. */
export interface SessionState {
  expiresAt: Date;
  replacedAt?: Date;
  revokedAt?: Date;
  /**
   * Whether another session of its family (its login) was revoked. A family is revoked as a whole,
   * but on PostgreSQL a rotation committing while a replay revokes the family can leave the new row
   * unmarked (the revoking statement's snapshot did not see it): one revoked row ends the login.
   */
  familyRevoked?: boolean;
}

/** Why a session may not be used at `now` (revoked, then reused, then expired), or undefined when it may. */
export function sessionRefusal(session: SessionState, now: Date): 'expired' | 'revoked' | 'reused' | undefined {
  if (session.revokedAt !== undefined || session.familyRevoked === true) return 'revoked';
  if (session.replacedAt !== undefined) return 'reused';
  if (now.getTime() >= session.expiresAt.getTime()) return 'expired';
  return undefined;
}

/** The exact JSON body of a delivery (what is signed and sent on every attempt): the spec's `{ event, timestamp, data }`. */
export function webhookBody(record: WebhookEventRecord, now: Date): string {
  return JSON.stringify({ event: record.event, timestamp: record.timestamp ?? now.toISOString(), data: record.data });
}

/** The order the login limits are checked in, and where they are reported. */
export const LOGIN_SCOPES: readonly LoginScope[] = ['account-address', 'address', 'account'];

/**
 * The login rule: a login is refused while any of its scopes holds `max` attempts in its window
 * (failed ones, and ones being checked). `maxthNewest[scope]` is the time of the `max`-th newest
 * attempt of that scope inside its window (undefined: fewer than `max`); the wait is until that one
 * leaves the window. Undefined: admitted.
 */
export function loginRefusal(
  limits: Record<LoginScope, LoginLimit>,
  maxthNewest: Partial<Record<LoginScope, Date>>,
  now: Date,
): { admitted: false; scope: LoginScope; retryAfterMs: number } | undefined {
  let refusal: { admitted: false; scope: LoginScope; retryAfterMs: number } | undefined;
  for (const scope of LOGIN_SCOPES) {
    const at = maxthNewest[scope];
    if (at === undefined) continue;
    const retryAfterMs = Math.max(1, at.getTime() + limits[scope].windowMs - now.getTime());
    if (!refusal || retryAfterMs > refusal.retryAfterMs) refusal = { admitted: false, scope, retryAfterMs };
  }
  return refusal;
}

/** The longest window of the login limits: attempts older than it count for nothing and may be removed. */
export const longestLoginWindow = (limits: Record<LoginScope, LoginLimit>): number => Math.max(...LOGIN_SCOPES.map((scope) => limits[scope].windowMs));
