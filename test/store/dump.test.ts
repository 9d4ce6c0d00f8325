/**
 * A store's dump (what `store copy` reads and writes, store/dump-format.ts) on every backend: the
 * rows come out in the same order on both, and a dump of an older release, without the kinds of
 * rows added since, still loads.
 */
import { afterEach, expect, it } from 'vitest';

import type { RegistryStorage, StoreDump, StoreDumper } from '../../src/store/index.js';
import { describeOnEveryBackend } from '../helpers/backends.js';

const dumperOf = (storage: RegistryStorage): StoreDumper => {
  if (!storage.dump) throw new Error('this storage has no dumper');
  return storage.dump;
};

describeOnEveryBackend('a store dump', (openStorage) => {
  const opened: RegistryStorage[] = [];
  const open = async (): Promise<RegistryStorage> => {
    const storage = await openStorage();
    opened.push(storage);
    return storage;
  };
  afterEach(async () => {
    for (const storage of opened.splice(0)) await storage.close();
  });

  it('gives the sessions of one instant in the order of their hashes, whatever the order they were made in', async () => {
    const storage = await open();
    const user = await storage.accounts.createUser({ email: 'ann@example.com', passwordHash: 'scrypt$N=16384$c2FsdA$aGFzaA', role: 'admin', owner: 'root' });
    if (!user.created) throw new Error('no user');
    const now = new Date('2026-03-01T12:00:00.000Z');
    for (let i = 0; i < 8; i++) {
      await storage.accounts.createSession({ userId: user.user.id, kind: i % 2 === 0 ? 'refresh' : 'cookie', expiresAt: new Date('2026-03-02T12:00:00.000Z'), now });
    }
    const { sessions } = await dumperOf(storage).read();
    expect(sessions).toHaveLength(8);
    const hashes = sessions.map((session) => session.hash.toString('hex'));
    expect(hashes).toEqual([...hashes].sort());
  });

  it('loads a dump of an older release, which has none of the kinds of rows added since (trusted publishers, exchanged ID tokens, purged versions, rotated webhook secrets)', async () => {
    const source = await open();
    const token = await source.tokens.createToken({ role: 'publisher', owner: 'acme' });
    await source.webhooks.createWebhook({ url: 'https://hooks.example.com/a', events: ['*'], secret: 'whsec-a', active: true });
    const current = await dumperOf(source).read();
    const { trustedPublishers: _trusted, usedIdTokens: _used, purgedVersions: _purged, ...older } = current;
    const webhooks = current.webhooks.map(({ previousSecret: _secret, previousSecretExpiresAt: _expires, ...webhook }) => webhook);
    const target = await open();

    await dumperOf(target).load({ ...older, webhooks } as unknown as StoreDump);

    const counts = await dumperOf(target).counts();
    expect(counts).toMatchObject({ tokens: 1, webhooks: 1, trustedPublishers: 0, usedIdTokens: 0, purgedVersions: 0 });
    expect((await target.tokens.listTokens()).map((record) => record.id)).toEqual([token.record.id]);
    expect(await target.webhooks.listWebhooks()).toEqual([expect.objectContaining({ url: 'https://hooks.example.com/a', secret: 'whsec-a', active: true })]);
    expect((await target.webhooks.listWebhooks())[0]).not.toHaveProperty('previousSecret');
  });
});
