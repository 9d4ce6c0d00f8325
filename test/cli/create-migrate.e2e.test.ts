import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { example, nextVersion } from '../helpers/example-versions.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

let server: TestServer;
let savedEnv: Record<string, string | undefined>;

beforeEach(async () => {
  savedEnv = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
  delete process.env.DO_NOT_TRACK;
  server = await startRegistryServer();
  for (const [dir, version] of [[example, '1.1.0'], [await nextVersion(), '1.2.0']] as const) {
    const pack = await packTemplate(dir, { outDir: await tempDir(), version });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  }
});

afterEach(() => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('create and migrate against a served registry', () => {
  it('creates a 1.1.0 project, plans the migration, then applies it with backups', async () => {
    const registry = `${server.url}/registry.json`;
    const project = path.join(await tempDir(), 'my-service');
    const created = await cli('create', 'node-service@1.1.0', project, '--registry', registry, '--defaults', '--set', 'projectName=shop-api');
    // Published without provenance: the default `--provenance warn` says so, and nothing else.
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const lockBefore = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lockBefore.template).toMatchObject({ name: 'node-service', version: '1.1.0' });
    expect(await server.store.events.countEvents('generation')).toBe(1);
    const envBefore = await readFile(path.join(project, '.env.example'), 'utf8');

    const dryRun = await cli('migrate', '--project', project, '--registry', registry, '--dry-run');
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toMatch(/1\.1\.0 -> 1\.2\.0/);
    expect(dryRun.stdout).toContain('+++ b/.editorconfig');
    expect(dryRun.stdout).toContain('+# shop-api settings');
    expect(await readdir(project)).not.toContain('.editorconfig');

    const applied = await cli('migrate', '--project', project, '--registry', registry);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await readFile(path.join(project, '.editorconfig'), 'utf8')).toMatch(/indent_size = 2/);
    expect(await readFile(path.join(project, '.env.example'), 'utf8')).toBe('# shop-api settings\nPORT=3000\n');
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lock.template.version).toBe('1.2.0');
    expect(lock.appliedMigrations).toEqual(['add-editorconfig']);
    const backups = path.join(project, '.template-backups');
    // The folder holds its own .gitignore beside the run's folder.
    const [stamp] = (await readdir(backups)).filter((name) => name !== '.gitignore');
    expect(await readFile(path.join(backups, stamp ?? '', '.env.example'), 'utf8')).toBe(envBefore);

    const again = await cli('migrate', '--project', project, '--registry', registry);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing to migrate/);
  }, 60_000);

  it('lists, searches, shows and checks templates of the registry', async () => {
    const registry = `${server.url}/registry.json`;
    const list = await cli('list', '--registry', registry, '--json');
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { id: string; version: string }[]).map((e) => `${e.id}@${e.version}`)).toEqual(['node-service@1.2.0']);
    const all = JSON.parse((await cli('list', '--registry', registry, '--all-versions', '--json')).stdout) as unknown[];
    expect(all).toHaveLength(2);
    expect((await cli('list', '--registry', registry, '--category', 'frontend', '--json')).stdout.trim()).toBe('[]');
    const search = await cli('search', 'typescript', 'service', '--registry', registry);
    expect(search.stdout).toMatch(/node-service\s+1\.2\.0/);
    const info = JSON.parse((await cli('info', 'node-service', '--registry', registry, '--json')).stdout) as { versions: string[] };
    expect(info.versions).toEqual(['1.2.0', '1.1.0']);
    expect((await cli('info', 'nope', '--registry', registry)).code).toBe(1);
    const ok = await cli('check-compat', 'node-service', '--registry', registry, '--node-version', '22.0.0', '--methodology-version', '2.0.0');
    expect(ok.code).toBe(0);
    const old = await cli('check-compat', 'node-service@1.1.0', '--registry', registry, '--node-version', '18.0.0', '--json');
    expect(old.code).toBe(1);
    expect(JSON.parse(old.stdout).issues[0]).toMatch(/node version 18.0.0/);
  }, 60_000);

  it('refuses breaking steps without --yes when it cannot ask, and applies them with --yes', async () => {
    const breakingServer = await startRegistryServer();
    for (const [dir, version] of [[example, '1.1.0'], [await nextVersion(true), '1.2.0']] as const) {
      const pack = await packTemplate(dir, { outDir: await tempDir(), version });
      await publishTemplate({ registryUrl: breakingServer.url, token: breakingServer.token, archive: pack.file, manifest: pack.manifest });
    }
    const registry = `${breakingServer.url}/registry.json`;
    const project = path.join(await tempDir(), 'svc');
    process.env.DO_NOT_TRACK = '1';
    expect((await cli('create', 'node-service@1.1.0', project, '--registry', registry, '--defaults')).code).toBe(0);
    expect(await breakingServer.store.events.countEvents('generation')).toBe(0);

    const refused = await cli('migrate', '--project', project, '--registry', registry);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/1 breaking step\(s\).*--yes/);
    expect(await readdir(project)).not.toContain('.editorconfig');

    const accepted = await cli('migrate', '--project', project, '--registry', registry, '--yes');
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stderr).toMatch(/1 breaking migration step/);
    expect(await readdir(project)).toContain('.editorconfig');
  }, 60_000);

  it('needs a registry', async () => {
    const saved = process.env.TEMPLATE_REGISTRY_URL;
    delete process.env.TEMPLATE_REGISTRY_URL;
    expect((await cli('list')).code).toBe(2);
    if (saved !== undefined) process.env.TEMPLATE_REGISTRY_URL = saved;
  });
});
