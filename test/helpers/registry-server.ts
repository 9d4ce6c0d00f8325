import { createServer as createNetServer } from 'node:net';

import { afterEach } from 'vitest';

import { createServer, type RegistryServer, type ServerOptions } from '../../src/server/index.js';
import { openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
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
  // The public URL goes into registry.json, so the port is chosen before the server starts.
  const port = await freePort();
  const store = await openSqliteStorage(storeDir);
  const server = await createServer({ publicUrl: `http://127.0.0.1:${port}`, forceCloseConnections: true, ...options, store });
  running.push(server);
  const address = await server.app.listen({ host: '127.0.0.1', port });
  const { token } = await server.store.tokens.createToken({ role: 'publisher' });
  return { ...server, store, url: address, storeDir, token };
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
