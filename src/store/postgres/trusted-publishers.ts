import type pg from 'pg';

import { backedByAny, repositoryKey, selectsTrustedPublisher, trustedPublisherAddition } from '../records.js';
import type { NewTrustedPublisher, TokenRecord, TrustedPublisher, TrustedPublisherAddition, TrustedPublisherSelector, TrustedPublisherStore } from '../types.js';
import { placeholder, transaction, type Queryable } from './database.js';
import { insertStatement, TRUSTED_PUBLISHER_COLUMNS, trustedPublisherOf as toTrustedPublisher, trustedPublisherValues, type TrustedPublisherRow } from '../rows.js';
import { ownersIn } from './tokens.js';

/** A template's trusted publishers, oldest first. */
export async function trustedPublishersIn(db: Queryable, template: string): Promise<TrustedPublisher[]> {
  return (await db.query<TrustedPublisherRow>('SELECT * FROM trusted_publishers WHERE template = $1 ORDER BY seq', [template])).rows.map(toTrustedPublisher);
}

/** Whether a trusted publisher of `name` still backs the run of `token` (minted for trusted publishing). */
export async function trustedIn(db: Queryable, token: TokenRecord, name: string): Promise<boolean> {
  if (token.publisher === undefined) return false;
  return backedByAny(await trustedPublishersIn(db, name), token, await ownersIn(db, name));
}

/**
 * What claiming `name` for `claimer` does to its pending publishers (inside the claim's transaction):
 * the claimer's become ordinary ones, the others go.
 */
export async function settlePendingPublishers(client: pg.PoolClient, name: string, claimer: string): Promise<void> {
  await client.query('DELETE FROM trusted_publishers WHERE template = $1 AND pending_owner IS NOT NULL AND pending_owner <> $2', [name, claimer]);
  await client.query('UPDATE trusted_publishers SET pending_owner = NULL WHERE template = $1 AND pending_owner = $2', [name, claimer]);
}

/** The transaction-scoped advisory lock that serializes the changes of one template's trusted publishers across instances. */
const lockTemplate = (client: pg.PoolClient, template: string): Promise<unknown> => client.query("SELECT pg_advisory_xact_lock(hashtext('trusted-publishers:' || $1))", [template]);

/** Trusted publishers and the exchanged ID tokens, in PostgreSQL. */
export class PostgresTrustedPublisherStore implements TrustedPublisherStore {
  constructor(private readonly pool: pg.Pool) {}

  addTrustedPublisher(input: NewTrustedPublisher, token: TokenRecord): Promise<TrustedPublisherAddition> {
    return transaction(this.pool, async (client): Promise<TrustedPublisherAddition> => {
      await lockTemplate(client, input.template);
      const addition = trustedPublisherAddition(input, token, await ownersIn(client, input.template), await trustedPublishersIn(client, input.template));
      if (addition.added) await client.query(insertStatement('trusted_publishers', TRUSTED_PUBLISHER_COLUMNS, placeholder), trustedPublisherValues(addition.publisher));
      return addition;
    });
  }

  listTrustedPublishers(template: string): Promise<TrustedPublisher[]> {
    return trustedPublishersIn(this.pool, template);
  }

  removeTrustedPublishers(template: string, selector: TrustedPublisherSelector): Promise<TrustedPublisher[]> {
    return transaction(this.pool, async (client) => {
      await lockTemplate(client, template);
      const removed = (await trustedPublishersIn(client, template)).filter((record) => selectsTrustedPublisher(record, selector));
      if (removed.length > 0) await client.query('DELETE FROM trusted_publishers WHERE id = ANY($1::text[])', [removed.map((record) => record.id)]);
      return removed;
    });
  }

  async trustedPublishersOf(issuer: string, repository: string): Promise<TrustedPublisher[]> {
    const { rows } = await this.pool.query<TrustedPublisherRow>('SELECT * FROM trusted_publishers WHERE issuer = $1 AND repository_key = $2 ORDER BY template, seq', [
      issuer,
      repositoryKey(repository),
    ]);
    return rows.map(toTrustedPublisher);
  }

  async useIdToken(issuer: string, jti: string, expiresAt: Date, now: Date = new Date()): Promise<boolean> {
    // Expired ones go first: their tokens cannot be presented any more, so the table stays small.
    await this.pool.query('DELETE FROM oidc_id_tokens WHERE expires_at <= $1', [now.toISOString()]);
    // The primary key decides: of concurrent uses of one jti, from any instance, one inserts.
    const inserted = await this.pool.query('INSERT INTO oidc_id_tokens (issuer, jti, expires_at) VALUES ($1, $2, $3) ON CONFLICT (issuer, jti) DO NOTHING', [
      issuer,
      jti,
      expiresAt.toISOString(),
    ]);
    return (inserted.rowCount ?? 0) > 0;
  }
}
