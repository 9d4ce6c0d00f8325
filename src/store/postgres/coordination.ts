/**
 * What several instances on one database coordinate through PostgreSQL itself, each on a connection
 * of its own (never a pooled one, whose session state would leak to the next user of the pool):
 *
 * - changes: `pg_notify` on `CHANGES_CHANNEL`, issued inside the transactions that commit a version or
 *   change a lifecycle (so it is delivered only when they commit), heard with LISTEN by `watchChanges`;
 * - presence: every instance that reserves versions holds a session advisory lock on its own id; a
 *   pending version whose instance's lock is free was left by a dead instance (PostgreSQL ends the
 *   session, and frees its locks, as soon as the connection closes);
 * - the build lock: a session advisory lock serializing registry builds into shared output.
 */
import pg from 'pg';

import type { Queryable } from './database.js';

/** The channel of change notifications; the payload is JSON `{ instance, name, version, change }`. */
export const CHANGES_CHANNEL = 'template_registry_changes';

/** Fixed key of the build lock ("tr-build" as a big-endian integer, like the migration lock's). */
const BUILD_LOCK_KEY = '8390818956644543588';

/** The advisory-lock key of an instance's presence, as SQL over a text expression. */
export const presenceKey = (instanceSql: string): string => `hashtextextended('template-registry instance ' || ${instanceSql}, 0)`;

/**
 * True, in SQL, when the pending row's instance is gone: nobody holds its presence lock (taken here
 * for the rest of the transaction, or the statement in autocommit, then released).
 */
export const RESERVER_DEAD_SQL = `CASE WHEN state = 'pending' AND reserved_by IS NOT NULL THEN pg_try_advisory_xact_lock(${presenceKey('reserved_by')}) ELSE false END`;

export type ChangeKind = 'committed' | 'lifecycle' | 'recovered' | 'purged';

/** Tells the other instances, when the surrounding transaction commits, that `name@version` changed. */
export async function notifyChange(db: Queryable, instance: string, name: string, version: string, change: ChangeKind): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, JSON.stringify({ instance, name, version, change })]);
}

/** A connection of its own that no pool error event may turn into an uncaught exception. */
function ownClient(url: string): pg.Client {
  // Keepalives: a peer that vanished without closing (a machine lost) is noticed in about a minute.
  const client = new pg.Client({ connectionString: url, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
  client.on('error', () => undefined);
  return client;
}

/** Asks the server to notice a vanished client of this session within about a minute. */
async function serverKeepalives(client: pg.Client): Promise<void> {
  await client.query('SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3');
}

export interface WatchOptions {
  /** The first wait before reconnecting a dropped listening connection; doubled up to `maxDelayMs`. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * LISTENs on a connection of its own and calls `listener` for every change another instance (one
 * whose id is not `instance`) committed. When the connection drops it reconnects with exponential
 * backoff (with jitter) and then calls `listener` once, since changes may have been missed meanwhile.
 * Resolves once listening; the function it resolves to stops it.
 */
export async function watchChanges(url: string, instance: string, listener: () => void, options: WatchOptions = {}): Promise<() => Promise<void>> {
  const minDelayMs = options.minDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let stopped = false;
  let client: pg.Client | undefined;
  let reconnecting: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const tell = (): void => {
    try {
      listener();
    } catch {
      // the listener's own business
    }
  };

  const connect = async (): Promise<void> => {
    const next = ownClient(url);
    next.on('notification', (message) => {
      if (stopped || message.channel !== CHANGES_CHANNEL) return;
      try {
        const payload = JSON.parse(message.payload ?? '{}') as { instance?: unknown };
        if (payload.instance === instance) return;
      } catch {
        // not ours to read: a change all the same
      }
      tell();
    });
    next.on('end', () => {
      if (client !== next || stopped) return;
      client = undefined;
      reconnecting ??= reconnect().finally(() => (reconnecting = undefined));
    });
    try {
      await next.connect();
      await serverKeepalives(next);
      await next.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    client = next;
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
      timer.unref();
    });

  const reconnect = async (): Promise<void> => {
    for (let attempt = 0; !stopped; attempt++) {
      const ceiling = Math.min(maxDelayMs, minDelayMs * 2 ** attempt);
      await sleep(ceiling / 2 + (Math.random() * ceiling) / 2);
      if (stopped) return;
      try {
        await connect();
      } catch {
        continue;
      }
      if (stopped) {
        await client?.end().catch(() => undefined);
        return;
      }
      tell();
      return;
    }
  };

  await connect();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    wake?.();
    await reconnecting;
    const last = client;
    client = undefined;
    await last?.end().catch(() => undefined);
  };
}

/** The build lock was not free within the bounded wait. */
export class BuildLockTimeoutError extends Error {
  override readonly name = 'BuildLockTimeoutError';
}

/**
 * The registry build lock: `pg_advisory_lock` on a connection of its own (made when first needed,
 * remade after it drops), waited for at most `timeoutMs`, released in `finally`. Calls in one process
 * take turns before they ask the database (a session lock is re-entrant within its session).
 */
export class BuildLock {
  private client: pg.Client | undefined;
  private turn: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.turn.then(() => this.locked(work));
    this.turn = result.catch(() => undefined);
    return result;
  }

  private async connection(): Promise<pg.Client> {
    if (this.closed) throw new Error('the storage is closed');
    if (this.client) return this.client;
    const client = ownClient(this.url);
    client.on('end', () => {
      if (this.client === client) this.client = undefined;
    });
    await client.connect();
    this.client = client;
    return client;
  }

  private async locked<T>(work: () => Promise<T>): Promise<T> {
    const client = await this.connection();
    try {
      await client.query(`SET lock_timeout = ${Math.max(1, Math.round(this.timeoutMs))}`);
      await client.query(`SELECT pg_advisory_lock(${BUILD_LOCK_KEY})`);
    } catch (error) {
      if ((error as { code?: unknown }).code === '55P03') {
        await client.query('RESET lock_timeout').catch(() => undefined);
        throw new BuildLockTimeoutError(
          `the registry build lock stayed held by another instance for more than ${this.timeoutMs >= 1000 ? `${Math.round(this.timeoutMs / 1000)} s` : `${this.timeoutMs} ms`}: this build did not run (the next change or restart builds again)`,
        );
      }
      this.drop(client);
      throw error;
    }
    try {
      await client.query('RESET lock_timeout');
      return await work();
    } finally {
      // A connection whose unlock failed may still hold the lock: closed, which frees it.
      await client.query(`SELECT pg_advisory_unlock(${BUILD_LOCK_KEY})`).catch(() => this.drop(client));
    }
  }

  private drop(client: pg.Client): void {
    if (this.client === client) this.client = undefined;
    void client.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.turn;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/**
 * This instance's presence: a session advisory lock on its id, held on a connection of its own from
 * its first reservation to `close()`. Retaken on a new connection when that one drops (meanwhile its
 * pending versions look abandoned, and a retry of the same bytes may take them over: the commit of
 * one taken over then fails, its reservation being gone).
 */
export class Presence {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly url: string,
    readonly instance: string,
  ) {}

  /** Resolves once this instance's presence lock is held. */
  async ensure(): Promise<void> {
    if (this.closed) throw new Error('the storage is closed');
    if (this.client) return;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    await this.connecting;
  }

  private async connect(): Promise<void> {
    const client = ownClient(this.url);
    client.on('end', () => {
      if (this.client === client) this.client = undefined;
    });
    try {
      await client.connect();
      await serverKeepalives(client);
      await client.query(`SELECT pg_advisory_lock(${presenceKey('$1')})`, [this.instance]);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
