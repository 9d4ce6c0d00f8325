import { randomBytes, timingSafeEqual } from 'node:crypto';

import type Database from 'better-sqlite3';

import { isTemplateName, NAME_PATTERN } from '../../core/versions.js';
import { secretDigest } from '../secrets.js';
import type { NewToken, Permission, TokenRecord, TokenStore } from '../types.js';

interface TokenRow {
  id: string;
  hash: Buffer;
  role: TokenRecord['role'];
  templates: string | null;
  owner: string;
  created_at: string;
}

const toToken = (row: TokenRow): TokenRecord => ({
  id: row.id,
  role: row.role,
  ...(row.templates ? { templates: JSON.parse(row.templates) as string[] } : {}),
  owner: row.owner,
  createdAt: row.created_at,
});

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

/** Tokens (only their sha256 is kept) and the owners of template names, in SQLite. */
export class SqliteTokenStore implements TokenStore {
  constructor(private readonly db: Database.Database) {}

  createToken(options: NewToken): Promise<{ token: string; record: TokenRecord }> {
    if (options.role !== 'publisher' && options.role !== 'admin') throw new Error(`role must be publisher or admin (got ${String(options.role)})`);
    for (const name of options.templates ?? []) {
      if (!isTemplateName(name)) throw new Error(`template name ${JSON.stringify(name)} must match ${NAME_PATTERN.source}`);
    }
    const id = `tok_${randomBytes(6).toString('hex')}`;
    const token = `trg_${randomBytes(32).toString('base64url')}`;
    const record: TokenRecord = {
      id,
      role: options.role,
      ...(options.templates && options.templates.length > 0 ? { templates: [...options.templates] } : {}),
      owner: options.owner ?? id,
      createdAt: (options.now ?? new Date()).toISOString(),
    };
    this.db
      .prepare('INSERT INTO tokens (id, hash, role, templates, owner, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(id, secretDigest(token), record.role, record.templates ? JSON.stringify(record.templates) : null, record.owner, record.createdAt);
    return Promise.resolve({ token, record });
  }

  authenticate(token: string): Promise<TokenRecord | undefined> {
    if (token === '') return Promise.resolve(undefined);
    const presented = secretDigest(token);
    const row = this.db.prepare('SELECT * FROM tokens WHERE hash = ?').get(presented) as TokenRow | undefined;
    return Promise.resolve(row && timingSafeEqual(row.hash, presented) ? toToken(row) : undefined);
  }

  listTokens(): Promise<TokenRecord[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM tokens ORDER BY created_at, id').all() as TokenRow[]).map(toToken));
  }

  ownerOf(name: string): Promise<string | undefined> {
    return Promise.resolve(ownerOfSync(this.db, name));
  }

  canPublish(token: TokenRecord, name: string): Promise<Permission> {
    return Promise.resolve(permission(token, name, ownerOfSync(this.db, name)));
  }
}
