import { readFile } from 'node:fs/promises';
import path from 'node:path';

import type { AnnotationProperties } from '@actions/core';
import { afterEach, describe, expect, it } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import type { GitHubRelease, GitHubReleaseAsset, ReleaseApi } from '../../src/github/index.js';
import type { PublishOptions, PublishResult } from '../../src/publish/index.js';
import { tempDir, validPrompts } from '../helpers/fixtures.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

type Cell = string | { data: string; header?: boolean };

/** A core that records what the action does with it, in order. */
function recordingCore() {
  const calls = {
    /** Group starts and ends, annotations and log lines, in order. */
    log: [] as string[],
    annotations: [] as { level: 'error' | 'warning'; message: string; properties?: AnnotationProperties }[],
    outputs: {} as Record<string, string>,
    secrets: [] as string[],
    failed: [] as string[],
    summaryRows: [] as string[][],
    summaryText: [] as string[],
    summaryWritten: false,
  };
  const core: ActionCore = {
    setOutput: (name, value) => void (calls.outputs[name] = value),
    setSecret: (secret) => void calls.secrets.push(secret),
    setFailed: (message) => void calls.failed.push(message),
    info: (message) => void calls.log.push(`info ${message}`),
    warning: (message, properties) => {
      calls.log.push(`warning ${message}`);
      calls.annotations.push({ level: 'warning', message, ...(properties ? { properties } : {}) });
    },
    error: (message, properties) => {
      calls.log.push(`error ${message}`);
      calls.annotations.push({ level: 'error', message, ...(properties ? { properties } : {}) });
    },
    startGroup: (name) => void calls.log.push(`group ${name}`),
    endGroup: () => void calls.log.push('endgroup'),
    summary: {
      addHeading: (text) => calls.summaryText.push(text),
      addTable: (rows: Cell[][]) => {
        for (const row of rows) calls.summaryRows.push(row.map((cell) => (typeof cell === 'string' ? cell : cell.data)));
      },
      addRaw: (text) => calls.summaryText.push(text),
      write: () => {
        calls.summaryWritten = true;
        return Promise.resolve();
      },
    },
  };
  return { core, calls };
}

const groups = (log: string[]): string[] => log.filter((l) => l.startsWith('group ')).map((l) => l.slice('group '.length));
const row = (rows: string[][], step: string): string | undefined => rows.find((r) => r[0] === step)?.[1];

/** An upload that records its calls and answers like a registry accepting the archive. */
function recordingUpload(answer: Partial<PublishResult> = {}) {
  const calls: PublishOptions[] = [];
  const upload = async (options: PublishOptions): Promise<PublishResult> => {
    calls.push(options);
    options.onRetry?.({ attempt: 1, delayMs: 10, reason: 'HTTP 503 SERVICE_UNAVAILABLE: try later' });
    return Promise.resolve({ uploaded: true, status: 201, attempts: 2, integrity: options.integrity ?? '', ...answer });
  };
  return { upload, calls };
}

/** A release API in memory. */
function memoryReleaseApi() {
  const releases: (GitHubRelease & { assets: GitHubReleaseAsset[] })[] = [];
  const api: ReleaseApi = {
    findReleaseByTag: (tag) => Promise.resolve(releases.find((r) => r.tag_name === tag)),
    createRelease: ({ tag, name, body, draft }) => {
      const release = { id: releases.length + 1, tag_name: tag, name, body, draft, html_url: `https://github.test/r/${tag}`, upload_url: 'https://uploads.test{?name}', assets: [] };
      releases.push(release);
      return Promise.resolve(release);
    },
    updateRelease: (id, input) => {
      const release = releases.find((r) => r.id === id)!;
      Object.assign(release, input);
      return Promise.resolve(release);
    },
    listAssets: (id) => Promise.resolve(releases.find((r) => r.id === id)?.assets ?? []),
    deleteAsset: () => Promise.resolve(),
    uploadAsset: (release, asset) => {
      const uploaded = { id: 100 + release.id, name: asset.name, browser_download_url: `https://github.test/d/${asset.name}` };
      releases.find((r) => r.id === release.id)!.assets.push(uploaded);
      return Promise.resolve(uploaded);
    },
  };
  return { api, releases };
}

/** The inputs of a dry run of `dir` at version 1.0.0, from the workspace above it. */
function dryRunEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    GITHUB_WORKSPACE: path.dirname(dir),
    'INPUT_TEMPLATE-PATH': path.basename(dir),
    INPUT_VERSION: '1.0.0',
    'INPUT_DRY-RUN': 'true',
    'INPUT_CREATE-RELEASE': 'false',
    // The runner's temp folder: the archive goes there (the template's temp parent, removed after the test).
    RUNNER_TEMP: path.dirname(dir),
    ...extra,
  };
}

describe('the publish action run()', () => {
  it('runs every check in its own group and packs on a dry run, with the outputs and the summary', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const outcome = await run({ env: dryRunEnv(dir, { RUNNER_TEMP: await tempDir() }), core, upload });

    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(groups(calls.log)).toEqual(['Validate', 'Test generation', 'Lint', 'Release notes', 'Pack']);
    expect(calls.log.filter((l) => l === 'endgroup')).toHaveLength(5);
    expect(calls.log).toContainEqual(expect.stringMatching(/^info PASS .*: \d+ files$/));
    expect(uploads).toHaveLength(0);

    const archive = calls.outputs.archive ?? '';
    expect(path.basename(archive)).toBe('demo-template-1.0.0.tgz');
    expect(calls.outputs).toEqual({
      version: '1.0.0',
      archive,
      size: String((await readFile(archive)).length),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      integrity: expect.stringMatching(/^sha512-/),
      uploaded: 'false',
    });
    expect(outcome.outputs).toEqual(calls.outputs);

    expect(calls.summaryWritten).toBe(true);
    expect(calls.summaryText[0]).toBe('Template publish');
    expect(calls.summaryRows.map((r) => r[0])).toEqual(['Step', 'Validate', 'Test generation', 'Lint', 'Release notes', 'Pack', 'Upload', 'Release']);
    expect(row(calls.summaryRows, 'Validate')).toBe('valid');
    expect(row(calls.summaryRows, 'Release notes')).toBe('section for 1.0.0 found in CHANGELOG.md');
    expect(row(calls.summaryRows, 'Upload')).toBe('skipped (dry-run)');
    expect(row(calls.summaryRows, 'Release')).toBe('skipped (dry-run)');
    expect(calls.summaryText).toContain(`Integrity: \`${calls.outputs.integrity}\``);
  });

  it('annotates validation errors with the file relative to the workspace, its line and column, and stops', async () => {
    const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, category: 'cli' } });
    const { core, calls } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const outcome = await run({ env: dryRunEnv(dir, { 'INPUT_DRY-RUN': 'false', 'INPUT_REGISTRY-URL': 'https://registry.test', 'INPUT_REGISTRY-TOKEN': 'tr_secret' }), core, upload });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual(['template validation failed with 1 error(s)']);
    const line = (await readFile(path.join(dir, 'template.json'), 'utf8')).split('\n').findIndex((l) => l.includes('"category"')) + 1;
    expect(calls.annotations).toEqual([
      {
        level: 'error',
        message: expect.stringMatching(/^template\.json \/category: must be one of/),
        properties: { title: 'template validation: ENUM', file: `${path.basename(dir)}/template.json`, startLine: line, startColumn: expect.any(Number) },
      },
    ]);
    expect(groups(calls.log)).toEqual(['Validate']);
    expect(calls.log.at(-1)).toBe('endgroup');
    expect(row(calls.summaryRows, 'Validate')).toBe('failed: template validation failed with 1 error(s)');
    expect(calls.outputs).toEqual({ version: '1.0.0' });
    expect(calls.secrets).toEqual(['tr_secret']);
    expect(uploads).toHaveLength(0);
    expect(calls.summaryWritten).toBe(true);
  });

  it('fails on a lint error with an annotation at its place, before packing', async () => {
    const prompts = { prompts: [...validPrompts.prompts, { name: 'databse', message: 'Database?', type: 'input' }] };
    const dir = await writePublishableTemplate({ 'template.prompts.json': prompts });
    const { core, calls } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir), core });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual(['lint found 1 error(s)']);
    const lintError = calls.annotations.find((a) => a.properties?.title === 'lint: prompt-unknown-variable');
    expect(lintError).toMatchObject({
      level: 'error',
      message: 'prompt "databse" names unknown variable "databse"',
      properties: { file: `${path.basename(dir)}/template.prompts.json`, startLine: expect.any(Number), startColumn: expect.any(Number) },
    });
    expect(groups(calls.log)).toEqual(['Validate', 'Test generation', 'Lint']);
    expect(calls.outputs.archive).toBeUndefined();
  });

  it('fails when a generated project fails its test command', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir, { 'INPUT_TEST-COMMAND': 'exit 3' }), core });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual(['test generation failed']);
    expect(calls.annotations).toContainEqual({ level: 'error', message: expect.stringMatching(/: command exited with 3: exit 3$/), properties: { title: 'test generation' } });
    expect(row(calls.summaryRows, 'Test generation')).toBe('failed: test generation failed');
    expect(row(calls.summaryRows, 'Lint')).toBeUndefined();
  });

  it('needs the changelog section of the version even when no release is made', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir, { INPUT_VERSION: '1.1.0' }), core });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual(['CHANGELOG.md has no section for version 1.1.0: the release needs one']);
    expect(calls.annotations).toContainEqual({
      level: 'error',
      message: 'CHANGELOG.md has no section for 1.1.0 (a heading such as "## [1.1.0] - YYYY-MM-DD")',
      properties: { title: 'release notes', file: `${path.basename(dir)}/CHANGELOG.md` },
    });
    expect(calls.outputs.archive).toBeUndefined();
  });

  it('uploads, reports retries as warnings and creates the release from the changelog section', async () => {
    const dir = await writePublishableTemplate({ 'CHANGELOG.md': '# Changelog\n\n## [1.2.0] - 2026-02-01\n\n- Second release\n\n## [1.0.0] - 2026-01-01\n\n- First release\n' });
    const { core, calls } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const { api, releases } = memoryReleaseApi();
    const tokens: string[] = [];
    const outcome = await run({
      env: {
        GITHUB_WORKSPACE: path.dirname(dir),
        GITHUB_REPOSITORY: 'acme/demo',
        GITHUB_REF: 'refs/tags/v1.2.0',
        RUNNER_TEMP: await tempDir(),
        'INPUT_TEMPLATE-PATH': path.basename(dir),
        'INPUT_REGISTRY-URL': 'https://registry.test/',
        'INPUT_REGISTRY-TOKEN': 'tr_secret',
        'INPUT_GITHUB-TOKEN': 'ghs_secret',
      },
      core,
      upload,
      releaseApi: (token, owner, repo) => {
        tokens.push(`${token} ${owner}/${repo}`);
        return api;
      },
    });

    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.secrets).toEqual(['tr_secret', 'ghs_secret']);
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({ registryUrl: 'https://registry.test/', token: 'tr_secret', archive: calls.outputs.archive, integrity: calls.outputs.integrity });
    expect(uploads[0]!.manifest).toMatchObject({ name: 'demo-template', version: '1.2.0' });
    expect(calls.annotations).toContainEqual({ level: 'warning', message: 'upload attempt 1 failed (HTTP 503 SERVICE_UNAVAILABLE: try later); retrying in 10 ms' });

    expect(tokens).toEqual(['ghs_secret acme/demo']);
    expect(releases).toHaveLength(1);
    expect(releases[0]).toMatchObject({ tag_name: 'v1.2.0', name: 'demo-template 1.2.0', body: '- Second release', draft: false });
    expect(releases[0]!.assets.map((a) => a.name)).toEqual(['demo-template-1.2.0.tgz', 'template.json']);

    expect(groups(calls.log)).toEqual(['Validate', 'Test generation', 'Lint', 'Release notes', 'Pack', 'Upload', 'Release']);
    expect(calls.outputs).toMatchObject({
      version: '1.2.0',
      uploaded: 'true',
      'download-url': 'https://registry.test/templates/demo-template/versions/1.2.0/archive',
      'release-id': '1',
      'release-url': 'https://github.test/r/v1.2.0',
    });
    expect(row(calls.summaryRows, 'Upload')).toBe('uploaded to https://registry.test/');
    expect(row(calls.summaryRows, 'Release')).toBe('created https://github.test/r/v1.2.0');
  });

  it('fails on a bad input before any step, and still writes the summary', async () => {
    const { core, calls } = recordingCore();
    const outcome = await run({ env: { GITHUB_REF: 'refs/heads/main', 'INPUT_DRY-RUN': 'true' }, core });
    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual([expect.stringMatching(/^no version: this run is not on a tag/)]);
    expect(groups(calls.log)).toEqual([]);
    expect(calls.summaryRows).toEqual([['Step', 'Result']]);
    expect(calls.summaryWritten).toBe(true);
  });

  describe('with no environment given', () => {
    const saved = { ...process.env };
    afterEach(() => {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    });

    it('reads its inputs from process.env', async () => {
      const dir = await writePublishableTemplate();
      Object.assign(process.env, dryRunEnv(dir, { INPUT_VERSION: 'v1.0.0' }));
      const { core, calls } = recordingCore();
      const outcome = await run({ core });
      expect(calls.failed).toEqual([]);
      expect(outcome.outputs).toMatchObject({ version: '1.0.0', uploaded: 'false' });
    });
  });
});
