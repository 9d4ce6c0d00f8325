import type { Ajv2020 } from 'ajv/dist/2020.js';
import Fastify, { type FastifyInstance, type FastifyLoggerOptions } from 'fastify';

import type { BackoffLimits } from '../core/retry.js';
import { loadSigstoreTrust } from '../archive/index.js';
import { createAjv } from '../core/schemas.js';
import { RegistryBuilder } from '../registry/build.js';
import type { SigningKey } from '../registry/signing.js';
import { openSqliteStorage } from '../store/sqlite/index.js';
import { storeSource } from '../store/source.js';
import type { RegistryStorage } from '../store/types.js';
import { apiVersionPlugin, rewriteVersionedUrl } from './api-version.js';
import { authPlugin } from './auth.js';
import { cachingPlugin, trackRouteMethods } from './caching.js';
import { DEFAULT_LIMITS, type CurrentRegistry, type ServerContext, type ServerLimits } from './context.js';
import { installEnvelope, newRequestId } from './envelope.js';
import { HashQueue } from './hash-queue.js';
import { followPeers } from './instances.js';
import { installJsonInput } from './json-input.js';
import { scryptHasher, type PasswordHasher } from './passwords.js';
import { rateLimitPlugin, routeGroup } from './rate-limit.js';
import { createPublisher } from './publisher.js';
import { DEFAULT_EVENT_RETENTION_DAYS, startEventRetention } from './event-retention.js';
import { accountRoutes } from './routes/accounts.js';
import { analyticsRoute } from './routes/analytics.js';
import { eventsRoute } from './routes/events.js';
import { lifecycleRoutes } from './routes/lifecycle.js';
import { openapiRoute } from './routes/openapi.js';
import { ownerRoutes } from './routes/owners.js';
import { oidcRoutes } from './routes/oidc.js';
import { trustedPublisherRoutes } from './routes/trusted-publishers.js';
import { DEFAULT_GITHUB_API_URL } from './github-accounts.js';
import { IdTokenVerifier, registryAudience, trustedIssuers } from './oidc.js';
import { readRoutes } from './routes/read.js';
import { DEFAULT_FILE_SETTINGS, filesRoute, type FileSettings } from './routes/files.js';
import { uploadRoute } from './routes/upload.js';
import { StagedIdentities } from './staged-identities.js';
import { webhooksRoute } from './routes/webhooks.js';
import { ConnectionLimit, installBodyTimeout } from './slow-clients.js';
import { DEFAULT_STATS_REFRESH_MS, startStatsRefresh } from './stats-refresh.js';
import { loadStaticFiles, REGISTRY_FILE } from './static-files.js';
import { settleTickQueue } from './tick-queue.js';
import { ServerBuilder } from './build-thread.js';
import { registryUpdatedData, WebhookDispatcher, type WebhookDispatcherOptions } from './webhooks.js';
import { PurgeDispatcher, type PurgeDispatcherOptions } from './purges.js';
import { purgeUrlsOf, type PurgeTarget } from '../registry/purge/index.js';
import { MAX_PARAM_LENGTH } from './params.js';

export interface ServerOptions {
  /** The store folder (the embedded SQLite + files store), or an opened storage. */
  store: string | RegistryStorage;
  /** Base URL clients reach the server at; archive URLs in registry.json start with it. */
  publicUrl: string;
  limits?: Partial<ServerLimits>;
  /** A token with the admin role that is not in the store (REGISTRY_ADMIN_TOKEN). */
  adminToken?: string;
  /** Fastify's logger: `true` for JSON lines on stdout, or its options (level, destination stream). */
  logger?: boolean | FastifyLoggerOptions;
  /**
   * Behind proxies: the number of proxy hops, or the proxies' addresses (comma-separated, CIDR
   * allowed), whose X-Forwarded-For is trusted for the client address (rate limits, download
   * counting). The address used is the one the nearest untrusted hop had, never a value a client
   * could simply prepend. `true` trusts every hop (the leftmost value): only for tests.
   */
  trustProxy?: boolean | number | string;
  /** On close, end every connection, not only idle ones (tests); default: idle ones only. */
  forceCloseConnections?: boolean;
  /**
   * Settings of the webhook dispatcher (retry delays, time-outs), for tests and operators; among them
   * `allowPrivate`, the addresses and CIDR ranges webhooks may reach although they are not public
   * (`serve --webhook-allow-private`; default none: public addresses only).
   */
  webhooks?: Omit<WebhookDispatcherOptions, 'store' | 'publicUrl' | 'selfAddresses' | 'logger'>;
  /**
   * The download numbers of the registry (its `stats`): how often it looks for download events in
   * ms (default 1 minute; 0: only on publish), and, after a download this server recorded, how long
   * it waits (default 2 s) and the least time between two such looks (default 30 s).
   */
  statsRefreshMs?: number;
  statsSettleMs?: number;
  statsMinGapMs?: number;
  /** How passwords are hashed and checked (default scrypt), always through the hash queue (`limits.maxConcurrentHashes`, `hashQueueLength`): for tests. */
  passwordHasher?: PasswordHasher;
  /** Large uploads (`/files`): how long staged files live and how often expired ones are removed (`DEFAULT_FILE_SETTINGS`). */
  files?: Partial<FileSettings>;
  /**
   * Trusted publishing: issuers of OIDC ID tokens trusted beside GitHub Actions' (GitHub Enterprise
   * Server: `https://<host>/_services/token`); https, or http on a loopback address (tests).
   */
  oidcIssuers?: readonly string[];
  /** The GitHub REST API asked for a repository owner's id when a trusted publisher is saved without one (default https://api.github.com). */
  githubApiUrl?: string;
  /** The server's clock for token lifetimes, ID-token checks and Last-Modified dates (tests); default the system's. */
  clock?: () => Date;
  /**
   * Refuse (422) an archive whose change log has no section for its version. Off by default: the
   * spec does not ask for one, so lint only warns (`--require-changelog-entry`, REGISTRY_REQUIRE_CHANGELOG_ENTRY).
   */
  requireChangelogEntry?: boolean;
  /**
   * CDN purges after each change (`serve --purge`): the targets, the public base URL the CDN serves
   * the registry at (`--cdn-url`; default `publicUrl`: a CDN in front of the server; with a bucket's
   * static copy, where the CDN serves that copy), and the retry settings of the purge outbox.
   */
  purge?: { targets: readonly PurgeTarget[]; publicUrl?: string } & Omit<PurgeDispatcherOptions, 'store' | 'targets' | 'logger'>;
  /**
   * Days of raw analytics events kept (default `DEFAULT_EVENT_RETENTION_DAYS`, 400; 0 keeps them
   * all): older ones are removed at start and hourly; the aggregates keep their counts (event-retention.ts).
   */
  eventRetentionDays?: number;
  /** The backoff of retries of a failed registry build (`DEFAULT_REBUILD_RETRY`: 1 s doubling up to 5 minutes). */
  rebuildRetry?: Partial<BackoffLimits>;
  /**
   * A Sigstore trusted root file (`trusted_root.json`) uploaded provenance is verified against
   * (`--sigstore-trusted-root`, REGISTRY_SIGSTORE_TRUSTED_ROOT): GitHub's or an operator's own;
   * default the public-good root shipped with @sigstore/tuf (read offline, never fetched).
   */
  sigstoreTrustedRoot?: string;
  /**
   * Private keys that sign the static copy of the registry in the bucket (`storage.staticOutput`,
   * for a CDN; `serve --sign-key`): keys.json and a detached JWS beside each document, as
   * `build-registry --sign-key` writes them. The server's own answers carry no signature files;
   * without a static copy there is nothing to sign (an error).
   */
  signing?: readonly SigningKey[];
}

export interface RegistryServer {
  app: FastifyInstance;
  context: ServerContext;
  /** The storage the server runs on (closed with the server). */
  store: RegistryStorage;
}

/** fastify's form of `trustProxy`: a number of hops becomes "trust the `n` nearest hops". */
function trustedProxies(setting: boolean | number | string | undefined): boolean | string | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting ?? false;
}

/**
 * Route schemas are compiled with the project's Ajv (its formats and every schema of schemas/, so
 * a route may `$ref` them by `$id`); query strings and path parameters arrive as text and are coerced.
 */
export function installValidators(app: FastifyInstance): void {
  const bodies = createAjv();
  const texts = createAjv({ coerceTypes: true, useDefaults: true });
  const compiled = new WeakMap<object, ReturnType<Ajv2020['compile']>>();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const key = schema as object;
    let validate = compiled.get(key);
    if (!validate) {
      validate = (httpPart === 'body' ? bodies : texts).compile(schema);
      compiled.set(key, validate);
    }
    return validate;
  });
}

/**
 * Builds the registry server: the upload route, the read routes, webhooks, events, rate limits and
 * the OpenAPI document over one storage. The registry is rebuilt once at start-up (so a crash
 * between an upload and its build heals) and after every upload.
 */
export async function createServer(options: ServerOptions): Promise<RegistryServer> {
  settleTickQueue();
  // Checked before the storage is opened: a bad issuer is a configuration error, not a running server.
  const issuers = trustedIssuers(options.oidcIssuers);
  const sigstore = await loadSigstoreTrust(options.sigstoreTrustedRoot);
  const storage = typeof options.store === 'string' ? await openSqliteStorage(options.store) : options.store;
  if (options.signing && options.signing.length > 0 && !storage.staticOutput) {
    if (typeof options.store === 'string') await storage.close();
    throw new Error('signing keys sign the static copy of the registry in a bucket: the storage has none (give a bucket storage, s3://bucket/prefix)');
  }
  await storage.recover();
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  let current: CurrentRegistry | undefined;

  const limits: ServerLimits = { ...DEFAULT_LIMITS, ...options.limits };
  // Behind trusted proxies every connection comes from a proxy: the per-address limit is theirs to keep.
  const connections = new ConnectionLimit(options.trustProxy === undefined || options.trustProxy === false ? limits.maxConnectionsPerAddress : 0);
  const app = Fastify({
    serverFactory: connections.serverFactory,
    logger: options.logger ?? false,
    requestTimeout: limits.requestTimeoutMs,
    genReqId: newRequestId,
    // /v1/... is answered by the routes of /... (api-version.ts).
    rewriteUrl: rewriteVersionedUrl,
    trustProxy: trustedProxies(options.trustProxy),
    bodyLimit: 1024 * 1024,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    forceCloseConnections: options.forceCloseConnections ?? 'idle',
  });
  // One builder for the server's life (on a thread of its own where the store allows): it keeps every
  // entry it made, so a rebuild serializes only what changed.
  const builder = new ServerBuilder(storage, publicUrl);
  const purgePublicUrl = (options.purge?.publicUrl ?? publicUrl).replace(/\/+$/, '');
  const purges =
    options.purge && options.purge.targets.length > 0
      ? new PurgeDispatcher({ ...options.purge, store: storage.purges, logger: app.log })
      : undefined;
  // The static registry in the bucket (storage.staticOutput), for a CDN: a builder of its own (archives
  // beside it, URLs relative to registry.json), run after each local build without holding up the
  // answer that waited for it.
  const mirror = storage.staticOutput
    ? new RegistryBuilder(storeSource(storage, undefined, { layout: 'static' }), { output: storage.staticOutput, pruneArchives: true, ...(options.signing && options.signing.length > 0 ? { signing: options.signing } : {}) })
    : undefined;
  // Builds into output several instances may share are serialized across them.
  const locked = <T>(task: () => Promise<T>): Promise<T> => (storage.withBuildLock ? storage.withBuildLock(task) : task());
  const publisher = createPublisher({
    steps: {
      build: async () => {
        const result = await locked(() => builder.build());
        // A version stored by an older release whose entry is now invalid must not stop the registry.
        for (const skipped of result.skipped) {
          app.log.error({ template: `${skipped.id}@${skipped.version}`, violations: skipped.violations }, `${skipped.id}@${skipped.version} is left out of the registry: its entry is invalid`);
        }
        const lastModified = new Date(result.document.lastUpdated);
        // Loaded before the state is published, so that readers get the document and files of one build.
        const files = await loadStaticFiles(storage.publicDir, result, { previous: current?.files, known: { [REGISTRY_FILE]: { etag: result.etag, lastModified } } });
        current = { document: result.document, etag: result.etag, lastModified, files };
        return result;
      },
      ...(mirror ? { copy: () => locked(() => mirror.build()) } : {}),
      ...(purges ? { purge: (paths: readonly string[]) => purges.enqueue(purgeUrlsOf(purgePublicUrl, paths)) } : {}),
      announce: (built) => context.webhooks.enqueue('registry.updated', registryUpdatedData(publicUrl, built.document, built.etag)),
      caughtUp: () => context.webhooks.kick(),
    },
    ...(options.rebuildRetry ? { retry: options.rebuildRetry } : {}),
    logger: app.log,
    ...(storage.staticOutput ? { copyLocation: storage.staticOutput.location } : {}),
  });
  app.addHook('preClose', (done) => {
    publisher.stop();
    done();
  });
  app.addHook('preClose', () => publisher.idle());
  const context: ServerContext = {
    storage,
    publicUrl,
    limits,
    registry: () => {
      if (!current) throw new Error('the registry has not been built yet');
      return current;
    },
    rebuild: () => publisher.changed('local'),
    passwords: new HashQueue(options.passwordHasher ?? scryptHasher, limits.maxConcurrentHashes, limits.hashQueueLength),
    buildFailure: (id) => publisher.failure(id),
    webhooks: new WebhookDispatcher({
      ...options.webhooks,
      store: storage.webhooks,
      publicUrl,
      selfAddresses: () => app.addresses(),
      logger: app.log,
    }),
    ...(options.adminToken ? { adminToken: options.adminToken } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.requireChangelogEntry ? { requireChangelogEntry: true } : {}),
    ...(purges ? { purges } : {}),
    sigstore,
  };

  // Another instance's changes rebuild this one's registry; subscribed before the first build, so no
  // change committed between that build and the subscription is missed.
  const peers = await followPeers({
    storage,
    rebuild: () => publisher.changed('peer'),
    onError: (error) => app.log.error({ err: error }, "rebuilding the registry after another instance's change failed") });
  app.addHook('preClose', async () => {
    await peers?.stop();
  });
  try {
    await publisher.changed('start');
  } catch (error) {
    await peers?.stop();
    await builder.close();
    throw error;
  }
  const stats = await startStatsRefresh({
    everyMs: options.statsRefreshMs ?? DEFAULT_STATS_REFRESH_MS,
    ...(options.statsSettleMs === undefined ? {} : { settleMs: options.statsSettleMs }),
    ...(options.statsMinGapMs === undefined ? {} : { minGapMs: options.statsMinGapMs }),
    count: () => storage.events.downloadsRecorded(),
    rebuild: () => publisher.changed('stats'),
    onError: (error) => app.log.error({ err: error }, 'refreshing the download stats failed'),
  });
  app.addHook('preClose', () => stats.stop());
  context.downloadRecorded = () => stats.soon();
  const retention = startEventRetention({
    days: options.eventRetentionDays ?? DEFAULT_EVENT_RETENTION_DAYS,
    prune: (before) => storage.events.pruneEvents(before),
    onPruned: (removed, before) => app.log.info({ removed, before: before.toISOString() }, 'removed the analytics events older than the retention window (their counts stay in the aggregates)'),
    onError: (error) => app.log.error({ err: error }, 'removing the analytics events older than the retention window failed; tried again in an hour'),
  });
  app.addHook('preClose', () => retention.stop());

  // Before any route: a method a known path does not answer is a 405 with Allow (caching.ts).
  const allowedMethods = trackRouteMethods(app);
  installEnvelope(app, { allowedMethods });
  installValidators(app);
  installJsonInput(app);
  // The archive uploads have their own time-out (requestTimeoutMs): they stream to disk as the bytes come.
  installBodyTimeout(app, limits.bodyTimeoutMs, (request) => routeGroup(request) === 'upload');
  await app.register(rateLimitPlugin, { context });
  await app.register(apiVersionPlugin);
  await app.register(cachingPlugin, { context });
  await app.register(authPlugin, { context });
  await app.register(readRoutes, { context });
  // What the server wrote of each staged file: its publish here need not digest the bytes again
  // (nor download them from a bucket: the local copies it keeps are removed when it closes).
  const identities = new StagedIdentities();
  app.addHook('onClose', (_instance, done) => {
    identities.clear();
    done();
  });
  await app.register(uploadRoute, { context, identities });
  await app.register(filesRoute, { context, settings: { ...DEFAULT_FILE_SETTINGS, ...options.files }, identities });
  await app.register(lifecycleRoutes, { context });
  await app.register(eventsRoute, { context });
  await app.register(analyticsRoute, { context });
  await app.register(webhooksRoute, { context });
  await app.register(accountRoutes, { context });
  await app.register(ownerRoutes, { context });
  await app.register(trustedPublisherRoutes, { context, settings: { issuers, githubApiUrl: options.githubApiUrl ?? DEFAULT_GITHUB_API_URL } });
  await app.register(oidcRoutes, { context, verifier: new IdTokenVerifier({ issuers, audience: registryAudience(publicUrl), ...(options.clock ? { now: options.clock } : {}) }) });
  await app.register(openapiRoute, { context });
  // Deliveries in flight finish (or are cancelled) before the storage closes.
  app.addHook('preClose', () => context.webhooks.close());
  // Deliveries the outbox holds (a previous run's included) are resumed.
  context.webhooks.start();
  // So are purges; they end (attempts in flight cancelled, their jobs pending) before the storage closes.
  if (purges) {
    app.addHook('preClose', () => purges.close());
    purges.start();
  }
  app.addHook('onClose', async () => {
    await builder.close();
    await mirror?.close();
    await storage.close();
  });
  return { app, context, store: storage };
}
