import { readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  PUBLISH_STEPS,
  PublishError,
  PublishPipelineError,
  publishProgressPrinter,
  runPublishPipeline,
  type PublishFinding,
  type PublishHooks,
  type PublishOptions,
  type PublishPipelineOptions,
  type PublishResult,
} from '../../src/publish/index.js';
import { tempDir, validPrompts } from '../helpers/fixtures.js';
import { publishableManifest, writePublishableTemplate, writeUncoverableTemplate } from './publishable-template.js';

/** Hooks that record every call as one line, and the findings as they come. */
function recordingHooks() {
  const events: string[] = [];
  const findings: PublishFinding[] = [];
  const hooks: PublishHooks = {
    onStepStarted: (step) => events.push(`start ${step}`),
    onStepFinished: (step, result) => events.push(`finish ${step}: ${result}`),
    onStepSkipped: (step, reason) => events.push(`skip ${step}: ${reason}`),
    onStepFailed: (step, error) => events.push(`fail ${step}: ${error.message}`),
    onFinding: (finding) => void findings.push(finding),
    onPacked: (packed) => events.push(`packed ${path.basename(packed.file)}`),
    onRetry: (info) => events.push(`retry ${info.attempt} after ${info.delayMs} ms`),
  };
  return { hooks, events, findings };
}

/** An upload that records what it was given and answers like a registry accepting the archive. */
function recordingUpload(answer: (options: PublishOptions) => Promise<PublishResult> = (o) => Promise.resolve({ uploaded: true, status: 201, attempts: 1, integrity: o.integrity ?? '' })) {
  const calls: PublishOptions[] = [];
  const upload = (options: PublishOptions): Promise<PublishResult> => {
    calls.push(options);
    return answer(options);
  };
  return { upload, calls };
}

async function options(templateDir: string, extra: Partial<PublishPipelineOptions> = {}): Promise<PublishPipelineOptions> {
  return { templateDir, outDir: await tempDir('tr-pipeline-out-'), registryUrl: 'https://registry.test', token: 'tr_token', ...extra };
}

/** Runs the pipeline expecting it to fail; returns the error. */
async function failure(run: Promise<unknown>): Promise<PublishPipelineError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PublishPipelineError);
  return error as PublishPipelineError;
}

const started = (events: string[]): string[] => events.filter((e) => e.startsWith('start ')).map((e) => e.slice('start '.length));

describe('runPublishPipeline: what is tested is what is published', () => {
  it('test-generates from the files the archive will hold, and names what pack leaves out in the pack step', async () => {
    const dir = await writePublishableTemplate({
      'template.json': { ...publishableManifest, test: { command: 'test -f .env' } },
      'template/.env': 'NAME={{ projectName }}\n',
    });
    const { hooks, events, findings } = recordingHooks();
    const infos: string[] = [];
    hooks.onInfo = (step, message) => void infos.push(`${step}: ${message}`);
    // The template generates an .env file the archive would not hold: the test step fails on it.
    const error = await failure(runPublishPipeline(await options(dir, { dryRun: true }), hooks));
    expect(error.step).toBe('test');
    expect(findings.some((f) => f.step === 'test' && /command exited with 1: test -f \.env/.test(f.message))).toBe(true);
    expect(events).not.toContain('start pack');

    // Without the command, the pack step names the .env file it leaves out.
    const packedDir = await writePublishableTemplate({ 'template/.env': 'NAME={{ projectName }}\n' });
    const packing = recordingHooks();
    const packInfos: string[] = [];
    packing.hooks.onInfo = (step, message) => void packInfos.push(`${step}: ${message}`);
    const result = await runPublishPipeline(await options(packedDir, { dryRun: true }), packing.hooks);
    expect(result.packed.leftOut).toEqual([{ path: 'template/.env', reason: expect.stringContaining('.env file') }]);
    expect(packInfos).toContain(`pack: left out: template/.env (${result.packed.leftOut[0]!.reason})`);
    expect(packing.events).toContainEqual(expect.stringMatching(/^finish pack: .*\(1 left out\)/));
  });
});

describe('runPublishPipeline', () => {
  it('runs the steps in the spec order, then uploads the packed archive with its manifest and integrity', async () => {
    const dir = await writePublishableTemplate();
    const { hooks, events } = recordingHooks();
    const { upload, calls } = recordingUpload();
    const result = await runPublishPipeline(await options(dir, { upload }), hooks);

    expect(started(events)).toEqual([...PUBLISH_STEPS]);
    expect(events.indexOf('packed demo-template-1.0.0.tgz')).toBeLessThan(events.indexOf('start upload'));
    expect(events).toContain('finish changelog: section for 1.0.0 found in CHANGELOG.md');
    expect(events.at(-1)).toBe('finish upload: uploaded to https://registry.test');

    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ registryUrl: 'https://registry.test', token: 'tr_token', archive: result.packed.file, integrity: result.packed.integrity });
    expect(calls[0]!.manifest).toEqual(result.packed.manifest);
    expect(result).toMatchObject({
      version: '1.0.0',
      changelogFile: 'CHANGELOG.md',
      releaseNotes: '- First release',
      upload: { uploaded: true },
      downloadUrl: 'https://registry.test/templates/demo-template/versions/1.0.0/archive',
    });
  });

  it('stamps the version given into the archive and takes its changelog section from the file the manifest names', async () => {
    const dir = await writePublishableTemplate({
      'template.json': { ...publishableManifest, changelog: 'docs/CHANGES.md' },
      'docs/CHANGES.md': '# Changes\n\n## 2.0.0\n\n### Changed\n\n- Everything\n\n## 1.0.0\n\n- First\n',
    });
    const result = await runPublishPipeline(await options(dir, { version: '2.0.0', dryRun: true }));
    expect(result.packed.manifest.version).toBe('2.0.0');
    expect(result).toMatchObject({ version: '2.0.0', changelogFile: 'docs/CHANGES.md', releaseNotes: '### Changed\n\n- Everything' });
    expect(JSON.parse(await readFile(path.join(dir, 'template.json'), 'utf8')).version).toBe('1.0.0');
  });

  it('uploads nothing on a dry run', async () => {
    const dir = await writePublishableTemplate();
    const { hooks, events } = recordingHooks();
    const { upload, calls } = recordingUpload();
    const result = await runPublishPipeline(await options(dir, { upload, dryRun: true, registryUrl: undefined, token: undefined }), hooks);
    expect(calls).toHaveLength(0);
    expect(events.at(-1)).toBe('skip upload: dry-run');
    expect(result.upload).toBeUndefined();
    expect(result.downloadUrl).toBeUndefined();
    await expect(readFile(result.packed.file)).resolves.toHaveLength(result.packed.size);
  });

  it('stops at validation with each error as a finding at its place', async () => {
    const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, version: '1.0', category: 'cli' } });
    const { hooks, events, findings } = recordingHooks();
    const { upload, calls } = recordingUpload();
    const error = await failure(runPublishPipeline(await options(dir, { upload }), hooks));

    expect(error).toMatchObject({ step: 'validate', message: 'template validation failed with 2 error(s)' });
    expect(started(events)).toEqual(['validate']);
    expect(events.at(-1)).toBe('fail validate: template validation failed with 2 error(s)');
    expect(findings).toHaveLength(2);
    for (const finding of findings) {
      expect(finding).toMatchObject({ step: 'validate', severity: 'error', file: 'template.json', line: expect.any(Number), column: expect.any(Number) });
    }
    expect(findings.map((f) => f.rule).sort()).toEqual(['ENUM', 'PATTERN'].sort());
    expect(findings.map((f) => f.text)).toContainEqual(expect.stringMatching(/^template\.json \/category: must be one of/));
    expect(calls).toHaveLength(0);
  });

  it('stops at test generation when a generated project fails, unless skipTest', async () => {
    const dir = await writePublishableTemplate();
    const { hooks, findings } = recordingHooks();
    const error = await failure(runPublishPipeline(await options(dir, { testCommand: 'echo broken >&2; exit 4', dryRun: true }), hooks));
    expect(error).toMatchObject({ step: 'test', message: 'test generation failed' });
    expect(findings[0]).toMatchObject({ step: 'test', severity: 'error', rule: 'test-generation', message: expect.stringMatching(/: command exited with 4: echo broken/) });
    expect(findings[0]!.file).toBeUndefined();

    const skipping = recordingHooks();
    await runPublishPipeline(await options(dir, { testCommand: 'exit 4', skipTest: true, dryRun: true }), skipping.hooks);
    expect(started(skipping.events)).toEqual(['validate', 'lint', 'changelog', 'pack']);
    expect(skipping.events).toContain('skip test: skip-test');
  });

  it('reports each condition no valid answer set reaches as a finding of its own', async () => {
    const dir = await writeUncoverableTemplate();
    const { hooks, findings } = recordingHooks();
    const error = await failure(runPublishPipeline(await options(dir, { dryRun: true }), hooks));
    expect(error).toMatchObject({ step: 'test', message: 'test generation failed' });
    expect(findings.filter((f) => f.step === 'test').map((f) => f.message)).toEqual([
      'not covered by any valid answer set: files rule schema.graphql: true',
      'not covered by any valid answer set: files rule grpc.proto: true',
    ]);
  });

  it('stops at a lint error, reporting the warnings as well', async () => {
    const prompts = { prompts: [...validPrompts.prompts, { name: 'databse', message: 'Database?', type: 'input' }] };
    const dir = await writePublishableTemplate({ 'template.prompts.json': prompts });
    const { hooks, findings } = recordingHooks();
    const error = await failure(runPublishPipeline(await options(dir, { dryRun: true }), hooks));
    expect(error).toMatchObject({ step: 'lint', message: 'lint found 1 error(s)' });
    const lintError = findings.find((f) => f.severity === 'error');
    expect(lintError).toMatchObject({ step: 'lint', file: 'template.prompts.json', rule: 'prompt-unknown-variable', title: 'lint: prompt-unknown-variable' });
    expect(lintError!.text).toBe(`template.prompts.json:${lintError!.line}:${lintError!.column} error prompt-unknown-variable prompt "databse" names unknown variable "databse"`);
    expect(findings.some((f) => f.severity === 'warning' && f.rule === 'variable-unused')).toBe(true);
  });

  it('warns when the change log has no section for the version, goes on, and writes release notes that say so', async () => {
    const dir = await writePublishableTemplate({ 'CHANGELOG.md': '# Changelog\n\n## [1.0.0] - 2026-01-01\n\n- First\n\n## [1.1.0]\n' });
    const { hooks, findings, events } = recordingHooks();
    const missing = await runPublishPipeline(await options(dir, { version: '1.2.3', dryRun: true }), hooks);
    expect(missing).toMatchObject({ version: '1.2.3', changelogEntry: false, releaseNotes: 'The change log (CHANGELOG.md) has no entry for version 1.2.3.' });
    expect(findings.filter((f) => f.step === 'changelog')).toEqual([
      expect.objectContaining({
        step: 'changelog',
        severity: 'warning',
        file: 'CHANGELOG.md',
        message: 'CHANGELOG.md has no section for 1.2.3 (a heading such as "## [1.2.3] - YYYY-MM-DD"); the release notes will say the change log has no entry for 1.2.3',
      }),
    ]);
    expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(events).toContain('finish changelog: no entry for 1.2.3 in CHANGELOG.md: the release notes say so');
    expect(events).toContain('packed demo-template-1.2.3.tgz');
    const empty = await runPublishPipeline(await options(dir, { version: '1.1.0', dryRun: true }));
    expect(empty).toMatchObject({ changelogEntry: false, releaseNotes: 'The change log (CHANGELOG.md) has no entry for version 1.1.0.' });
  });

  it('never reads a changelog that leads out of the template folder', async () => {
    const outside = await tempDir();
    await writeFile(path.join(outside, 'NOTES.md'), '# Notes\n\n## 1.0.0\n\n- Secret\n');
    const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, changelog: 'NOTES.md' } });
    await symlink(path.join(outside, 'NOTES.md'), path.join(dir, 'NOTES.md'));
    const { hooks, findings } = recordingHooks();
    const error = await failure(runPublishPipeline(await options(dir, { dryRun: true }), hooks));
    expect(error.step).toBe('validate');
    expect(findings.map((f) => f.text)).toEqual([expect.stringMatching(/^template\.json \/changelog: /)]);
  });

  it('passes upload retries on and fails with the registry message, after packing', async () => {
    const dir = await writePublishableTemplate();
    const { hooks, events } = recordingHooks();
    const refusal = new PublishError('HTTP 403 FORBIDDEN: may not publish', { status: 403 });
    const { upload } = recordingUpload((o) => {
      o.onRetry?.({ attempt: 1, delayMs: 250, reason: 'HTTP 503' });
      return Promise.reject(refusal);
    });
    const error = await failure(runPublishPipeline(await options(dir, { upload }), hooks));
    expect(error).toMatchObject({ step: 'upload', message: 'HTTP 403 FORBIDDEN: may not publish', cause: refusal });
    expect(events.slice(-3)).toEqual(['start upload', 'retry 1 after 250 ms', 'fail upload: HTTP 403 FORBIDDEN: may not publish']);
    expect(events).toContain('packed demo-template-1.0.0.tgz');
  });

  it('passes the upload progress on, attempt by attempt', async () => {
    const dir = await writePublishableTemplate();
    const progress: string[] = [];
    const { upload } = recordingUpload((o) => {
      for (const sent of [0, 600, 1000, 0, 1000]) o.onProgress?.(sent, 1000);
      return Promise.resolve({ uploaded: true, status: 201, attempts: 2, integrity: o.integrity ?? '' });
    });
    await runPublishPipeline(await options(dir, { skipTest: true, upload }), { onUploadProgress: (sent, total) => progress.push(`${sent}/${total}`) });
    expect(progress).toEqual(['0/1000', '600/1000', '1000/1000', '0/1000', '1000/1000']);
  });

  it('refuses options that cannot work before any step', async () => {
    const { hooks, events } = recordingHooks();
    await expect(runPublishPipeline({ templateDir: '.', version: '1.0' }, hooks)).rejects.toThrow(/version must be MAJOR\.MINOR\.PATCH without leading zeros, each number at most 15 digits \(got "1\.0"\)/);
    await expect(runPublishPipeline({ templateDir: '.' }, hooks)).rejects.toThrow(/registryUrl and token are required/);
    expect(events).toEqual([]);
  });
});

describe('publishProgressPrinter', () => {
  it('prints findings, step results, skips and retries as lines', async () => {
    const dir = await writePublishableTemplate();
    const lines: string[] = [];
    const printer = publishProgressPrinter((line) => lines.push(line));
    await runPublishPipeline(await options(dir, { skipTest: true, upload: recordingUpload().upload }), printer);
    printer.onRetry?.({ attempt: 2, delayMs: 1500, reason: 'HTTP 503' });
    expect(lines.filter((l) => !l.includes(' warning '))).toEqual([
      'Validate: valid',
      'Test generation: skipped (skip-test)',
      'Lint: 0 error(s), 3 warning(s)',
      'Release notes: section for 1.0.0 found in CHANGELOG.md',
      expect.stringMatching(/^Pack: demo-template-1\.0\.0\.tgz: \d+ bytes, \d+ files, sha256 [0-9a-f]{64}$/),
      'Upload: uploaded to https://registry.test',
      'attempt 2 failed (HTTP 503); retrying in 1.5 s',
    ]);
    expect(lines).toContain('template.vars.json:8:20 warning variable-unused variable "description" is not used by any content file, expression or computed value');
  });
});
