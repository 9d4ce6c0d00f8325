import { readFile } from 'node:fs/promises';
import path from 'node:path';

import type { AnnotationProperties } from '@actions/core';
import { afterEach, describe, expect, it } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import { PublishError, type PublishOptions, type PublishResult } from '../../src/publish/index.js';
import { memoryReleaseApi } from '../helpers/fake-github.js';
import { tempDir, validPrompts } from '../helpers/fixtures.js';
import { publishableManifest, writePublishableTemplate, writeUncoverableTemplate } from '../publish/publishable-template.js';

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
    /** Exit codes the action set without an annotation (its problems were annotated in their groups). */
    exitCodes: [] as number[],
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
  const setExitCode = (code: number): void => void calls.exitCodes.push(code);
  return { core, calls, setExitCode };
}

const groups = (log: string[]): string[] => log.filter((l) => l.startsWith('group ')).map((l) => l.slice('group '.length));

/** The log lines between `group <name>` and its `endgroup`. */
function groupLines(log: string[], name: string): string[] {
  const start = log.indexOf(`group ${name}`);
  if (start < 0) return [];
  const end = log.indexOf('endgroup', start);
  return log.slice(start + 1, end < 0 ? undefined : end);
}

/** The log lines outside every group. */
function outsideGroups(log: string[]): string[] {
  let depth = 0;
  return log.filter((line) => {
    if (line.startsWith('group ')) depth++;
    else if (line === 'endgroup') depth--;
    else return depth === 0;
    return false;
  });
}

const annotationLines = (lines: string[]): string[] => lines.filter((l) => l.startsWith('error ') || l.startsWith('warning '));
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

describe('the publish action: what the archive leaves out', () => {
  it('lists each file left out and why in the job summary, and in the Pack group of the log', async () => {
    const dir = await writePublishableTemplate({ 'template/.env': 'SECRET=1', 'deploy.pem': 'a key', 'template/<b>.key': 'x' });
    const { core, calls, setExitCode } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir, { RUNNER_TEMP: await tempDir() }), core, upload: recordingUpload().upload, setExitCode });
    expect(outcome.ok).toBe(true);
    expect(calls.summaryText).toContain('Left out of the archive');
    const table = calls.summaryRows.slice(calls.summaryRows.findIndex((r) => r[0] === 'Path'));
    expect(table).toEqual([
      ['Path', 'Why'],
      // The cells are HTML: the text is escaped.
      ['deploy.pem', 'may hold credentials; list it in the manifest\'s &quot;include&quot; to pack it'],
      ['template/.env', expect.stringContaining('an .env file')],
      ['template/&lt;b&gt;.key', expect.stringContaining('may hold credentials')],
    ]);
    expect(groupLines(calls.log, 'Pack')).toContain('info left out: template/.env (an .env file; packed only when the manifest\'s "files" rules or "include" name it)');
  });

  it('adds no such list when nothing is left out', async () => {
    const { core, calls, setExitCode } = recordingCore();
    await run({ env: dryRunEnv(await writePublishableTemplate(), { RUNNER_TEMP: await tempDir() }), core, upload: recordingUpload().upload, setExitCode });
    expect(calls.summaryText).not.toContain('Left out of the archive');
  });
});

describe('the publish action run()', () => {
  it('runs every check in its own group and packs on a dry run, with the outputs and the summary', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls, setExitCode } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const outcome = await run({ env: dryRunEnv(dir, { RUNNER_TEMP: await tempDir() }), core, upload, setExitCode });

    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(groups(calls.log)).toEqual(['Validate', 'Test generation', 'Lint', 'Release notes', 'Pack']);
    expect(calls.log.filter((l) => l === 'endgroup')).toHaveLength(5);
    expect(groupLines(calls.log, 'Test generation')).toContainEqual(expect.stringMatching(/^info PASS .*: \d+ files$/));
    expect(groupLines(calls.log, 'Validate')).toEqual(['info Validate: valid']);
    // The lint warnings: each logged with its place and annotated, inside the Lint group, nowhere else.
    const lintLines = groupLines(calls.log, 'Lint');
    expect(lintLines).toContain('info template.vars.json:8:20 warning variable-unused variable "description" is not used by any content file, expression or computed value');
    expect(annotationLines(lintLines)).toHaveLength(calls.annotations.length);
    expect(calls.annotations.every((a) => a.level === 'warning' && a.properties?.title?.startsWith('lint: '))).toBe(true);
    expect(annotationLines(outsideGroups(calls.log))).toEqual([]);
    expect(calls.exitCodes).toEqual([]);
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
    const { core, calls, setExitCode } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const outcome = await run({ env: dryRunEnv(dir, { 'INPUT_DRY-RUN': 'false', 'INPUT_REGISTRY-URL': 'https://registry.test', 'INPUT_REGISTRY-TOKEN': 'tr_secret' }), core, upload, setExitCode });

    expect(outcome.ok).toBe(false);
    // Failed by the exit code: the one problem is annotated once, in its group, and not again by setFailed.
    expect(calls.failed).toEqual([]);
    expect(calls.exitCodes).toEqual([1]);
    const line = (await readFile(path.join(dir, 'template.json'), 'utf8')).split('\n').findIndex((l) => l.includes('"category"')) + 1;
    expect(calls.annotations).toEqual([
      {
        level: 'error',
        message: expect.stringMatching(/^template\.json \/category: must be one of/),
        properties: { title: 'template validation: ENUM', file: `${path.basename(dir)}/template.json`, startLine: line, startColumn: expect.any(Number) },
      },
    ]);
    expect(groups(calls.log)).toEqual(['Validate']);
    expect(calls.log).toEqual([
      'group Validate',
      expect.stringMatching(/^error template\.json \/category: must be one of/),
      'info Validate failed: template validation failed with 1 error(s)',
      'endgroup',
      'info publish failed: template validation failed with 1 error(s)',
    ]);
    expect(row(calls.summaryRows, 'Validate')).toBe('failed: template validation failed with 1 error(s)');
    expect(calls.outputs).toEqual({ version: '1.0.0' });
    expect(calls.secrets).toEqual(['tr_secret']);
    expect(uploads).toHaveLength(0);
    expect(calls.summaryWritten).toBe(true);
  });

  it('fails on a lint error with an annotation at its place, before packing', async () => {
    const prompts = { prompts: [...validPrompts.prompts, { name: 'databse', message: 'Database?', type: 'input' }] };
    const dir = await writePublishableTemplate({ 'template.prompts.json': prompts });
    const { core, calls, setExitCode } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir), core, setExitCode });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual([]);
    expect(calls.exitCodes).toEqual([1]);
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
    const { core, calls, setExitCode } = recordingCore();
    const outcome = await run({ env: dryRunEnv(dir, { 'INPUT_TEST-COMMAND': 'exit 3' }), core, setExitCode });

    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual([]);
    expect(calls.exitCodes).toEqual([1]);
    expect(calls.annotations).toContainEqual({ level: 'error', message: expect.stringMatching(/: command exited with 3: exit 3$/), properties: { title: 'test generation' } });
    expect(row(calls.summaryRows, 'Test generation')).toBe('failed: test generation failed');
    expect(row(calls.summaryRows, 'Lint')).toBeUndefined();
  });

  it('warns about a change log without a section for the version and releases with notes that say so', async () => {
    const dir = await writePublishableTemplate();
    const { core, calls, setExitCode } = recordingCore();
    const { upload, calls: uploads } = recordingUpload();
    const { api, releases } = memoryReleaseApi();
    const outcome = await run({
      env: {
        GITHUB_WORKSPACE: path.dirname(dir),
        GITHUB_REPOSITORY: 'acme/demo',
        GITHUB_REF: 'refs/tags/v1.1.0',
        RUNNER_TEMP: await tempDir(),
        'INPUT_TEMPLATE-PATH': path.basename(dir),
        'INPUT_REGISTRY-URL': 'https://registry.test/',
        'INPUT_REGISTRY-TOKEN': 'tr_secret',
        'INPUT_GITHUB-TOKEN': 'ghs_secret',
      },
      core,
      setExitCode,
      upload,
      releaseApi: () => api,
    });

    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.annotations.filter((a) => a.level === 'error')).toEqual([]);
    expect(calls.annotations).toContainEqual({
      level: 'warning',
      message: 'CHANGELOG.md has no section for 1.1.0 (a heading such as "## [1.1.0] - YYYY-MM-DD"); the release notes will say the change log has no entry for 1.1.0',
      properties: { title: 'release notes', file: `${path.basename(dir)}/CHANGELOG.md` },
    });
    expect(uploads).toHaveLength(1);
    expect(releases).toHaveLength(1);
    expect(releases[0]).toMatchObject({ tag_name: 'v1.1.0', body: 'The change log (CHANGELOG.md) has no entry for version 1.1.0.' });
    expect(row(calls.summaryRows, 'Release notes')).toBe('no entry for 1.1.0 in CHANGELOG.md: the release notes say so');
  });

  it('uploads, reports retries as warnings and creates the release from the changelog section', async () => {
    const dir = await writePublishableTemplate({ 'CHANGELOG.md': '# Changelog\n\n## [1.2.0] - 2026-02-01\n\n- Second release\n\n## [1.0.0] - 2026-01-01\n\n- First release\n' });
    const { core, calls, setExitCode } = recordingCore();
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
      setExitCode,
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

  describe('one annotation per problem, inside the group of the step that found it', () => {
    /** The inputs of a real run (upload and release) of `dir` at version 1.0.0. */
    const releaseEnv = (dir: string): Record<string, string> =>
      dryRunEnv(dir, {
        'INPUT_DRY-RUN': 'false',
        'INPUT_CREATE-RELEASE': 'true',
        'INPUT_REGISTRY-URL': 'https://registry.test',
        'INPUT_REGISTRY-TOKEN': 'tr_secret',
        'INPUT_GITHUB-TOKEN': 'ghs_secret',
        GITHUB_REPOSITORY: 'acme/demo',
      });

    it('validation: every error its own annotation, none outside the group, no setFailed on top', async () => {
      const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, version: '1.0', category: 'cli' } });
      const { core, calls, setExitCode } = recordingCore();
      const outcome = await run({ env: dryRunEnv(dir), core, setExitCode });

      expect(outcome.ok).toBe(false);
      expect(calls.annotations.map((a) => `${a.level} ${a.properties?.title ?? ''}`).sort()).toEqual(['error template validation: ENUM', 'error template validation: PATTERN']);
      expect(calls.annotations.every((a) => a.properties?.startLine !== undefined && a.properties.startColumn !== undefined)).toBe(true);
      expect(annotationLines(groupLines(calls.log, 'Validate'))).toHaveLength(2);
      expect(annotationLines(outsideGroups(calls.log))).toEqual([]);
      expect(calls.failed).toEqual([]);
      expect(calls.exitCodes).toEqual([1]);
    });

    it('test generation: each condition no answer set reaches', async () => {
      const dir = await writeUncoverableTemplate();
      const { core, calls, setExitCode } = recordingCore();
      await run({ env: dryRunEnv(dir), core, setExitCode });
      expect(annotationLines(groupLines(calls.log, 'Test generation'))).toEqual([
        'error not covered by any valid answer set: files rule schema.graphql: true',
        'error not covered by any valid answer set: files rule grpc.proto: true',
      ]);
      expect(calls.annotations).toHaveLength(2);
      expect(calls.exitCodes).toEqual([1]);
    });

    it('lint: each error and each warning, with its line logged at its place beside it', async () => {
      const prompts = {
        prompts: [...validPrompts.prompts, { name: 'databse', message: 'Database?', type: 'input' }, { name: 'autor', message: 'Author?', type: 'input' }],
      };
      const dir = await writePublishableTemplate({ 'template.prompts.json': prompts });
      const { core, calls, setExitCode } = recordingCore();
      await run({ env: dryRunEnv(dir), core, setExitCode });

      const lint = groupLines(calls.log, 'Lint');
      const errors = calls.annotations.filter((a) => a.level === 'error');
      expect(errors.map((a) => a.message)).toEqual(['prompt "databse" names unknown variable "databse"', 'prompt "autor" names unknown variable "autor"']);
      expect(annotationLines(lint)).toHaveLength(calls.annotations.length);
      expect(calls.annotations.filter((a) => a.level === 'warning').length).toBeGreaterThan(0);
      for (const error of errors) {
        const { file, startLine, startColumn } = error.properties ?? {};
        expect(lint).toContain(`info ${path.basename(file ?? '')}:${startLine}:${startColumn} error prompt-unknown-variable ${error.message}`);
      }
      expect(lint.at(-1)).toBe('info Lint failed: lint found 2 error(s)');
      expect(annotationLines(outsideGroups(calls.log))).toEqual([]);
      expect(calls.exitCodes).toEqual([1]);
    });

    it('upload: each detail of a registry refusal, in the Upload group', async () => {
      const dir = await writePublishableTemplate();
      const { core, calls, setExitCode } = recordingCore();
      const details = [
        { field: 'template/template.json', code: 'MISMATCH', message: 'the archive differs from the manifest part' },
        { field: 'template/template/app.js', code: 'LIQUID_SYNTAX', message: 'template/app.js:3:1 error liquid-syntax tag "endif" not expected' },
      ];
      const upload = (): Promise<PublishResult> =>
        Promise.reject(new PublishError('HTTP 422 VALIDATION_ERROR: the template part is invalid\n  two details', { status: 422, code: 'VALIDATION_ERROR', details }));
      const { api } = memoryReleaseApi();
      const outcome = await run({ env: releaseEnv(dir), core, setExitCode, upload, releaseApi: () => api });

      expect(outcome.ok).toBe(false);
      expect(annotationLines(groupLines(calls.log, 'Upload'))).toEqual([
        'error template/template.json MISMATCH: the archive differs from the manifest part',
        'error template/template/app.js LIQUID_SYNTAX: template/app.js:3:1 error liquid-syntax tag "endif" not expected',
      ]);
      expect(calls.annotations.filter((a) => a.level === 'error').map((a) => a.properties?.title)).toEqual(['upload: VALIDATION_ERROR', 'upload: VALIDATION_ERROR']);
      expect(groupLines(calls.log, 'Upload')).toContain('info Upload failed: HTTP 422 VALIDATION_ERROR: the template part is invalid');
      expect(groups(calls.log)).not.toContain('Release');
      expect(annotationLines(outsideGroups(calls.log))).toEqual([]);
      expect(calls.failed).toEqual([]);
      expect(calls.exitCodes).toEqual([1]);
    });

    it('upload: a refusal without details is one problem', async () => {
      const dir = await writePublishableTemplate();
      const { core, calls, setExitCode } = recordingCore();
      const upload = (): Promise<PublishResult> =>
        Promise.reject(new PublishError('demo-template@1.0.0 is already published with different content\nHTTP 409 VERSION_EXISTS: exists', { status: 409, code: 'VERSION_EXISTS' }));
      await run({ env: releaseEnv(dir), core, setExitCode, upload, releaseApi: () => memoryReleaseApi().api });
      expect(calls.annotations.filter((a) => a.level === 'error')).toEqual([
        { level: 'error', message: 'demo-template@1.0.0 is already published with different content\nHTTP 409 VERSION_EXISTS: exists', properties: { title: 'upload failed' } },
      ]);
      expect(annotationLines(groupLines(calls.log, 'Upload'))).toHaveLength(1);
      expect(calls.exitCodes).toEqual([1]);
    });

    it('release: its failure, in the Release group', async () => {
      const dir = await writePublishableTemplate();
      const { core, calls, setExitCode } = recordingCore();
      const { upload } = recordingUpload();
      const { api } = memoryReleaseApi();
      api.createRelease = () => Promise.reject(new Error('GitHub answered 403: Resource not accessible by integration'));
      const outcome = await run({ env: releaseEnv(dir), core, setExitCode, upload, releaseApi: () => api });

      expect(outcome.ok).toBe(false);
      expect(groups(calls.log)).toEqual(['Validate', 'Test generation', 'Lint', 'Release notes', 'Pack', 'Upload', 'Release']);
      expect(calls.log.filter((l) => l === 'endgroup')).toHaveLength(7);
      const errors = calls.annotations.filter((a) => a.level === 'error');
      expect(errors).toEqual([{ level: 'error', message: 'GitHub answered 403: Resource not accessible by integration', properties: { title: 'release failed' } }]);
      expect(annotationLines(groupLines(calls.log, 'Release'))).toEqual(['error GitHub answered 403: Resource not accessible by integration']);
      expect(annotationLines(outsideGroups(calls.log))).toEqual([]);
      expect(row(calls.summaryRows, 'Release')).toBe('failed: GitHub answered 403: Resource not accessible by integration');
      expect(calls.exitCodes).toEqual([1]);
      expect(calls.failed).toEqual([]);
    });
  });

  it('fails on a bad input before any step, and still writes the summary', async () => {
    const { core, calls, setExitCode } = recordingCore();
    const outcome = await run({ env: { GITHUB_REF: 'refs/heads/main', 'INPUT_DRY-RUN': 'true' }, core, setExitCode });
    expect(outcome.ok).toBe(false);
    // No group ran: setFailed is its one annotation.
    expect(calls.failed).toEqual([expect.stringMatching(/^no version: this run is not on a tag/)]);
    expect(calls.exitCodes).toEqual([]);
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
      const { core, calls, setExitCode } = recordingCore();
      const outcome = await run({ core, setExitCode });
      expect(calls.failed).toEqual([]);
      expect(outcome.outputs).toMatchObject({ version: '1.0.0', uploaded: 'false' });
    });
  });
});
