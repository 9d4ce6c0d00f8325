import { createServer as createNetServer } from 'node:net';

import { afterEach } from 'vitest';

import { createServer, type RegistryServer, type ServerOptions } from '../../src/server/index.js';
import { openSqliteStorage, type RegistryStorage, type SqliteStorage } from '../../src/store/index.js';
import { tempDir } from './fixtures.js';

const running: RegistryServer[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.app.close()));
});

export interface TestServer extends RegistryServer {
  /** The embedded store the server runs on. */
  store: SqliteStorage;
  url: string;
  storeDir: string;
  /** A publisher token that may publish anything not yet claimed. */
  token: string;
}

/** A registry server on a fresh temp store, listening on 127.0.0.1, closed after the test. */
export async function startRegistryServer(options: Partial<ServerOptions> & { storeDir?: string } = {}): Promise<TestServer> {
  const storeDir = options.storeDir ?? (await tempDir('tr-store-'));
  const store = await openSqliteStorage(storeDir);
  return { ...(await startServerOn(store, options)), storeDir };
}

/** A server on any storage (PostgreSQL, a bucket...), as `startRegistryServer` starts one; it closes the storage when it closes. */
export interface StorageTestServer<S extends RegistryStorage = RegistryStorage> extends RegistryServer {
  store: S;
  url: string;
  /** A publisher token that may publish anything not yet claimed. */
  token: string;
}

/** The addresses test servers let webhooks reach: the receivers of test/helpers/webhook-receiver.ts. */
export const LOCAL_RECEIVERS: readonly string[] = ['127.0.0.1'];

/** A registry server on an opened storage, listening on 127.0.0.1, closed (with the storage) after the test. */
export async function startServerOn<S extends RegistryStorage>(store: S, options: Partial<ServerOptions> = {}): Promise<StorageTestServer<S>> {
  // The public URL goes into registry.json, so the port is chosen before the server starts.
  const port = await freePort();
  let server: RegistryServer;
  try {
    server = await createServer({
      publicUrl: `http://127.0.0.1:${port}`,
      forceCloseConnections: true,
      ...options,
      // The tests' webhook receivers listen on 127.0.0.1: allowed here, as an operator would allow them
      // (serve --webhook-allow-private). Tests of the address rule pass their own `allowPrivate`.
      webhooks: { allowPrivate: LOCAL_RECEIVERS, ...options.webhooks },
      store,
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  running.push(server);
  const address = await server.app.listen({ host: '127.0.0.1', port });
  const { token } = await server.store.tokens.createToken({ role: 'publisher' });
  return { ...server, store, url: address, token };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
