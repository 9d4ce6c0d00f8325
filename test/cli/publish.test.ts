import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { startFakeRegistry, type FakeRegistry } from '../helpers/fake-registry.js';
import { validManifest, validPrompts, withoutEnvironment, writeTemplate } from '../helpers/fixtures.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

const TOKEN = 'cli_secret_token_fedcba9876543210';
const CHANGELOG_1_0_0 = '# Changelog\n\n## [1.0.0] - 2026-01-01\n\n- First release\n';
const ENV_NAMES = ['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL'] as const;

/** A program shaped like the real one (root `--version`, exitOverride), with only `publish`. */
async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return cli(...argv);
}

let fake: FakeRegistry;
withoutEnvironment(ENV_NAMES);

beforeEach(async () => {
  fake = await startFakeRegistry({ token: TOKEN });
});

afterEach(async () => {
  await fake.close();
});

describe('template-registry publish', () => {
  it('checks, packs and uploads a template, printing each step on stderr', async () => {
    const dir = await writePublishableTemplate();
    const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN);
    expect(result.code).toBe(0);
    const steps = result.stderr.split('\n').filter((line) => /^[A-Z]/.test(line));
    expect(steps).toEqual([
      'Validate: valid',
      expect.stringMatching(/^Test generation: \d+ answer set\(s\) passed$/),
      'Lint: 0 error(s), 3 warning(s)',
      'Release notes: section for 1.0.0 found in CHANGELOG.md',
      expect.stringMatching(/^Pack: demo-template-1\.0\.0\.tgz: \d+ bytes, \d+ files, sha256 [0-9a-f]{64}$/),
      `Upload: uploaded to ${fake.url}`,
    ]);
    expect(result.stderr).toContain('template.vars.json:8:20 warning variable-unused variable "description" is not used');
    expect(fake.uploads).toHaveLength(1);
    const upload = fake.uploads[0]!;
    expect(upload).toMatchObject({ name: 'demo-template', version: '1.0.0', fileName: 'demo-template-1.0.0.tgz' });
    expect(upload.manifest).toMatchObject({ name: 'demo-template', version: '1.0.0' });
    expect(result.stdout).toBe(
      `published demo-template@1.0.0 (${upload.integrity})\n` +
        `download: ${fake.url}/templates/demo-template/versions/1.0.0/archive\n` +
        `create a project from it: npx template-registry create demo-template@1.0.0 my-app --registry ${fake.url}/registry.json\n`,
    );
  });

  it('stamps --version (without a leading v) and reports a re-run as already published', async () => {
    const dir = await writePublishableTemplate({ 'CHANGELOG.md': `${CHANGELOG_1_0_0}\n## [2.1.0] - 2026-03-01\n\n- Second release\n` });
    const first = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--version', 'v2.1.0');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^published demo-template@2\.1\.0 \(sha512-/);
    expect(fake.uploads[0]!.manifest).toMatchObject({ version: '2.1.0' });

    const again = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--version', '2.1.0');
    expect(again.code).toBe(0);
    expect(again.stdout.split('\n').slice(0, 2)).toEqual([
      'already published demo-template@2.1.0 with the same content',
      `download: ${fake.url}/templates/demo-template/versions/2.1.0/archive`,
    ]);
    expect(fake.uploads).toHaveLength(1);
  });

  it('takes the registry and token from the environment', async () => {
    process.env.TEMPLATE_REGISTRY_URL = fake.url;
    process.env.TEMPLATE_REGISTRY_TOKEN = TOKEN;
    const result = await run('publish', await writePublishableTemplate());
    expect(result.code).toBe(0);
    expect(fake.uploads[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('prints the result as JSON and leaves --exclude matches out', async () => {
    const dir = await writePublishableTemplate({ 'template/notes.local.md': 'private\n' });
    const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--exclude', '**/*.local.md', '--json');
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout);
    expect(parsed).toMatchObject({
      name: 'demo-template',
      version: '1.0.0',
      uploaded: true,
      status: 201,
      attempts: 1,
      integrity: fake.uploads[0]!.integrity,
      downloadUrl: `${fake.url}/templates/demo-template/versions/1.0.0/archive`,
      size: fake.uploads[0]!.size,
    });
    expect(parsed.files).toContain('template/README.md');
    expect(parsed.files).not.toContain('template/notes.local.md');
  });

  it('exits 2 without a registry or a token', async () => {
    const dir = await writePublishableTemplate();
    const noRegistry = await run('publish', dir, '--token', TOKEN);
    expect(noRegistry.code).toBe(2);
    expect(noRegistry.stderr).toMatch(/no registry: pass --registry <url> or set TEMPLATE_REGISTRY_URL/);
    const noToken = await run('publish', dir, '--registry', fake.url);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/no API token: set TEMPLATE_REGISTRY_TOKEN/);
    const badVersion = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--version', '1.0');
    expect(badVersion.code).toBe(2);
    const leadingZero = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--version', 'v01.0.0');
    expect(leadingZero.code).toBe(2);
    expect(leadingZero.stderr).toContain('--version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "v01.0.0")');
    expect(fake.requests).toBe(0);
  });

  it('exits 1 and uploads nothing when the template is invalid', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, description: 'short' }, 'CHANGELOG.md': null });
    const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('template.json /description: must be at least 10 characters long');
    expect(result.stderr).toContain('CHANGELOG.md: required file is missing');
    expect(fake.requests).toBe(0);
  });

  it('exits 1 with the registry error on a rejected token, without printing it', async () => {
    const wrong = 'wrong_token_0000000000';
    const result = await run('publish', await writePublishableTemplate(), '--registry', fake.url, '--token', wrong);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: HTTP 401 UNAUTHORIZED: missing or invalid API token/m);
    expect(result.stderr).not.toContain(wrong);
    expect(result.stdout).toBe('');
    expect(fake.requests).toBe(1);
  });

  it('exits 1 when the version exists with other content', async () => {
    const other = `sha512-${Buffer.alloc(64, 1).toString('base64')}`;
    await fake.close();
    fake = await startFakeRegistry({ token: TOKEN, existing: [{ name: 'demo-template', version: '1.0.0', integrity: other }] });
    const result = await run('publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('demo-template@1.0.0 is already published with different content');
    expect(result.stderr).toContain(other);
  });

  it('reports retries on stderr and still succeeds', async () => {
    fake.fail(['503']);
    const result = await run('publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN);
    expect(result.code).toBe(0);
    expect(result.stderr.split('\n').filter((line) => line.startsWith('attempt'))).toEqual([
      expect.stringMatching(/^attempt 1 failed \(HTTP 503 SERVICE_UNAVAILABLE: service unavailable\); retrying in \d+\.\d s$/),
    ]);
    expect(result.stdout).toMatch(/^published demo-template@1\.0\.0/);
  });

  it('warns about a change log without a section for the version and publishes it', async () => {
    const dir = await writePublishableTemplate();
    const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--version', '1.1.0');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      'warning: CHANGELOG.md has no section for 1.1.0 (a heading such as "## [1.1.0] - YYYY-MM-DD"); the release notes will say the change log has no entry for 1.1.0\n',
    );
    expect(result.stderr).toContain('Release notes: no entry for 1.1.0 in CHANGELOG.md: the release notes say so\n');
    expect(result.stderr).not.toMatch(/^error/m);
    expect(result.stdout).toMatch(/^published demo-template@1\.1\.0/);
    expect(fake.uploads).toHaveLength(1);
  });

  describe('refuses what the publish action refuses, with its messages, and uploads nothing', () => {
    it('a lint error: a prompt for an unknown variable', async () => {
      const prompts = { prompts: [...validPrompts.prompts, { name: 'databse', message: 'Database?', type: 'input' }] };
      const dir = await writePublishableTemplate({ 'template.prompts.json': prompts });
      const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^template\.prompts\.json:\d+:\d+ error prompt-unknown-variable prompt "databse" names unknown variable "databse"$/m);
      expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('error: lint found 1 error(s)');
      expect(result.stdout).toBe('');
      expect(fake.requests).toBe(0);
      expect(fake.uploads).toHaveLength(0);
    });

    it('a generated project whose test command fails; --skip-test is the way past it', async () => {
      const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, test: { command: 'exit 7' } } });
      const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/: command exited with 7: exit 7$/m);
      expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('error: test generation failed');
      expect(fake.requests).toBe(0);

      const skipped = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--skip-test');
      expect(skipped.code).toBe(0);
      expect(skipped.stderr).toContain('Test generation: skipped (skip-test)\n');
      expect(fake.uploads).toHaveLength(1);
    });


    it('an invalid template, with the validation lines, even with --skip-test', async () => {
      const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, version: '1.0' } });
      const result = await run('publish', dir, '--registry', fake.url, '--token', TOKEN, '--skip-test');
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^template\.json \/version: must be MAJOR\.MINOR\.PATCH/m);
      expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('error: template validation failed with 1 error(s)');
      expect(fake.requests).toBe(0);
    });
  });
});
