import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { registerBuildRegistry, type BuildRegistryDependencies } from '../../src/cli/commands/build-registry.js';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { startFakeGitHubRepos } from '../helpers/fake-github-repos.js';
import { tempDir } from '../helpers/fixtures.js';
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

  it('needs --out and exactly one source', async () => {
    expect((await buildRegistryCli(['--store', 'x'])).code).toBe(2);
    const neither = await buildRegistryCli(['--out', 'x']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/exactly one of --store <dir> and --github-config <file>/);
    expect((await buildRegistryCli(['--out', 'x', '--store', 's', '--github-config', 'c'])).code).toBe(2);
    expect((await buildRegistryCli(['--out', 'x', '--store', 's', '--public-url', 'nope'])).stderr).toMatch(/--public-url must be an http\(s\) URL/);
  });

  it('builds from GitHub releases with $GITHUB_TOKEN and prints the warnings', async () => {
    const github = await startFakeGitHubRepos({ token: 'ghs_cli' });
    closers.push(() => github.close());
    github.addRepo('acme/t');
    github.addRelease('acme/t', {
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
});
