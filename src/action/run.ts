import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { AnnotationProperties } from '@actions/core';

import { packTemplate, type PackResult } from '../pack/pack.js';
import { publishTemplate, type PublishResult } from '../publish/upload.js';
import { lintTemplate } from '../template/lint.js';
import { testTemplate } from '../template/test-template.js';
import { formatValidationError } from '../core/validation.js';
import { MANIFEST_FILE, validateTemplate } from '../template/validate.js';
import { extractChangelogSection } from '../template/changelog.js';
import { parseInputs, type ActionInputs } from './inputs.js';
import { createGitHubClient } from '../github/client.js';
import { octokitReleaseApi, publishRelease, type ReleaseApi } from '../github/release.js';
import { errorMessage } from '../core/errors.js';

type SummaryCell = string | { data: string; header?: boolean };

/** The part of @actions/core the action uses; tests pass a recording fake. */
export interface ActionCore {
  setOutput(name: string, value: string): void;
  setSecret(secret: string): void;
  setFailed(message: string): void;
  info(message: string): void;
  warning(message: string, properties?: AnnotationProperties): void;
  error(message: string, properties?: AnnotationProperties): void;
  startGroup(name: string): void;
  endGroup(): void;
  summary: {
    addHeading(text: string, level?: number): unknown;
    addTable(rows: SummaryCell[][]): unknown;
    addRaw(text: string, addEOL?: boolean): unknown;
    write(): Promise<unknown>;
  };
}

export interface ActionDependencies {
  env: Readonly<Record<string, string | undefined>>;
  core: ActionCore;
  publish?: typeof publishTemplate;
  releaseApi?: (token: string, owner: string, repo: string, baseUrl?: string) => ReleaseApi;
}

export interface ActionOutcome {
  ok: boolean;
  outputs: Record<string, string>;
}

/** A check failed; its findings were already reported as annotations. */
class StepFailed extends Error {}

function defaultReleaseApi(token: string, owner: string, repo: string, baseUrl?: string): ReleaseApi {
  return octokitReleaseApi(createGitHubClient({ token, ...(baseUrl ? { baseUrl } : {}) }), owner, repo);
}

/** Annotations name files relative to the workspace, as GitHub shows them on the diff. */
function annotationFile(inputs: ActionInputs, file: string): string {
  const absolute = path.resolve(inputs.templatePath, file);
  const workspace = path.resolve(inputs.workspace);
  const relative = path.relative(workspace, absolute);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative;
  return shown.split(path.sep).join('/');
}

async function validateStep(inputs: ActionInputs, core: ActionCore): Promise<string> {
  const result = await validateTemplate(inputs.templatePath);
  for (const error of result.errors) {
    core.error(formatValidationError(error), {
      title: `template validation: ${error.code}`,
      file: annotationFile(inputs, error.file),
      ...(error.line ? { startLine: error.line } : {}),
      ...(error.column ? { startColumn: error.column } : {}),
    });
  }
  if (!result.valid) throw new StepFailed(`template validation failed with ${result.errors.length} error(s)`);
  return 'valid';
}

async function testStep(inputs: ActionInputs, core: ActionCore): Promise<string> {
  const report = await testTemplate(inputs.templatePath, inputs.testCommand ? { command: inputs.testCommand } : {});
  for (const set of report.sets) {
    core.info(`${set.passed ? 'PASS' : 'FAIL'} ${set.name}: ${set.files} files`);
    for (const problem of set.problems) core.error(`${set.name}: ${problem}`, { title: 'test generation' });
  }
  if (report.uncovered.length > 0) core.warning(`not covered by any answer set: ${report.uncovered.join('; ')}`);
  if (!report.passed) throw new StepFailed('test generation failed');
  return `${report.sets.length} answer set(s) passed`;
}

async function lintStep(inputs: ActionInputs, core: ActionCore): Promise<string> {
  const result = await lintTemplate(inputs.templatePath);
  for (const finding of result.findings) {
    const properties: AnnotationProperties = {
      title: `lint: ${finding.rule}`,
      file: annotationFile(inputs, finding.file),
      startLine: finding.line,
      startColumn: finding.column,
    };
    if (finding.severity === 'error') core.error(finding.message, properties);
    else core.warning(finding.message, properties);
  }
  if (result.errorCount > 0) throw new StepFailed(`lint found ${result.errorCount} error(s)`);
  return `${result.errorCount} error(s), ${result.warningCount} warning(s)`;
}

async function releaseNotes(inputs: ActionInputs, core: ActionCore): Promise<string> {
  const manifest = JSON.parse(await readFile(path.join(inputs.templatePath, MANIFEST_FILE), 'utf8')) as { changelog?: string };
  const changelogFile = manifest.changelog ?? 'CHANGELOG.md';
  const text = await readFile(path.join(inputs.templatePath, changelogFile), 'utf8');
  const section = extractChangelogSection(text, inputs.version);
  if (!section) {
    core.error(`${changelogFile} has no section for ${inputs.version} (a heading such as "## [${inputs.version}] - YYYY-MM-DD")`, {
      title: 'release notes',
      file: annotationFile(inputs, changelogFile),
    });
    throw new StepFailed(`${changelogFile} has no section for version ${inputs.version}: the release needs one`);
  }
  return section;
}

function defaultDownloadUrl(registryUrl: string, name: string, version: string): string {
  return `${registryUrl.replace(/\/+$/, '')}/templates/${encodeURIComponent(name)}/versions/${version}/archive`;
}

/**
 * The publish action: validate, test-generate and lint the template, take the version from the
 * tag, pack it with the version stamped, upload it to the registry, then create the GitHub
 * release from the CHANGELOG section. With dry-run, everything but the upload and the release.
 */
export async function run(deps: ActionDependencies): Promise<ActionOutcome> {
  const { core, env } = deps;
  const outputs: Record<string, string> = {};
  const setOutput = (name: string, value: string | number | boolean): void => {
    outputs[name] = String(value);
    core.setOutput(name, String(value));
  };
  const rows: SummaryCell[][] = [[{ data: 'Step', header: true }, { data: 'Result', header: true }]];
  const step = async <T>(title: string, work: () => Promise<T>, describe: (value: T) => string): Promise<T> => {
    core.startGroup(title);
    try {
      const value = await work();
      rows.push([title, describe(value)]);
      return value;
    } catch (error) {
      rows.push([title, `failed: ${errorMessage(error)}`]);
      throw error;
    } finally {
      core.endGroup();
    }
  };

  let ok = false;
  try {
    const inputs = parseInputs(env);
    for (const secret of [inputs.registryToken, inputs.githubToken]) if (secret) core.setSecret(secret);
    setOutput('version', inputs.version);

    await step('Validate', () => validateStep(inputs, core), (r) => r);
    await step('Test generation', () => testStep(inputs, core), (r) => r);
    await step('Lint', () => lintStep(inputs, core), (r) => r);
    const notes = inputs.createRelease ? await step('Release notes', () => releaseNotes(inputs, core), () => 'found in the changelog') : '';

    const outDir = await mkdtemp(path.join(env.RUNNER_TEMP || tmpdir(), 'template-publish-'));
    const packed: PackResult = await step(
      'Pack',
      () => packTemplate(inputs.templatePath, { version: inputs.version, outDir, exclude: inputs.exclude }),
      (p) => `${path.basename(p.file)}: ${p.size} bytes, ${p.files.length} files, sha256 ${p.sha256}`,
    );
    setOutput('archive', packed.file);
    setOutput('size', packed.size);
    setOutput('sha256', packed.sha256);
    setOutput('integrity', packed.integrity);

    if (inputs.dryRun) {
      setOutput('uploaded', false);
      rows.push(['Upload', 'skipped (dry-run)'], ['Release', 'skipped (dry-run)']);
      core.info(`dry-run: packed ${packed.file}; nothing was uploaded or released`);
    } else {
      const registryUrl = inputs.registryUrl ?? '';
      const publish = deps.publish ?? publishTemplate;
      const published: PublishResult = await step(
        'Upload',
        () =>
          publish({
            registryUrl,
            token: inputs.registryToken ?? '',
            archive: packed.file,
            manifest: packed.manifest,
            integrity: packed.integrity,
            onRetry: ({ attempt, delayMs, reason }) => core.warning(`upload attempt ${attempt} failed (${reason}); retrying in ${delayMs} ms`),
          }),
        (p) => (p.uploaded ? `uploaded to ${registryUrl}` : 'already published with the same integrity (re-run)'),
      );
      setOutput('uploaded', published.uploaded);
      setOutput('download-url', published.downloadUrl ?? defaultDownloadUrl(registryUrl, packed.manifest.name, inputs.version));

      if (inputs.createRelease && inputs.repository && inputs.githubToken) {
        const manifestAsset = path.join(outDir, MANIFEST_FILE);
        await writeFile(manifestAsset, `${JSON.stringify(packed.manifest, null, 2)}\n`);
        const api = (deps.releaseApi ?? defaultReleaseApi)(inputs.githubToken, inputs.repository.owner, inputs.repository.repo, env.GITHUB_API_URL);
        const release = await step(
          'Release',
          () =>
            publishRelease(api, {
              tag: inputs.tag,
              name: `${packed.manifest.name} ${inputs.version}`,
              body: notes,
              assets: [
                { name: path.basename(packed.file), path: packed.file, contentType: 'application/gzip' },
                { name: MANIFEST_FILE, path: manifestAsset, contentType: 'application/json' },
              ],
            }),
          (r) => `${r.created ? 'created' : 'updated'} ${r.url}`,
        );
        setOutput('release-id', release.id);
        setOutput('release-url', release.url);
      } else {
        rows.push(['Release', 'skipped (create-release is false)']);
      }
    }
    ok = true;
  } catch (error) {
    core.setFailed(errorMessage(error));
  }

  try {
    core.summary.addHeading('Template publish', 2);
    core.summary.addTable(rows);
    if (outputs.integrity) core.summary.addRaw(`Integrity: \`${outputs.integrity}\``, true);
    await core.summary.write();
  } catch (error) {
    core.warning(`could not write the job summary: ${errorMessage(error)}`);
  }
  return { ok, outputs };
}
