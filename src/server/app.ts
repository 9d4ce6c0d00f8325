import Fastify, { type FastifyInstance } from 'fastify';

import { buildRegistry } from '../registry/build.js';
import { DEFAULT_LIMITS, type CurrentRegistry, type ServerContext, type ServerLimits } from './context.js';
import { installEnvelope, newRequestId } from './envelope.js';
import { rateLimitPlugin } from './rate-limit.js';
import { eventsRoute } from './routes/events.js';
import { openapiRoute } from './routes/openapi.js';
import { readRoutes } from './routes/read.js';
import { webhooksRoute } from './routes/webhooks.js';
import { RegistryStore, storeSource } from './store.js';
import { uploadRoute } from './upload.js';

export interface ServerOptions {
  /** The store folder, or an open store. */
  store: string | RegistryStore;
  /** Base URL clients reach the server at; archive URLs in registry.json start with it. */
  publicUrl: string;
  limits?: Partial<ServerLimits>;
  /** A token with the admin role that is not in the store (REGISTRY_ADMIN_TOKEN). */
  adminToken?: string;
  logger?: boolean;
  /** Trust X-Forwarded-For (behind a proxy) for the client address rate limits use. */
  trustProxy?: boolean;
  /** On close, end every connection, not only idle ones (tests); default: idle ones only. */
  forceCloseConnections?: boolean;
}

export interface RegistryServer {
  app: FastifyInstance;
  context: ServerContext;
  store: RegistryStore;
}

/** Runs builds one after the other: a build started while one runs waits for it. */
function serialized(task: () => Promise<void>): () => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  return () => {
    const next = last.then(task, task);
    last = next.catch(() => undefined);
    return next;
  };
}

/**
 * Builds the registry server: the upload route, the read routes, rate limits and the OpenAPI
 * document over one embedded store. The registry is rebuilt once at start-up (so a crash between
 * an upload and its build heals) and after every upload.
 */
export async function createServer(options: ServerOptions): Promise<RegistryServer> {
  const store = typeof options.store === 'string' ? await RegistryStore.open(options.store) : options.store;
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  let current: CurrentRegistry | undefined;

  const rebuild = serialized(async () => {
    const result = await buildRegistry(storeSource(store, publicUrl), { outDir: store.publicDir, publicUrl });
    current = { document: result.document, etag: result.etag, lastModified: new Date(result.document.lastUpdated) };
  });

  const context: ServerContext = {
    store,
    publicUrl,
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    registry: () => {
      if (!current) throw new Error('the registry has not been built yet');
      return current;
    },
    rebuild,
    ...(options.adminToken ? { adminToken: options.adminToken } : {}),
  };
  await rebuild();

  const app = Fastify({
    logger: options.logger ?? false,
    genReqId: newRequestId,
    trustProxy: options.trustProxy ?? false,
    bodyLimit: 1024 * 1024,
    forceCloseConnections: options.forceCloseConnections ?? 'idle',
  });
  installEnvelope(app);
  await app.register(rateLimitPlugin, { context });
  await app.register(readRoutes, { context });
  await app.register(uploadRoute, { context });
  await app.register(eventsRoute, { context });
  await app.register(webhooksRoute, { context });
  await app.register(openapiRoute, { context });
  app.addHook('onClose', () => store.close());
  return { app, context, store };
}
