/**
 * Our publishing clients against a registry that follows only the specification (a fixture server
 * with no project code, test/helpers/spec-registry.ts): a re-run of the same version is confirmed
 * from the registry's read side (the document's entry, the archive it serves) and succeeds; other
 * bytes under the same version fail naming the difference. The library, the CLI and the action.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { memoryReleaseApi } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { startSpecRegistry, type SpecRegistry } from '../helpers/spec-registry.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

const registries: SpecRegistry[] = [];
afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.close()));
});
async function specRegistry(): Promise<SpecRegistry> {
  const registry = await startSpecRegistry();
  registries.push(registry);
  return registry;
}

async function packed(readme = '# Demo\n') {
  const dir = await writePublishableTemplate({ 'README.md': readme });
  return packTemplate(dir, { outDir: await tempDir('tr-pack-') });
}

describe('publishing to a registry that follows only the specification', () => {
  it('publishes, then confirms a re-run of the same bytes from the archive the registry serves', async () => {
    const registry = await specRegistry();
    const pack = await packed();
    const first = await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    expect(first).toMatchObject({ uploaded: true, status: 201 });

    const again = await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    expect(again).toMatchObject({ uploaded: false, status: 409 });
    // It asked the read side: the nested version route (absent here), the document, the archive.
    expect(registry.requests).toEqual(
      expect.arrayContaining(['GET /some/prefix/templates/demo-template/versions/1.0.0', 'GET /some/prefix/registry.json', 'GET /some/prefix/archives/demo-template-1.0.0.tgz']),
    );
    expect(registry.document().templates).toHaveLength(1);
  });

  it('fails a re-run with other bytes, naming both integrities', async () => {
    const registry = await specRegistry();
    const pack = await packed();
    await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    const other = await packed('# Demo, changed\n');
    const error = await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: other.file, manifest: other.manifest, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).status).toBe(409);
    expect((error as Error).message).toMatch(/already published with different content \(the archive the registry serves for demo-template@1\.0\.0 has the integrity sha512-\S+, this archive has sha512-\S+\)/);
    expect((error as Error).message).toContain(other.integrity);
  });

  it('fails when the registry answers 409 but lists no such version', async () => {
    const registry = await specRegistry();
    const pack = await packed();
    await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
    registry.unlist('demo-template', '1.0.0');
    const error = await publishTemplate({ registryUrl: registry.url, token: registry.token, archive: pack.file, manifest: pack.manifest, retries: 0 }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/neither its version route nor its registry document lists demo-template@1\.0\.0/);
  });

  it('re-runs through the CLI: exit 0 and says the version was already there', async () => {
    const registry = await specRegistry();
    const dir = await writePublishableTemplate();
    const first = await cli('publish', dir, '--registry', registry.url, '--token', registry.token);
    expect(first.code, first.stderr).toBe(0);
    const again = await cli('publish', dir, '--registry', registry.url, '--token', registry.token);
    expect(again.code, again.stderr).toBe(0);
    expect(`${again.stdout}${again.stderr}`).toMatch(/already/i);
  });
});

/** A core that only records what a test reads. */
function quietCore(): { core: ActionCore; outputs: Record<string, string>; errors: string[] } {
  const outputs: Record<string, string> = {};
  const errors: string[] = [];
  const core: ActionCore = {
    setOutput: (name, value) => void (outputs[name] = value),
    setSecret: () => undefined,
    setFailed: (message) => void errors.push(message),
    info: () => undefined,
    warning: () => undefined,
    error: (message) => void errors.push(message),
    startGroup: () => undefined,
    endGroup: () => undefined,
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, outputs, errors };
}

describe('the publish action against a spec-only registry', () => {
  it('succeeds when re-run for the same tag', async () => {
    const registry = await specRegistry();
    const dir = await writePublishableTemplate();
    await writeFile(path.join(dir, 'template.json'), `${JSON.stringify({ ...publishableManifest }, null, 2)}\n`);
    const env = {
      GITHUB_WORKSPACE: path.dirname(dir),
      GITHUB_REPOSITORY: 'acme/demo',
      GITHUB_REF: 'refs/tags/v1.0.0',
      RUNNER_TEMP: await tempDir(),
      'INPUT_TEMPLATE-PATH': path.basename(dir),
      'INPUT_REGISTRY-URL': registry.url,
      'INPUT_REGISTRY-TOKEN': registry.token,
      'INPUT_GITHUB-TOKEN': 'ghs_secret',
      'INPUT_CREATE-RELEASE': 'true',
    };
    const { api } = memoryReleaseApi();
    const firstRun = quietCore();
    const first = await run({ env, core: firstRun.core, setExitCode: () => undefined, releaseApi: () => api });
    expect(first.ok, firstRun.errors.join('\n')).toBe(true);
    const secondRun = quietCore();
    const second = await run({ env, core: secondRun.core, setExitCode: () => undefined, releaseApi: () => api });
    expect(second.ok, secondRun.errors.join('\n')).toBe(true);
    expect(registry.document().templates.map((t) => `${String(t.id)}@${String(t.version)}`)).toEqual(['demo-template@1.0.0']);
    expect(JSON.parse(await readFile(path.join(dir, 'template.json'), 'utf8'))).toMatchObject({ name: 'demo-template' });
  });
});
