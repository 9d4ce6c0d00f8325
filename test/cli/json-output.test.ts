/**
 * `--json` means exactly one JSON document on stdout, and nothing else there, for every command
 * that has it, whether it succeeds, finds problems or fails before it has a result: a script can
 * `JSON.parse` stdout whole. Diagnostics and progress go to stderr.
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli, type CliRun } from '../helpers/cli.js';
import { example, nextVersion } from '../helpers/example-versions.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

let saved: Record<string, string | undefined>;

beforeEach(async () => {
  saved = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK, TEMPLATE_REGISTRY_TOKEN: process.env.TEMPLATE_REGISTRY_TOKEN };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-json-cache-');
  process.env.DO_NOT_TRACK = '1';
  delete process.env.TEMPLATE_REGISTRY_TOKEN;
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** A registry server holding node-service 1.1.0 and 1.2.0 (with a migration step to it). */
async function servedRegistry(): Promise<TestServer> {
  const server = await startRegistryServer();
  for (const [dir, version] of [[example, '1.1.0'], [await nextVersion(), '1.2.0']] as const) {
    const pack = await packTemplate(dir, { outDir: await tempDir(), version });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  }
  return server;
}

/** Runs the CLI and checks stdout is one JSON document; gives the document. */
async function json(...argv: string[]): Promise<{ run: CliRun; document: unknown }> {
  const run = await cli(...argv);
  let document: unknown;
  expect(() => {
    document = JSON.parse(run.stdout) as unknown;
  }, `stdout of ${argv.join(' ')} is not one JSON document:\n${run.stdout}\nstderr:\n${run.stderr}`).not.toThrow();
  expect(run.stdout.trim().startsWith('{') || run.stdout.trim().startsWith('['), argv.join(' ')).toBe(true);
  return { run, document };
}

/** Every command (and token subcommand) whose --help offers --json. */
async function commandsWithJson(): Promise<string[]> {
  const help = (await cli('--help')).stdout;
  const names = [...help.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1] ?? '').filter((name) => name !== 'help');
  const found: string[] = [];
  for (const name of names) {
    const own = (await cli(name, '--help')).stdout;
    if (own.includes('--json')) found.push(name);
    for (const sub of [...own.matchAll(/^Commands:\n((?: {2}.*\n)+)/gm)].flatMap((m) => [...(m[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((s) => s[1] ?? ''))) {
      if (sub !== 'help' && (await cli(name, sub, '--help')).stdout.includes('--json')) found.push(`${name} ${sub}`);
    }
  }
  return found.sort();
}

describe('--json: one JSON document on stdout', () => {
  const covered = new Set<string>();
  const check = async (name: string, ...argv: string[]): Promise<{ run: CliRun; document: unknown }> => {
    covered.add(name);
    return json(...argv);
  };

  it('for the template author commands: validate, lint, test, pack, generate, init', async () => {
    const dir = await writeTemplate();
    expect((await check('validate', 'validate', dir, '--json')).document).toMatchObject({ valid: true });
    const invalid = await check('validate', 'validate', await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } }), '--json');
    expect(invalid.run.code).toBe(1);
    expect(invalid.document).toMatchObject({ valid: false });
    expect((await check('lint', 'lint', dir, '--json')).document).toMatchObject({ errorCount: 0 });
    expect((await check('test', 'test', dir, '--json')).document).toMatchObject({ passed: true });
    expect((await check('pack', 'pack', dir, '--out-dir', await tempDir(), '--json')).document).toMatchObject({ size: expect.any(Number) });
    const generated = await check('generate', 'generate', dir, '--out', path.join(await tempDir(), 'app'), '--defaults', '--json');
    expect(generated.run.code, generated.run.stderr).toBe(0);
    const init = await check('init', 'init', path.join(await tempDir(), 'fresh'), '--name', 'fresh-template', '--category', 'backend', '--description', 'A template made by the JSON test.', '--json');
    expect(init.document).toMatchObject({ name: 'fresh-template' });
  }, 120_000);

  it('for the consumer, registry, token and publish commands, and when a command fails before it has a result', async () => {
    const server = await servedRegistry();
    const registry = `${server.url}/registry.json`;
    expect((await check('list', 'list', '--registry', registry, '--json')).document).toHaveLength(1);
    expect((await check('search', 'search', 'node', '--registry', registry, '--json')).document).toHaveLength(1);
    expect((await check('info', 'info', 'node-service', '--registry', registry, '--json')).document).toMatchObject({ id: 'node-service', versions: ['1.2.0', '1.1.0'] });
    const project = path.join(await tempDir(), 'svc');
    const created = await check('create', 'create', 'node-service@1.1.0', project, '--registry', registry, '--defaults', '--json');
    expect(created.run.code, created.run.stderr).toBe(0);

    const other = path.join(await tempDir(), 'svc2');
    expect((await cli('create', 'node-service@1.1.0', other, '--registry', registry, '--defaults')).code).toBe(0);
    const available = await check('check-update', 'check-update', '--project', other, '--registry', registry, '--json');
    expect(available.document).toMatchObject({ templateId: 'node-service', currentVersion: '1.1.0', latestVersion: '1.2.0', updateAvailable: true });
    const updatePlan = await check('update', 'update', '--project', other, '--registry', registry, '--dry-run', '--json');
    expect(updatePlan.run.code, updatePlan.run.stderr).toBe(0);
    expect(updatePlan.document).toMatchObject({ status: 'planned', fromVersion: '1.1.0', toVersion: '1.2.0', conflicts: [] });
    const updated = await check('update', 'update', '--project', other, '--registry', registry, '--json');
    expect(updated.document).toMatchObject({ status: 'updated', toVersion: '1.2.0', steps: { applied: ['add-editorconfig'] } });
    expect((await check('update', 'update', '--project', other, '--registry', registry, '--json')).document).toMatchObject({ status: 'up-to-date' });

    // The plan and its diffs are in the document, not printed before it.
    const planned = await check('migrate', 'migrate', '--project', project, '--registry', registry, '--dry-run', '--json');
    expect(planned.run.code, planned.run.stderr).toBe(0);
    expect(planned.document).toMatchObject({ status: 'planned', templateId: 'node-service', fromVersion: '1.1.0', toVersion: '1.2.0', success: true, applied: ['add-editorconfig'] });
    expect(JSON.stringify((planned.document as { plan: unknown }).plan)).toContain('+++ b/.editorconfig');
    const applied = await check('migrate', 'migrate', '--project', project, '--registry', registry, '--json');
    expect(applied.document).toMatchObject({ status: 'applied', success: true, toVersion: '1.2.0' });
    const upToDate = await check('migrate', 'migrate', '--project', project, '--registry', registry, '--json');
    expect(upToDate.document).toEqual({ status: 'up-to-date', templateId: 'node-service', currentVersion: '1.2.0', registryVersion: '1.2.0' });

    const compat = await check('check-compat', 'check-compat', 'node-service', '--registry', registry, '--node-version', '22.0.0', '--npm-version', '10.0.0', '--json');
    expect(compat.document).toMatchObject({ compatible: true, issues: [] });

    const built = await check('build-registry', 'build-registry', '--out', await tempDir(), '--store', server.storeDir, '--json');
    expect(built.run.code, built.run.stderr).toBe(0);
    expect(built.document).toMatchObject({ entries: 2 });
    const mirrored = await check('mirror', 'mirror', registry, '--out', await tempDir(), '--json');
    expect(mirrored.run.code, mirrored.run.stderr).toBe(0);
    expect(mirrored.document).toMatchObject({ signed: false, entries: 2, copied: ['archives/node-service/1.1.0.tgz', 'archives/node-service/1.2.0.tgz'] });

    const store = await tempDir('tr-json-store-');
    const token = (await check('token create', 'token', 'create', '--role', 'publisher', '--store', store, '--json')).document as { id: string };
    expect((await check('token list', 'token', 'list', '--store', store, '--json')).document).toHaveLength(1);
    expect((await check('token revoke', 'token', 'revoke', token.id, '--store', store, '--json')).document).toMatchObject({ id: token.id, state: 'revoked' });
    const account = (await check('user create', 'user', 'create', '--email', 'json@example.com', '--store', store, '--json')).document as { email: string; password: string };
    expect(account).toMatchObject({ email: 'json@example.com', password: expect.any(String) as string });
    expect((await check('user list', 'user', 'list', '--store', store, '--json')).document).toEqual([expect.objectContaining({ email: 'json@example.com' })]);
    // db migrate needs a PostgreSQL server (test/cli/backends.test.ts runs it on one); here its refusal of another URL.
    const migrate = await check('db migrate', 'db', 'migrate', '--database', 'mysql://localhost/registry', '--json');
    expect(migrate.run.code).toBe(2);
    expect(migrate.document).toMatchObject({ error: { exitCode: 2, message: expect.stringMatching(/^--database: must be a postgres/) as string } });
    const copied = await check('store copy', 'store', 'copy', '--from', store, '--to', path.join(await tempDir(), 'copied-store'), '--json');
    expect(copied.run.code, copied.run.stderr).toBe(0);
    expect(copied.document).toMatchObject({ tokens: 1, users: 1, versions: 0 });

    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'json-publish' } });
    const published = await check('publish', 'publish', dir, '--registry', server.url, '--token', server.token, '--json');
    expect(published.run.code, published.run.stderr).toBe(0);
    expect(published.document).toMatchObject({ name: 'json-publish', version: '1.0.0' });
    const deprecated = await check('deprecate', 'deprecate', 'json-publish@1.x', '--message', 'use 2.x', '--registry', server.url, '--token', server.token, '--json');
    expect(deprecated.run.code, deprecated.run.stderr).toBe(0);
    expect(deprecated.document).toEqual({ id: 'json-publish', range: '1.x', changed: 1, versions: ['1.0.0'] });
    const yanked = await check('yank', 'yank', 'json-publish@1.0.0', '--registry', server.url, '--token', server.token, '--json');
    expect(yanked.run.code, yanked.run.stderr).toBe(0);
    expect(yanked.document).toMatchObject({ id: 'json-publish', version: '1.0.0', yanked: true, deprecationMessage: 'use 2.x' });
    const ownerArgs = ['--registry', server.url, '--token', server.token, '--json'];
    expect((await check('owner add', 'owner', 'add', 'json-publish', 'co-owner', ...ownerArgs)).document).toMatchObject({ id: 'json-publish', owners: [{ claimer: true }, { owner: 'co-owner' }] });
    expect((await check('owner ls', 'owner', 'ls', 'json-publish', '--registry', server.url, '--json')).document).toMatchObject({ owners: [{ claimer: true }, { owner: 'co-owner' }] });
    expect((await check('owner rm', 'owner', 'rm', 'json-publish', 'co-owner', ...ownerArgs)).document).toMatchObject({ owners: [{ claimer: true }] });
    const trusted = (await check('trust add', 'trust', 'add', 'json-publish', '--repo', 'acme/json-publish', '--workflow', 'publish.yml', '--owner-id', '42', ...ownerArgs)).document;
    expect(trusted).toMatchObject({ template: 'json-publish', repository: 'acme/json-publish', workflow: 'publish.yml', pending: false });
    expect((await check('trust list', 'trust', 'list', 'json-publish', ...ownerArgs)).document).toEqual([trusted]);
    expect((await check('trust remove', 'trust', 'remove', 'json-publish', '--repo', 'acme/json-publish', '--workflow', 'publish.yml', ...ownerArgs)).document).toEqual([]);

    // Failing before a result: { error: { exitCode, message } }, the message on stderr too.
    const missing = await json('info', 'no-such-template', '--registry', registry, '--json');
    expect(missing.run.code).toBe(1);
    expect(missing.document).toEqual({ error: { exitCode: 1, message: 'template no-such-template not found in the registry' } });
    expect(missing.run.stderr).toContain('not found');

    const usage = await json('list', '--registry', registry, '--stability', 'stabel', '--json');
    expect(usage.run.code).toBe(2);
    expect((usage.document as { error: { message: string } }).error.message).toMatch(/stable, beta, experimental, deprecated/);

    const unreachable = await json('list', '--registry', 'http://127.0.0.1:9/registry.json', '--json');
    expect(unreachable.run.code).toBe(1);
    expect((unreachable.document as { error: { message: string } }).error.message).toMatch(/cannot load the registry/);

    const noToken = await json('publish', await writeTemplate(), '--registry', server.url, '--json');
    expect(noToken.run.code).toBe(2);
    expect(noToken.document).toMatchObject({ error: { exitCode: 2 } });
  }, 180_000);

  it('covers every command that offers --json', async () => {
    const offered = await commandsWithJson();
    expect(offered.length).toBeGreaterThan(15);
    expect(offered.filter((name) => !covered.has(name))).toEqual([]);
  }, 60_000);
});
