import { timingSafeEqual } from 'node:crypto';

import type Database from 'better-sqlite3';

import { lastUseToWrite, managementPermission, newTokenRecord, ownerAddition, ownerRemoval, permission } from '../records.js';
import { placeholder } from './database.js';
import { insertStatement, TOKEN_COLUMNS, tokenOf as toToken, tokenValues, type TokenRow } from '../rows.js';
import { secretDigest } from '../secrets.js';
import { tokenState, type NewToken, type OwnerChange, type Permission, type Revocation, type TokenCheck, type TokenRecord, type TokenStore } from '../types.js';
import { trustedSync } from './trusted-publishers.js';

/** SQLite could not write (busy past its timeout, read-only, full): recording a use is not worth failing a request for. */
function isSqliteError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_');
}

/** The owner of a claimed name (synchronous: reservations call it inside their transaction). */
export function ownerOfSync(db: Database.Database, name: string): string | undefined {
  return (db.prepare('SELECT owner FROM owners WHERE name = ?').get(name) as { owner: string } | undefined)?.owner;
}

/** Every owner of a claimed name, the claimer first, then co-owners in the order they were added (synchronous: reservations call it inside their transaction). */
export function ownersOfSync(db: Database.Database, name: string): string[] {
  const claimer = ownerOfSync(db, name);
  if (claimer === undefined) return [];
  const coOwners = db.prepare('SELECT owner FROM co_owners WHERE name = ? ORDER BY rowid').pluck().all(name) as string[];
  return [claimer, ...coOwners];
}

/**
 * Tokens (only their sha256 is kept; expired and revoked ones stay, for the audit trail) and the
 * owners of template names, in SQLite.
 */
export class SqliteTokenStore implements TokenStore {
  constructor(private readonly db: Database.Database) {}

  createToken(options: NewToken): Promise<{ token: string; record: TokenRecord }> {
    const { token, record } = newTokenRecord(options);
    this.db.prepare(insertStatement('tokens', TOKEN_COLUMNS, placeholder)).run(...tokenValues(record, secretDigest(token)));
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

  /** Writes `now` as the token's last use when the stored one is older than the precision (best effort). */
  private recordUse(record: TokenRecord, now: Date): TokenRecord {
    const used = lastUseToWrite(record, now);
    if (used === undefined) return record;
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

  ownersOf(name: string): Promise<string[]> {
    return Promise.resolve(ownersOfSync(this.db, name));
  }

  addOwner(name: string, owner: string, now: Date = new Date()): Promise<OwnerChange> {
    const add = this.db.transaction((): OwnerChange => {
      const change = ownerAddition(ownersOfSync(this.db, name), owner);
      if ('changed' in change && change.changed) this.db.prepare('INSERT INTO co_owners (name, owner, added_at) VALUES (?, ?, ?)').run(name, owner, now.toISOString());
      return change;
    });
    return Promise.resolve(add.immediate());
  }

  removeOwner(name: string, owner: string): Promise<OwnerChange> {
    const remove = this.db.transaction((): OwnerChange => {
      const removal = ownerRemoval(ownersOfSync(this.db, name), owner);
      if ('refused' in removal) return removal;
      if (removal.claimer !== undefined) this.db.prepare('UPDATE owners SET owner = ? WHERE name = ?').run(removal.claimer, name);
      this.db.prepare('DELETE FROM co_owners WHERE name = ? AND owner = ?').run(name, removal.claimer ?? owner);
      return { changed: true, owners: removal.owners };
    });
    return Promise.resolve(remove.immediate());
  }

  canPublish(token: TokenRecord, name: string): Promise<Permission> {
    return Promise.resolve(permission(token, name, ownersOfSync(this.db, name), trustedSync(this.db, token, name)));
  }

  canManage(token: TokenRecord, name: string): Promise<Permission> {
    return Promise.resolve(managementPermission(token, name, ownersOfSync(this.db, name)));
  }
}
