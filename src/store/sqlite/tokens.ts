import { randomBytes, timingSafeEqual } from 'node:crypto';

import type Database from 'better-sqlite3';

import { isTemplateName, NAME_PATTERN } from '../../core/versions.js';
import { secretDigest } from '../secrets.js';
import { LAST_USED_PRECISION_MS, tokenState, type NewToken, type Permission, type Revocation, type TokenCheck, type TokenRecord, type TokenStore } from '../types.js';

interface TokenRow {
  id: string;
  hash: Buffer;
  role: TokenRecord['role'];
  templates: string | null;
  owner: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

const toToken = (row: TokenRow): TokenRecord => ({
  id: row.id,
  role: row.role,
  ...(row.templates ? { templates: JSON.parse(row.templates) as string[] } : {}),
  owner: row.owner,
  createdAt: row.created_at,
  ...(row.expires_at ? { expiresAt: row.expires_at } : {}),
  ...(row.revoked_at ? { revokedAt: row.revoked_at } : {}),
  ...(row.last_used_at ? { lastUsedAt: row.last_used_at } : {}),
});

/** SQLite could not write (busy past its timeout, read-only, full): recording a use is not worth failing a request for. */
function isSqliteError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_');
}

/** The owner of a claimed name (synchronous: reservations call it inside their transaction). */
export function ownerOfSync(db: Database.Database, name: string): string | undefined {
  return (db.prepare('SELECT owner FROM owners WHERE name = ?').get(name) as { owner: string } | undefined)?.owner;
}

/** The publishing rule: admins publish anything; a publisher its listed names, if unclaimed or its owner's. */
export function permission(token: TokenRecord, name: string, owner: string | undefined): Permission {
  if (token.role === 'admin') return { allowed: true };
  if (token.templates && !token.templates.includes(name)) {
    return { allowed: false, reason: `this token may publish only ${token.templates.join(', ')}` };
  }
  if (owner !== undefined && owner !== token.owner) return { allowed: false, reason: `template ${name} belongs to another publisher` };
  return { allowed: true };
}

/**
 * Tokens (only their sha256 is kept; expired and revoked ones stay, for the audit trail) and the
 * owners of template names, in SQLite.
 */
export class SqliteTokenStore implements TokenStore {
  constructor(private readonly db: Database.Database) {}

  createToken(options: NewToken): Promise<{ token: string; record: TokenRecord }> {
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
    this.db
      .prepare('INSERT INTO tokens (id, hash, role, templates, owner, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(id, secretDigest(token), record.role, record.templates ? JSON.stringify(record.templates) : null, record.owner, record.createdAt, record.expiresAt ?? null);
    return Promise.resolve({ token, record });
  }

  checkToken(token: string, now: Date = new Date()): Promise<TokenCheck> {
    if (token === '') return Promise.resolve({ valid: false, reason: 'unknown' });
    const presented = secretDigest(token);
    // Read on every request, never cached: a revocation by another process (the CLI) applies to the next request.
    const row = this.db.prepare('SELECT * FROM tokens WHERE hash = ?').get(presented) as TokenRow | undefined;
    if (!row || !timingSafeEqual(row.hash, presented)) return Promise.resolve({ valid: false, reason: 'unknown' });
    const record = toToken(row);
    const state = tokenState(record, now);
    if (state !== 'active') return Promise.resolve({ valid: false, reason: state, record });
    return Promise.resolve({ valid: true, record: this.recordUse(record, now) });
  }

  async authenticate(token: string, now?: Date): Promise<TokenRecord | undefined> {
    const check = await this.checkToken(token, now);
    return check.valid ? check.record : undefined;
  }

  /** Writes `now` as the token's last use when the stored one is older than the precision (best effort). */
  private recordUse(record: TokenRecord, now: Date): TokenRecord {
    const last = record.lastUsedAt === undefined ? undefined : Date.parse(record.lastUsedAt);
    if (last !== undefined && now.getTime() - last < LAST_USED_PRECISION_MS) return record;
    const used = now.toISOString();
    try {
      // Never moves backwards when another process wrote a later use meanwhile.
      this.db.prepare('UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)').run(used, record.id, used);
    } catch (error) {
      if (!isSqliteError(error)) throw error;
      return record;
    }
    return { ...record, lastUsedAt: used };
  }

  listTokens(): Promise<TokenRecord[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM tokens ORDER BY created_at, id').all() as TokenRow[]).map(toToken));
  }

  revokeToken(id: string, now: Date = new Date()): Promise<Revocation> {
    const revoke = this.db.transaction((): Revocation => {
      const row = this.db.prepare('SELECT * FROM tokens WHERE id = ?').get(id) as TokenRow | undefined;
      if (!row) return { found: false };
      if (row.revoked_at) return { found: true, alreadyRevoked: true, record: toToken(row) };
      this.db.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ?').run(now.toISOString(), id);
      return { found: true, alreadyRevoked: false, record: toToken({ ...row, revoked_at: now.toISOString() }) };
    });
    return Promise.resolve(revoke.immediate());
  }

  ownerOf(name: string): Promise<string | undefined> {
    return Promise.resolve(ownerOfSync(this.db, name));
  }

  canPublish(token: TokenRecord, name: string): Promise<Permission> {
    return Promise.resolve(permission(token, name, ownerOfSync(this.db, name)));
  }
}
