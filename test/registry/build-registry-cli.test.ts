import { spawnSync } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Command, CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { computeIntegrity } from '../../src/archive/index.js';
import { registerBuildRegistry, type BuildRegistryDependencies } from '../../src/cli/commands/build-registry.js';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { startFakeGitHub } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { S3RVER_CREDENTIALS, startFakeS3 } from '../helpers/s3-server.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { manifest, memorySource, version } from './memory-source.js';

/** Runs `build-registry` in a program of its own (program.ts registers it in the real CLI). */
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

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(closers.splice(0).map((close) => close()));
});

describe('template-registry build-registry', () => {
  it('builds from the store source and prints the summary line', async () => {
    const out = await tempDir();
    const calls: [string, string | undefined][] = [];
    const storeSource = (dir: string, publicUrl?: string) => {
      calls.push([dir, publicUrl]);
      return Promise.resolve(memorySource([version('a', '1.0.0'), version('a', '1.1.0')]));
    };
    const first = await buildRegistryCli(['--out', out, '--store', '/var/store', '--public-url', 'https://r.example.com'], { storeSource });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(calls).toEqual([['/var/store', 'https://r.example.com']]);
    expect(first.stdout).toMatch(/^registry\.json: 2 entries \(changed\), etag "[\w-]{43}"\n$/);
    expect((JSON.parse(await readFile(path.join(out, 'registry.json'), 'utf8')) as RegistryDocument).templates).toHaveLength(2);

    const second = await buildRegistryCli(['--out', out, '--store', '/var/store', '--public-url', 'https://r.example.com', '--json'], { storeSource });
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ entries: 2, templates: 1, changed: false, written: [], warnings: [] });
  });

  it('from a store, removes the archive of a version the store no longer has (a purged one) from --out', async () => {
    const out = await tempDir();
    const archived = (v: string) => version('a', v, {}, { openArchive: () => Promise.resolve({ stream: Readable.from([Buffer.from(`bytes of ${v}`)]), size: `bytes of ${v}`.length }) });
    // Not memorySource: its structuredClone cannot copy openArchive.
    const source = { list: [archived('1.0.0'), archived('1.1.0')], versions: () => Promise.resolve(source.list.map((v) => ({ ...v }))) };
    const storeSource = () => Promise.resolve(source);
    const first = await buildRegistryCli(['--out', out, '--store', 's'], { storeSource });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect((await readdir(path.join(out, 'archives', 'a'))).sort()).toEqual(['1.0.0.tgz', '1.1.0.tgz']);
    source.list = [archived('1.0.0')];
    const again = await buildRegistryCli(['--out', out, '--store', 's', '--json'], { storeSource });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ removed: ['archives/a/1.1.0.tgz'] });
    expect(await readdir(path.join(out, 'archives', 'a'))).toEqual(['1.0.0.tgz']);
  });

  it('needs --out and exactly one source', async () => {
    expect((await buildRegistryCli(['--store', 'x'])).code).toBe(2);
    const neither = await buildRegistryCli(['--out', 'x']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/exactly one of --store <dir> and --github-config <file>/);
    expect((await buildRegistryCli(['--out', 'x', '--store', 's', '--github-config', 'c'])).code).toBe(2);
    expect((await buildRegistryCli(['--out', 'x', '--store', 's', '--public-url', 'nope'])).stderr).toMatch(/--public-url must be an http\(s\) URL/);
  });

  it('builds from GitHub releases with $GITHUB_TOKEN and prints the warnings', async () => {
    const github = await startFakeGitHub({ token: 'ghs_cli' });
    closers.push(() => github.close());
    github.addRepo('acme/t');
    github.addRepoRelease('acme/t', {
      tag_name: 'v1.0.0',
      assets: [
        { name: 't-1.0.0.tgz', content: 'x' },
        { name: 'template.json', content: manifest('t', '1.0.0') },
      ],
    });
    const dir = await tempDir();
    const configFile = path.join(dir, 'registry.config.json');
    await writeFile(configFile, JSON.stringify({ repositories: ['acme/t', 'acme/missing'] }));
    vi.stubEnv('GITHUB_TOKEN', 'ghs_cli');
    vi.stubEnv('GITHUB_API_URL', github.url);
    const result = await buildRegistryCli(['--out', path.join(dir, 'out'), '--github-config', configFile]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^registry\.json: 1 entries \(changed\), etag /);
    expect(result.stderr).toMatch(/warning: acme\/missing: skipped the repository: 404/);
  });

  it('refuses --github-config without a token, and an invalid config naming the file', async () => {
    const dir = await tempDir();
    const configFile = path.join(dir, 'registry.config.json');
    await writeFile(configFile, JSON.stringify({ repositories: 'acme/t' }));
    vi.stubEnv('GITHUB_TOKEN', '');
    const noToken = await buildRegistryCli(['--out', dir, '--github-config', configFile]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/needs a GitHub token in \$GITHUB_TOKEN/);
    vi.stubEnv('GITHUB_TOKEN', 'x');
    const invalid = await buildRegistryCli(['--out', dir, '--github-config', configFile]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(`error: ${configFile}: "repositories" must be a non-empty array`);
  });

  it('leaves out a version whose entry is invalid, with a warning, and builds the others', async () => {
    const out = await tempDir();
    const result = await buildRegistryCli(['--out', out, '--store', 's'], { storeSource: () => Promise.resolve(memorySource([version('a', 'x'), version('b', '1.0.0')])) });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/warning: left out a@x: its registry entry is invalid: \/version must be MAJOR\.MINOR\.PATCH/);
    expect(result.stdout).toMatch(/registry\.json: 1 entries/);
  });

  it('refuses to drop every template of the registry.json in --out unless --allow-empty', async () => {
    const out = await tempDir();
    expect((await buildRegistryCli(['--out', out, '--store', 's'], { storeSource: () => Promise.resolve(memorySource([version('a', '1.0.0')])) })).code).toBe(0);
    const before = await readFile(path.join(out, 'registry.json'));
    const refused = await buildRegistryCli(['--out', out, '--store', 's'], { storeSource: () => Promise.resolve(memorySource([])) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/would drop all 1 entries .*--allow-empty/);
    expect(await readFile(path.join(out, 'registry.json'))).toEqual(before);
    expect((await buildRegistryCli(['--out', out, '--store', 's', '--allow-empty'], { storeSource: () => Promise.resolve(memorySource([])) })).code).toBe(0);
  });

  it('exits 2 and writes nothing when --store names a folder that holds no store', async () => {
    const out = await tempDir();
    const empty = await tempDir();
    const result = await buildRegistryCli(['--out', out, '--store', empty]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--store: .* holds no registry store/);
    expect(await readdir(out)).toEqual([]);
    expect(await readdir(empty)).toEqual([]);
  });

  it('--store: publishes each archive as a hard link of the store\'s file, and a rebuild after one new version writes only that archive', async () => {
    const storeDir = await tempDir('tr-store-');
    const publishInto = async (name: string, v: string): Promise<void> => {
      const storage = await openSqliteStorage(storeDir);
      try {
        const { record } = await storage.tokens.createToken({ role: 'admin', owner: 'root' });
        const file = path.join(await tempDir(), 'upload.tgz');
        await writeFile(file, `archive of ${name}@${v}\n`.repeat(50));
        expect(await storage.versions.reserveVersion({ name, version: v, ...(await computeIntegrity(file)), owner: record.owner }, record)).toEqual({ reserved: true });
        await storage.versions.commitVersion(name, v, file, manifest(name, v));
      } finally {
        await storage.close();
      }
    };
    await publishInto('web-app', '1.0.0');
    const out = await tempDir();
    const first = await buildRegistryCli(['--out', out, '--store', storeDir, '--json']);
    expect(first.stderr).toBe('');
    expect((JSON.parse(first.stdout) as { written: string[] }).written).toContain('archives/web-app/1.0.0.tgz');
    const published = await stat(path.join(out, 'archives/web-app/1.0.0.tgz'));
    expect(published.ino).toBe((await stat(path.join(storeDir, 'archives/web-app/1.0.0.tgz'))).ino);

    await publishInto('web-app', '1.1.0');
    const second = await buildRegistryCli(['--out', out, '--store', storeDir, '--json']);
    expect(second.code).toBe(0);
    expect((JSON.parse(second.stdout) as { written: string[] }).written.filter((name) => name.startsWith('archives/'))).toEqual(['archives/web-app/1.1.0.tgz']);
    const again = await stat(path.join(out, 'archives/web-app/1.0.0.tgz'));
    expect([again.ino, again.mtimeMs]).toEqual([published.ino, published.mtimeMs]);
  });

  it.each([
    [['--out', 's3://'], /^error: --out: must name a bucket: s3:\/\/bucket\/prefix/],
    [['--out', 's3://Registry/x'], /^error: --out: bucket "Registry" must be 3 to 63 lowercase letters/],
    [['--out', 's3://registry/x?region=eu'], /^error: --out: must not have a query string or a fragment/],
    [['--out', 'gs://registry/x'], /^error: --out: must be a folder or an s3:\/\/bucket\/prefix URL/],
    [['--out', 'public', '--s3-endpoint', 'http://127.0.0.1:9000'], /^error: --s3-endpoint needs --out s3:\/\/bucket\/prefix/],
    [['--out', 'public', '--s3-force-path-style'], /^error: --s3-force-path-style needs --out s3:\/\/bucket\/prefix/],
    [['--out', 's3://registry/x', '--s3-endpoint', 'minio:9000'], /^error: --s3-endpoint must be an http\(s\) URL/],
  ])('exits 2 naming the flag for %j, before reading any source', async (argv, message) => {
    let opened = false;
    const storeSource = () => {
      opened = true;
      return Promise.resolve(memorySource([version('a', '1.0.0')]));
    };
    const result = await buildRegistryCli([...argv, '--store', 's'], { storeSource });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(opened).toBe(false);
  });

  it('exits 2 naming AWS_ENDPOINT_URL when it is not a URL', async () => {
    vi.stubEnv('AWS_ENDPOINT_URL', 'minio:9000');
    const result = await buildRegistryCli(['--out', 's3://registry/x', '--store', 's'], { storeSource: () => Promise.resolve(memorySource([version('a', '1.0.0')])) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: AWS_ENDPOINT_URL must be an http\(s\) URL/);
  });

  it('builds into s3://bucket/prefix with --s3-endpoint and --s3-force-path-style, credentials from the environment, and rewrites nothing the second time', async () => {
    const s3 = await startFakeS3(['registry']);
    closers.push(() => s3.close());
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
    const storeSource = () => Promise.resolve(memorySource([version('a', '1.0.0'), version('b', '2.0.0')]));
    const argv = ['--out', 's3://registry/cli/site/', '--s3-endpoint', s3.endpoint, '--s3-force-path-style', '--store', 's', '--json'];

    const first = await buildRegistryCli(argv, { storeSource });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout) as { outDir: string; changed: boolean; written: string[] };
    expect(report).toMatchObject({ outDir: 's3://registry/cli/site/', changed: true });
    expect(report.written.at(-1)).toBe('registry.json');

    const inspector = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: S3RVER_CREDENTIALS });
    closers.push(() => Promise.resolve(inspector.destroy()));
    const object = await inspector.send(new GetObjectCommand({ Bucket: 'registry', Key: 'cli/site/registry.json' }));
    expect(object.CacheControl).toBe('public, max-age=60, stale-while-revalidate=600');
    const document = JSON.parse(await object.Body!.transformToString()) as RegistryDocument;
    expect(document.templates.map((t) => t.id)).toEqual(['a', 'b']);

    const second = await buildRegistryCli(argv, { storeSource });
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ changed: false, written: [], removed: [] });
  });

  it('loads the AWS SDK only for an s3:// --out: neither a folder build nor the registry module loads it', async () => {
    // Runs against build/ (npm test builds first), in a fresh process: the SDK is CommonJS, so loading it leaves it in the require cache.
    const dir = await tempDir();
    const probe = `
const { createRequire } = await import('node:module');
const aws = () => Object.keys(createRequire(import.meta.url).cache).filter((f) => /node_modules\\/@(aws-sdk|smithy)\\//.test(f)).length;
const { runCli } = await import('./build/src/cli/index.js');
const code = await runCli(['build-registry', '--out', ${JSON.stringify(path.join(dir, 'out'))}, '--store', ${JSON.stringify(dir)}], { stdout: () => {}, stderr: () => {} });
const registry = await import('./build/src/registry/index.js');
const before = aws();
await (await registry.createS3Client({ endpoint: 'http://127.0.0.1:9' })).destroy();
console.log(JSON.stringify({ code, before, after: aws() }));`;
    const run = spawnSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', probe], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { code: number; before: number; after: number };
    expect(seen.code).toBe(2); // the folder holds no store: the command ran up to its source
    expect(seen.before).toBe(0);
    expect(seen.after).toBeGreaterThan(0); // the probe does see the SDK once it is loaded
  });
});
