import { timingSafeEqual } from 'node:crypto';

import type pg from 'pg';

import { insertStatement, TOKEN_COLUMNS, tokenOf as toToken, tokenValues, type TokenRow } from '../rows.js';
import { secretDigest } from '../secrets.js';
// The publishing rule has one home (the embedded store's); that module only imports SQLite's types.
import { lastUseToWrite, managementPermission, newTokenRecord, ownerAddition, ownerRemoval, permission } from '../records.js';
import { tokenState, type NewToken, type OwnerChange, type Permission, type Revocation, type TokenCheck, type TokenRecord, type TokenStore } from '../types.js';
import { isDatabaseError, placeholder, transaction, type Queryable } from './database.js';
import { trustedIn } from './trusted-publishers.js';

/** Every owner of a name, the claimer first, then co-owners in the order they were added. */
export async function ownersIn(db: Queryable, name: string): Promise<string[]> {
  const { rows } = await db.query<{ owner: string }>(
    `SELECT owner FROM (
       SELECT owner, 0 AS rank, 0::bigint AS seq FROM owners WHERE name = $1
       UNION ALL
       SELECT c.owner, 1, c.seq FROM co_owners c WHERE c.name = $1
     ) AS o ORDER BY rank, seq`,
    [name],
  );
  return rows.map((row) => row.owner);
}

/** Tokens (only their sha256 is kept; expired and revoked ones stay) and the owners of template names, in PostgreSQL. */
export class PostgresTokenStore implements TokenStore {
  constructor(private readonly pool: pg.Pool) {}

  async createToken(options: NewToken): Promise<{ token: string; record: TokenRecord }> {
    const { token, record } = newTokenRecord(options);
    await this.pool.query(insertStatement('tokens', TOKEN_COLUMNS, placeholder), tokenValues(record, secretDigest(token)));
    return { token, record };
  }

  async checkToken(token: string, now: Date = new Date()): Promise<TokenCheck> {
    if (token === '') return { valid: false, reason: 'unknown' };
    const presented = secretDigest(token);
    // Read on every request, never cached: a revocation by another instance applies to the next request.
    const { rows } = await this.pool.query<TokenRow>('SELECT * FROM tokens WHERE hash = $1', [presented]);
    const row = rows[0];
    if (!row || !timingSafeEqual(row.hash, presented)) return { valid: false, reason: 'unknown' };
    const record = toToken(row);
    const state = tokenState(record, now);
    if (state !== 'active') return { valid: false, reason: state, record };
    return { valid: true, record: await this.recordUse(record, now) };
  }

  /** Writes `now` as the token's last use when the stored one is older than the precision (best effort). */
  private async recordUse(record: TokenRecord, now: Date): Promise<TokenRecord> {
    const used = lastUseToWrite(record, now);
    if (used === undefined) return record;
    try {
      // Never moves backwards when another instance wrote a later use meanwhile.
      await this.pool.query('UPDATE tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)', [used, record.id]);
    } catch (error) {
      // A read-only standby or a lock time-out: recording a use is not worth failing a request for.
      if (!isDatabaseError(error)) throw error;
      return record;
    }
    return { ...record, lastUsedAt: used };
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (await this.pool.query<TokenRow>('SELECT * FROM tokens ORDER BY created_at, id')).rows.map(toToken);
  }

  async revokeToken(id: string, now: Date = new Date()): Promise<Revocation> {
    // One statement: of concurrent revocations one sets the instant, the others see it set.
    const revoked = await this.pool.query<TokenRow>('UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING *', [id, now.toISOString()]);
    if (revoked.rows[0]) return { found: true, alreadyRevoked: false, record: toToken(revoked.rows[0]) };
    const { rows } = await this.pool.query<TokenRow>('SELECT * FROM tokens WHERE id = $1', [id]);
    return rows[0] ? { found: true, alreadyRevoked: true, record: toToken(rows[0]) } : { found: false };
  }

  async ownerOf(name: string): Promise<string | undefined> {
    return (await this.pool.query<{ owner: string }>('SELECT owner FROM owners WHERE name = $1', [name])).rows[0]?.owner;
  }

  ownersOf(name: string): Promise<string[]> {
    return ownersIn(this.pool, name);
  }

  addOwner(name: string, owner: string, now: Date = new Date()): Promise<OwnerChange> {
    return transaction(this.pool, async (client): Promise<OwnerChange> => {
      // The claim row locked: a concurrent removal of the claimer cannot interleave.
      await client.query('SELECT 1 FROM owners WHERE name = $1 FOR UPDATE', [name]);
      const change = ownerAddition(await ownersIn(client, name), owner);
      if ('changed' in change && change.changed) await client.query('INSERT INTO co_owners (name, owner, added_at) VALUES ($1, $2, $3)', [name, owner, now.toISOString()]);
      return change;
    });
  }

  removeOwner(name: string, owner: string): Promise<OwnerChange> {
    return transaction(this.pool, async (client): Promise<OwnerChange> => {
      await client.query('SELECT 1 FROM owners WHERE name = $1 FOR UPDATE', [name]);
      const removal = ownerRemoval(await ownersIn(client, name), owner);
      if ('refused' in removal) return removal;
      if (removal.claimer !== undefined) await client.query('UPDATE owners SET owner = $2 WHERE name = $1', [name, removal.claimer]);
      await client.query('DELETE FROM co_owners WHERE name = $1 AND owner = $2', [name, removal.claimer ?? owner]);
      return { changed: true, owners: removal.owners };
    });
  }

  async canPublish(token: TokenRecord, name: string): Promise<Permission> {
    return permission(token, name, await ownersIn(this.pool, name), await trustedIn(this.pool, token, name));
  }

  async canManage(token: TokenRecord, name: string): Promise<Permission> {
    return managementPermission(token, name, await ownersIn(this.pool, name));
  }
}
