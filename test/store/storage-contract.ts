/**
 * The behaviour every RegistryStorage backend must have. A backend's test file calls
 * `storageContract(name, open, place)` with a function that opens a fresh, empty storage, and one
 * that makes a fresh place for a store that can be opened again there (a restart after a crash).
 */
import { createHash } from 'node:crypto';
import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { text } from 'node:stream/consumers';

import { afterEach, describe, expect, it } from 'vitest';

import { LAST_USED_PRECISION_MS, tokenState, type BlobStore, type OutboxState, type RegistryStorage, type TokenRecord, type WebhookStore } from '../../src/store/index.js';
import { MAX_TRUSTED_PUBLISHERS, type AttemptOutcome, type NewTrustedPublisher, type PublisherRun, type StoredEvent } from '../../src/store/types.js';
import type { AnalyticsRecord } from '../../src/core/schema-types.js';
import { analyticsRecords, recordWindow } from '../../src/registry/analytics.js';
import { tempDir } from '../helpers/fixtures.js';
import { history, HISTORY_NOW, historyRegistry } from '../registry/analytics-events.js';
import * as oracle from '../registry/analytics-oracle.js';
import { templateManifest } from '../helpers/builders.js';
import { activeToken } from '../helpers/tokens.js';
import { finishAttempt } from '../helpers/webhook-attempts.js';

/**
 * What a store migrated from before attempt ids shows of 12 old attempts of `wh_old` (statuses 200
 * to 211, in row order): each has a UUID v7 id whose text sorts as the attempts were made, and an
 * attempt made now sorts after them and is finished by its id.
 */
export async function expectMigratedAttemptIds(webhooks: WebhookStore): Promise<void> {
  const log = await webhooks.listDeliveries('wh_old', 100);
  expect(log.map((d) => d.status)).toEqual(Array.from({ length: 12 }, (_, i) => 211 - i));
  for (const d of log) expect(d.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(log.map((d) => d.id)).toEqual([...log.map((d) => d.id)].sort().reverse());
  const now = await webhooks.startDelivery('wh_old', 'registry.updated');
  await finishAttempt(webhooks, now, 204, null);
  expect((await webhooks.listDeliveries('wh_old', 1))[0]).toMatchObject({ id: now, status: 204 });
  expect(now > log[0]!.id).toBe(true);
}

/** The aggregate tables (and their index) a store had none of before schema 10 (embedded) / 4 (PostgreSQL). */
export const AGGREGATE_TABLES = ['analytics_totals', 'analytics_days', 'analytics_users', 'analytics_download_clients', 'analytics_ratings'];

/** Records a random history (test/registry/analytics-events.ts) as the server does, up to HISTORY_NOW. */
export async function recordHistory(events: RegistryStorage['events'], seed: number, count: number): Promise<void> {
  for (const { event, client, receivedAt } of history(seed, count, { stored: true })) {
    if (Date.parse(receivedAt ?? '') > HISTORY_NOW.getTime()) continue;
    await events.recordEvent(event as StoredEvent, { ...(client !== undefined ? { client } : {}), receivedAt: new Date(receivedAt ?? '') });
  }
}

/** The record of every listed version of the history's registry, from the store's aggregates. */
export async function storedRecords(events: RegistryStorage['events']): Promise<AnalyticsRecord[]> {
  const records: AnalyticsRecord[] = [];
  for (const { id, version } of historyRegistry.templates) {
    const aggregates = await events.analyticsAggregates({ versions: [{ templateId: id, version }], ...recordWindow(HISTORY_NOW) });
    records.push(...analyticsRecords(aggregates, { now: HISTORY_NOW, registry: historyRegistry, templateId: id, version }));
  }
  return records;
}

/** The store's aggregates give the records and stats its stored events give (the oracle: every event at once). */
export async function expectAggregatesOfEvents(events: RegistryStorage['events']): Promise<void> {
  const stored = await events.listEvents();
  const expected = historyRegistry.templates.flatMap(({ id, version }) => oracle.aggregateAnalytics(stored, { now: HISTORY_NOW, registry: historyRegistry, templateId: id, version }));
  expect(await storedRecords(events)).toEqual(expected);
  expect(await events.usage()).toEqual(oracle.downloadUsage(stored));
  expect(await events.downloadsRecorded()).toBe(stored.filter((e) => e.event.type === 'download').length);
}

/**
 * Opens the store of one place (its database and its bytes), its blob store seen through `wrap`;
 * closing it and opening it again is a process that died and a new one that starts.
 */
export type OpenAt = (wrap?: (blobs: BlobStore) => BlobStore) => Promise<RegistryStorage>;

/** A blob store whose every read fails as an unreachable bucket does; its writes and deletes go through. */
function unreadable(inner: BlobStore): BlobStore {
  const down = (): Promise<never> => Promise.reject(new Error('the bucket is unreachable'));
  return { location: inner.location, putFile: (key, file) => inner.putFile(key, file), putBytes: (key, bytes) => inner.putBytes(key, bytes), open: down, readBytes: down, stat: down, delete: (key) => inner.delete(key), list: (prefix) => inner.list(prefix) };
}

export function storageContract(backend: string, open: () => Promise<RegistryStorage>, place: () => Promise<OpenAt>): void {
  describe(`${backend} storage`, () => {
    const opened: RegistryStorage[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((storage) => storage.close()));
    });
    const fresh = async (): Promise<RegistryStorage> => {
      const storage = await open();
      opened.push(storage);
      return storage;
    };

    /** Reserves and commits name@version with an archive of `content`. */
    async function publish(storage: RegistryStorage, token: TokenRecord, name: string, version: string, content = `${name}@${version}`): Promise<void> {
      const file = path.join(await tempDir(), 'upload.tgz');
      await writeFile(file, content);
      const reservation = await storage.versions.reserveVersion(
        { name, version, integrity: `sha512-${name}${version}`, sha256: 'a'.repeat(64), size: content.length, owner: token.owner },
        token,
      );
      expect(reservation).toEqual({ reserved: true });
      await storage.versions.commitVersion(name, version, file, templateManifest(name, version));
    }

    describe('tokens', () => {
      it('authenticates a token it created, and no other string', async () => {
        const { tokens } = await fresh();
        const { token, record } = await tokens.createToken({ role: 'publisher', templates: ['web-app'], owner: 'acme' });
        const used = new Date();
        expect(await activeToken(tokens, token, used)).toEqual({ ...record, lastUsedAt: used.toISOString() });
        expect(record).toMatchObject({ role: 'publisher', templates: ['web-app'], owner: 'acme' });
        expect(record).not.toHaveProperty('expiresAt');
        expect(await activeToken(tokens, `${token}x`)).toBeUndefined();
        expect(await activeToken(tokens, '')).toBeUndefined();
        expect(await tokens.checkToken(`${token}x`)).toEqual({ valid: false, reason: 'unknown' });
        expect(await tokens.listTokens()).toEqual([{ ...record, lastUsedAt: used.toISOString() }]);
      });

      it('accepts a token until its expiry and refuses it from then on, saying it expired', async () => {
        const { tokens } = await fresh();
        const created = new Date('2026-03-01T10:00:00.000Z');
        const expiresAt = new Date('2026-03-08T10:00:00.000Z');
        const { token, record } = await tokens.createToken({ role: 'publisher', owner: 'acme', expiresAt, now: created });
        expect(record).toMatchObject({ createdAt: created.toISOString(), expiresAt: expiresAt.toISOString() });
        expect(tokenState(record, new Date(expiresAt.getTime() - 1))).toBe('active');
        expect(await tokens.checkToken(token, new Date(expiresAt.getTime() - 1))).toMatchObject({ valid: true, record: { id: record.id } });
        expect(await tokens.checkToken(token, expiresAt)).toEqual({ valid: false, reason: 'expired', record: expect.objectContaining({ id: record.id }) });
        expect(await activeToken(tokens, token, new Date('2027-01-01T00:00:00.000Z'))).toBeUndefined();
        expect((await tokens.listTokens()).map((t) => [t.id, t.expiresAt])).toEqual([[record.id, expiresAt.toISOString()]]);
      });

      it('refuses an expiry that is not after the creation', async () => {
        const { tokens } = await fresh();
        const now = new Date('2026-03-01T10:00:00.000Z');
        await expect(async () => tokens.createToken({ role: 'publisher', expiresAt: now, now })).rejects.toThrow(/expiresAt must be a date after/);
        await expect(async () => tokens.createToken({ role: 'publisher', expiresAt: new Date(Number.NaN), now })).rejects.toThrow(/expiresAt/);
        expect(await tokens.listTokens()).toEqual([]);
      });

      it('revokes a token by id: refused from then on, its record kept and listed revoked; revoking again changes nothing', async () => {
        const { tokens } = await fresh();
        const { token, record } = await tokens.createToken({ role: 'admin', now: new Date('2026-03-01T10:00:00.000Z') });
        const kept = await tokens.createToken({ role: 'publisher', owner: 'acme', now: new Date('2026-03-02T10:00:00.000Z') });
        const at = new Date('2030-01-01T00:00:00.000Z');
        const first = await tokens.revokeToken(record.id, at);
        expect(first).toEqual({ found: true, alreadyRevoked: false, record: { ...record, revokedAt: at.toISOString() } });
        expect(await tokens.checkToken(token)).toEqual({ valid: false, reason: 'revoked', record: expect.objectContaining({ id: record.id, revokedAt: at.toISOString() }) });
        expect(await activeToken(tokens, token)).toBeUndefined();
        const again = await tokens.revokeToken(record.id, new Date('2031-01-01T00:00:00.000Z'));
        expect(again).toEqual({ found: true, alreadyRevoked: true, record: expect.objectContaining({ revokedAt: at.toISOString() }) });
        expect(await tokens.revokeToken('tok_unknown')).toEqual({ found: false });
        expect((await tokens.listTokens()).map((t) => [t.id, tokenState(t)])).toEqual([[record.id, 'revoked'], [kept.record.id, 'active']]);
        expect(await activeToken(tokens, kept.token)).toMatchObject({ id: kept.record.id });
      });

      it('says revoked, not expired, for a token that is both', async () => {
        const { tokens } = await fresh();
        const now = new Date('2026-03-01T10:00:00.000Z');
        const { token, record } = await tokens.createToken({ role: 'publisher', expiresAt: new Date('2026-03-02T10:00:00.000Z'), now });
        await tokens.revokeToken(record.id, now);
        expect(await tokens.checkToken(token, new Date('2026-04-01T00:00:00.000Z'))).toMatchObject({ valid: false, reason: 'revoked' });
      });

      it('records the last use of a token at most once per precision window, and never for a refused token', async () => {
        const { tokens } = await fresh();
        const { token, record } = await tokens.createToken({ role: 'publisher', now: new Date('2026-03-01T10:00:00.000Z') });
        const lastUsed = async (): Promise<string | undefined> => (await tokens.listTokens()).find((t) => t.id === record.id)?.lastUsedAt;
        expect(await lastUsed()).toBeUndefined();
        const first = new Date('2026-03-01T11:00:00.000Z');
        await tokens.checkToken(token, first);
        expect(await lastUsed()).toBe(first.toISOString());
        await tokens.checkToken(token, new Date(first.getTime() + LAST_USED_PRECISION_MS - 1));
        expect(await lastUsed()).toBe(first.toISOString());
        const later = new Date(first.getTime() + LAST_USED_PRECISION_MS);
        await tokens.checkToken(token, later);
        expect(await lastUsed()).toBe(later.toISOString());
        await tokens.revokeToken(record.id, later);
        await tokens.checkToken(token, new Date(later.getTime() + 10 * LAST_USED_PRECISION_MS));
        expect(await lastUsed()).toBe(later.toISOString());
      });

      it('refuses a role or a template name that breaks the rules', async () => {
        const { tokens } = await fresh();
        await expect(async () => tokens.createToken({ role: 'root' as 'admin' })).rejects.toThrow(/role must be publisher or admin/);
        await expect(async () => tokens.createToken({ role: 'publisher', templates: ['Bad Name'] })).rejects.toThrow(/must match/);
      });

      it('lets a publisher publish its listed names while unclaimed or its own, and an admin anything', async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const other = (await storage.tokens.createToken({ role: 'publisher', owner: 'other' })).record;
        const limited = (await storage.tokens.createToken({ role: 'publisher', templates: ['only-this'], owner: 'acme' })).record;
        const admin = (await storage.tokens.createToken({ role: 'admin' })).record;
        await publish(storage, acme, 'web-app', '1.0.0');
        expect(await storage.tokens.ownerOf('web-app')).toBe('acme');
        expect(await storage.tokens.canPublish(acme, 'web-app')).toEqual({ allowed: true });
        expect(await storage.tokens.canPublish(other, 'web-app')).toEqual({ allowed: false, reason: 'template web-app belongs to another publisher' });
        expect(await storage.tokens.canPublish(limited, 'web-app')).toMatchObject({ allowed: false });
        expect(await storage.tokens.canPublish(admin, 'web-app')).toEqual({ allowed: true });
      });

      it('adds and removes co-owners, who publish like the claimer, and never removes the last owner', async () => {
        const storage = await fresh();
        const { tokens } = storage;
        const acme = (await tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const beta = (await tokens.createToken({ role: 'publisher', owner: 'beta' })).record;
        expect(await tokens.ownersOf('web-app')).toEqual([]);
        expect(await tokens.addOwner('web-app', 'beta')).toEqual({ refused: 'unclaimed' });
        await publish(storage, acme, 'web-app', '1.0.0');
        expect(await tokens.ownersOf('web-app')).toEqual(['acme']);
        expect(await tokens.canPublish(beta, 'web-app')).toMatchObject({ allowed: false });
        expect(await tokens.addOwner('web-app', 'beta')).toEqual({ changed: true, owners: ['acme', 'beta'] });
        expect(await tokens.addOwner('web-app', 'beta')).toEqual({ changed: false, owners: ['acme', 'beta'] });
        expect(await tokens.canPublish(beta, 'web-app')).toEqual({ allowed: true });
        await publish(storage, beta, 'web-app', '1.1.0');
        expect(await tokens.removeOwner('web-app', 'gamma')).toEqual({ refused: 'not-an-owner' });
        expect(await tokens.removeOwner('web-app', 'acme')).toEqual({ changed: true, owners: ['beta'] });
        expect(await tokens.ownerOf('web-app')).toBe('beta');
        expect(await tokens.canPublish(acme, 'web-app')).toMatchObject({ allowed: false });
        expect(await tokens.removeOwner('web-app', 'beta')).toEqual({ refused: 'last-owner' });
        expect(await tokens.ownersOf('web-app')).toEqual(['beta']);
      });

      it('keeps co-owners in the order they were added, whatever clock each addition was given, and hands the claim to the first of them', async () => {
        const storage = await fresh();
        const { tokens } = storage;
        const acme = (await tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        await publish(storage, acme, 'web-app', '1.0.0');
        // Added later with an earlier clock (two instances whose clocks differ): still after.
        await tokens.addOwner('web-app', 'beta', new Date('2026-04-02T00:00:00.000Z'));
        expect(await tokens.addOwner('web-app', 'gamma', new Date('2026-04-01T00:00:00.000Z'))).toEqual({ changed: true, owners: ['acme', 'beta', 'gamma'] });
        expect(await tokens.ownersOf('web-app')).toEqual(['acme', 'beta', 'gamma']);
        expect(await tokens.removeOwner('web-app', 'acme')).toEqual({ changed: true, owners: ['beta', 'gamma'] });
        expect(await tokens.ownerOf('web-app')).toBe('beta');
      });
    });

    describe('accounts', () => {
      it('creates an account once per e-mail (case aside) and finds its password hash for a login', async () => {
        const { accounts } = await fresh();
        const now = new Date('2026-04-01T09:00:00.000Z');
        const created = await accounts.createUser({ email: 'Ada@Example.com', passwordHash: 'scrypt$hash', role: 'publisher', owner: 'ada', now });
        expect(created).toEqual({ created: true, user: { id: expect.stringMatching(/^usr_/) as string, email: 'ada@example.com', role: 'publisher', owner: 'ada', createdAt: now.toISOString() } });
        if (!created.created) throw new Error('not created');
        expect(await accounts.createUser({ email: 'ada@example.COM', passwordHash: 'other', role: 'admin', owner: 'x' })).toEqual({ created: false, reason: 'email-exists' });
        expect(await accounts.findCredentials(' ADA@example.com ')).toEqual({ user: created.user, passwordHash: 'scrypt$hash' });
        expect(await accounts.findCredentials('bob@example.com')).toBeUndefined();
        expect(await accounts.getUser(created.user.id)).toEqual(created.user);
        expect(await accounts.getUser('usr_missing')).toBeUndefined();
        expect(await accounts.listUsers()).toEqual([created.user]);
      });

      it('checks sessions by kind until they expire or are revoked', async () => {
        const { accounts } = await fresh();
        const now = new Date('2026-04-01T09:00:00.000Z');
        const later = new Date('2026-04-02T09:00:00.000Z');
        const created = await accounts.createUser({ email: 'ada@example.com', passwordHash: 'h', role: 'publisher', owner: 'ada', now });
        if (!created.created) throw new Error('not created');
        const cookie = await accounts.createSession({ userId: created.user.id, kind: 'cookie', expiresAt: later, now });
        expect(cookie.expiresAt).toBe(later.toISOString());
        expect(await accounts.checkSession(cookie.secret, 'cookie', now)).toEqual({ valid: true, user: created.user, expiresAt: later.toISOString() });
        expect(await accounts.checkSession(cookie.secret, 'refresh', now)).toEqual({ valid: false, reason: 'unknown' });
        expect(await accounts.checkSession(`${cookie.secret}x`, 'cookie', now)).toEqual({ valid: false, reason: 'unknown' });
        expect(await accounts.checkSession('', 'cookie', now)).toEqual({ valid: false, reason: 'unknown' });
        expect(await accounts.checkSession(cookie.secret, 'cookie', later)).toEqual({ valid: false, reason: 'expired' });
        expect(await accounts.revokeSession(cookie.secret, now)).toBe(true);
        expect(await accounts.checkSession(cookie.secret, 'cookie', now)).toEqual({ valid: false, reason: 'revoked' });
        expect(await accounts.revokeSession('trs_unknown', now)).toBe(false);
      });

      it('rotates a refresh token once, and ends the family when a replaced token comes back', async () => {
        const { accounts } = await fresh();
        const now = new Date('2026-04-01T09:00:00.000Z');
        const expiresAt = new Date('2026-05-01T09:00:00.000Z');
        const created = await accounts.createUser({ email: 'ada@example.com', passwordHash: 'h', role: 'publisher', owner: 'ada', now });
        if (!created.created) throw new Error('not created');
        const first = await accounts.createSession({ userId: created.user.id, kind: 'refresh', expiresAt, now });
        const second = await accounts.rotateSession(first.secret, expiresAt, now);
        if (!second.rotated) throw new Error('no rotation');
        expect(second.secret).not.toBe(first.secret);
        expect(second.user).toEqual(created.user);
        expect(await accounts.checkSession(second.secret, 'refresh', now)).toMatchObject({ valid: true });
        // Two rotations of one token at once: one wins, the other is a replay of a replaced token.
        const rotations = await Promise.all([accounts.rotateSession(second.secret, expiresAt, now), accounts.rotateSession(second.secret, expiresAt, now)]);
        expect(rotations.filter((rotation) => rotation.rotated)).toHaveLength(1);
        expect(rotations.filter((rotation) => !rotation.rotated)).toEqual([{ rotated: false, reason: 'reused' }]);
        // A replay ends the whole family: the token the winner got is revoked too.
        const third = rotations.find((rotation) => rotation.rotated);
        if (!third?.rotated) throw new Error('no rotation');
        expect(await accounts.rotateSession(third.secret, expiresAt, now)).toEqual({ rotated: false, reason: 'revoked' });
        expect(await accounts.rotateSession(first.secret, expiresAt, now)).toEqual({ rotated: false, reason: 'revoked' });
        expect(await accounts.rotateSession('trr_unknown', expiresAt, now)).toEqual({ rotated: false, reason: 'unknown' });
        const expiring = await accounts.createSession({ userId: created.user.id, kind: 'refresh', expiresAt: now, now });
        expect(await accounts.rotateSession(expiring.secret, expiresAt, now)).toEqual({ rotated: false, reason: 'expired' });
      });

      it('keeps a login (a session family) live for its access tokens until a session of it is revoked', async () => {
        const { accounts } = await fresh();
        const now = new Date('2026-04-01T09:00:00.000Z');
        const expiresAt = new Date('2026-05-01T09:00:00.000Z');
        const ada = await accounts.createUser({ email: 'ada@example.com', passwordHash: 'h', role: 'publisher', owner: 'ada', now });
        const bob = await accounts.createUser({ email: 'bob@example.com', passwordHash: 'h', role: 'publisher', owner: 'bob', now });
        if (!ada.created || !bob.created) throw new Error('not created');
        const first = await accounts.createSession({ userId: ada.user.id, kind: 'refresh', expiresAt, now });
        const other = await accounts.createSession({ userId: ada.user.id, kind: 'refresh', expiresAt, now });
        expect(other.family).not.toBe(first.family);
        expect(await accounts.loginUser(first.family, ada.user.id)).toEqual(ada.user);
        // A family names one account's login: another account's id, or an unknown family, is no login.
        expect(await accounts.loginUser(first.family, bob.user.id)).toBeUndefined();
        expect(await accounts.loginUser('no-such-family', ada.user.id)).toBeUndefined();
        const second = await accounts.rotateSession(first.secret, expiresAt, now);
        if (!second.rotated) throw new Error('no rotation');
        expect(second.family).toBe(first.family);
        expect(await accounts.loginUser(first.family, ada.user.id)).toEqual(ada.user);
        // The replay of the rotated token ends that login, and only that one.
        expect(await accounts.rotateSession(first.secret, expiresAt, now)).toEqual({ rotated: false, reason: 'reused' });
        expect(await accounts.loginUser(first.family, ada.user.id)).toBeUndefined();
        expect(await accounts.loginUser(other.family, ada.user.id)).toEqual(ada.user);
        // So does a logout (revoking any session of the family).
        expect(await accounts.revokeSession(other.secret, now)).toBe(true);
        expect(await accounts.loginUser(other.family, ada.user.id)).toBeUndefined();
      });

      it('keeps one access-token signing key for every process on the storage', async () => {
        const { accounts } = await fresh();
        const key = await accounts.signingKey();
        expect(key.byteLength).toBeGreaterThanOrEqual(32);
        expect(Buffer.from(await accounts.signingKey())).toEqual(Buffer.from(key));
      });
    });

    describe('versions', () => {
      it('keeps a committed version with its manifest and archive, and lists only complete versions', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await publish(storage, record, 'web-app', '1.0.0', 'archive bytes');
        const pending = await storage.versions.reserveVersion(
          { name: 'web-app', version: '2.0.0', integrity: 'sha512-x', sha256: 'b'.repeat(64), size: 1, owner: record.owner },
          record,
        );
        expect(pending).toEqual({ reserved: true });
        expect((await storage.versions.listVersions()).map((v) => `${v.name}@${v.version}:${v.state}`)).toEqual(['web-app@1.0.0:complete']);
        expect(await storage.versions.readManifest('web-app', '1.0.0')).toEqual(templateManifest('web-app', '1.0.0'));
        const archive = await storage.versions.openArchive('web-app', '1.0.0');
        expect(archive?.size).toBe('archive bytes'.length);
        expect(await text(archive!.stream)).toBe('archive bytes');
        expect(await storage.versions.openArchive('web-app', '9.9.9')).toBeUndefined();
      });

      it('keeps the provenance bundle of a version reserved with one, and what it says; none for the others; an abort removes it', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        const attestation = { predicateType: 'https://slsa.dev/provenance/v1', signer: { repository: 'acme/web-app', workflow: 'publish.yml', issuer: 'https://token.example' }, runUrl: 'https://github.com/acme/web-app/actions/runs/1/attempts/1' };
        const bundle = '{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}';
        for (const version of ['1.0.0', '2.0.0']) {
          const file = path.join(await tempDir(), 'upload.tgz');
          await writeFile(file, 'bytes');
          await storage.versions.reserveVersion({ name: 'signed', version, integrity: 'sha512-x', sha256: 'd'.repeat(64), size: 5, owner: record.owner, attestation }, record);
          if (version === '1.0.0') {
            // A version reserved with provenance is never completed without its bundle.
            await expect(storage.versions.commitVersion('signed', version, file, templateManifest('signed', version))).rejects.toThrow(/with its bundle/);
            await storage.versions.commitVersion('signed', version, file, templateManifest('signed', version), [], bundle);
          } else {
            await storage.versions.abortVersion('signed', version);
          }
        }
        expect((await storage.versions.getVersion('signed', '1.0.0'))?.attestation).toEqual(attestation);
        expect((await storage.versions.readAttestation('signed', '1.0.0'))?.toString('utf8')).toBe(bundle);
        expect((await storage.versions.listPublished()).find((v) => 'manifest' in v && v.name === 'signed')).toMatchObject({ attestation });
        expect(await storage.versions.readAttestation('signed', '2.0.0')).toBeUndefined();
        await publish(storage, record, 'plain', '1.0.0');
        expect((await storage.versions.getVersion('plain', '1.0.0'))?.attestation).toBeUndefined();
        expect(await storage.versions.readAttestation('plain', '1.0.0')).toBeUndefined();
      });

      it('reserves a version once: a second reservation sees the first, whatever its state', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        const version = { name: 'web-app', version: '1.0.0', integrity: 'sha512-first', sha256: 'c'.repeat(64), size: 3, owner: record.owner };
        const results = await Promise.all([0, 1, 2, 3].map(() => storage.versions.reserveVersion(version, record)));
        expect(results.filter((r) => r.reserved)).toHaveLength(1);
        for (const other of results.filter((r) => !r.reserved)) expect(other).toMatchObject({ existing: { integrity: 'sha512-first', state: 'pending' } });
      });

      it('refuses a reservation the token may not make, and claims nothing then', async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const other = (await storage.tokens.createToken({ role: 'publisher', owner: 'other' })).record;
        await publish(storage, acme, 'web-app', '1.0.0');
        const refused = await storage.versions.reserveVersion(
          { name: 'web-app', version: '2.0.0', integrity: 'sha512-y', sha256: 'd'.repeat(64), size: 1, owner: other.owner },
          other,
        );
        expect(refused).toEqual({ reserved: false, forbidden: 'template web-app belongs to another publisher' });
        expect(await storage.versions.getVersion('web-app', '2.0.0')).toBeUndefined();
      });

      it('undoes an aborted reservation completely, but never a complete version', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await storage.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-z', sha256: 'e'.repeat(64), size: 1, owner: record.owner }, record);
        await storage.versions.abortVersion('web-app', '1.0.0');
        expect(await storage.versions.getVersion('web-app', '1.0.0')).toBeUndefined();
        await publish(storage, record, 'web-app', '1.0.0');
        await storage.versions.abortVersion('web-app', '1.0.0');
        expect(await storage.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'complete' });
        expect(await storage.versions.openArchive('web-app', '1.0.0')).toBeDefined();
      });

      it("removes an aborted reservation's bytes while its row still holds the version, so that no new upload of it can lose its bytes to the abort", async () => {
        const watched: { storage?: RegistryStorage } = {};
        const statesAtDelete: (string | undefined)[] = [];
        // The blob store as the store sees it, noting what the version's row is at each removal of a byte.
        const watching = (inner: BlobStore): BlobStore =>
          new Proxy(inner, {
            get(target, property) {
              if (property === 'delete') {
                return async (key: string) => {
                  statesAtDelete.push((await watched.storage?.versions.getVersion('web-app', '1.0.0'))?.state);
                  return target.delete(key);
                };
              }
              const value: unknown = Reflect.get(target, property, target);
              return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
            },
          });
        const storage = await (await place())(watching);
        watched.storage = storage;
        opened.push(storage);
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await storage.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-z', sha256: 'e'.repeat(64), size: 1, owner: record.owner }, record);
        await storage.versions.abortVersion('web-app', '1.0.0');
        expect(statesAtDelete.length).toBeGreaterThan(0);
        expect(statesAtDelete.every((state) => state === 'pending'), `the row at each removal: ${statesAtDelete.join(', ')}`).toBe(true);
        expect(await storage.versions.getVersion('web-app', '1.0.0')).toBeUndefined();
      });

      it('changes the lifecycle of a complete version (deprecation, message, yank) without touching its manifest or archive', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await publish(storage, record, 'web-app', '1.0.0', 'the bytes');
        await publish(storage, record, 'web-app', '2.0.0');
        expect(await storage.versions.listLifecycles()).toEqual(new Map());
        expect(await storage.versions.updateLifecycle('web-app', '9.9.9', { stability: 'deprecated' })).toBeUndefined();

        const deprecated = await storage.versions.updateLifecycle('web-app', '1.0.0', { stability: 'deprecated', deprecationMessage: 'use 2.x' });
        expect(deprecated).toMatchObject({ changed: true, version: { stability: 'deprecated', deprecationMessage: 'use 2.x' } });
        expect((await storage.versions.updateLifecycle('web-app', '1.0.0', { stability: 'deprecated', deprecationMessage: 'use 2.x' }))?.changed).toBe(false);
        const yanked = await storage.versions.updateLifecycle('web-app', '1.0.0', { yanked: true, now: new Date('2026-02-01T00:00:00.000Z') });
        expect(yanked?.version).toMatchObject({ stability: 'deprecated', deprecationMessage: 'use 2.x', yankedAt: '2026-02-01T00:00:00.000Z' });
        expect(await storage.versions.listLifecycles()).toEqual(
          new Map([['web-app@1.0.0', { stability: 'deprecated', deprecationMessage: 'use 2.x', yankedAt: '2026-02-01T00:00:00.000Z' }]]),
        );
        // Another stability removes the message; a yank is never undone.
        const undone = await storage.versions.updateLifecycle('web-app', '1.0.0', { stability: 'stable' });
        expect(undone?.version.deprecationMessage).toBeUndefined();
        expect(undone?.version.yankedAt).toBe('2026-02-01T00:00:00.000Z');

        expect(await storage.versions.readManifest('web-app', '1.0.0')).toEqual(templateManifest('web-app', '1.0.0'));
        expect(await text((await storage.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('the bytes');
        expect((await storage.versions.getVersion('web-app', '1.0.0'))?.state).toBe('complete');
      });

      it('lists the complete versions of some templates with their manifests (a registry build reads a few templates at a time)', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await publish(storage, record, 'web-app', '1.0.0', 'one');
        await publish(storage, record, 'web-app', '1.1.0', 'two');
        await publish(storage, record, 'api', '2.0.0', 'three');
        await publish(storage, record, 'cli', '0.1.0', 'four');
        await storage.versions.reserveVersion({ name: 'pending-only', version: '1.0.0', integrity: 'sha512-p', sha256: 'f'.repeat(64), size: 1, owner: record.owner }, record);
        const published = (await storage.versions.publishedVersions?.()) ?? new Map<string, string[]>();
        expect([...published.keys()].sort()).toEqual(['api', 'cli', 'web-app']);
        expect([...published].map(([name, versions]) => `${name} ${[...versions].sort().join(' ')}`).sort()).toEqual(['api 2.0.0', 'cli 0.1.0', 'web-app 1.0.0 1.1.0']);
        // Each name once, however many versions it has; a template with only a pending version is not one.
        expect((await storage.versions.publishedNames?.())?.sort()).toEqual(['api', 'cli', 'web-app']);
        const some = (await storage.versions.listPublishedOf?.(['web-app', 'cli', 'pending-only', 'unknown'])) ?? [];
        expect(some.map((v) => `${v.name}@${v.version}`).sort()).toEqual(['cli@0.1.0', 'web-app@1.0.0', 'web-app@1.1.0']);
        expect(some.find((v) => v.version === '1.1.0')?.manifest).toEqual(templateManifest('web-app', '1.1.0'));
        // Every field of each listed version as the store gives it one by one (both read the same row, one of them column by column).
        await storage.versions.updateLifecycle('cli', '0.1.0', { deprecationMessage: 'use web-app' });
        for (const listed of [...((await storage.versions.listPublishedOf?.(['web-app', 'cli'])) ?? []), ...(await storage.versions.listPublished()).filter((v) => 'manifest' in v)]) {
          expect(listed).toEqual({ ...(await storage.versions.getVersion(listed.name, listed.version)), manifest: templateManifest(listed.name, listed.version) });
        }
        expect(await storage.versions.listPublishedOf?.([])).toEqual([]);
      });

      it('refuses to commit a version never reserved or already complete, before writing any byte', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await publish(storage, record, 'web-app', '1.0.0', 'first bytes');
        const other = path.join(await tempDir(), 'upload.tgz');
        await writeFile(other, 'other bytes');
        await expect(storage.versions.commitVersion('web-app', '1.0.0', other, templateManifest('web-app', '1.0.0'))).rejects.toThrow(/web-app@1\.0\.0 is already complete/);
        await expect(storage.versions.commitVersion('web-app', '2.0.0', other, templateManifest('web-app', '2.0.0'))).rejects.toThrow(/web-app@2\.0\.0 is not reserved/);
        expect(await text((await storage.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('first bytes');
        expect(await storage.versions.openArchive('web-app', '2.0.0')).toBeUndefined();
        await expect(storage.versions.readManifest('web-app', '2.0.0')).rejects.toMatchObject({ code: 'ENOENT' });
      });

      describe('after a crash', () => {
        const sha256 = (content: string): string => createHash('sha256').update(content).digest('hex');
        /** Opens the store of `openAt` and reserves web-app@`version` for `content`; gives the blob store it writes through. */
        async function reserveAt(openAt: OpenAt, versions: Record<string, string>): Promise<{ storage: RegistryStorage; blobs: BlobStore }> {
          let blobs: BlobStore | undefined;
          const storage = await openAt((inner) => (blobs = inner));
          const { record } = await storage.tokens.createToken({ role: 'admin' });
          for (const [version, content] of Object.entries(versions)) {
            const reserved = await storage.versions.reserveVersion({ name: 'web-app', version, integrity: `sha512-${version}`, sha256: sha256(content), size: content.length, owner: record.owner }, record);
            expect(reserved).toEqual({ reserved: true });
          }
          return { storage, blobs: blobs! };
        }

        it('completes at the restart a pending version whose bytes were all stored, and removes one whose bytes were not, with its bytes', async () => {
          const openAt = await place();
          const { storage: crashed, blobs } = await reserveAt(openAt, { '1.0.0': 'whole', '2.0.0': 'the full archive' });
          // 1.0.0: its commit stored manifest and archive, then the process died before the row.
          await blobs.putBytes('manifests/web-app/1.0.0.json', JSON.stringify(templateManifest('web-app', '1.0.0')));
          await blobs.putBytes('archives/web-app/1.0.0.tgz', 'whole');
          // 2.0.0: it died half-way through the archive.
          await blobs.putBytes('manifests/web-app/2.0.0.json', JSON.stringify(templateManifest('web-app', '2.0.0')));
          await blobs.putBytes('archives/web-app/2.0.0.tgz', 'the full');
          await crashed.close();

          const restarted = await openAt();
          opened.push(restarted);
          await restarted.recover();
          expect(await restarted.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'complete', size: 5 });
          expect(await text((await restarted.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('whole');
          expect(await restarted.versions.readManifest('web-app', '1.0.0')).toEqual(templateManifest('web-app', '1.0.0'));
          expect(await restarted.versions.getVersion('web-app', '2.0.0')).toBeUndefined();
          expect(await blobs.stat('archives/web-app/2.0.0.tgz')).toBeUndefined();
          expect(await blobs.stat('manifests/web-app/2.0.0.json')).toBeUndefined();
        });

        it('fails the restart whose blob store cannot be read, keeping the pending version and its bytes, which the next restart completes', async () => {
          const openAt = await place();
          const { storage: crashed, blobs } = await reserveAt(openAt, { '1.0.0': 'whole' });
          await blobs.putBytes('manifests/web-app/1.0.0.json', JSON.stringify(templateManifest('web-app', '1.0.0')));
          await blobs.putBytes('archives/web-app/1.0.0.tgz', 'whole');
          await crashed.close();

          const blind = await openAt(unreadable);
          await expect(blind.recover()).rejects.toThrow(/unreachable/);
          await blind.close();
          expect(await blobs.stat('archives/web-app/1.0.0.tgz')).toEqual({ size: 5 });

          const restarted = await openAt();
          opened.push(restarted);
          await restarted.recover();
          expect(await restarted.versions.getVersion('web-app', '1.0.0')).toMatchObject({ state: 'complete' });
          expect(await text((await restarted.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('whole');
        });
      });

      it('purges a complete version for good: row, archive, manifest and bundle gone, its name and version refused from then on, a second purge the same', async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'admin' });
        await publish(storage, record, 'web-app', '1.0.0', 'kept bytes');
        await publish(storage, record, 'web-app', '1.1.0', 'leaked bytes');
        await storage.versions.reserveVersion({ name: 'web-app', version: '2.0.0', integrity: 'sha512-p', sha256: 'f'.repeat(64), size: 1, owner: record.owner }, record);
        const at = new Date('2026-04-01T10:00:00.000Z');
        // Nothing to purge: an unknown version, a pending one.
        expect(await storage.versions.purgeVersion('web-app', '9.9.9', at)).toBeUndefined();
        expect(await storage.versions.purgeVersion('web-app', '2.0.0', at)).toBeUndefined();
        expect(await storage.versions.purgedAt('web-app', '1.1.0')).toBeUndefined();

        const purged = await storage.versions.purgeVersion('web-app', '1.1.0', at);
        expect(purged).toEqual({ purgedAt: at.toISOString(), version: expect.objectContaining({ name: 'web-app', version: '1.1.0', state: 'complete' }) });
        expect(await storage.versions.getVersion('web-app', '1.1.0')).toBeUndefined();
        expect(await storage.versions.openArchive('web-app', '1.1.0')).toBeUndefined();
        await expect(storage.versions.readManifest('web-app', '1.1.0')).rejects.toMatchObject({ code: 'ENOENT' });
        expect((await storage.versions.listPublished()).map((v) => v.version).sort()).toEqual(['1.0.0']);
        expect(await storage.versions.purgedAt('web-app', '1.1.0')).toBe(at.toISOString());
        const again = await storage.versions.reserveVersion({ name: 'web-app', version: '1.1.0', integrity: 'sha512-q', sha256: 'a'.repeat(64), size: 1, owner: record.owner }, record);
        expect(again).toEqual({ reserved: false, purged: at.toISOString() });
        expect(await storage.versions.purgeVersion('web-app', '1.1.0', new Date('2026-05-01T00:00:00.000Z'))).toEqual({ purgedAt: at.toISOString() });
        // The other versions are whole; the name stays owned.
        expect(await text((await storage.versions.openArchive('web-app', '1.0.0'))!.stream)).toBe('kept bytes');
        expect(await storage.tokens.ownerOf('web-app')).toBe(record.owner);
      });
    });

    describe('events', () => {
      it('counts events by type and downloads per version', async () => {
        const { events } = await fresh();
        await events.recordEvent({ type: 'download', templateId: 'web-app', version: '1.0.0', timestamp: '2026-01-01T00:00:00.000Z', userAgent: 'a', platform: 'linux' });
        await events.recordEvent({ type: 'download', templateId: 'web-app', version: '1.0.0', timestamp: '2026-01-02T00:00:00.000Z', userAgent: 'a', platform: 'linux' });
        await events.recordEvent({ type: 'generation', templateId: 'web-app', version: '1.0.0', timestamp: '2026-01-03T00:00:00.000Z', success: true, duration: 5 });
        expect(await events.countEvents()).toBe(3);
        expect(await events.countEvents('download')).toBe(2);
        expect((await events.usage()).get('web-app@1.0.0')).toEqual({ downloads: 2, lastDownload: '2026-01-02T00:00:00.000Z' });
      });

      it('counts one download per client, version and UTC day, and keeps every event', async () => {
        const { events } = await fresh();
        const download = (version: string) => ({ type: 'download' as const, templateId: 'web-app', version, timestamp: '2026-01-01T00:00:00.000Z', userAgent: 'a', platform: 'linux' });
        const morning = new Date('2026-03-01T08:00:00Z');
        const evening = new Date('2026-03-01T23:59:00Z');
        const nextDay = new Date('2026-03-02T00:01:00Z');
        await events.recordEvent(download('1.0.0'), { client: 'c1', receivedAt: morning });
        await events.recordEvent(download('1.0.0'), { client: 'c1', receivedAt: evening });
        await events.recordEvent(download('1.0.0'), { client: 'c1', receivedAt: nextDay });
        await events.recordEvent(download('1.0.0'), { client: 'c2', receivedAt: evening });
        await events.recordEvent(download('2.0.0'), { client: 'c1', receivedAt: evening });
        expect(await events.countEvents('download')).toBe(5);
        const usage = await events.usage();
        expect(usage.get('web-app@1.0.0')?.downloads).toBe(3);
        expect(usage.get('web-app@2.0.0')?.downloads).toBe(1);
      });

      it('lists events with their origin, in recorded order, by template and type', async () => {
        const { events } = await fresh();
        const receivedAt = new Date('2026-03-01T08:00:00.000Z');
        const feedback = { type: 'feedback', templateId: 'web-app', version: '1.0.0', timestamp: '2026-03-01T07:59:00.000Z', rating: 4, comment: 'Nice', userId: 'u1' };
        const generation = { type: 'generation', templateId: 'api', version: '2.0.0', timestamp: '2026-03-01T08:00:00.000Z', success: true, duration: 12 };
        const download = { type: 'download', templateId: 'web-app', version: '1.0.0', timestamp: '2026-03-01T08:01:00.000Z', userAgent: 'a', platform: 'linux' };
        await events.recordEvent(feedback, { client: 'c1', receivedAt });
        await events.recordEvent(generation, { receivedAt });
        await events.recordEvent(download, { client: 'c2', receivedAt });
        const all = await events.listEvents();
        expect(all.map((e) => e.event)).toEqual([feedback, generation, download]);
        expect(all.map((e) => [e.client, e.receivedAt])).toEqual([
          ['c1', receivedAt.toISOString()],
          [undefined, receivedAt.toISOString()],
          ['c2', receivedAt.toISOString()],
        ]);
        expect(new Set(all.map((e) => e.id)).size).toBe(3);
        expect((await events.listEvents({ templateId: 'web-app' })).map((e) => e.event.type)).toEqual(['feedback', 'download']);
        expect((await events.listEvents({ type: 'download' })).map((e) => e.event.templateId)).toEqual(['web-app']);
        expect(await events.listEvents({ templateId: 'api', type: 'download' })).toEqual([]);
      });

      it('keeps aggregates as events arrive that give the very records and stats the stored events give', async () => {
        const { events } = await fresh();
        await recordHistory(events, 77, 400);
        expect(await events.countEvents()).toBeGreaterThan(300);
        await expectAggregatesOfEvents(events);
      });

      it('prunes the raw events received before a cutoff; every record, stat and later count stays as it was', async () => {
        const { events } = await fresh();
        await recordHistory(events, 78, 300);
        const before = { records: await storedRecords(events), usage: await events.usage(), recorded: await events.downloadsRecorded() };
        const stored = await events.listEvents();
        const cutoff = new Date(HISTORY_NOW.getTime() - 20 * 24 * 60 * 60 * 1000);
        const old = stored.filter((e) => Date.parse(e.receivedAt ?? '') < cutoff.getTime());
        expect(old.length).toBeGreaterThan(100);

        expect(await events.pruneEvents(cutoff)).toBe(old.length);
        expect(await events.listEvents()).toEqual(stored.filter((e) => !old.includes(e)));
        expect(await events.countEvents()).toBe(stored.length - old.length);
        expect(await storedRecords(events)).toEqual(before.records);
        expect(await events.usage()).toEqual(before.usage);
        expect(await events.downloadsRecorded()).toBe(before.recorded);
        expect(await events.pruneEvents(cutoff)).toBe(0);

        // A client that downloaded today still counts once today; the download events keep being counted.
        const today = stored.filter((e) => e.event.type === 'download' && e.client !== undefined && Date.parse(e.receivedAt ?? '') >= cutoff.getTime()).at(-1);
        expect(today).toBeDefined();
        const { event, client, receivedAt } = today as NonNullable<typeof today>;
        await events.recordEvent(event, { client: client as string, receivedAt: new Date(receivedAt ?? '') });
        expect(await events.usage()).toEqual(before.usage);
        expect(await events.downloadsRecorded()).toBe(before.recorded + 1);
      });
    });

    describe('webhooks', () => {
      it('keeps webhooks, finds the active subscribers of an event, and removes one with its log', async () => {
        const { webhooks } = await fresh();
        const at = (second: number): Date => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
        const all = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['*'], secret: 's1', active: true, now: at(0) });
        const prefix = await webhooks.createWebhook({ url: 'https://b.example/hook', events: ['template.*'], secret: 's2', active: true, now: at(1) });
        const off = await webhooks.createWebhook({ url: 'https://c.example/hook', events: ['template.published'], secret: 's3', active: false, now: at(2) });
        const other = await webhooks.createWebhook({ url: 'https://d.example/hook', events: ['registry.updated'], secret: 's4', active: true, now: at(3) });
        expect((await webhooks.webhooksFor('template.published')).map((w) => w.id)).toEqual([all.id, prefix.id]);
        expect(await webhooks.getWebhook(off.id)).toEqual(off);
        expect((await webhooks.listWebhooks()).map((w) => w.id)).toEqual([all.id, prefix.id, off.id, other.id]);

        const first = await webhooks.startDelivery(all.id, 'template.published', new Date('2026-01-01T00:00:00.000Z'));
        await finishAttempt(webhooks, first, 500, 'HTTP 500');
        const second = await webhooks.startDelivery(all.id, 'template.published', new Date('2026-01-01T00:00:01.000Z'));
        await finishAttempt(webhooks, second, 200, null);
        expect((await webhooks.listDeliveries(all.id)).map((d) => [d.status, d.error])).toEqual([
          [200, null],
          [500, 'HTTP 500'],
        ]);
        await webhooks.pruneDeliveries(all.id, 1);
        expect(await webhooks.listDeliveries(all.id)).toHaveLength(1);
        expect(await webhooks.deleteWebhook(all.id)).toBe(true);
        expect(await webhooks.deleteWebhook(all.id)).toBe(false);
        expect(await webhooks.listDeliveries(all.id)).toEqual([]);
      });

      it('writes outbox deliveries for the active subscribers of an event, claims due ones, and keeps their state', async () => {
        const { webhooks } = await fresh();
        const t0 = new Date(Date.UTC(2026, 0, 1));
        const later = (ms: number): Date => new Date(t0.getTime() + ms);
        const sub = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['template.published', 'registry.updated'], secret: 's', active: true });
        await webhooks.createWebhook({ url: 'https://b.example/hook', events: ['template.published'], secret: 's', active: false });
        const other = await webhooks.createWebhook({ url: 'https://c.example/hook', events: ['template.yanked'], secret: 's', active: true });

        const written = await webhooks.enqueueEvent({ event: 'template.published', data: { id: 'x' } }, t0);
        expect(written).toEqual([
          {
            id: expect.stringMatching(/^[0-9a-f-]{36}$/),
            webhookId: sub.id,
            event: 'template.published',
            body: JSON.stringify({ event: 'template.published', timestamp: t0.toISOString(), data: { id: 'x' } }),
            state: 'pending',
            attempts: 0,
            nextAttemptAt: t0.toISOString(),
            createdAt: t0.toISOString(),
            lastStatus: null,
            lastError: null,
          },
        ]);
        const delivery = written[0]!;
        expect(await webhooks.countPendingDeliveries()).toBe(1);
        expect(await webhooks.nextDueAt()).toEqual(t0);
        expect(await webhooks.claimDueDeliveries(later(-1), 10, 1000)).toEqual([]);
        // Claimed: leased, so not claimed again before the lease ends.
        expect((await webhooks.claimDueDeliveries(t0, 10, 1000)).map((d) => d.id)).toEqual([delivery.id]);
        expect(await webhooks.claimDueDeliveries(later(999), 10, 1000)).toEqual([]);
        expect(await webhooks.nextDueAt()).toEqual(later(1000));

        const attempt = await webhooks.startDelivery(sub.id, 'template.published', t0, delivery.id);
        await finishAttempt(webhooks, attempt, 503, 'HTTP 503');
        expect(await webhooks.listDeliveries(sub.id)).toMatchObject([{ id: attempt, deliveryId: delivery.id, status: 503 }]);
        await webhooks.updateOutboxDelivery(delivery.id, { state: 'pending', attempts: 1, nextAttemptAt: later(5000), status: 503, error: 'HTTP 503' }, t0);
        expect(await webhooks.getOutboxDelivery(delivery.id)).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: later(5000).toISOString(), lastStatus: 503, lastError: 'HTTP 503' });
        expect((await webhooks.claimDueDeliveries(later(5000), 10, 1000)).map((d) => d.attempts)).toEqual([1]);
        await webhooks.updateOutboxDelivery(delivery.id, { state: 'delivered', attempts: 2, status: 200, error: null }, later(5000));
        expect(await webhooks.countPendingDeliveries()).toBe(0);
        expect(await webhooks.nextDueAt()).toBeUndefined();
        expect(await webhooks.claimDueDeliveries(later(99_999), 10, 1000)).toEqual([]);

        expect(await webhooks.enqueueEvent({ event: 'template.deprecated', data: {} }, t0)).toEqual([]);
        expect(await webhooks.setWebhookActive(other.id, false)).toBe(true);
        expect(await webhooks.setWebhookActive('wh_none', false)).toBe(false);
        expect(await webhooks.enqueueEvent({ event: 'template.yanked', data: {} }, t0)).toEqual([]);
        expect((await webhooks.getWebhook(other.id))?.active).toBe(false);

        await webhooks.enqueueEvent({ event: 'registry.updated', data: {} }, later(1));
        expect((await webhooks.listOutboxDeliveries(sub.id)).map((d) => [d.event, d.state])).toEqual([
          ['registry.updated', 'pending'],
          ['template.published', 'delivered'],
        ]);
        expect(await webhooks.deleteWebhook(sub.id)).toBe(true);
        expect(await webhooks.listOutboxDeliveries(sub.id)).toEqual([]);
        expect(await webhooks.countPendingDeliveries()).toBe(0);
      });

      it('names each attempt by an external id: a UUID version 7 sorting as the attempts were made, whatever their webhook', async () => {
        const { webhooks } = await fresh();
        const a = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['*'], secret: 's', active: true });
        const b = await webhooks.createWebhook({ url: 'https://b.example/hook', events: ['*'], secret: 's', active: true });
        const made: string[] = [];
        for (let i = 0; i < 12; i++) {
          // Attempts in one millisecond too: their ids still sort as they were made.
          made.push(await webhooks.startDelivery(a.id, 'registry.updated', new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(i / 3)))));
          await webhooks.startDelivery(b.id, 'registry.updated', new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(i / 3))));
        }
        for (const id of made) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect([...made].sort()).toEqual(made);
        expect((await webhooks.listDeliveries(a.id)).map((d) => d.id)).toEqual([...made].reverse());
        await finishAttempt(webhooks, made[4]!, 204, null);
        expect((await webhooks.listDeliveries(a.id)).filter((d) => d.status !== null)).toMatchObject([{ id: made[4], status: 204 }]);
      });

      it('claims one delivery of a webhook at a time, in the order written: a later one waits until the earlier is final', async () => {
        const { webhooks } = await fresh();
        const t0 = new Date(Date.UTC(2026, 0, 1));
        const later = (ms: number): Date => new Date(t0.getTime() + ms);
        // Created in this order (deliveries of one event are written in the order of their webhooks).
        const a = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['*'], secret: 's', active: true, now: later(-2) });
        await webhooks.createWebhook({ url: 'https://b.example/hook', events: ['registry.updated'], secret: 's', active: true, now: later(-1) });
        const [a1, b1] = await webhooks.enqueueEvent({ event: 'registry.updated', data: { n: 1 } }, t0);
        const [a2] = await webhooks.enqueueEvent({ event: 'template.yanked', data: { n: 2 } }, t0);
        const [a3] = await webhooks.enqueueEvent({ event: 'template.deprecated', data: { n: 3 } }, t0);
        const claim = async (at: Date): Promise<string[]> => (await webhooks.claimDueDeliveries(at, 10, 1000)).map((d) => d.id);
        const finish = async (id: string, update: Omit<AttemptOutcome, 'attemptId' | 'deliveryId'>, at: Date): Promise<void> => {
          const attemptId = await webhooks.startDelivery(a.id, 'registry.updated', at, id);
          await webhooks.recordAttemptOutcome({ ...update, attemptId, deliveryId: id }, at);
        };

        // One per webhook, its oldest; a webhook's next one is not due while the first is leased.
        expect(await claim(t0)).toEqual([a1!.id, b1!.id]);
        expect(await claim(t0)).toEqual([]);
        expect(await webhooks.nextDueAt()).toEqual(later(1000));
        // A retry holds the later deliveries back: a2 and a3 are due, yet not given before a1 is final.
        await finish(a1!.id, { state: 'pending', attempts: 1, nextAttemptAt: later(5000), status: 500, error: 'HTTP 500' }, later(10));
        expect(await claim(later(20))).toEqual([]);
        expect(await webhooks.nextDueAt()).toEqual(later(1000));
        await finish(b1!.id, { state: 'delivered', attempts: 1, status: 200, error: null }, later(30));
        expect(await webhooks.nextDueAt()).toEqual(later(5000));
        expect(await claim(later(5000))).toEqual([a1!.id]);
        await finish(a1!.id, { state: 'delivered', attempts: 2, status: 200, error: null }, later(5010));
        expect(await claim(later(5020))).toEqual([a2!.id]);
        await finish(a2!.id, { state: 'failed', attempts: 1, status: null, error: 'refused' }, later(5030));
        expect(await claim(later(5040))).toEqual([a3!.id]);
      });

      it("records an attempt's outcome and its delivery's new state in one transaction: a write that fails leaves neither", async () => {
        const { webhooks } = await fresh();
        const t0 = new Date(Date.UTC(2026, 0, 1));
        const hook = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['*'], secret: 's', active: true });
        const [delivery] = await webhooks.enqueueEvent({ event: 'registry.updated', data: {} }, t0);
        await webhooks.claimDueDeliveries(t0, 10, 60_000);
        const attemptId = await webhooks.startDelivery(hook.id, 'registry.updated', t0, delivery!.id);

        // The attempt's row is written first; the delivery's update then fails (a state the outbox refuses).
        const refused = { attemptId, deliveryId: delivery!.id, state: 'answered' as OutboxState, attempts: 1, status: 200, error: null };
        await expect(webhooks.recordAttemptOutcome(refused, t0)).rejects.toThrow();
        expect(await webhooks.listDeliveries(hook.id)).toMatchObject([{ id: attemptId, status: null, error: null }]);
        expect(await webhooks.getOutboxDelivery(delivery!.id)).toMatchObject({ state: 'pending', attempts: 0, lastStatus: null });

        expect(await webhooks.recordAttemptOutcome({ ...refused, state: 'delivered' }, t0)).toBe(true);
        expect(await webhooks.listDeliveries(hook.id)).toMatchObject([{ id: attemptId, status: 200, error: null }]);
        expect(await webhooks.getOutboxDelivery(delivery!.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200 });
        expect(await webhooks.countPendingDeliveries()).toBe(0);
      });

      it('never moves a delivery out of a final state, and switches the webhook off with a 410 outcome', async () => {
        const { webhooks } = await fresh();
        const t0 = new Date(Date.UTC(2026, 0, 1));
        const hook = await webhooks.createWebhook({ url: 'https://a.example/hook', events: ['*'], secret: 's', active: true });
        const [delivery] = await webhooks.enqueueEvent({ event: 'registry.updated', data: {} }, t0);
        const first = await webhooks.startDelivery(hook.id, 'registry.updated', t0, delivery!.id);
        const second = await webhooks.startDelivery(hook.id, 'registry.updated', t0, delivery!.id);
        expect(await webhooks.recordAttemptOutcome({ attemptId: first, deliveryId: delivery!.id, state: 'delivered', attempts: 1, status: 200, error: null }, t0)).toBe(true);
        // A late attempt of another process (its lease had ended) fails: logged, and the delivery stays delivered.
        const late = { attemptId: second, deliveryId: delivery!.id, state: 'pending' as const, attempts: 2, nextAttemptAt: t0, status: 410, error: 'HTTP 410', disableWebhook: true };
        expect(await webhooks.recordAttemptOutcome(late, t0)).toBe(false);
        expect(await webhooks.getOutboxDelivery(delivery!.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200 });
        expect((await webhooks.listDeliveries(hook.id)).map((d) => [d.id, d.status])).toEqual([
          [second, 410],
          [first, 200],
        ]);
        expect(await webhooks.claimDueDeliveries(t0, 10, 1000)).toEqual([]);
        expect((await webhooks.getWebhook(hook.id))?.active).toBe(false);
      });

      it("writes a commit's webhook events to the outbox with the version, and none for a version that was not pending", async () => {
        const storage = await fresh();
        const { record } = await storage.tokens.createToken({ role: 'publisher' });
        const hook = await storage.webhooks.createWebhook({ url: 'https://a.example/hook', events: ['template.published'], secret: 's', active: true });
        const file = path.join(await tempDir(), 'upload.tgz');
        await writeFile(file, 'bytes');
        await storage.versions.reserveVersion({ name: 'web-app', version: '1.0.0', integrity: 'sha512-x', sha256: 'a'.repeat(64), size: 5, owner: record.owner }, record);
        const event = { event: 'template.published', data: { id: 'web-app', version: '1.0.0' }, timestamp: '2026-01-01T00:00:00.000Z' };
        await storage.versions.commitVersion('web-app', '1.0.0', file, templateManifest('web-app', '1.0.0'), [event]);
        expect((await storage.versions.getVersion('web-app', '1.0.0'))?.state).toBe('complete');
        expect(await storage.webhooks.listOutboxDeliveries(hook.id)).toMatchObject([{ event: 'template.published', state: 'pending', body: JSON.stringify({ event: event.event, timestamp: event.timestamp, data: event.data }) }]);

        // Not reserved (so not pending): nothing is committed, nothing is told.
        const again = path.join(await tempDir(), 'upload.tgz');
        await writeFile(again, 'bytes');
        await storage.versions.commitVersion('web-app', '1.0.0', again, templateManifest('web-app', '1.0.0'), [event]).catch(() => undefined);
        expect(await storage.webhooks.listOutboxDeliveries(hook.id)).toHaveLength(1);
      });
    });

    describe('trusted publishers', () => {
      const ISSUER = 'https://token.actions.githubusercontent.com';
      const trust = (template: string, extra: Partial<NewTrustedPublisher> = {}): NewTrustedPublisher => ({
        template,
        issuer: ISSUER,
        repository: 'acme/web-app',
        repositoryOwnerId: '4242',
        workflow: 'publish.yml',
        ...extra,
      });
      const run: PublisherRun = {
        issuer: ISSUER,
        repository: 'Acme/Web-App',
        repositoryOwnerId: '4242',
        workflow: 'publish.yml',
        ref: 'refs/tags/v1.0.0',
        sha: 'f'.repeat(40),
        runId: '1001',
        runAttempt: '1',
      };
      /** A token as the exchange mints it: limited to `templates`, for `owner`, carrying the run. */
      const minted = async (storage: RegistryStorage, templates: string[], owner: string): Promise<TokenRecord> =>
        (await storage.tokens.createToken({ role: 'publisher', templates, owner, expiresAt: new Date(Date.now() + 900_000), publisher: run })).record;
      const reserve = (storage: RegistryStorage, token: TokenRecord, name: string, version: string) =>
        storage.versions.reserveVersion({ name, version, integrity: `sha512-${version}`, sha256: 'a'.repeat(64), size: 1, owner: token.owner }, token);

      it('keeps the run of a minted token with its record', async () => {
        const { tokens } = await fresh();
        const { token, record } = await tokens.createToken({ role: 'publisher', templates: ['web-app'], owner: 'acme', publisher: run });
        expect(record.publisher).toEqual(run);
        expect((await activeToken(tokens, token))?.publisher).toEqual(run);
        expect((await tokens.listTokens())[0]?.publisher).toEqual(run);
      });

      it('saves a pending publisher on an unclaimed name; its first publish claims the name for the saver and the version keeps the run', async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const saved = await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { environment: 'release', ref: 'refs/tags/v*' }), acme);
        expect(saved).toMatchObject({ added: true, publisher: { template: 'web-app', repository: 'acme/web-app', environment: 'release', ref: 'refs/tags/v*', pendingOwner: 'acme', createdBy: 'acme' } });
        expect(await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { repository: 'ACME/web-app', environment: 'Release', ref: 'refs/tags/v*' }), acme)).toMatchObject({
          added: false,
          existing: { id: (saved as { publisher: { id: string } }).publisher.id },
        });
        expect((await storage.trustedPublishers.trustedPublishersOf(ISSUER, 'ACME/WEB-APP')).map((p) => p.template)).toEqual(['web-app']);
        expect(await storage.trustedPublishers.trustedPublishersOf('https://other.example', 'acme/web-app')).toEqual([]);

        const token = await minted(storage, ['web-app'], 'acme');
        expect(await storage.tokens.canPublish(token, 'web-app')).toEqual({ allowed: true });
        expect(await reserve(storage, token, 'web-app', '1.0.0')).toEqual({ reserved: true });
        expect(await storage.tokens.ownersOf('web-app')).toEqual(['acme']);
        expect(await storage.versions.getVersion('web-app', '1.0.0')).toMatchObject({ owner: 'acme', publisher: run });
        // Claimed by its saver: an ordinary trusted publisher now.
        expect((await storage.trustedPublishers.listTrustedPublishers('web-app'))[0]).not.toHaveProperty('pendingOwner');
        // A version published with another credential has no run.
        await publish(storage, acme, 'web-app', '2.0.0');
        expect(await storage.versions.getVersion('web-app', '2.0.0')).not.toHaveProperty('publisher');
      });

      it("drops other savers' pending publishers when a name is claimed, so their tokens publish nothing", async () => {
        const storage = await fresh();
        const squatter = (await storage.tokens.createToken({ role: 'publisher', owner: 'squatter' })).record;
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        expect(await storage.trustedPublishers.addTrustedPublisher(trust('web-app'), squatter)).toMatchObject({ added: true, publisher: { pendingOwner: 'squatter' } });
        const token = await minted(storage, ['web-app'], 'squatter');
        await publish(storage, acme, 'web-app', '1.0.0');
        expect(await storage.trustedPublishers.listTrustedPublishers('web-app')).toEqual([]);
        expect(await storage.tokens.canPublish(token, 'web-app')).toMatchObject({ allowed: false, reason: expect.stringMatching(/no trusted publisher of web-app matches/) });
        expect(await reserve(storage, token, 'web-app', '2.0.0')).toMatchObject({ reserved: false, forbidden: expect.stringMatching(/no trusted publisher/) });
      });

      it("lets a minted token publish a claimed name while one of its owners' trusted publishers matches, as the claimer, and stops it when that is removed", async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const other = (await storage.tokens.createToken({ role: 'publisher', owner: 'other' })).record;
        await publish(storage, acme, 'web-app', '1.0.0');
        expect(await storage.trustedPublishers.addTrustedPublisher(trust('web-app'), other)).toEqual({ added: false, forbidden: 'template web-app belongs to another publisher' });
        const added = await storage.trustedPublishers.addTrustedPublisher(trust('web-app'), acme);
        expect(added).toMatchObject({ added: true });
        expect((added as { publisher: object }).publisher).not.toHaveProperty('pendingOwner');

        const token = await minted(storage, ['web-app'], 'tp-run');
        expect(await storage.tokens.canPublish(token, 'other-name')).toMatchObject({ allowed: false });
        expect(await storage.tokens.canManage(token, 'web-app')).toEqual({ allowed: false, reason: 'a token minted for trusted publishing may only publish' });
        expect(await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { workflow: 'other.yml' }), token)).toMatchObject({ added: false, forbidden: expect.any(String) });
        expect(await reserve(storage, token, 'web-app', '1.1.0')).toEqual({ reserved: true });
        expect(await storage.versions.getVersion('web-app', '1.1.0')).toMatchObject({ owner: 'acme', publisher: run });

        // Another owner id (the account was deleted and its name taken), or another workflow, is no match.
        for (const changed of [{ repositoryOwnerId: '9999' }, { workflow: 'other.yml' }]) {
          const stranger = (await storage.tokens.createToken({ role: 'publisher', templates: ['web-app'], owner: 'x', publisher: { ...run, ...changed } })).record;
          expect(await storage.tokens.canPublish(stranger, 'web-app')).toMatchObject({ allowed: false });
        }
        expect(await storage.trustedPublishers.removeTrustedPublishers('web-app', { repository: 'Acme/Web-App', workflow: 'other.yml' })).toEqual([]);
        const removed = await storage.trustedPublishers.removeTrustedPublishers('web-app', { repository: 'Acme/Web-App', workflow: 'publish.yml' });
        expect(removed.map((p) => p.workflow)).toEqual(['publish.yml']);
        expect(await storage.tokens.canPublish(token, 'web-app')).toMatchObject({ allowed: false });
        expect(await reserve(storage, token, 'web-app', '1.2.0')).toMatchObject({ reserved: false });
      });

      it('removes one trusted publisher by id, and keeps at most MAX_TRUSTED_PUBLISHERS per name', async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        const ids: string[] = [];
        for (let i = 0; i < MAX_TRUSTED_PUBLISHERS; i++) {
          const added = await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { workflow: `w${i}.yml` }), acme);
          ids.push((added as { publisher: { id: string } }).publisher.id);
        }
        expect(await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { workflow: 'one-more.yml' }), acme)).toEqual({ added: false, full: MAX_TRUSTED_PUBLISHERS });
        expect((await storage.trustedPublishers.listTrustedPublishers('web-app')).map((p) => p.id)).toEqual(ids);
        expect((await storage.trustedPublishers.removeTrustedPublishers('web-app', { id: ids[3]! })).map((p) => p.id)).toEqual([ids[3]]);
        expect(await storage.trustedPublishers.removeTrustedPublishers('web-app', { id: ids[3]! })).toEqual([]);
        expect(await storage.trustedPublishers.listTrustedPublishers('web-app')).toHaveLength(MAX_TRUSTED_PUBLISHERS - 1);
      });

      it('lists trusted publishers in the order they were saved, whatever clock each save was given', async () => {
        const storage = await fresh();
        const acme = (await storage.tokens.createToken({ role: 'publisher', owner: 'acme' })).record;
        // Saved later with an earlier clock (two instances whose clocks differ): still listed after.
        const first = await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { workflow: 'a.yml', now: new Date('2026-04-02T00:00:00.000Z') }), acme);
        const second = await storage.trustedPublishers.addTrustedPublisher(trust('web-app', { workflow: 'b.yml', now: new Date('2026-04-01T00:00:00.000Z') }), acme);
        const saved = [first, second].map((added) => (added as { publisher: { id: string } }).publisher.id);
        expect((await storage.trustedPublishers.listTrustedPublishers('web-app')).map((p) => p.id)).toEqual(saved);
        expect((await storage.trustedPublishers.trustedPublishersOf(ISSUER, 'acme/web-app')).map((p) => p.id)).toEqual(saved);
      });

      it('takes an ID token once until it expires, whatever the number of concurrent uses', async () => {
        const { trustedPublishers } = await fresh();
        const now = new Date('2026-04-01T10:00:00.000Z');
        const expiresAt = new Date(now.getTime() + 5 * 60_000);
        const uses = await Promise.all([0, 1, 2, 3].map(() => trustedPublishers.useIdToken(ISSUER, 'jti-1', expiresAt, now)));
        expect(uses.filter(Boolean)).toHaveLength(1);
        expect(await trustedPublishers.useIdToken(ISSUER, 'jti-1', expiresAt, new Date(expiresAt.getTime() - 1))).toBe(false);
        expect(await trustedPublishers.useIdToken('https://ghes.example/_services/token', 'jti-1', expiresAt, now)).toBe(true);
        // Forgotten once expired (such a token is refused before it gets here anyway).
        expect(await trustedPublishers.useIdToken(ISSUER, 'jti-1', new Date(expiresAt.getTime() + 60_000), expiresAt)).toBe(true);
      });
    });

    describe('staged files', () => {
      async function upload(storage: RegistryStorage, id: string, content: string): Promise<void> {
        const file = storage.versions.uploadTempPath('.upload');
        await writeFile(file, content);
        const stored = await storage.files.storeContent(id, file, { size: content.length, sha256: 'b'.repeat(64), integrity: `sha512-${content}` });
        expect(stored).toMatchObject({ id, state: 'uploaded', size: content.length, integrity: `sha512-${content}` });
      }

      it('takes the local file in as a staged file\'s bytes, also into a blob store that copies it (a bucket): none is left behind, and the answer says where the bytes are', async () => {
        // A blob store that keeps a copy of the file, as a bucket's upload does, rather than moving it, and answers its ETag.
        const copying = (inner: BlobStore): BlobStore => ({
          location: inner.location,
          putFile: async (key, file, options) => {
            const bytes = await readFile(file);
            await inner.putBytes(key, bytes, options);
            return { key, etag: '"stored-etag"', size: bytes.length };
          },
          putBytes: (key, bytes, options) => inner.putBytes(key, bytes, options),
          open: (key) => inner.open(key),
          readBytes: (key) => inner.readBytes(key),
          stat: (key) => inner.stat(key),
          delete: (key) => inner.delete(key),
          list: (prefix) => inner.list(prefix),
        });
        const storage = await (await place())(copying);
        opened.push(storage);
        const now = new Date();
        const { file } = await storage.files.createFile({ tokenId: 't1', filename: 'a.tgz', contentType: 'application/gzip', expiresAt: new Date(now.getTime() + 60_000), now });
        const local = storage.versions.uploadTempPath('.upload');
        await writeFile(local, 'staged bytes');
        const stored = await storage.files.storeContent(file.id, local, { size: 12, sha256: 'b'.repeat(64), integrity: 'sha512-x' });
        expect(stored).toMatchObject({ state: 'uploaded', size: 12, copyable: { etag: '"stored-etag"', size: 12 } });
        // Not a field of the file: only the store's answer to this upload.
        expect(await storage.files.getFile(file.id)).not.toHaveProperty('copyable');
        await expect(access(local)).rejects.toMatchObject({ code: 'ENOENT' });
        expect(await text((await storage.files.openFile(file.id))!.stream)).toBe('staged bytes');
      });

      it('stages a file: capability, bytes, confirm, one claim at a time, release, delete', async () => {
        const storage = await fresh();
        const { files } = storage;
        const now = new Date();
        const expiresAt = new Date(now.getTime() + 60_000);
        const { file, capability } = await files.createFile({ tokenId: 't1', filename: 'a.tgz', contentType: 'application/gzip', expiresAt, now });
        expect(file).toMatchObject({ tokenId: 't1', filename: 'a.tgz', contentType: 'application/gzip', state: 'pending', expiresAt: expiresAt.toISOString() });
        expect(await files.checkCapability(file.id, capability, now)).toEqual(file);
        expect(await files.checkCapability(file.id, `${capability}x`, now)).toBeUndefined();
        expect(await files.checkCapability(file.id, capability, new Date(expiresAt.getTime() + 1))).toBeUndefined();
        expect(await files.confirmFile(file.id, expiresAt)).toBeUndefined();
        expect(await files.claimFile(file.id)).toBeUndefined();

        await upload(storage, file.id, 'first');
        await upload(storage, file.id, 'second bytes');
        const reader = await files.openFile(file.id);
        if (!reader) throw new Error('the bytes were not stored');
        expect(reader.size).toBe('second bytes'.length);
        expect(await text(reader.stream)).toBe('second bytes');

        const later = new Date(now.getTime() + 120_000);
        expect(await files.confirmFile(file.id, later)).toMatchObject({ state: 'confirmed', expiresAt: later.toISOString() });
        expect(await files.claimFile(file.id)).toMatchObject({ state: 'claimed' });
        expect(await files.claimFile(file.id)).toBeUndefined();
        await files.releaseFile(file.id);
        expect((await files.getFile(file.id))?.state).toBe('confirmed');
        expect(await files.deleteFile(file.id)).toBe(true);
        expect(await files.deleteFile(file.id)).toBe(false);
        expect(await files.getFile(file.id)).toBeUndefined();
        expect(await files.openFile(file.id)).toBeUndefined();
        expect(await files.getFile('not-an-id')).toBeUndefined();
      });

      it('sweeps expired files, claimed ones excepted', async () => {
        const storage = await fresh();
        const { files } = storage;
        const now = new Date('2026-05-01T10:00:00.000Z');
        const soon = new Date(now.getTime() + 1000);
        const late = new Date(now.getTime() + 60_000);
        const pending = (await files.createFile({ tokenId: 't', filename: 'a', contentType: 'x', expiresAt: soon, now })).file;
        const kept = (await files.createFile({ tokenId: 't', filename: 'b', contentType: 'x', expiresAt: late, now })).file;
        const claimed = (await files.createFile({ tokenId: 't', filename: 'c', contentType: 'x', expiresAt: now, now })).file;
        await upload(storage, claimed.id, 'bytes');
        await files.confirmFile(claimed.id, soon);
        await files.claimFile(claimed.id);
        expect(await files.sweepFiles(new Date(now.getTime() + 2000))).toBe(1);
        expect(await files.getFile(pending.id)).toBeUndefined();
        expect(await files.getFile(kept.id)).toBeDefined();
        expect((await files.getFile(claimed.id))?.state).toBe('claimed');
        expect(await files.sweepFiles(new Date(now.getTime() + 120_000))).toBe(1);
        expect(await files.getFile(kept.id)).toBeUndefined();
      });
    });

    describe('purge outbox', () => {
      const urls = ['https://cdn.example/templates/api.json', 'https://cdn.example/index.json', 'https://cdn.example/index.json'];

      it('writes one pending job per target, due at once, its URLs sorted once each', async () => {
        const { purges } = await fresh();
        const now = new Date('2026-05-01T10:00:00.000Z');
        const jobs = await purges.enqueuePurges(['cloudfront:E1', 'http://127.0.0.1:6081'], urls, now);
        expect(jobs.map((j) => j.target)).toEqual(['cloudfront:E1', 'http://127.0.0.1:6081']);
        const expected = { urls: ['https://cdn.example/index.json', 'https://cdn.example/templates/api.json'], state: 'pending', attempts: 0, nextAttemptAt: now.toISOString(), createdAt: now.toISOString(), lastError: null };
        for (const job of jobs) expect(job).toMatchObject(expected);
        expect(await purges.countPendingPurges()).toBe(2);
        expect(await purges.nextPurgeDueAt(['cloudfront:E1'])).toEqual(now);
        expect(await purges.listPurges()).toEqual([...jobs].reverse());
        expect(await purges.enqueuePurges(['cloudfront:E1'], [], now)).toEqual([]);
      });

      it('gives a due job to one claim at a time (leased), of the targets asked for only', async () => {
        const { purges } = await fresh();
        const now = new Date('2026-05-01T10:00:00.000Z');
        const [mine] = await purges.enqueuePurges(['cloudflare:z1'], urls, now);
        await purges.enqueuePurges(['fastly:other'], urls, new Date(now.getTime() + 1));
        const claimed = await purges.claimDuePurges(['cloudflare:z1'], now, 10, 60_000);
        expect(claimed.map((j) => j.id)).toEqual([mine?.id]);
        expect(await purges.claimDuePurges(['cloudflare:z1'], now, 10, 60_000)).toEqual([]);
        // The lease ends: the job is due again (a process died during its attempt).
        expect((await purges.claimDuePurges(['cloudflare:z1'], new Date(now.getTime() + 60_000), 10, 60_000)).map((j) => j.id)).toEqual([mine?.id]);
        expect(await purges.nextPurgeDueAt([])).toBeUndefined();
        expect(await purges.claimDuePurges([], now, 10, 1000)).toEqual([]);
      });

      it('keeps a failed attempt pending until its next attempt, and a finished job finished', async () => {
        const { purges } = await fresh();
        const now = new Date('2026-05-01T10:00:00.000Z');
        const [job] = await purges.enqueuePurges(['cloudflare:z1'], urls, now);
        const id = job?.id ?? '';
        await purges.claimDuePurges(['cloudflare:z1'], now, 10, 60_000);
        const retryAt = new Date(now.getTime() + 10_000);
        await purges.updatePurge(id, { state: 'pending', attempts: 1, nextAttemptAt: retryAt, error: 'HTTP 503' }, now);
        expect((await purges.listPurges())[0]).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: retryAt.toISOString(), lastError: 'HTTP 503' });
        expect(await purges.claimDuePurges(['cloudflare:z1'], now, 10, 60_000)).toEqual([]);
        expect(await purges.claimDuePurges(['cloudflare:z1'], retryAt, 10, 60_000)).toHaveLength(1);
        await purges.updatePurge(id, { state: 'done', attempts: 2, error: null }, retryAt);
        // A late attempt of another process never reopens a finished job.
        await purges.updatePurge(id, { state: 'pending', attempts: 3, nextAttemptAt: retryAt, error: 'late' }, retryAt);
        expect((await purges.listPurges())[0]).toMatchObject({ state: 'done', attempts: 2, lastError: null });
        expect(await purges.countPendingPurges()).toBe(0);
      });

      it('prunes finished jobs beyond the most recent ones, never a pending one', async () => {
        const { purges } = await fresh();
        const now = new Date('2026-05-01T10:00:00.000Z');
        const jobs = [];
        for (let n = 0; n < 4; n++) jobs.push(...(await purges.enqueuePurges(['http://cache'], [`https://cdn.example/${n}`], new Date(now.getTime() + n))));
        for (const job of jobs.slice(0, 3)) await purges.updatePurge(job.id, { state: 'done', attempts: 1, error: null }, now);
        await purges.prunePurges(1);
        expect((await purges.listPurges()).map((j) => j.id)).toEqual([jobs[3]?.id, jobs[2]?.id]);
      });
    });
  });
}
