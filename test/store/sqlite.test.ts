import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FolderBlobStore, openSqliteStorage, S3BlobStore, SCHEMA_VERSION, StoreVersionError, tokenState, type BlobStore, type SqliteStorage, type TokenRecord } from '../../src/store/index.js';
import { asKilledProcess } from '../helpers/temp-names.js';
import { tempDir } from '../helpers/fixtures.js';
import { S3RVER_CREDENTIALS, startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { AGGREGATE_TABLES, expectAggregatesOfEvents, expectMigratedAttemptIds, recordHistory, storageContract } from './storage-contract.js';
import { templateManifest } from '../helpers/builders.js';
import { activeToken } from '../helpers/tokens.js';

const BUCKET = 'sqlite-blobs';
let s3: FakeS3 | undefined;
let prefixes = 0;

beforeAll(async () => {
  s3 = await startFakeS3([BUCKET]);
});

afterAll(async () => {
  await s3?.close();
});

/** A blob store of its own below a fresh prefix of the shared bucket. */
function bucketBlobs(): S3BlobStore {
  if (!s3) throw new Error('s3rver is not running');
  prefixes += 1;
  return new S3BlobStore({ bucket: BUCKET, prefix: `store-${prefixes}`, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 5_000 });
}

storageContract(
  'embedded SQLite + files',
  async () => openSqliteStorage(await tempDir('tr-store-')),
  async () => {
    const dir = await tempDir('tr-store-');
    return (wrap = (blobs) => blobs) => openSqliteStorage(dir, { blobs: wrap(new FolderBlobStore(dir)) });
  },
);
storageContract(
  'embedded SQLite + S3 blobs',
  async () => openSqliteStorage(await tempDir('tr-store-s3-'), { blobs: bucketBlobs() }),
  async () => {
    const dir = await tempDir('tr-store-s3-');
    const blobs = bucketBlobs();
    return (wrap = (inner) => inner) => openSqliteStorage(dir, { blobs: wrap(blobs) });
  },
);

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
const modeOf = async (file: string): Promise<number> => (await stat(file)).mode & 0o777;

/** Reserves and commits name@version with `content` as its archive, through the store's own temp folder. */
async function publish(storage: SqliteStorage, token: TokenRecord, name: string, version: string, content: string): Promise<void> {
  expect(await reserve(storage, token, name, version, content)).toEqual({ reserved: true });
  const temp = storage.versions.uploadTempPath('.tgz');
  await writeFile(temp, content);
  await storage.versions.commitVersion(name, version, temp, templateManifest(name, version));
}

function reserve(storage: SqliteStorage, token: TokenRecord, name: string, version: string, content: string): ReturnType<SqliteStorage['versions']['reserveVersion']> {
  return storage.versions.reserveVersion({ name, version, integrity: `sha512-${name}${version}`, sha256: sha256(content), size: Buffer.byteLength(content), owner: token.owner }, token);
}

/** Stages a file whose bytes are `content`; returns its id. */
async function stage(storage: SqliteStorage, content: string): Promise<string> {
  const { file } = await storage.files.createFile({ tokenId: 't1', filename: 'big.tgz', contentType: 'application/gzip', expiresAt: new Date(Date.now() + 3_600_000) });
  const temp = storage.versions.uploadTempPath('.upload');
  await writeFile(temp, content);
  expect(await storage.files.storeContent(file.id, temp, { size: content.length, sha256: sha256(content), integrity: `sha512-${content}` })).toMatchObject({ state: 'uploaded' });
  return file.id;
}

async function archiveText(storage: SqliteStorage, name: string, version: string): Promise<string | undefined> {
  const reader = await storage.versions.openArchive(name, version);
  return reader && (await buffer(reader.stream)).toString('utf8');
}

async function stagedText(storage: SqliteStorage, id: string): Promise<string | undefined> {
  const reader = await storage.files.openFile(id);
  return reader && (await buffer(reader.stream)).toString('utf8');
}

async function keysOf(blobs: BlobStore, prefix = ''): Promise<string[]> {
  const keys: string[] = [];
  for await (const { key } of blobs.list(prefix)) keys.push(key);
  return keys.sort();
}

/** Every file and folder below `dir`, relative, with its mode. */
async function tree(dir: string): Promise<Record<string, number>> {
  const entries = await readdir(dir, { recursive: true });
  const modes: Record<string, number> = {};
  for (const entry of entries.sort()) modes[entry.split(path.sep).join('/')] = await modeOf(path.join(dir, entry));
  return modes;
}

describe('the bytes of the embedded store', () => {
  it('keeps them, by default, at the paths and with the modes stores always had, and reads them back after a restart', async () => {
    const dir = await tempDir('tr-layout-');
    const storage = await openSqliteStorage(dir);
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    await reserve(storage, record, 'web-app', '1.0.0', 'the archive of web-app@1.0.0');
    const upload = storage.versions.uploadTempPath('.tgz');
    await writeFile(upload, 'the archive of web-app@1.0.0', { mode: 0o644 });
    const uploaded = (await stat(upload)).ino;
    await storage.versions.commitVersion('web-app', '1.0.0', upload, templateManifest('web-app', '1.0.0'));
    // Moved in, not copied: an archive is never written twice on the store's disk.
    expect((await stat(path.join(dir, 'archives', 'web-app', '1.0.0.tgz'))).ino).toBe(uploaded);
    const fileId = await stage(storage, 'staged bytes');
    await storage.close();

    const { 'registry.sqlite': database, 'registry.sqlite-wal': wal, 'registry.sqlite-shm': shm, ...files } = await tree(dir);
    expect([database, wal, shm].filter((mode) => mode !== undefined).every((mode) => mode === 0o600)).toBe(true);
    expect(files).toEqual({
      // Room kept so that undoing an upload never fails on a full disk (store/sqlite/space-reserve.ts).
      '.space-reserve': 0o600,
      archives: 0o700,
      'archives/web-app': 0o700,
      'archives/web-app/1.0.0.tgz': 0o600,
      files: 0o700,
      [`files/${fileId}`]: 0o600,
      manifests: 0o700,
      'manifests/web-app': 0o700,
      'manifests/web-app/1.0.0.json': 0o600,
      public: 0o700,
      tmp: 0o700,
    });
    expect(await readFile(path.join(dir, 'archives', 'web-app', '1.0.0.tgz'), 'utf8')).toBe('the archive of web-app@1.0.0');
    expect(await readFile(path.join(dir, 'manifests', 'web-app', '1.0.0.json'), 'utf8')).toBe(`${JSON.stringify(templateManifest('web-app', '1.0.0'), null, 2)}\n`);
    expect(await readFile(path.join(dir, 'files', fileId), 'utf8')).toBe('staged bytes');

    const reopened = await openSqliteStorage(dir);
    await reopened.recover();
    expect(reopened.archivePath('web-app', '1.0.0')).toBe(path.join(dir, 'archives', 'web-app', '1.0.0.tgz'));
    expect(await archiveText(reopened, 'web-app', '1.0.0')).toBe('the archive of web-app@1.0.0');
    expect(await reopened.versions.readManifest('web-app', '1.0.0')).toEqual(templateManifest('web-app', '1.0.0'));
    expect(await stagedText(reopened, fileId)).toBe('staged bytes');
    await reopened.close();
  });

  it('reads a store whose files were written by hand in the layout of earlier releases (manifest not in the row)', async () => {
    const dir = await tempDir('tr-old-layout-');
    const setup = await openSqliteStorage(dir);
    const { record } = await setup.tokens.createToken({ role: 'admin' });
    const content = 'an archive written by an earlier release';
    await reserve(setup, record, 'old-app', '2.0.0', content);
    const { file } = await setup.files.createFile({ tokenId: 't1', filename: 'old.tgz', contentType: 'application/gzip', expiresAt: new Date(Date.now() + 3_600_000) });
    await setup.close();
    await mkdir(path.join(dir, 'archives', 'old-app'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(dir, 'archives', 'old-app', '2.0.0.tgz'), content, { mode: 0o600 });
    await mkdir(path.join(dir, 'manifests', 'old-app'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(dir, 'manifests', 'old-app', '2.0.0.json'), `${JSON.stringify(templateManifest('old-app', '2.0.0'), null, 2)}\n`, { mode: 0o600 });
    await mkdir(path.join(dir, 'files'), { mode: 0o700 });
    await writeFile(path.join(dir, 'files', file.id), 'old staged bytes', { mode: 0o600 });
    const orphan = randomUUID();
    await writeFile(path.join(dir, 'files', orphan), 'bytes whose row is gone', { mode: 0o600 });
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.prepare("UPDATE versions SET state = 'complete', manifest = NULL WHERE name = 'old-app'").run();
    db.prepare("UPDATE staged_files SET state = 'uploaded', size = 16, sha256 = ?, integrity = 'sha512-x' WHERE id = ?").run('c'.repeat(64), file.id);
    db.close();

    const storage = await openSqliteStorage(dir);
    await storage.recover();
    expect(await archiveText(storage, 'old-app', '2.0.0')).toBe(content);
    expect(await storage.versions.readManifest('old-app', '2.0.0')).toEqual(templateManifest('old-app', '2.0.0'));
    expect((await storage.versions.listPublished()).map((v) => 'manifest' in v && v.manifest)).toEqual([templateManifest('old-app', '2.0.0')]);
    expect(await stagedText(storage, file.id)).toBe('old staged bytes');
    expect(await readdir(path.join(dir, 'files'))).toEqual([file.id]);
    await storage.close();
  });

  it('marks a version complete only once its bytes are stored: a failed put leaves it pending, and an abort removes it', async () => {
    const dir = await tempDir('tr-failing-blobs-');
    const inner = bucketBlobs();
    const failing: BlobStore = {
      location: inner.location,
      putFile: () => Promise.reject(new Error('the bucket is unreachable')),
      putBytes: (key, bytes) => inner.putBytes(key, bytes),
      open: (key) => inner.open(key),
      readBytes: (key) => inner.readBytes(key),
      stat: (key) => inner.stat(key),
      delete: (key) => inner.delete(key),
      list: (prefix) => inner.list(prefix),
    };
    const storage = await openSqliteStorage(dir, { blobs: failing });
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    await reserve(storage, record, 'web-app', '1.0.0', 'bytes');
    const temp = storage.versions.uploadTempPath('.tgz');
    await writeFile(temp, 'bytes');
    await expect(storage.versions.commitVersion('web-app', '1.0.0', temp, templateManifest('web-app', '1.0.0'))).rejects.toThrow(/unreachable/);
    expect(await storage.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'pending' });
    expect(await storage.versions.listVersions()).toEqual([]);
    expect(await keysOf(inner)).toEqual(['manifests/web-app/1.0.0.json']);
    await storage.versions.abortVersion('web-app', '1.0.0');
    expect(await storage.versions.getVersion('web-app', '1.0.0')).toBeUndefined();
    expect(await keysOf(inner)).toEqual([]);
    await storage.close();
  });
});

describe('the embedded store with its bytes in a bucket', () => {
  it('keeps archives, manifests and staged files in the bucket, and nothing of them in the store folder', async () => {
    const dir = await tempDir('tr-s3-layout-');
    const blobs = bucketBlobs();
    const storage = await openSqliteStorage(dir, { blobs });
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    await publish(storage, record, 'web-app', '1.0.0', 'in the bucket');
    const fileId = await stage(storage, 'staged in the bucket');
    expect(await keysOf(blobs)).toEqual(['archives/web-app/1.0.0.tgz', `files/${fileId}`, 'manifests/web-app/1.0.0.json']);
    expect((await readdir(dir)).filter((entry) => !entry.startsWith('registry.sqlite')).sort()).toEqual(['.space-reserve', 'public', 'tmp']);
    expect(await readdir(path.join(dir, 'tmp'))).toEqual([]);
    expect(() => storage.archivePath('web-app', '1.0.0')).toThrow(/s3:\/\//);
    await storage.close();

    const reopened = await openSqliteStorage(dir, { blobs });
    await reopened.recover();
    expect(await archiveText(reopened, 'web-app', '1.0.0')).toBe('in the bucket');
    expect(await reopened.versions.readManifest('web-app', '1.0.0')).toEqual(templateManifest('web-app', '1.0.0'));
    expect(await stagedText(reopened, fileId)).toBe('staged in the bucket');
    await reopened.close();
  });

  it('after a crash, completes a pending version whose archive and manifest are in the bucket, and removes the others with their bytes', async () => {
    const dir = await tempDir('tr-s3-recover-');
    const blobs = bucketBlobs();
    const storage = await openSqliteStorage(dir, { blobs });
    const { record } = await storage.tokens.createToken({ role: 'admin' });
    // Each crashed at another point of its commit: after both puts, with other bytes than reserved, before the manifest, before anything.
    const cases = { complete: 'all stored', garbled: 'reserved bytes', 'no-manifest': 'no manifest', nothing: 'nothing stored' };
    for (const [name, content] of Object.entries(cases)) expect(await reserve(storage, record, name, '1.0.0', content)).toEqual({ reserved: true });
    await blobs.putBytes('archives/complete/1.0.0.tgz', cases.complete);
    await blobs.putBytes('manifests/complete/1.0.0.json', JSON.stringify(templateManifest('complete', '1.0.0')));
    await blobs.putBytes('archives/garbled/1.0.0.tgz', 'other bytes');
    await blobs.putBytes('manifests/garbled/1.0.0.json', JSON.stringify(templateManifest('garbled', '1.0.0')));
    await blobs.putBytes('archives/no-manifest/1.0.0.tgz', cases['no-manifest']);
    // Staged bytes whose row is gone (deleted while the crash kept its bytes), beside a live file.
    const kept = await stage(storage, 'a live staged file');
    const orphan = randomUUID();
    await blobs.putBytes(`files/${orphan}`, 'orphaned');
    await writeFile(asKilledProcess(storage.versions.uploadTempPath('.tgz')), 'an upload cut short');
    await storage.close();

    const reopened = await openSqliteStorage(dir, { blobs });
    await reopened.recover();
    expect((await reopened.versions.listVersions()).map((v) => `${v.name}@${v.version}`)).toEqual(['complete@1.0.0']);
    for (const name of ['garbled', 'no-manifest', 'nothing']) expect(await reopened.versions.getVersion(name, '1.0.0')).toBeUndefined();
    expect((await reopened.versions.listPublished()).map((v) => 'manifest' in v && v.manifest)).toEqual([templateManifest('complete', '1.0.0')]);
    expect(await archiveText(reopened, 'complete', '1.0.0')).toBe(cases.complete);
    expect(await keysOf(blobs)).toEqual(['archives/complete/1.0.0.tgz', `files/${kept}`, 'manifests/complete/1.0.0.json']);
    expect(await readdir(path.join(dir, 'tmp'))).toEqual([]);
    // The removed versions can be published again.
    await publish(reopened, record, 'garbled', '1.0.0', 'published again');
    expect(await archiveText(reopened, 'garbled', '1.0.0')).toBe('published again');
    await reopened.close();
  });
});

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
    expect(await activeToken(storage.tokens, fresh.token)).toMatchObject({ id: fresh.record.id });
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

  it('gives the attempts of a store of schema 8 external ids, sorting as they were made, in place of their row numbers', async () => {
    const dir = await tempDir('tr-v8-store-');
    await (await openSqliteStorage(dir)).close();
    // Back to what the previous release left: attempts known by their row numbers only.
    const db = new Database(path.join(dir, 'registry.sqlite'));
    db.exec('DROP INDEX deliveries_by_attempt_id; ALTER TABLE deliveries DROP COLUMN attempt_id; PRAGMA user_version = 8;');
    const insert = db.prepare("INSERT INTO deliveries (webhook_id, event, status, attempted_at, error, delivery_id) VALUES ('wh_old', 'registry.updated', ?, ?, NULL, NULL)");
    // Two attempts in some milliseconds: row order decides between them.
    for (let i = 0; i < 12; i++) insert.run(200 + i, new Date(Date.UTC(2025, 0, 1, 0, 0, Math.floor(i / 2))).toISOString());
    db.close();

    const storage = await openSqliteStorage(dir);
    await expectMigratedAttemptIds(storage.webhooks);
    await storage.close();
    const reopened = new Database(path.join(dir, 'registry.sqlite'));
    expect(reopened.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    reopened.close();
  });

  it('fills the analytics aggregates of a store of schema 9 (events only) from its events, in the order they were recorded', async () => {
    const dir = await tempDir('tr-v9-store-');
    const storage = await openSqliteStorage(dir);
    await recordHistory(storage.events, 91, 300);
    await storage.close();
    // Back to what the previous release left: the events, and no aggregates.
    const db = new Database(path.join(dir, 'registry.sqlite'));
    for (const table of AGGREGATE_TABLES) db.exec(`DROP TABLE ${table}`);
    db.exec('DROP INDEX events_by_received_at; PRAGMA user_version = 9;');
    db.close();

    const reopened = await openSqliteStorage(dir);
    expect(await reopened.events.countEvents()).toBeGreaterThan(200);
    await expectAggregatesOfEvents(reopened.events);
    await reopened.close();
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
