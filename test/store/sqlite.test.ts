import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { openSqliteStorage, SCHEMA_VERSION, StoreVersionError, tokenState } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { storageContract } from './storage-contract.js';

storageContract('embedded SQLite + files', async () => openSqliteStorage(await tempDir('tr-store-')));

/** The schema stores had before it was versioned (user_version 0). */
const UNVERSIONED_SCHEMA = `
CREATE TABLE tokens (id TEXT PRIMARY KEY, hash BLOB NOT NULL UNIQUE, role TEXT NOT NULL CHECK (role IN ('publisher', 'admin')), templates TEXT, owner TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE owners (name TEXT PRIMARY KEY, owner TEXT NOT NULL, claimed_at TEXT NOT NULL);
CREATE TABLE versions (name TEXT NOT NULL, version TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('pending', 'complete')), integrity TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, owner TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (name, version));
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, template_id TEXT NOT NULL, version TEXT NOT NULL, timestamp TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX events_by_template ON events (template_id, version, type);
CREATE TABLE webhooks (id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT NOT NULL, active INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE deliveries (id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, event TEXT NOT NULL, status INTEGER, attempted_at TEXT NOT NULL, error TEXT);
`;

/** What the previous release wrote (schema version 2): the unversioned tables plus who sent each event. */
const VERSION_2_SCHEMA = `${UNVERSIONED_SCHEMA}
ALTER TABLE events ADD COLUMN client TEXT;
ALTER TABLE events ADD COLUMN received_at TEXT;
PRAGMA user_version = 2;
`;

describe('the SQLite schema version', () => {
  it('opens a store of the previous release (schema 2): its tokens keep working, never expire, and can be revoked', async () => {
    const dir = await tempDir('tr-v2-store-');
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.exec(VERSION_2_SCHEMA);
    // As the previous release stored a token: its sha256, no lifetime columns.
    const token = 'trg_made-by-the-previous-release';
    db.prepare("INSERT INTO tokens (id, hash, role, templates, owner, created_at) VALUES ('tok_0123456789ab', ?, 'publisher', '[\"web-app\"]', 'acme', '2026-01-01T00:00:00.000Z')").run(
      createHash('sha256').update(token).digest(),
    );
    db.close();

    const storage = await openSqliteStorage(dir);
    const check = await storage.tokens.checkToken(token);
    expect(check).toMatchObject({ valid: true, record: { id: 'tok_0123456789ab', role: 'publisher', templates: ['web-app'], owner: 'acme' } });
    const listed = await storage.tokens.listTokens();
    expect(listed).toEqual([{ id: 'tok_0123456789ab', role: 'publisher', templates: ['web-app'], owner: 'acme', createdAt: '2026-01-01T00:00:00.000Z', lastUsedAt: expect.any(String) }]);
    expect(listed.map((record) => tokenState(record, new Date('2100-01-01T00:00:00.000Z')))).toEqual(['active']);
    const fresh = await storage.tokens.createToken({ role: 'admin', expiresAt: new Date(Date.now() + 60_000) });
    expect(await storage.tokens.authenticate(fresh.token)).toMatchObject({ id: fresh.record.id });
    expect(await storage.tokens.revokeToken('tok_0123456789ab')).toMatchObject({ found: true, alreadyRevoked: false });
    expect(await storage.tokens.checkToken(token)).toMatchObject({ valid: false, reason: 'revoked' });
    await storage.close();

    const reopened = new Database(path.join(dir, 'registry.sqlite'));
    expect(reopened.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect((reopened.prepare('PRAGMA table_info(tokens)').all() as { name: string }[]).map((c) => c.name)).toEqual(
      expect.arrayContaining(['expires_at', 'revoked_at', 'last_used_at']),
    );
    reopened.close();
  });

  it('applies a revocation made through another handle of the store to the next check', async () => {
    const dir = await tempDir('tr-two-handles-');
    const server = await openSqliteStorage(dir);
    const cli = await openSqliteStorage(dir);
    const { token, record } = await cli.tokens.createToken({ role: 'publisher' });
    expect(await server.tokens.checkToken(token)).toMatchObject({ valid: true });
    await cli.tokens.revokeToken(record.id);
    expect(await server.tokens.checkToken(token)).toMatchObject({ valid: false, reason: 'revoked' });
    await cli.close();
    await server.close();
  });

  it('opens a store made before the schema was versioned, keeps its data and stamps the version', async () => {
    const dir = await tempDir('tr-old-store-');
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.exec(UNVERSIONED_SCHEMA);
    db.prepare("INSERT INTO versions VALUES ('web-app', '1.0.0', 'complete', 'sha512-x', ?, 2, 'acme', '2026-01-01T00:00:00.000Z')").run('f'.repeat(64));
    db.prepare("INSERT INTO events (type, template_id, version, timestamp, data) VALUES ('download', 'web-app', '1.0.0', '2026-01-02T00:00:00.000Z', '{}')").run();
    db.close();
    await mkdir(path.join(dir, 'manifests', 'web-app'), { recursive: true });
    await writeFile(path.join(dir, 'manifests', 'web-app', '1.0.0.json'), JSON.stringify({ name: 'web-app', version: '1.0.0' }));

    const storage = await openSqliteStorage(dir);
    expect((await storage.versions.listVersions()).map((v) => `${v.name}@${v.version}`)).toEqual(['web-app@1.0.0']);
    expect(await storage.events.countEvents('download')).toBe(1);
    await storage.close();
    const reopened = new Database(path.join(dir, 'registry.sqlite'));
    expect(reopened.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    reopened.close();
  });

  it('refuses a store whose schema is newer than this release, naming the file', async () => {
    const dir = await tempDir('tr-new-store-');
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    const refused = openSqliteStorage(dir);
    await expect(refused).rejects.toBeInstanceOf(StoreVersionError);
    await expect(refused).rejects.toThrow(/registry\.sqlite has schema version \d+/);
  });
});
