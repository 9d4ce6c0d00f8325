/**
 * Password hashing cannot starve the server. scrypt runs on libuv's threadpool,
 * which file I/O shares; a burst of unauthenticated logins once filled it and an archive download
 * waited behind it. Hashes now go through a bounded queue (at most `maxConcurrentHashes` at once,
 * `hashQueueLength` waiting, 503 with Retry-After past that), and the rest of the server answers
 * while it is full.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { DEFAULT_LIMITS } from '../../src/server/context.js';
import { HashQueue } from '../../src/server/hash-queue.js';
import type { PasswordHasher } from '../../src/server/passwords.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const PASSWORD = 'correct horse battery staple';
const example = path.resolve('examples/templates/node-service');

/** A hasher whose checks wait until released, counting how many run at once. */
function heldHasher(): PasswordHasher & { inFlight: number; most: number; release(): void } {
  let waiting: (() => void)[] = [];
  let held = true;
  const hasher = {
    inFlight: 0,
    most: 0,
    hash: (password: string) => Promise.resolve(`plain$${password}`),
    verify: async (password: string, hash: string | undefined) => {
      hasher.inFlight++;
      hasher.most = Math.max(hasher.most, hasher.inFlight);
      if (held) await new Promise<void>((resolve) => waiting.push(resolve));
      hasher.inFlight--;
      return hash === `plain$${password}`;
    },
    release: () => {
      held = false;
      const all = waiting;
      waiting = [];
      for (const resolve of all) resolve();
    },
  };
  return hasher;
}

describe('password hashing cannot starve the server', () => {
  it('runs at most maxConcurrentHashes at once, queues hashQueueLength, answers the rest 503 with Retry-After, and serves an archive download meanwhile', async () => {
    const hasher = heldHasher();
    const server = await startRegistryServer({ passwordHasher: hasher });
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    expect((await server.app.inject({ method: 'POST', url: '/users', headers: { authorization: `Bearer ${admin}` }, payload: { email: 'ada@example.com', password: PASSWORD } })).statusCode).toBe(201);
    const pack = await packTemplate(example, { outDir: await tempDir('tr-pack-') });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });

    const { maxConcurrentHashes, hashQueueLength } = DEFAULT_LIMITS;
    const burst = maxConcurrentHashes + hashQueueLength + 12;
    // Unauthenticated logins from addresses of their own (no login limit is reached).
    const logins = Array.from({ length: burst }, (_, i) =>
      server.app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: `10.0.${Math.floor(i / 200)}.${i % 200}`, payload: { email: 'ada@example.com', password: i % 2 === 0 ? PASSWORD : 'not the password' } }),
    );
    const queue = server.context.passwords as HashQueue;
    await vi.waitFor(() => {
      expect(hasher.inFlight).toBe(maxConcurrentHashes);
      expect(queue.waiting).toBe(hashQueueLength);
    });

    // The queue is full: a read and an archive download (file I/O) are answered now, not after the hashes.
    expect((await server.app.inject({ url: '/templates' })).statusCode).toBe(200);
    const download = await fetch(`${server.url}/templates/${pack.manifest.name}/versions/${pack.manifest.version}/archive`);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(await readFile(pack.file))).toBe(true);
    // And one more login is refused at once.
    const refused = await server.app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: '10.9.9.9', payload: { email: 'ada@example.com', password: PASSWORD } });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfter: 1 });

    hasher.release();
    const statuses = (await Promise.all(logins)).map((answer) => answer.statusCode);
    expect(statuses.filter((status) => status === 503)).toHaveLength(burst - maxConcurrentHashes - hashQueueLength);
    expect(statuses.filter((status) => status === 200 || status === 401)).toHaveLength(maxConcurrentHashes + hashQueueLength);
    expect(hasher.most).toBe(maxConcurrentHashes);
    expect(queue.running + queue.waiting).toBe(0);

    // A login refused by the full queue was never evaluated, so it counts as no failure: the same address gets in now.
    expect((await server.app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: '10.9.9.9', payload: { email: 'ada@example.com', password: PASSWORD } })).statusCode).toBe(200);
  });

  it('hands each finished turn to the next one waiting, in order, and never runs more than its concurrency', async () => {
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const gates = new Map<string, () => void>();
    const hasher: PasswordHasher = {
      hash: (password) => Promise.resolve(password),
      verify: async (password) => {
        running++;
        most = Math.max(most, running);
        order.push(password);
        await new Promise<void>((resolve) => gates.set(password, resolve));
        running--;
        return true;
      },
    };
    const queue = new HashQueue(hasher, 2, 2);
    const checks = ['a', 'b', 'c', 'd'].map((name) => queue.verify(name, undefined));
    await expect(queue.verify('e', undefined)).rejects.toMatchObject({ statusCode: 503 });
    await vi.waitFor(() => expect(gates.size).toBe(2));
    gates.get('b')!();
    await vi.waitFor(() => expect(order).toEqual(['a', 'b', 'c']));
    for (const name of ['a', 'c']) gates.get(name)!();
    await vi.waitFor(() => expect(order).toEqual(['a', 'b', 'c', 'd']));
    gates.get('d')!();
    await Promise.all(checks);
    expect(most).toBe(2);
    expect([queue.running, queue.waiting]).toEqual([0, 0]);
  });
});
