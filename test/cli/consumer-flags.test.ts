/**
 * The consumer commands against a static registry: one registry setting in either form, fresh
 * data on demand (--refresh) and a word when a stale copy answers, flags with fixed values, and
 * check-compat's npm range and the runtimes it cannot check.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { cacheFileFor } from '../../src/client/registry-client.js';
import { formatAge } from '../../src/cli/commands/consumer.js';
import { localNpmVersion } from '../../src/cli/consumer-env.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { templateEntry } from '../helpers/builders.js';

const ENV = ['TEMPLATE_REGISTRY_CACHE', 'TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_MODE', 'DO_NOT_TRACK', 'npm_config_user_agent'] as const;
let saved: Record<string, string | undefined>;
let servers: FolderServer[] = [];

beforeEach(async () => {
  saved = Object.fromEntries(ENV.map((name) => [name, process.env[name]]));
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-flags-cache-');
  process.env.DO_NOT_TRACK = '1';
  delete process.env.TEMPLATE_REGISTRY_URL;
  delete process.env.TEMPLATE_REGISTRY_MODE;
});

afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const entry = (id: string, fields: Partial<TemplateEntry> = {}): TemplateEntry => templateEntry(id, { downloadUrl: `archives/${id}/1.0.0.tgz`, ...fields });

function document(templates: TemplateEntry[], categories: RegistryDocument['categories'] = []): RegistryDocument {
  return { templates, categories, tags: [], lastUpdated: '2026-01-01T00:00:00.000Z' };
}

/** A static registry folder served on 127.0.0.1; `write` replaces its registry.json. */
async function staticRegistry(doc: RegistryDocument): Promise<{ server: FolderServer; dir: string; write: (doc: RegistryDocument) => Promise<void> }> {
  const dir = await tempDir('tr-flags-registry-');
  const write = (next: RegistryDocument): Promise<void> => writeFile(path.join(dir, 'registry.json'), JSON.stringify(next));
  await write(doc);
  const server = await serveFolder(dir);
  servers.push(server);
  return { server, dir, write };
}

const ids = (stdout: string): string[] => (JSON.parse(stdout) as TemplateEntry[]).map((e) => e.id);

describe('one registry setting', () => {
  it('reads the registry from its base URL or its registry.json URL, by flag or TEMPLATE_REGISTRY_URL', async () => {
    const { server } = await staticRegistry(document([entry('alpha')]));
    const base = server.url.replace(/\/$/, '');
    for (const registry of [base, `${base}/`, `${base}/registry.json`]) {
      const run = await cli('list', '--registry', registry, '--json');
      expect(run.code, run.stderr).toBe(0);
      expect(ids(run.stdout)).toEqual(['alpha']);
    }
    process.env.TEMPLATE_REGISTRY_URL = base;
    expect(ids((await cli('list', '--json')).stdout)).toEqual(['alpha']);
    // keys.json: the look for the registry's signing keys (none here: an unsigned registry).
    expect(server.requests.every((request) => request.startsWith('/registry.json') || request.startsWith('/index.json') || request === '/keys.json')).toBe(true);
  });

  it('names the setting a bad URL came from', async () => {
    const flag = await cli('list', '--registry', 'registry.example');
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--registry must be an http\(s\) URL .*got "registry.example"/);
    process.env.TEMPLATE_REGISTRY_URL = 'ftp://registry.example';
    const env = await cli('list');
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/TEMPLATE_REGISTRY_URL must be an http\(s\) URL/);
  });
});

describe('--refresh and stale copies', () => {
  it('--refresh reads the registry as it is now instead of a cached copy younger than an hour', async () => {
    const { server, write } = await staticRegistry(document([entry('alpha')]));
    expect(ids((await cli('list', '--registry', server.url, '--json')).stdout)).toEqual(['alpha']);
    await write(document([entry('alpha'), entry('beta')]));
    expect(ids((await cli('list', '--registry', server.url, '--json')).stdout)).toEqual(['alpha']);
    for (const command of [['list'], ['search', 'the']]) {
      const refreshed = await cli(...command, '--registry', server.url, '--refresh', '--json');
      expect(refreshed.stderr).toBe('');
      expect(ids(refreshed.stdout)).toEqual(['alpha', 'beta']);
    }
    // The fresh copy was kept: a later run without --refresh sees it too.
    expect(ids((await cli('list', '--registry', server.url, '--json')).stdout)).toEqual(['alpha', 'beta']);
  });

  it('says on stderr, in one line, when it answers from a copy older than its lifetime because the registry is down', async () => {
    const { server } = await staticRegistry(document([entry('alpha')]));
    const documentUrl = `${server.url}registry.json`;
    expect((await cli('list', '--registry', documentUrl, '--json')).code).toBe(0);
    const file = cacheFileFor(process.env.TEMPLATE_REGISTRY_CACHE ?? '', documentUrl);
    const record = JSON.parse(await readFile(file, 'utf8')) as { fetchedAt: number };
    await writeFile(file, JSON.stringify({ ...record, fetchedAt: Date.now() - 3 * 3_600_000 - 60_000 }));
    await server.close();
    servers = servers.filter((s) => s !== server);

    const run = await cli('list', '--registry', documentUrl, '--json');
    expect(run.code).toBe(0);
    expect(ids(run.stdout)).toEqual(['alpha']);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^warning: cannot fetch the registry document from ${documentUrl.replace(/[.?]/g, '\\$&')} \\(.+\\); using the copy cached 3 hours ago, older than the cache lifetime of 1 hour$`));

    // A young copy answers without a word; with --refresh, that it is not fresh is worth one.
    await writeFile(file, JSON.stringify({ ...record, fetchedAt: Date.now() - 5 * 60_000 }));
    expect((await cli('list', '--registry', documentUrl)).stderr).toBe('');
    const refresh = await cli('list', '--registry', documentUrl, '--refresh');
    expect(refresh.code).toBe(0);
    expect(refresh.stderr).toMatch(/^warning: cannot fetch the registry document .*; using the copy cached 5 minutes ago\n$/);
  });
});

describe('flags with fixed values', () => {
  it('--stability: exit 2 naming the allowed values, before reading the registry', async () => {
    const run = await cli('list', '--registry', 'http://127.0.0.1:9', '--stability', 'stabel');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/'stabel' is invalid\. Allowed choices are stable, beta, experimental, deprecated/);
    expect((await cli('list', '--help')).stdout.replace(/\s+/g, ' ')).toContain('(choices: "stable", "beta", "experimental", "deprecated")');
  });

  it('--category: the manifest categories or one the registry defines; anything else exits 2 naming them', async () => {
    const { server } = await staticRegistry(
      document([entry('alpha'), entry('tool-one', { category: 'tools' })], [{ id: 'tools', name: 'Tools' }]),
    );
    const typo = await cli('list', '--registry', server.url, '--category', 'backned');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--category must be one of frontend, backend, fullstack, mobile, desktop, tools (got "backned")');
    expect(ids((await cli('list', '--registry', server.url, '--category', 'tools', '--json')).stdout)).toEqual(['tool-one']);
    const empty = await cli('list', '--registry', server.url, '--category', 'mobile', '--json');
    expect(empty.code).toBe(0);
    expect(JSON.parse(empty.stdout)).toEqual([]);
  });

  it('--platform and the version flags of check-compat, and @version and --to', async () => {
    const platform = await cli('check-compat', 'alpha', '--registry', 'http://127.0.0.1:9', '--platform', 'windows');
    expect(platform.code).toBe(2);
    expect(platform.stderr).toMatch(/Allowed choices are .*darwin.*linux.*win32/);
    for (const [flag, value] of [['--node-version', '20'], ['--npm-version', 'ten'], ['--methodology-version', '>=1']] as const) {
      const run = await cli('check-compat', 'alpha', '--registry', 'http://127.0.0.1:9', flag, value);
      expect(run.code, `${flag} ${value}`).toBe(2);
      expect(run.stderr).toContain(`${flag} must be a version MAJOR.MINOR.PATCH such as 20.11.1 (got "${value}")`);
    }
    expect((await cli('info', 'alpha@1.0', '--registry', 'http://127.0.0.1:9')).stderr).toMatch(/version must be MAJOR\.MINOR\.PATCH without leading zeros, each number at most 15 digits \(got "1\.0"\)/);
    expect((await cli('migrate', '--to', 'latest', '--registry', 'http://127.0.0.1:9')).stderr).toMatch(/--to must be MAJOR\.MINOR\.PATCH/);
  });
});

describe('check-compat', () => {
  const python = entry('py-cli', { dependencies: { methodology: '*', python: '>=3.11', pip: '>=23' } });
  const node = entry('node-svc', { dependencies: { methodology: '*', node: '>=20', npm: '>=10' }, compatibility: { nodeVersions: ['>=20'] } });

  it('reports runtimes it cannot check as warnings, and stays compatible (exit 0)', async () => {
    const { server } = await staticRegistry(document([python, node]));
    const run = await cli('check-compat', 'py-cli', '--registry', server.url);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      'py-cli@1.0.0: compatible (2 warnings)\n' +
        '  warning: not checked: python >=3.11 (only methodology, node and npm versions are checked)\n' +
        '  warning: not checked: pip >=23 (only methodology, node and npm versions are checked)\n',
    );
  });

  it("checks the npm range against --npm-version, else this machine's npm", async () => {
    const { server } = await staticRegistry(document([python, node]));
    const old = await cli('check-compat', 'node-svc', '--registry', server.url, '--node-version', '22.1.0', '--npm-version', '9.8.1');
    expect(old.code).toBe(1);
    expect(old.stdout).toContain('node-svc@1.0.0: NOT compatible\n  issue: npm version 9.8.1 does not satisfy npm >=10 (dependencies.npm)\n');
    expect((await cli('check-compat', 'node-svc', '--registry', server.url, '--node-version', '22.1.0', '--npm-version', '10.2.0')).code).toBe(0);

    // Run by npm (npx, npm start), npm's version is in npm_config_user_agent.
    process.env.npm_config_user_agent = 'npm/9.6.7 node/v20.11.0 linux x64 workspaces/false';
    const local = await cli('check-compat', 'node-svc', '--registry', server.url, '--node-version', '22.1.0', '--json');
    expect(local.code).toBe(1);
    expect(JSON.parse(local.stdout)).toEqual({ compatible: false, issues: ['npm version 9.6.7 does not satisfy npm >=10 (dependencies.npm)'], warnings: [] });
  });
});

describe('formatAge', () => {
  it('gives an age in the largest unit that keeps it readable', () => {
    expect([45_000, 60_000, 5 * 60_000, 3_600_000, 90 * 60_000, 3 * 3_600_000 + 60_000, 86_400_000, 3 * 86_400_000].map(formatAge)).toEqual([
      '45 seconds',
      '1 minute',
      '5 minutes',
      '1 hour',
      '90 minutes',
      '3 hours',
      '1 day',
      '3 days',
    ]);
  });
});

describe('localNpmVersion', () => {
  it('reads npm_config_user_agent, else runs npm --version; unknown when neither gives a version', async () => {
    const never = (): Promise<string> => Promise.reject(new Error('must not run npm'));
    expect(await localNpmVersion({ npm_config_user_agent: 'npm/10.8.2 node/v20.11.0 linux x64' }, never)).toBe('10.8.2');
    expect(await localNpmVersion({ npm_config_user_agent: 'pnpm/9.1.0 npm/? node/v20.11.0' }, () => Promise.resolve('10.1.0\n'))).toBe('10.1.0');
    expect(await localNpmVersion({}, () => Promise.resolve('11.0.0\n'))).toBe('11.0.0');
    expect(await localNpmVersion({}, () => Promise.reject(new Error('spawn npm ENOENT')))).toBeUndefined();
    expect(await localNpmVersion({}, () => Promise.resolve('not a version'))).toBeUndefined();
  });
});
