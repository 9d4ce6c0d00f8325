import type Database from 'better-sqlite3';

import { backedByAny, repositoryKey, selectsTrustedPublisher, trustedPublisherAddition } from '../records.js';
import type { NewTrustedPublisher, TokenRecord, TrustedPublisher, TrustedPublisherAddition, TrustedPublisherSelector, TrustedPublisherStore } from '../types.js';
import { placeholder } from './database.js';
import { insertStatement, TRUSTED_PUBLISHER_COLUMNS, trustedPublisherOf as toTrustedPublisher, trustedPublisherValues, type TrustedPublisherRow } from '../rows.js';
import { ownersOfSync } from './tokens.js';

/** A template's trusted publishers in the order they were saved (the row number, as PostgreSQL's `seq`); synchronous: reservations call it inside their transaction. */
export function trustedPublishersOfSync(db: Database.Database, template: string): TrustedPublisher[] {
  return (db.prepare('SELECT * FROM trusted_publishers WHERE template = ? ORDER BY rowid').all(template) as TrustedPublisherRow[]).map(toTrustedPublisher);
}

/** Whether a trusted publisher of `name` still backs the run of `token` (minted for trusted publishing). */
export function trustedSync(db: Database.Database, token: TokenRecord, name: string): boolean {
  if (token.publisher === undefined) return false;
  return backedByAny(trustedPublishersOfSync(db, name), token, ownersOfSync(db, name));
}

/**
 * What claiming `name` for `claimer` does to its pending publishers (inside the claim's transaction):
 * the claimer's become ordinary ones, the others go (they were saved by someone who does not own it).
 */
export function settlePendingPublishersSync(db: Database.Database, name: string, claimer: string): void {
  db.prepare('DELETE FROM trusted_publishers WHERE template = ? AND pending_owner IS NOT NULL AND pending_owner <> ?').run(name, claimer);
  db.prepare('UPDATE trusted_publishers SET pending_owner = NULL WHERE template = ? AND pending_owner = ?').run(name, claimer);
}

/** Trusted publishers and the exchanged ID tokens, in SQLite. */
export class SqliteTrustedPublisherStore implements TrustedPublisherStore {
  constructor(private readonly db: Database.Database) {}

  addTrustedPublisher(input: NewTrustedPublisher, token: TokenRecord): Promise<TrustedPublisherAddition> {
    const add = this.db.transaction((): TrustedPublisherAddition => {
      const addition = trustedPublisherAddition(input, token, ownersOfSync(this.db, input.template), trustedPublishersOfSync(this.db, input.template));
      if (addition.added) this.db.prepare(insertStatement('trusted_publishers', TRUSTED_PUBLISHER_COLUMNS, placeholder)).run(...trustedPublisherValues(addition.publisher));
      return addition;
    });
    return Promise.resolve(add.immediate());
  }

  listTrustedPublishers(template: string): Promise<TrustedPublisher[]> {
    return Promise.resolve(trustedPublishersOfSync(this.db, template));
  }

  removeTrustedPublishers(template: string, selector: TrustedPublisherSelector): Promise<TrustedPublisher[]> {
    const remove = this.db.transaction((): TrustedPublisher[] => {
      const removed = trustedPublishersOfSync(this.db, template).filter((record) => selectsTrustedPublisher(record, selector));
      const statement = this.db.prepare('DELETE FROM trusted_publishers WHERE id = ?');
      for (const record of removed) statement.run(record.id);
      return removed;
    });
    return Promise.resolve(remove.immediate());
  }

  trustedPublishersOf(issuer: string, repository: string): Promise<TrustedPublisher[]> {
    const rows = this.db
      .prepare('SELECT * FROM trusted_publishers WHERE issuer = ? AND repository_key = ? ORDER BY template, rowid')
      .all(issuer, repositoryKey(repository)) as TrustedPublisherRow[];
    return Promise.resolve(rows.map(toTrustedPublisher));
  }

  useIdToken(issuer: string, jti: string, expiresAt: Date, now: Date = new Date()): Promise<boolean> {
    const use = this.db.transaction((): boolean => {
      // Expired ones go first: their tokens cannot be presented any more, so the table stays small.
      this.db.prepare('DELETE FROM oidc_id_tokens WHERE expires_at <= ?').run(now.toISOString());
      return this.db.prepare('INSERT INTO oidc_id_tokens (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT (issuer, jti) DO NOTHING').run(issuer, jti, expiresAt.toISOString()).changes > 0;
    });
    return Promise.resolve(use.immediate());
  }
}
