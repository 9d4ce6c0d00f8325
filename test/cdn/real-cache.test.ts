/**
 * A real caching proxy (Varnish 7, and nginx with its
 * cache-purge module) between a plain static server holding a registry built by `build-registry`
 * and the clients, set up as a CDN that caches every file for an hour. Version 1.1.0 is published
 * while the proxy holds 1.0.0:
 * - without a purge, clients keep reading 1.0.0 from the proxy;
 * - with `build-registry --purge <the proxy>` (the generic HTTP PURGE adapter), they read 1.1.0 at once;
 * - with neither, the publish action's wait times out with its warning (with the purge it does not);
 * - a fresh index.json beside a stale template file: `create` heals with one refetch of the file.
 * Each proxy is started by the test as an unprivileged child process on a free 127.0.0.1 port; one
 * that is not installed is skipped with a notice (.ci/run installs both).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import type { AnnotationProperties } from '@actions/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import { RegistryClient } from '../../src/client/index.js';
import type { RegistryMode } from '../../src/client/registry-client.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, type PublishOptions } from '../../src/publish/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { PROXIES, type CachingProxy, type ProxyKind } from '../helpers/caching-proxy.js';
import { cli } from '../helpers/cli.js';
import { tempDir, withoutEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { writePublishableTemplate } from '../publish/publishable-template.js';

withoutEnvironment(['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_MODE', 'REGISTRY_PURGE', 'REGISTRY_CDN_URL']);

const ID = 'demo-template';

/** The registry server (where versions are published), its static build, the origin serving it. */
interface Origin {
  server: TestServer;
  outDir: string;
  origin: FolderServer;
  template: string;
}

let saved: Record<string, string | undefined>;
beforeEach(async () => {
  saved = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
  process.env.DO_NOT_TRACK = '1';
});
const hosts: FolderServer[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.close()));
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function publish(origin: Pick<Origin, 'server' | 'template'>, version: string): Promise<void> {
  const pack = await packTemplate(origin.template, { outDir: await tempDir('tr-pack-'), version });
  await publishTemplate({ registryUrl: origin.server.url, token: origin.server.token, archive: pack.file, manifest: pack.manifest });
}

/** `build-registry --store` into the origin's folder; `purge`: with `--purge <the proxy> --cdn-url <the proxy>`. */
async function build(origin: Origin, purge?: CachingProxy): Promise<string> {
  const result = await cli('build-registry', '--store', origin.server.storeDir, '--out', origin.outDir, ...(purge ? ['--purge', purge.url, '--cdn-url', `${purge.url}/`] : []));
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return result.stdout;
}

/** A registry listing demo-template 1.0.0, built and served by a plain static server. */
async function originWithV1(): Promise<Origin> {
  const server = await startRegistryServer();
  const origin: Origin = { server, outDir: await tempDir('tr-static-'), origin: undefined as unknown as FolderServer, template: await writePublishableTemplate() };
  await publish(origin, '1.0.0');
  await build(origin);
  origin.origin = await serveFolder(origin.outDir);
  hosts.push(origin.origin);
  return origin;
}

/** The latest version a client without a cache of its own reads through `url` (registry.json, or index.json and the template's file). */
async function latest(url: string, mode: RegistryMode): Promise<string | undefined> {
  return (await new RegistryClient({ registryUrl: `${url}/registry.json`, mode }).getTemplate(ID))?.version;
}

/** What clients of both kinds read through the proxy. */
const seen = async (proxy: CachingProxy): Promise<string[]> => [await latest(proxy.url, 'full'), await latest(proxy.url, 'sparse')].map(String);

/** The documents asked of the origin since `from` (archives and the catalog aside). */
const documentsAsked = (origin: FolderServer, from: number): string[] => origin.requests.slice(from).filter((url) => url.endsWith('.json'));

function recordingCore() {
  const calls = { outputs: {} as Record<string, string>, warnings: [] as { message: string; properties?: AnnotationProperties }[], failed: [] as string[] };
  const core: ActionCore = {
    setOutput: (name, value) => void (calls.outputs[name] = value),
    setSecret: () => undefined,
    setFailed: (message) => void calls.failed.push(message),
    info: () => undefined,
    warning: (message, properties) => void calls.warnings.push({ message, ...(properties ? { properties } : {}) }),
    error: (message) => void calls.failed.push(message),
    startGroup: () => undefined,
    endGroup: () => undefined,
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, calls };
}

/**
 * The publish action publishing `version` of the origin's template with `wait` (bounded to 5 s on a
 * fake clock: the polls are real requests to the proxy, the time between them is not waited), the
 * upload followed by the registry's rebuild (`build-registry`, with a purge of `purge` when given).
 */
async function publishWithAction(origin: Origin, proxy: CachingProxy, version: string, purge?: CachingProxy) {
  const { core, calls } = recordingCore();
  let now = 0;
  const upload = async (options: PublishOptions) => {
    const result = await publishTemplate(options);
    await build(origin, purge);
    return result;
  };
  const outcome = await run({
    env: {
      GITHUB_WORKSPACE: path.dirname(origin.template),
      RUNNER_TEMP: await tempDir(),
      'INPUT_TEMPLATE-PATH': path.basename(origin.template),
      INPUT_VERSION: version,
      'INPUT_CREATE-RELEASE': 'false',
      'INPUT_REGISTRY-URL': origin.server.url,
      'INPUT_REGISTRY-TOKEN': origin.server.token,
      'INPUT_PUBLIC-URL': proxy.url,
      INPUT_WAIT: 'true',
      'INPUT_WAIT-TIMEOUT': '5',
    },
    core,
    upload,
    wait: { now: () => now, sleep: (ms) => Promise.resolve(void (now += ms)) },
    setExitCode: () => undefined,
  });
  const waitWarnings = calls.warnings.filter((w) => w.properties?.title === 'not visible yet').map((w) => w.message);
  return { outcome, calls, waitWarnings };
}

function proxySuite(kind: ProxyKind): void {
  const start = async (origin: Origin, honourNoCache = false): Promise<CachingProxy> => {
    const proxy = await kind.start({ origin: origin.origin.origin, honourNoCache });
    // The proxy holds 1.0.0: registry.json, index.json and the template's file went through it.
    expect(await seen(proxy)).toEqual(['1.0.0', '1.0.0']);
    return proxy;
  };

  it('without a purge, clients keep reading 1.0.0 from the proxy after 1.1.0 is published', async () => {
    const origin = await originWithV1();
    const proxy = await start(origin);
    await publish(origin, '1.1.0');
    await build(origin);
    expect(await latest(origin.origin.url.replace(/\/$/, ''), 'sparse')).toBe('1.1.0');
    const mark = origin.origin.requests.length;
    expect(await seen(proxy)).toEqual(['1.0.0', '1.0.0']);
    // Answered from the proxy's copies: nothing reached the origin.
    expect(documentsAsked(origin.origin, mark)).toEqual([]);
  });

  it('with build-registry --purge <the proxy> (HTTP PURGE), clients read 1.1.0 at once', async () => {
    const origin = await originWithV1();
    const proxy = await start(origin);
    await publish(origin, '1.1.0');
    const printed = await build(origin, proxy);
    expect(printed).toMatch(new RegExp(`^purged \\d+ URL\\(s\\) at ${proxy.url}$`, 'm'));
    expect(await seen(proxy)).toEqual(['1.1.0', '1.1.0']);
  });

  it("with neither a purge nor a proxy that honours no-cache, the publish action's wait times out with its warning", async () => {
    const origin = await originWithV1();
    const proxy = await start(origin);
    const { outcome, calls, waitWarnings } = await publishWithAction(origin, proxy, '1.1.0');
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.outputs).not.toHaveProperty('visible-after-ms');
    expect(waitWarnings).toHaveLength(1);
    expect(waitWarnings[0]).toContain(`${ID}@1.1.0 is published, but ${proxy.url}/templates/${ID}.json did not list it within 5 s`);
    expect(waitWarnings[0]).toMatch(/it last served HTTP 200 listing 1\.0\.0\b/);
    // The registry itself lists it: only the proxy is behind.
    expect(await latest(origin.origin.url.replace(/\/$/, ''), 'sparse')).toBe('1.1.0');
  });

  it("with the purge, the publish action's wait sees the version at its first poll", async () => {
    const origin = await originWithV1();
    const proxy = await start(origin);
    const { outcome, calls, waitWarnings } = await publishWithAction(origin, proxy, '1.1.0', proxy);
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(waitWarnings).toEqual([]);
    expect(calls.outputs['visible-after-ms']).toBe('0');
  });

  it('a fresh index.json beside a stale template file: create heals with one refetch of the file (no-cache)', async () => {
    const origin = await originWithV1();
    const proxy = await start(origin, true);
    await publish(origin, '1.1.0');
    await build(origin);
    // Skew: the proxy forgets index.json alone (as when its copy expires first); the template's file stays 1.0.0.
    const purged = await fetch(`${proxy.url}/index.json`, { method: 'PURGE' });
    expect([200, 204]).toContain(purged.status);
    const mark = origin.origin.requests.length;

    const project = path.join(await tempDir(), 'app');
    const created = await cli('create', ID, project, '--registry', `${proxy.url}/registry.json`, '--defaults', '--set', 'projectName=app');
    expect(created.code, created.stderr).toBe(0);
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lock.template.version).toBe('1.1.0');
    // The template's file read once from the proxy's copy (1.0.0), then once more past it: one refetch.
    expect(documentsAsked(origin.origin, mark).filter((url) => url.startsWith('/templates/'))).toEqual([`/templates/${ID}.json`]);
  });
}

for (const kind of PROXIES) {
  if (kind.missing) {
    console.warn(`notice: the real-cache tests behind ${kind.name} are skipped: ${kind.missing}`);
    describe.skip(`a registry behind ${kind.name} (${kind.missing})`, () => proxySuite(kind));
  } else {
    describe(`a registry behind ${kind.name}`, () => proxySuite(kind));
  }
}
