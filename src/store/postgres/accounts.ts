import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

import type pg from 'pg';

import { emailKey, longestLoginWindow, loginRefusal, newSessionSecret, newUserRecord, sessionRefusal } from '../records.js';
import { secretDigest } from '../secrets.js';
import type { AccountStore, LoginAdmission, LoginAttempt, LoginOutcome, LoginScope, NewSession, NewSessionSecret, NewUser, SessionCheck, SessionKind, SessionRotation, UserCreation, UserRecord } from '../types.js';
import { placeholder, transaction, type Queryable } from './database.js';
import { insertStatement, SESSION_COLUMNS, sessionStateOf as stateOf, sessionValues, timeOf, USER_COLUMNS, userOf as toUser, userValues, type SessionRow, type UserRow } from '../rows.js';

const SIGNING_KEY = 'access-token-key';

/** Accounts, sessions and the shared signing key in PostgreSQL. */
export class PostgresAccountStore implements AccountStore {
  #signingKey: Uint8Array | undefined;

  constructor(private readonly pool: pg.Pool) {}

  async createUser(user: NewUser): Promise<UserCreation> {
    const record = newUserRecord(user);
    const inserted = await this.pool.query(`${insertStatement('users', USER_COLUMNS, placeholder)} ON CONFLICT (email) DO NOTHING`, userValues(record, user.passwordHash));
    return inserted.rowCount ? { created: true, user: record } : { created: false, reason: 'email-exists' };
  }

  async getUser(id: string): Promise<UserRecord | undefined> {
    const row = (await this.pool.query<UserRow>('SELECT * FROM users WHERE id = $1', [id])).rows[0];
    return row ? toUser(row) : undefined;
  }

  async findCredentials(email: string): Promise<{ user: UserRecord; passwordHash: string } | undefined> {
    const row = (await this.pool.query<UserRow>('SELECT * FROM users WHERE email = $1', [emailKey(email)])).rows[0];
    return row ? { user: toUser(row), passwordHash: row.password_hash } : undefined;
  }

  async listUsers(): Promise<UserRecord[]> {
    return (await this.pool.query<UserRow>('SELECT * FROM users ORDER BY created_at, id')).rows.map(toUser);
  }

  private async insertSession(db: Queryable, session: NewSession, family: string): Promise<NewSessionSecret> {
    const secret = newSessionSecret(session.kind);
    const expiresAt = session.expiresAt.toISOString();
    await db.query(insertStatement('sessions', SESSION_COLUMNS, placeholder), sessionValues(session, secretDigest(secret), family));
    return { secret, expiresAt, family };
  }

  createSession(session: NewSession): Promise<NewSessionSecret> {
    return this.insertSession(this.pool, session, randomUUID());
  }

  /** The session of a secret, its row locked until the transaction ends (concurrent checks and rotations of one secret queue). */
  private async lockedSession(client: pg.PoolClient, secret: string, kind: SessionKind): Promise<SessionRow | undefined> {
    if (secret === '') return undefined;
    const presented = secretDigest(secret);
    const row = (await client.query<SessionRow>('SELECT * FROM sessions WHERE hash = $1 AND kind = $2 FOR UPDATE', [presented, kind])).rows[0];
    return row && timingSafeEqual(row.hash, presented) ? row : undefined;
  }

  /**
   * Whether a session of `family` was revoked. Asked in its own statement after the row lock: under
   * READ COMMITTED it then sees a revocation committed while this transaction waited for the lock.
   */
  private async familyRevoked(db: Queryable, family: string): Promise<boolean> {
    const { rows } = await db.query<{ revoked: boolean }>('SELECT EXISTS (SELECT 1 FROM sessions WHERE family = $1 AND revoked_at IS NOT NULL) AS revoked', [family]);
    return rows[0]?.revoked === true;
  }

  private async revokeFamily(db: Queryable, family: string, now: Date): Promise<void> {
    await db.query('UPDATE sessions SET revoked_at = $1 WHERE family = $2 AND revoked_at IS NULL', [now.toISOString(), family]);
  }

  private async userRow(db: Queryable, id: string): Promise<UserRow | undefined> {
    return (await db.query<UserRow>('SELECT * FROM users WHERE id = $1', [id])).rows[0];
  }

  checkSession(secret: string, kind: SessionKind, now: Date = new Date()): Promise<SessionCheck> {
    return transaction(this.pool, async (client): Promise<SessionCheck> => {
      const row = await this.lockedSession(client, secret, kind);
      if (!row) return { valid: false, reason: 'unknown' };
      const refusal = sessionRefusal(stateOf(row, await this.familyRevoked(client, row.family)), now);
      if (refusal === 'reused') await this.revokeFamily(client, row.family, now);
      if (refusal) return { valid: false, reason: refusal };
      const user = await this.userRow(client, row.user_id);
      return user ? { valid: true, user: toUser(user), expiresAt: timeOf(row.expires_at) } : { valid: false, reason: 'unknown' };
    });
  }

  rotateSession(secret: string, expiresAt: Date, now: Date = new Date()): Promise<SessionRotation> {
    // The row lock makes concurrent rotations of one secret queue: the first replaces it, the next
    // re-reads the row (replaced by then) and sees a reuse, which revokes the family.
    return transaction(this.pool, async (client): Promise<SessionRotation> => {
      const row = await this.lockedSession(client, secret, 'refresh');
      if (!row) return { rotated: false, reason: 'unknown' };
      const refusal = sessionRefusal(stateOf(row, await this.familyRevoked(client, row.family)), now);
      if (refusal === 'reused') await this.revokeFamily(client, row.family, now);
      if (refusal) return { rotated: false, reason: refusal };
      const user = await this.userRow(client, row.user_id);
      if (!user) return { rotated: false, reason: 'unknown' };
      await client.query('UPDATE sessions SET replaced_at = $1 WHERE hash = $2', [now.toISOString(), row.hash]);
      const next = await this.insertSession(client, { userId: row.user_id, kind: 'refresh', expiresAt, now }, row.family);
      return { rotated: true, user: toUser(user), ...next };
    });
  }

  async revokeSession(secret: string, now: Date = new Date()): Promise<boolean> {
    const presented = secretDigest(secret);
    // No transaction needed: revoking a family is idempotent, and a session never changes family.
    const found = await this.pool.query<{ family: string; hash: Buffer }>('SELECT family, hash FROM sessions WHERE hash = $1', [presented]);
    const row = found.rows[0];
    if (!row || !timingSafeEqual(row.hash, presented)) return false;
    await this.revokeFamily(this.pool, row.family, now);
    return true;
  }

  async loginUser(family: string, userId: string): Promise<UserRecord | undefined> {
    // Both subqueries use the family index: the cost of an access token is this one statement.
    const { rows } = await this.pool.query<UserRow>(
      `SELECT * FROM users WHERE id = $2
         AND EXISTS (SELECT 1 FROM sessions WHERE family = $1 AND user_id = $2)
         AND NOT EXISTS (SELECT 1 FROM sessions WHERE family = $1 AND revoked_at IS NOT NULL)`,
      [family, userId],
    );
    return rows[0] ? toUser(rows[0]) : undefined;
  }

  admitLogin(attempt: LoginAttempt): Promise<LoginAdmission> {
    const now = attempt.now ?? new Date();
    return transaction(this.pool, async (client): Promise<LoginAdmission> => {
      // Concurrent logins of one account or from one address (on any instance) queue here, until this
      // transaction ends: each one counts what the ones before it admitted. Locked in one order: no deadlock.
      for (const key of [`login-account:${attempt.account}`, `login-address:${attempt.address}`].sort()) {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
      }
      await client.query('DELETE FROM login_attempts WHERE at <= $1', [new Date(now.getTime() - longestLoginWindow(attempt.limits)).toISOString()]);
      const maxthNewest = async (scope: LoginScope, where: string, params: string[]): Promise<Date | undefined> => {
        const { max, windowMs } = attempt.limits[scope];
        const { rows } = await client.query<{ at: Date }>(
          `SELECT at FROM login_attempts WHERE ${where} AND at > $${params.length + 1} ORDER BY at DESC LIMIT 1 OFFSET $${params.length + 2}`,
          [...params, new Date(now.getTime() - windowMs).toISOString(), max - 1],
        );
        return rows[0]?.at;
      };
      const refusal = loginRefusal(
        attempt.limits,
        {
          'account-address': await maxthNewest('account-address', 'account = $1 AND address = $2', [attempt.account, attempt.address]),
          address: await maxthNewest('address', 'address = $1', [attempt.address]),
          account: await maxthNewest('account', 'account = $1', [attempt.account]),
        },
        now,
      );
      if (refusal) return refusal;
      const id = randomUUID();
      await client.query('INSERT INTO login_attempts (id, account, address, at) VALUES ($1, $2, $3, $4)', [id, attempt.account, attempt.address, now.toISOString()]);
      return { admitted: true, id };
    });
  }

  async settleLogin(id: string, outcome: LoginOutcome): Promise<void> {
    if (outcome === 'failed') return;
    const { rows } = await this.pool.query<{ account: string; address: string }>('DELETE FROM login_attempts WHERE id = $1 RETURNING account, address', [id]);
    const row = rows[0];
    if (row && outcome === 'succeeded') await this.pool.query('DELETE FROM login_attempts WHERE account = $1 AND address = $2', [row.account, row.address]);
  }

  async signingKey(): Promise<Uint8Array> {
    // Made once by whichever instance comes first; a key never changes, so each instance keeps it once read.
    if (!this.#signingKey) {
      await this.pool.query('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [SIGNING_KEY, randomBytes(32)]);
      const { rows } = await this.pool.query<{ value: Buffer }>('SELECT value FROM settings WHERE key = $1', [SIGNING_KEY]);
      if (!rows[0]) throw new Error('the access-token signing key vanished from settings');
      this.#signingKey = new Uint8Array(rows[0].value);
    }
    return new Uint8Array(this.#signingKey);
  }
}
