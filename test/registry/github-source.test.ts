import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { createGitHubClient } from '../../src/github/index.js';
import {
  buildRegistry,
  githubReleasesSource,
  GithubSourceConfigError,
  GithubSourceError,
  loadGithubSourceConfig,
  parseGithubSourceConfig,
  type GithubSourceConfig,
} from '../../src/registry/index.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { manifest } from './memory-source.js';

const TOKEN = 'ghs_registry_test_token';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function fake(): Promise<FakeGitHub> {
  const github = await startFakeGitHub({ token: TOKEN });
  closers.push(() => github.close());
  return github;
}

function client(github: FakeGitHub) {
  return createGitHubClient({ token: TOKEN, baseUrl: github.url, retries: 0, throttle: { enabled: false }, log: () => undefined });
}

function config(...repositories: (string | { repository: string; templatePath?: string })[]): GithubSourceConfig {
  return parseGithubSourceConfig({ repositories }, 'registry.config.json');
}

/** A release as the publish action makes it: the archive and template.json. */
function published(name: string, v: string, downloads = 0, extra: Record<string, unknown> = {}) {
  return {
    tag_name: `v${v}`,
    assets: [
      { name: `${name}-${v}.tgz`, content: Buffer.from(`archive of ${name} ${v}`), downloadCount: downloads },
      { name: 'template.json', content: manifest(name, v, extra) },
    ],
  };
}

describe('githubReleasesSource', () => {
  it('turns each published release with a template.json and one .tgz into a version', async () => {
    const github = await fake();
    github.addRepo('acme/node-service', { stars: 12, forks: 3, issues: 4 });
    github.addRepoRelease('acme/node-service', { ...published('node-service', '1.0.0', 5), published_at: '2026-01-01T00:00:00Z' });
    github.addRepoRelease('acme/node-service', { ...published('node-service', '1.1.0', 7, { keywords: ['node'] }), published_at: '2026-02-01T00:00:00Z' });
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/node-service'), { octokit: client(github), onWarning: (m) => warnings.push(m) }).versions();

    expect(warnings).toEqual([]);
    expect(versions.map((v) => v.manifest.version).sort()).toEqual(['1.0.0', '1.1.0']);
    const v110 = versions.find((v) => v.manifest.version === '1.1.0');
    expect(v110).toEqual({
      manifest: manifest('node-service', '1.1.0', { keywords: ['node'] }),
      downloadUrl: `${github.url}/acme/node-service/releases/download/v1.1.0/node-service-1.1.0.tgz`,
      size: Buffer.byteLength('archive of node-service 1.1.0'),
      createdAt: '2026-02-01T00:00:00Z',
      repositoryUrl: `${github.url}/acme/node-service`,
      documentationUrl: `${github.url}/acme/node-service#readme`,
      stats: { downloads: 7, stars: 12, forks: 3, issues: 4 },
    });
    // Download counts are per version (its archive asset), not summed over the releases.
    expect(versions.find((v) => v.manifest.version === '1.0.0')?.stats.downloads).toBe(5);
    // template.json was downloaded through the API asset endpoint as octet-stream.
    const downloads = github.requests.filter((r) => /\/releases\/assets\/\d+$/.test(r.path));
    expect(downloads).toHaveLength(2);
    expect(downloads.every((r) => r.accept === 'application/octet-stream' && r.status === 302)).toBe(true);
  });

  it('reads a template.json served as octet-stream as well as JSON', async () => {
    const github = await fake();
    github.addRepo('acme/raw');
    github.addRepoRelease('acme/raw', {
      tag_name: 'v2.0.0',
      assets: [
        { name: 'raw-2.0.0.tgz', content: 'tgz' },
        { name: 'template.json', content: JSON.stringify(manifest('raw', '2.0.0')), contentType: 'application/octet-stream' },
      ],
    });
    const versions = await githubReleasesSource(config('acme/raw'), { octokit: client(github) }).versions();
    expect(versions.map((v) => `${v.manifest.name}@${v.manifest.version}`)).toEqual(['raw@2.0.0']);
  });

  it('skips drafts and pre-releases silently, and releases without the assets with a warning', async () => {
    const github = await fake();
    github.addRepo('acme/t');
    github.addRepoRelease('acme/t', { ...published('t', '1.0.0'), draft: true });
    github.addRepoRelease('acme/t', { ...published('t', '1.1.0'), prerelease: true });
    github.addRepoRelease('acme/t', { tag_name: 'v0.9.0', assets: [] });
    github.addRepoRelease('acme/t', { tag_name: 'v0.9.1', assets: [{ name: 'template.json', content: manifest('t', '0.9.1') }] });
    github.addRepoRelease('acme/t', {
      tag_name: 'v0.9.2',
      assets: [
        { name: 'a.tgz', content: 'a' },
        { name: 'b.tgz', content: 'b' },
        { name: 'template.json', content: manifest('t', '0.9.2') },
      ],
    });
    github.addRepoRelease('acme/t', published('t', '1.2.0'));
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/t'), { octokit: client(github), onWarning: (m) => warnings.push(m) }).versions();
    expect(versions.map((v) => v.manifest.version)).toEqual(['1.2.0']);
    expect(warnings.sort()).toEqual([
      'acme/t: skipped release v0.9.0: it has no template.json asset',
      'acme/t: skipped release v0.9.1: it has no .tgz asset',
      'acme/t: skipped release v0.9.2: it has 2 .tgz assets (a.tgz, b.tgz); expected one',
    ]);
  });

  it('skips a release whose template.json version differs from its tag, or that is invalid', async () => {
    const github = await fake();
    github.addRepo('acme/t');
    github.addRepoRelease('acme/t', { tag_name: 'v1.0.1', assets: published('t', '1.0.0').assets });
    github.addRepoRelease('acme/t', { tag_name: 'v1.0.2', assets: [{ name: 't.tgz', content: 'x' }, { name: 'template.json', content: { name: 't', version: '1.0.2' } }] });
    github.addRepoRelease('acme/t', { tag_name: 'v1.0.3', assets: [{ name: 't.tgz', content: 'x' }, { name: 'template.json', content: '{ nope', contentType: 'text/plain' }] });
    github.addRepoRelease('acme/t', published('t', '1.1.0'));
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/t'), { octokit: client(github), onWarning: (m) => warnings.push(m) }).versions();
    expect(versions.map((v) => v.manifest.version)).toEqual(['1.1.0']);
    expect(warnings).toContain('acme/t: skipped release v1.0.1: template.json says version 1.0.0, the tag says 1.0.1');
    expect(warnings.find((w) => w.includes('v1.0.2'))).toMatch(/template\.json is invalid: .*description is required/);
    expect(warnings.find((w) => w.includes('v1.0.3'))).toMatch(/template\.json could not be read/);
  });

  it('skips a release whose entry would break the registry, so one bad release cannot fail the build', async () => {
    const github = await fake();
    github.addRepo('acme/t');
    github.addRepoRelease('acme/t', {
      tag_name: 'v1.0.0',
      published_at: 'yesterday',
      assets: published('t', '1.0.0').assets,
    });
    github.addRepoRelease('acme/t', published('t', '1.1.0'));
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/t'), { octokit: client(github), onWarning: (m) => warnings.push(m) }).versions();
    expect(versions.map((v) => v.manifest.version)).toEqual(['1.1.0']);
    expect(warnings).toEqual([expect.stringMatching(/^acme\/t: skipped release v1\.0\.0: its registry entry would be invalid: \/createdAt must be an ISO 8601 timestamp/)]);
  });

  it('skips a repository that answers 404 or fails, with a warning, and goes on with the others', async () => {
    const github = await fake();
    github.addRepo('acme/good');
    github.addRepoRelease('acme/good', published('good', '1.0.0'));
    github.addRepo('acme/broken');
    github.failRepo('acme/broken', 'drop');
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/missing', 'acme/good', 'acme/broken'), {
      octokit: client(github),
      onWarning: (m) => warnings.push(m),
    }).versions();
    expect(versions.map((v) => v.manifest.name)).toEqual(['good']);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^acme\/missing: skipped the repository: 404 Not Found/);
    expect(warnings[1]).toMatch(/^acme\/broken: skipped the repository: /);
  });

  it('fails when no repository at all can be read (e.g. a bad token)', async () => {
    const github = await fake();
    github.addRepo('acme/good');
    const octokit = createGitHubClient({ token: 'wrong', baseUrl: github.url, retries: 0, throttle: { enabled: false }, log: () => undefined });
    const warnings: string[] = [];
    await expect(githubReleasesSource(config('acme/good'), { octokit, onWarning: (m) => warnings.push(m) }).versions()).rejects.toThrow(GithubSourceError);
    expect(warnings[0]).toMatch(/401 Bad credentials/);
  });

  it('follows the pagination of the releases', async () => {
    const github = await fake();
    github.addRepo('acme/many');
    for (let i = 0; i < 105; i++) github.addRepoRelease('acme/many', published('many', `1.0.${i}`));
    const versions = await githubReleasesSource(config('acme/many'), { octokit: client(github) }).versions();
    expect(versions).toHaveLength(105);
    expect(github.requests.filter((r) => r.path === '/repos/acme/many/releases')).toHaveLength(2);
  });

  it('links the documentation to the template folder when templatePath is given', async () => {
    const github = await fake();
    github.addRepo('acme/mono');
    github.addRepoRelease('acme/mono', published('web', '1.0.0'));
    const versions = await githubReleasesSource(config({ repository: 'acme/mono', templatePath: './templates/web/' }), { octokit: client(github) }).versions();
    expect(versions[0]?.documentationUrl).toBe(`${github.url}/acme/mono/tree/HEAD/templates/web#readme`);
  });

  it('keeps the first repository of the config when two publish the same name and version', async () => {
    const github = await fake();
    github.addRepo('acme/one');
    github.addRepo('acme/two');
    github.addRepoRelease('acme/one', published('same', '1.0.0', 1));
    github.addRepoRelease('acme/two', published('same', '1.0.0', 2));
    const warnings: string[] = [];
    const versions = await githubReleasesSource(config('acme/one', 'acme/two'), { octokit: client(github), onWarning: (m) => warnings.push(m) }).versions();
    expect(versions).toHaveLength(1);
    expect(versions[0]?.stats.downloads).toBe(1);
    expect(warnings).toEqual(['acme/two: skipped same@1.0.0: acme/one already publishes it']);
  });

  it('feeds buildRegistry with entries that validate', async () => {
    const github = await fake();
    github.addRepo('acme/node-service', { stars: 1 });
    github.addRepoRelease('acme/node-service', published('node-service', '1.0.0', 3, { stability: 'beta', author: { name: 'Ada' } }));
    const outDir = await tempDir();
    const { document } = await buildRegistry(githubReleasesSource(config('acme/node-service'), { octokit: client(github) }), { outDir });
    expect(schemaErrors('registry-document', document)).toEqual([]);
    expect(document.templates[0]).toMatchObject({ id: 'node-service', stability: 'beta', stats: { downloads: 3, stars: 1 } });
  });
});

describe('loadGithubSourceConfig', () => {
  async function configFile(content: string): Promise<string> {
    const file = path.join(await tempDir(), 'registry.config.json');
    await writeFile(file, content);
    return file;
  }

  it('reads strings and objects', async () => {
    const file = await configFile(JSON.stringify({ repositories: ['acme/a', { repository: 'acme/b', templatePath: 'templates/b' }] }));
    expect(await loadGithubSourceConfig(file)).toEqual({
      repositories: [
        { owner: 'acme', repo: 'a' },
        { owner: 'acme', repo: 'b', templatePath: 'templates/b' },
      ],
    });
  });

  it('names the file and the entry in its errors', async () => {
    const cases: [unknown, RegExp][] = [
      [[], /must be a JSON object/],
      [{}, /"repositories" must be a non-empty array/],
      [{ repositories: [] }, /"repositories" must be a non-empty array/],
      [{ repositories: ['acme/a', 'not-a-repo'] }, /repositories\[1\] must be "owner\/repo" \(got "not-a-repo"\)/],
      [{ repositories: ['a/b/c'] }, /repositories\[0\] must be "owner\/repo"/],
      [{ repositories: [{ repo: 'acme/a' }] }, /repositories\[0\] has an unknown field "repo"/],
      [{ repositories: [{}] }, /repositories\[0\]\.repository is required/],
      [{ repositories: [{ repository: 'acme/a', templatePath: '../x' }] }, /repositories\[0\]\.templatePath must be a relative folder/],
      [{ repositories: [42] }, /repositories\[0\] must be "owner\/repo" or/],
      [{ repositories: ['acme/a', 'ACME/A'] }, /repositories\[1\] repeats ACME\/A/],
      [{ repos: ['acme/a'] }, /unknown field "repos"/],
    ];
    for (const [value, pattern] of cases) {
      const file = await configFile(JSON.stringify(value));
      const error = await loadGithubSourceConfig(file).catch((e: unknown) => e);
      expect(error, JSON.stringify(value)).toBeInstanceOf(GithubSourceConfigError);
      expect((error as Error).message.startsWith(`${file}: `)).toBe(true);
      expect((error as Error).message).toMatch(pattern);
    }
  });

  it('reports a missing file and invalid JSON', async () => {
    const dir = await tempDir();
    await expect(loadGithubSourceConfig(path.join(dir, 'nope.json'))).rejects.toThrow(/nope\.json: no such file/);
    await expect(loadGithubSourceConfig(await configFile('{ "repositories": [ '))).rejects.toThrow(/registry\.config\.json: not valid JSON/);
  });
});
