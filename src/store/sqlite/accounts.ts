import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

import type Database from 'better-sqlite3';

import { emailKey, longestLoginWindow, loginRefusal, newSessionSecret, newUserRecord, sessionRefusal } from '../records.js';
import { secretDigest } from '../secrets.js';
import type { AccountStore, LoginAdmission, LoginAttempt, LoginOutcome, LoginScope, NewSession, NewSessionSecret, NewUser, SessionCheck, SessionKind, SessionRotation, UserCreation, UserRecord } from '../types.js';
import { insertStatement, SESSION_COLUMNS, sessionStateOf, sessionValues, timeOf, USER_COLUMNS, userOf as toUser, userValues, type SessionRow, type UserRow } from '../rows.js';
import { placeholder } from './database.js';

/** A session row with whether a session of the same family was revoked (1: read with the row, not a column). */
type SessionWithFamily = SessionRow & { family_revoked?: number };

/** Accounts, sessions and settings in SQLite. */
export class SqliteAccountStore implements AccountStore {
  constructor(private readonly db: Database.Database) {}

  createUser(user: NewUser): Promise<UserCreation> {
    const record = newUserRecord(user);
    const inserted = this.db
      .prepare(`${insertStatement('users', USER_COLUMNS, placeholder)} ON CONFLICT (email) DO NOTHING`)
      .run(...userValues(record, user.passwordHash));
    return Promise.resolve(inserted.changes > 0 ? { created: true, user: record } : { created: false, reason: 'email-exists' });
  }

  getUser(id: string): Promise<UserRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return Promise.resolve(row ? toUser(row) : undefined);
  }

  findCredentials(email: string): Promise<{ user: UserRecord; passwordHash: string } | undefined> {
    const row = this.db.prepare('SELECT * FROM users WHERE email = ?').get(emailKey(email)) as UserRow | undefined;
    return Promise.resolve(row ? { user: toUser(row), passwordHash: row.password_hash } : undefined);
  }

  listUsers(): Promise<UserRecord[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM users ORDER BY created_at, id').all() as UserRow[]).map(toUser));
  }

  private insertSession(session: NewSession, family: string): NewSessionSecret {
    const secret = newSessionSecret(session.kind);
    const expiresAt = session.expiresAt.toISOString();
    this.db.prepare(insertStatement('sessions', SESSION_COLUMNS, placeholder)).run(...sessionValues(session, secretDigest(secret), family));
    return { secret, expiresAt, family };
  }

  createSession(session: NewSession): Promise<NewSessionSecret> {
    return Promise.resolve(this.insertSession(session, randomUUID()));
  }

  private sessionRow(secret: string, kind: SessionKind): SessionWithFamily | undefined {
    if (secret === '') return undefined;
    const presented = secretDigest(secret);
    // `family_revoked`: the shared rule (records.ts). Here a family is always revoked whole (SQLite
    // serializes writers), so it only keeps both backends answering from the same state.
    const row = this.db
      .prepare(
        `SELECT s.*, EXISTS (SELECT 1 FROM sessions f WHERE f.family = s.family AND f.revoked_at IS NOT NULL) AS family_revoked
         FROM sessions s WHERE s.hash = ? AND s.kind = ?`,
      )
      .get(presented, kind) as SessionWithFamily | undefined;
    return row && timingSafeEqual(row.hash, presented) ? row : undefined;
  }

  private revokeFamily(family: string, now: Date): void {
    this.db.prepare('UPDATE sessions SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL').run(now.toISOString(), family);
  }

  checkSession(secret: string, kind: SessionKind, now: Date = new Date()): Promise<SessionCheck> {
    const check = this.db.transaction((): SessionCheck => {
      const row = this.sessionRow(secret, kind);
      if (!row) return { valid: false, reason: 'unknown' };
      const refusal = sessionRefusal(sessionStateOf(row, row.family_revoked === 1), now);
      if (refusal === 'reused') this.revokeFamily(row.family, now);
      if (refusal) return { valid: false, reason: refusal };
      const user = this.db.prepare('SELECT * FROM users WHERE id = ?').get(row.user_id) as UserRow | undefined;
      return user ? { valid: true, user: toUser(user), expiresAt: timeOf(row.expires_at) } : { valid: false, reason: 'unknown' };
    });
    return Promise.resolve(check.immediate());
  }

  rotateSession(secret: string, expiresAt: Date, now: Date = new Date()): Promise<SessionRotation> {
    const rotate = this.db.transaction((): SessionRotation => {
      const row = this.sessionRow(secret, 'refresh');
      if (!row) return { rotated: false, reason: 'unknown' };
      const refusal = sessionRefusal(sessionStateOf(row, row.family_revoked === 1), now);
      if (refusal === 'reused') this.revokeFamily(row.family, now);
      if (refusal) return { rotated: false, reason: refusal };
      const user = this.db.prepare('SELECT * FROM users WHERE id = ?').get(row.user_id) as UserRow | undefined;
      if (!user) return { rotated: false, reason: 'unknown' };
      this.db.prepare('UPDATE sessions SET replaced_at = ? WHERE hash = ?').run(now.toISOString(), row.hash);
      const next = this.insertSession({ userId: row.user_id, kind: 'refresh', expiresAt, now }, row.family);
      return { rotated: true, user: toUser(user), ...next };
    });
    return Promise.resolve(rotate.immediate());
  }

  revokeSession(secret: string, now: Date = new Date()): Promise<boolean> {
    const revoke = this.db.transaction((): boolean => {
      const presented = secretDigest(secret);
      const row = this.db.prepare('SELECT * FROM sessions WHERE hash = ?').get(presented) as SessionRow | undefined;
      if (!row) return false;
      this.revokeFamily(row.family, now);
      return true;
    });
    return Promise.resolve(revoke.immediate());
  }

  loginUser(family: string, userId: string): Promise<UserRecord | undefined> {
    // Both subqueries use the family index: the cost of an access token is this one statement.
    const row = this.db
      .prepare(
        `SELECT * FROM users WHERE id = @userId
           AND EXISTS (SELECT 1 FROM sessions WHERE family = @family AND user_id = @userId)
           AND NOT EXISTS (SELECT 1 FROM sessions WHERE family = @family AND revoked_at IS NOT NULL)`,
      )
      .get({ family, userId }) as UserRow | undefined;
    return Promise.resolve(row ? toUser(row) : undefined);
  }

  admitLogin(attempt: LoginAttempt): Promise<LoginAdmission> {
    const now = attempt.now ?? new Date();
    const t = now.getTime();
    // The attempt of each scope that is the limit's max-th newest inside its window, if there is one.
    const maxthNewest = (scope: LoginScope, where: string, params: string[]): Date | undefined => {
      const { max, windowMs } = attempt.limits[scope];
      const at = this.db.prepare(`SELECT at FROM login_attempts WHERE ${where} AND at > ? ORDER BY at DESC LIMIT 1 OFFSET ?`).pluck().get(...params, t - windowMs, max - 1) as number | undefined;
      return at === undefined ? undefined : new Date(at);
    };
    // IMMEDIATE: the counts and the new attempt in one write transaction, whatever other process shares the store.
    const admit = this.db.transaction((): LoginAdmission => {
      this.db.prepare('DELETE FROM login_attempts WHERE at <= ?').run(t - longestLoginWindow(attempt.limits));
      const refusal = loginRefusal(
        attempt.limits,
        {
          'account-address': maxthNewest('account-address', 'account = ? AND address = ?', [attempt.account, attempt.address]),
          address: maxthNewest('address', 'address = ?', [attempt.address]),
          account: maxthNewest('account', 'account = ?', [attempt.account]),
        },
        now,
      );
      if (refusal) return refusal;
      const id = randomUUID();
      this.db.prepare('INSERT INTO login_attempts (id, account, address, at) VALUES (?, ?, ?, ?)').run(id, attempt.account, attempt.address, t);
      return { admitted: true, id };
    });
    return Promise.resolve(admit.immediate());
  }

  settleLogin(id: string, outcome: LoginOutcome): Promise<void> {
    if (outcome === 'failed') return Promise.resolve();
    const settle = this.db.transaction((): void => {
      const row = this.db.prepare('SELECT account, address FROM login_attempts WHERE id = ?').get(id) as { account: string; address: string } | undefined;
      this.db.prepare('DELETE FROM login_attempts WHERE id = ?').run(id);
      if (row && outcome === 'succeeded') this.db.prepare('DELETE FROM login_attempts WHERE account = ? AND address = ?').run(row.account, row.address);
    });
    settle.immediate();
    return Promise.resolve();
  }

  signingKey(): Promise<Uint8Array> {
    const key = this.db.transaction((): Buffer => {
      this.db.prepare("INSERT INTO settings (key, value) VALUES ('access-token-key', ?) ON CONFLICT (key) DO NOTHING").run(randomBytes(32));
      return this.db.prepare("SELECT value FROM settings WHERE key = 'access-token-key'").pluck().get() as Buffer;
    });
    return Promise.resolve(new Uint8Array(key.immediate()));
  }
}
