/**
 * Issue 26, item 8: `build-registry --purge` purges exactly the URLs the build changed at the CDN
 * (here a local fake taking HTTP PURGE, and a fake Cloudflare API), retries a failure, and keeps
 * what still failed in the output for the next build, so that no purge is lost.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { Command, CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { registerBuildRegistry, type BuildRegistryDependencies } from '../../src/cli/commands/build-registry.js';
import { PENDING_PURGES_FILE } from '../../src/registry/purge/index.js';
import { cloudflareOk, startFakeApi } from '../helpers/fake-cdn.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from './memory-source.js';

async function buildRegistryCli(argv: string[], deps: BuildRegistryDependencies = {}) {
  let stdout = '';
  let stderr = '';
  let code = 0;
  const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t) };
  const program = new Command('template-registry').exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  registerBuildRegistry(program, io, (c) => (code = c), deps);
  for (const command of program.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  try {
    await program.parseAsync(['build-registry', ...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    code = 2;
  }
  return { code, stdout, stderr };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

const noWait = (): Promise<void> => Promise.resolve();

describe('build-registry --purge', () => {
  it('purges the URLs the build changed, under --cdn-url, and nothing when nothing changed', async () => {
    const out = await tempDir();
    const cache = await startFakeApi(() => ({ status: 200 }));
    const versions = [version('alpha', '1.0.0')];
    const storeSource = () => Promise.resolve(memorySource(versions));
    const args = ['--out', out, '--store', '/var/store', '--purge', cache.url, '--cdn-url', 'https://cdn.example/reg'];

    const first = await buildRegistryCli(args, { storeSource, sleep: noWait });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    cache.requests.length = 0;

    versions.push(version('alpha', '1.1.0'));
    const second = await buildRegistryCli([...args, '--json'], { storeSource, sleep: noWait });
    expect(second.code).toBe(0);
    // The catalog's first page (drawn at build time) shows alpha's latest version: it changed too, at / and index.html.
    expect(cache.requests.map((r) => `${r.method} ${String(r.headers.host)}${r.path}`)).toEqual([
      'PURGE cdn.example/reg/',
      'PURGE cdn.example/reg/index.html',
      'PURGE cdn.example/reg/index.json',
      'PURGE cdn.example/reg/registry.json',
      'PURGE cdn.example/reg/templates/alpha.json',
    ]);
    expect(JSON.parse(second.stdout)).toMatchObject({ purged: [{ target: cache.url, urls: 5 }], purgeFailed: [] });

    cache.requests.length = 0;
    expect((await buildRegistryCli(args, { storeSource, sleep: noWait })).code).toBe(0);
    expect(cache.requests).toEqual([]);
  });

  it('keeps the URLs of a purge that failed every retry in the output, and purges them with the next build', async () => {
    const out = await tempDir();
    let up = false;
    const api = await startFakeApi(() => (up ? cloudflareOk() : { status: 503, body: '{"success":false,"errors":[{"code":10000,"message":"upstream down"}]}' }));
    vi.stubEnv('CLOUDFLARE_API_TOKEN', 'cf-token');
    const versions = [version('alpha', '1.0.0')];
    const storeSource = () => Promise.resolve(memorySource(versions));
    const args = ['--out', out, '--store', '/var/store', '--purge', 'cloudflare:zone1', '--cloudflare-api-url', api.url, '--public-url', 'https://cdn.example'];

    const failed = await buildRegistryCli(args, { storeSource, sleep: noWait });
    expect(failed.code).toBe(0);
    expect(failed.stderr).toContain('warning: purge attempt 1 at cloudflare:zone1 failed (cloudflare:zone1: Cloudflare refused the purge (HTTP 503): 10000 upstream down); retrying in');
    expect(failed.stderr).toContain(`warning: the purge of 5 URL(s) at cloudflare:zone1 failed`);
    expect(failed.stderr).toContain('the next build-registry --purge purges them first');
    expect(api.requests).toHaveLength(4);
    const kept = JSON.parse(await readFile(path.join(out, PENDING_PURGES_FILE), 'utf8')) as { pending: Record<string, string[]> };
    expect(kept.pending['cloudflare:zone1']).toContain('https://cdn.example/registry.json');

    // Nothing changed since; the CDN is back: the kept URLs are purged, and the file goes.
    up = true;
    api.requests.length = 0;
    const healed = await buildRegistryCli(args, { storeSource, sleep: noWait });
    expect(healed.code).toBe(0);
    expect(healed.stdout).toContain('purged 5 URL(s) at cloudflare:zone1');
    expect(JSON.parse(api.requests[0]?.body ?? '')).toEqual({ files: kept.pending['cloudflare:zone1'] });
    await expect(readFile(path.join(out, PENDING_PURGES_FILE))).rejects.toThrow(/ENOENT/);
  });

  it('refuses --purge without a URL to purge under, and a target it does not know', async () => {
    const out = await tempDir();
    const storeSource = () => Promise.resolve(memorySource([]));
    const noUrl = await buildRegistryCli(['--out', out, '--store', 's', '--purge', 'http://127.0.0.1:9'], { storeSource });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('--purge needs --cdn-url (or --public-url)');
    const unknown = await buildRegistryCli(['--out', out, '--store', 's', '--purge', 'akamai:1', '--public-url', 'https://x.example'], { storeSource });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--purge: unknown purge target');
    const noToken = await buildRegistryCli(['--out', out, '--store', 's', '--purge', 'fastly:svc', '--public-url', 'https://x.example'], { storeSource });
    expect(noToken.stderr).toContain('FASTLY_API_TOKEN');
  });
});
