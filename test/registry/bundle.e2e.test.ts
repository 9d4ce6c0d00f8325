import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { indexLines, type IndexLines } from '../../src/core/registry-index.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { buildFreshBundle, runBundledAction, type ActionRun, type FreshBundle } from '../helpers/run-bundled-action.js';
import { manifest } from './memory-source.js';

let bundle: FreshBundle;
const GITHUB_TOKEN = 'ghs_registry_e2e_secret_789';

function runAction(workspace: string, env: Record<string, string>): Promise<ActionRun> {
  return runBundledAction(
    bundle.file,
    {
      GITHUB_REPOSITORY: 'acme/registry',
      GITHUB_EVENT_NAME: 'schedule',
      GITHUB_WORKSPACE: workspace,
      INPUT_CONFIG: 'registry.config.json',
      'INPUT_OUT-DIR': 'public',
      'INPUT_GITHUB-TOKEN': GITHUB_TOKEN,
      ...env,
    },
    { cwd: workspace },
  );
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function addTemplateRelease(github: FakeGitHub, repo: string, name: string, v: string, downloads: number): void {
  github.addRepoRelease(repo, {
    tag_name: `v${v}`,
    published_at: '2026-03-01T00:00:00Z',
    assets: [
      { name: `${name}-${v}.tgz`, content: `archive ${name} ${v}`, downloadCount: downloads },
      { name: 'template.json', content: manifest(name, v, { keywords: [name.split('-')[0] ?? name] }) },
    ],
  });
}

describe('the bundled registry action, run as the runner runs it', () => {
  beforeAll(async () => {
    bundle = await buildFreshBundle('registry-action/index');
  });
  afterAll(async () => {
    await bundle.remove();
  });

  it('builds the registry from GitHub releases; a re-run reports no change', async () => {
    const github = await startFakeGitHub({ token: GITHUB_TOKEN });
    closers.push(() => github.close());
    github.addRepo('acme/node-service', { stars: 5, forks: 1, issues: 2 });
    addTemplateRelease(github, 'acme/node-service', 'node-service', '1.0.0', 3);
    addTemplateRelease(github, 'acme/node-service', 'node-service', '1.1.0', 8);
    github.addRepo('acme/react-app', { stars: 1 });
    addTemplateRelease(github, 'acme/react-app', 'react-app', '0.1.0', 0);
    github.addRepoRelease('acme/react-app', { tag_name: 'v0.2.0', assets: [{ name: 'notes.txt', content: 'no template here' }] });

    const workspace = await tempDir('tr-registry-ws-');
    await writeFile(
      path.join(workspace, 'registry.config.json'),
      JSON.stringify({ repositories: ['acme/node-service', { repository: 'acme/react-app' }, 'acme/missing'] }),
    );
    const env = { GITHUB_API_URL: github.url, 'INPUT_PUBLIC-URL': 'https://acme.github.io/registry' };

    const first = await runAction(workspace, env);
    expect(first.stderr).not.toMatch(/Error/);
    expect(first.code, first.stdout).toBe(0);
    expect(first.outputs).toMatchObject({ changed: 'true', templates: '2', versions: '3' });

    const out = path.join(workspace, 'public');
    const registryBytes = await readFile(path.join(out, 'registry.json'));
    const document = JSON.parse(registryBytes.toString('utf8')) as RegistryDocument;
    expect(schemaErrors('registry-document', document)).toEqual([]);
    expect(document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['node-service@1.0.0', 'node-service@1.1.0', 'react-app@0.1.0']);
    expect(document.templates[1]).toMatchObject({
      downloadUrl: `${github.url}/acme/node-service/releases/download/v1.1.0/node-service-1.1.0.tgz`,
      repositoryUrl: `${github.url}/acme/node-service`,
      documentationUrl: `${github.url}/acme/node-service#readme`,
      stats: { downloads: 8, stars: 5, forks: 1, issues: 2 },
    });
    expect(first.outputs['last-updated']).toBe(document.lastUpdated);
    expect(gunzipSync(await readFile(path.join(out, 'registry.json.gz')))).toEqual(registryBytes);
    expect(brotliDecompressSync(await readFile(path.join(out, 'registry.json.br')))).toEqual(registryBytes);
    const html = await readFile(path.join(out, 'index.html'), 'utf8');
    // The catalog page loads the index beside it at run time.
    expect((indexLines(JSON.parse(await readFile(path.join(out, 'index.json'), 'utf8'))) as IndexLines).templates.map((t) => t.id)).toContain('node-service');
    expect(html).toContain('href="https://acme.github.io/registry/registry.json"');
    expect(JSON.parse(await readFile(path.join(out, 'templates', 'react-app.json'), 'utf8'))).toMatchObject({ id: 'react-app', versions: [{ version: '0.1.0' }] });

    // Skips are warnings, the build goes on.
    expect(first.stdout).toMatch(/::warning::acme\/react-app: skipped release v0\.2\.0: it has no template\.json asset/);
    expect(first.stdout).toMatch(/::warning::acme\/missing: skipped the repository: 404/);
    // The token is masked and never printed otherwise.
    const tokenLines = first.stdout.split('\n').filter((l) => l.includes(GITHUB_TOKEN));
    expect(tokenLines).toEqual([`::add-mask::${GITHUB_TOKEN}`]);
    expect(first.summary).toMatch(/Template registry/);
    expect(first.summary).toMatch(/node-service/);

    const mtime = (await stat(path.join(out, 'registry.json'))).mtimeMs;
    const second = await runAction(workspace, env);
    expect(second.code, second.stdout).toBe(0);
    expect(second.outputs).toMatchObject({ changed: 'false', etag: first.outputs.etag, 'last-updated': first.outputs['last-updated'] });
    expect((await stat(path.join(out, 'registry.json'))).mtimeMs).toBe(mtime);
  }, 60_000);

  it('fails with the config file named when it is invalid', async () => {
    const workspace = await tempDir('tr-registry-ws-');
    await writeFile(path.join(workspace, 'registry.config.json'), JSON.stringify({ repositories: ['not a repo'] }));
    const result = await runAction(workspace, { GITHUB_API_URL: 'http://127.0.0.1:9' });
    expect(result.code).not.toBe(0);
    expect(result.stdout).toMatch(/::error::.*registry\.config\.json: repositories\[0\] must be "owner\/repo"/);
  }, 60_000);
});
