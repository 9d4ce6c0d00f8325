/**
 * The publish action, shaped like actions/typescript-action: `run()` takes its inputs from the
 * process and reports through `@actions/core`, so the runner (through `index.ts`) and
 * `npx @github/local-action run . src/action/main.ts <dotenv>` both call it without arguments;
 * tests pass their own environment, core, upload and release API.
 *
 * The checks, the pack and the upload are the library's publish pipeline; the action turns its
 * steps into log groups and summary rows, its findings into annotations, and then creates the
 * GitHub release from the changelog section.
 *
 * Each problem is annotated once, inside the group of the step that found it: a finding of the
 * pipeline, or the failure of a step that found none (an upload refused, a release that could not
 * be made). The run is then failed through the exit code alone, so that no second annotation
 * repeats, outside the groups, what the groups already say.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import * as actionsCore from '@actions/core';
import type { AnnotationProperties } from '@actions/core';

import { errorMessage } from '../core/errors.js';
import { createGitHubClient } from '../github/client.js';
import { requestIdToken } from '../github/oidc.js';
import type { ActionCoreBase, ActionEnv, SummaryCell } from '../github/inputs.js';
import { octokitReleaseApi, publishRelease, type ReleaseApi } from '../github/release.js';
import { PUBLISH_STEP_TITLES, runPublishPipeline, type PublishFinding, type PublishPipelineError, type PublishPipelineOptions, type PublishStep } from '../publish/pipeline.js';
import type { LeftOutFile } from '../pack/index.js';
import { exchangeIdToken, PublishError, registryAudienceOf, revokeExchangedToken, type ExchangedToken, type IdTokenExchangeOptions } from '../publish/upload.js';
import { notVisibleWarning, templateFileUrl, waitUntilVisible, type WaitUntilVisibleOptions } from '../publish/visible.js';
import { attestProvenance, SIGSTORE_AUDIENCE } from '../publish/attest.js';
import type { PackResult } from '../pack/index.js';
import { MANIFEST_FILE } from '../template/validate.js';
import { parseInputs, type ActionInputs } from './inputs.js';

/** The part of @actions/core the publish action uses; tests pass a recording fake. */
export interface ActionCore extends ActionCoreBase {
  warning(message: string, properties?: AnnotationProperties): void;
  error(message: string, properties?: AnnotationProperties): void;
  startGroup(name: string): void;
  endGroup(): void;
}

/** What `run()` takes from its surroundings; every field has the runner's default. */
export interface ActionDependencies {
  /** Default `process.env`. */
  env?: ActionEnv;
  /** Default `@actions/core`. */
  core?: ActionCore;
  /** Replaces the registry upload (`publishTemplate`). */
  upload?: PublishPipelineOptions['upload'];
  /**
   * Trusted publishing: asks for the job's OIDC ID token for an audience. Default: the runner's
   * endpoint named by `ACTIONS_ID_TOKEN_REQUEST_URL` / `ACTIONS_ID_TOKEN_REQUEST_TOKEN` of `env`, as
   * @actions/core's getIDToken asks it.
   */
  getIdToken?: (audience: string) => Promise<string>;
  /** Exchanges the ID token for a registry token (default `exchangeIdToken`: `POST /api/oidc/token`). */
  exchangeToken?: (options: IdTokenExchangeOptions) => Promise<ExchangedToken>;
  /** Revokes the exchanged token at the end of the run (default `revokeExchangedToken`: `DELETE /api/oidc/token`). */
  revokeToken?: (options: { registryUrl: string; token: string }) => Promise<boolean>;
  /** Makes the release API; default Octokit with retries and rate-limit handling. */
  releaseApi?: (token: string, owner: string, repo: string, baseUrl?: string) => ReleaseApi;
  /**
   * Fails the run once its problems are annotated (default: `process.exitCode = code`, what
   * core.setFailed does besides annotating).
   */
  setExitCode?: (code: number) => void;
  /** The wait until the version is visible (`wait`): its fetch and clock (tests); default the real ones. */
  wait?: Pick<WaitUntilVisibleOptions, 'fetch' | 'now' | 'sleep'>;
}

export interface ActionOutcome {
  ok: boolean;
  outputs: Record<string, string>;
}

/** Text for a job summary cell (written into HTML as it is): a file name cannot add markup. */
function htmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function defaultReleaseApi(token: string, owner: string, repo: string, baseUrl?: string): ReleaseApi {
  return octokitReleaseApi(createGitHubClient({ token, ...(baseUrl ? { baseUrl } : {}) }), owner, repo);
}

/** Annotations name files relative to the workspace, as GitHub shows them on the diff. */
function annotationFile(inputs: ActionInputs, file: string): string {
  const absolute = path.resolve(inputs.templatePath, file);
  const relative = path.relative(inputs.workspace, absolute);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative;
  return shown.split(path.sep).join('/');
}

function annotate(core: ActionCore, inputs: ActionInputs, finding: PublishFinding): void {
  const properties: AnnotationProperties = {
    title: finding.title,
    ...(finding.file ? { file: annotationFile(inputs, finding.file) } : {}),
    ...(finding.line ? { startLine: finding.line } : {}),
    ...(finding.column ? { startColumn: finding.column } : {}),
  };
  // The annotation shows in the log too, but without its place: the line with the place comes first.
  if (finding.text !== finding.message) core.info(finding.text);
  if (finding.severity === 'error') core.error(finding.message, properties);
  else core.warning(finding.message, properties);
}

/**
 * The problems of a step that failed without findings, one annotation each: every detail of a
 * registry's 400/422 refusal is a problem of its own; anything else is one.
 */
function annotateFailure(core: ActionCore, title: string, error: Error): void {
  const cause = error.cause;
  if (cause instanceof PublishError && (cause.status === 400 || cause.status === 422) && cause.details.length > 0) {
    const heading = (cause.message.split('\n')[0] ?? cause.message).trim();
    core.info(`${title} failed: ${heading}`);
    for (const detail of cause.details) {
      const where = [detail.field, detail.code].filter((part) => part !== '').join(' ');
      core.error(`${where === '' ? '' : `${where}: `}${detail.message}`, { title: `${title.toLowerCase()}: ${cause.code ?? `HTTP ${cause.status}`}` });
    }
    return;
  }
  core.error(error.message, { title: `${title.toLowerCase()} failed` });
}

/**
 * The publish action: the publish pipeline on the template at `template-path` (validate,
 * test-generate, lint, changelog section, pack with the version from the tag, upload), then the
 * GitHub release with the changelog section as its text. With dry-run, everything but the upload
 * and the release. Without registry-token (trusted publishing), the upload step first asks for the
 * job's OIDC ID token and exchanges it once for a short-lived registry token, revoked at the end
 * whatever happened. Failures end in `core.setFailed`; the job summary is written either way.
 */
export async function run(dependencies: ActionDependencies = {}): Promise<ActionOutcome> {
  const env = dependencies.env ?? process.env;
  const core = dependencies.core ?? actionsCore;
  const setExitCode =
    dependencies.setExitCode ??
    ((code: number) => {
      process.exitCode = code;
    });
  const outputs: Record<string, string> = {};
  const setOutput = (name: string, value: string | number | boolean): void => {
    outputs[name] = String(value);
    core.setOutput(name, String(value));
  };
  const rows: SummaryCell[][] = [[{ data: 'Step', header: true }, { data: 'Result', header: true }]];
  /** Error findings of the running step: a step that reported some needs no annotation of its own when it fails. */
  let stepErrors = 0;
  /** The failure is annotated already, inside its group. */
  let annotated = false;
  /** What the archive left out, and why: listed in the job summary. */
  let leftOut: readonly LeftOutFile[] = [];

  const stepFailed = (step: PublishStep, error: PublishPipelineError): void => {
    const title = PUBLISH_STEP_TITLES[step];
    if (stepErrors === 0) annotateFailure(core, title, error);
    else core.info(`${title} failed: ${error.message}`);
    annotated = true;
    core.endGroup();
    rows.push([title, `failed: ${error.message}`]);
  };

  let ok = false;
  /** The registry token exchanged for the job's ID token (trusted publishing), revoked at the end. */
  let exchanged: { registryUrl: string; token: string } | undefined;
  try {
    const inputs = parseInputs(env);
    for (const secret of [inputs.registryToken, inputs.githubToken]) if (secret) core.setSecret(secret);
    setOutput('version', inputs.version);

    /**
     * Trusted publishing: called by the upload step once every check passed, so that the short-lived
     * token exists only for the upload. The ID token is asked for and exchanged once.
     */
    const exchangeForUpload = async (): Promise<string> => {
      const registryUrl = inputs.registryUrl ?? '';
      const audience = registryAudienceOf(registryUrl);
      core.info(`trusted publishing: asking for an OIDC ID token for ${audience}`);
      const idToken = await (dependencies.getIdToken ?? ((wanted: string) => requestIdToken(env, wanted)))(audience);
      core.setSecret(idToken);
      const minted = await (dependencies.exchangeToken ?? exchangeIdToken)({ registryUrl, idToken });
      core.setSecret(minted.token);
      exchanged = { registryUrl, token: minted.token };
      core.info(`trusted publishing: exchanged it for a registry token limited to ${minted.templates.join(', ')}, valid until ${minted.expiresAt}`);
      return minted.token;
    };

    /**
     * Build provenance: signed right before the upload (once every check passed) for the job's ID
     * token of the audience `sigstore`, kept beside the archive and sent with it.
     */
    const attestForUpload = async (packed: PackResult): Promise<string> => {
      const { fulcioUrl, rekorUrl, tsaUrl } = inputs.sigstore;
      core.info(`provenance: signing SLSA provenance of ${path.basename(packed.file)} (sha256 ${packed.sha256}) with ${[fulcioUrl, rekorUrl, tsaUrl].filter(Boolean).join(', ')}`);
      const { bundle } = await attestProvenance({
        subject: { name: path.basename(packed.file), sha256: packed.sha256 },
        idToken: async () => {
          const token = await (dependencies.getIdToken ?? ((wanted: string) => requestIdToken(env, wanted)))(SIGSTORE_AUDIENCE);
          core.setSecret(token);
          return token;
        },
        endpoints: inputs.sigstore,
        ...(env.GITHUB_SERVER_URL ? { serverUrl: env.GITHUB_SERVER_URL } : {}),
      });
      const file = `${packed.file}.sigstore.json`;
      await writeFile(file, bundle);
      setOutput('attestation', file);
      core.info(`provenance: signed; the bundle is ${file}`);
      return bundle;
    };

    const outDir = await mkdtemp(path.join(env.RUNNER_TEMP || tmpdir(), 'template-publish-'));
    const result = await runPublishPipeline(
      {
        templateDir: inputs.templatePath,
        version: inputs.version,
        exclude: inputs.exclude,
        ...(inputs.testCommand ? { testCommand: inputs.testCommand } : {}),
        outDir,
        dryRun: inputs.dryRun,
        ...(inputs.registryUrl ? { registryUrl: inputs.registryUrl } : {}),
        ...(inputs.registryToken ? { token: inputs.registryToken } : inputs.trustedPublishing ? { token: exchangeForUpload } : {}),
        ...(dependencies.upload ? { upload: dependencies.upload } : {}),
        ...(inputs.attest ? { attest: attestForUpload } : {}),
      },
      {
        onStepStarted: (step) => {
          stepErrors = 0;
          core.startGroup(PUBLISH_STEP_TITLES[step]);
        },
        onStepFinished: (step, summary) => {
          core.info(`${PUBLISH_STEP_TITLES[step]}: ${summary}`);
          core.endGroup();
          rows.push([PUBLISH_STEP_TITLES[step], summary]);
        },
        onStepFailed: stepFailed,
        onStepSkipped: (step, reason) => rows.push([PUBLISH_STEP_TITLES[step], `skipped (${reason})`]),
        onFinding: (finding) => {
          if (finding.severity === 'error') stepErrors++;
          annotate(core, inputs, finding);
        },
        onInfo: (_step, message) => core.info(message),
        onPacked: (packed) => {
          leftOut = packed.leftOut;
          setOutput('archive', packed.file);
          setOutput('size', packed.size);
          setOutput('sha256', packed.sha256);
          setOutput('integrity', packed.integrity);
        },
        onRetry: ({ attempt, delayMs, reason }) => core.warning(`upload attempt ${attempt} failed (${reason}); retrying in ${delayMs} ms`),
      },
    );
    const { packed } = result;

    if (!result.upload) {
      setOutput('uploaded', false);
      rows.push(['Release', 'skipped (dry-run)']);
      core.info(`dry-run: packed ${packed.file}; nothing was uploaded or released`);
    } else {
      setOutput('uploaded', result.upload.uploaded);
      if (result.upload.warning) core.warning(result.upload.warning);
      if (result.downloadUrl) {
        setOutput('download-url', result.downloadUrl);
        core.info(`download URL: ${result.downloadUrl}`);
      }

      if (inputs.createRelease && inputs.repository && inputs.githubToken) {
        const manifestAsset = path.join(outDir, MANIFEST_FILE);
        await writeFile(manifestAsset, `${JSON.stringify(packed.manifest, null, 2)}\n`);
        const api = (dependencies.releaseApi ?? defaultReleaseApi)(inputs.githubToken, inputs.repository.owner, inputs.repository.repo, env.GITHUB_API_URL);
        core.startGroup('Release');
        try {
          const release = await publishRelease(api, {
            tag: inputs.tag,
            name: `${packed.manifest.name} ${inputs.version}`,
            body: result.releaseNotes,
            assets: [
              { name: path.basename(packed.file), path: packed.file, contentType: 'application/gzip' },
              { name: MANIFEST_FILE, path: manifestAsset, contentType: 'application/json' },
            ],
          });
          core.info(`Release: ${release.created ? 'created' : 'updated'} ${release.url}`);
          rows.push(['Release', `${release.created ? 'created' : 'updated'} ${release.url}`]);
          setOutput('release-id', release.id);
          setOutput('release-url', release.url);
        } catch (error) {
          core.error(errorMessage(error), { title: 'release failed' });
          annotated = true;
          rows.push(['Release', `failed: ${errorMessage(error)}`]);
          throw error;
        } finally {
          core.endGroup();
        }
      } else {
        rows.push(['Release', 'skipped (create-release is false)']);
      }

      if (inputs.wait) {
        const registryUrl = inputs.publicUrl ?? inputs.registryUrl ?? '';
        const { name } = packed.manifest;
        core.startGroup('Wait until visible');
        try {
          core.info(`waiting until ${registryUrl} lists ${name}@${inputs.version} (at most ${Math.round(inputs.waitTimeoutMs / 1000)} s)`);
          const visible = await waitUntilVisible({
            ...dependencies.wait,
            registryUrl,
            id: name,
            version: inputs.version,
            timeoutMs: inputs.waitTimeoutMs,
            onPoll: ({ attempt, served }) => core.info(`poll ${attempt}: ${templateFileUrl(registryUrl, name)} served ${served}`),
          });
          if (visible.visible) {
            setOutput('visible-after-ms', visible.afterMs);
            core.info(`visible at ${visible.url} after ${visible.afterMs} ms`);
            rows.push(['Wait until visible', `visible after ${visible.afterMs} ms`]);
          } else {
            // The version is published: a CDN still serving its copy is a warning, not a failed run.
            core.warning(notVisibleWarning(visible, name, inputs.version), { title: 'not visible yet' });
            rows.push(['Wait until visible', `not visible within ${Math.round(visible.afterMs / 1000)} s (served ${visible.served})`]);
          }
        } finally {
          core.endGroup();
        }
      }
    }
    ok = true;
  } catch (error) {
    if (annotated) {
      // Annotated in its group already: the log's last line says where it stopped, the exit code fails the job.
      core.info(`publish failed: ${errorMessage(error)}`);
      setExitCode(1);
    } else {
      core.setFailed(errorMessage(error));
    }
  } finally {
    // The exchanged token is of no more use: revoked rather than left valid for its 15 minutes.
    if (exchanged) {
      try {
        const revoked = await (dependencies.revokeToken ?? revokeExchangedToken)(exchanged);
        core.info(revoked ? 'trusted publishing: the registry token was revoked' : 'trusted publishing: the registry token had already expired');
      } catch (error) {
        core.warning(`could not revoke the registry token (it expires by itself within 15 minutes): ${errorMessage(error)}`);
      }
    }
  }

  try {
    core.summary.addHeading('Template publish', 2);
    core.summary.addTable(rows);
    if (outputs.integrity) core.summary.addRaw(`Integrity: \`${outputs.integrity}\``, true);
    if (leftOut.length > 0) {
      // Nothing the template folder holds is left out of the archive silently.
      core.summary.addHeading('Left out of the archive', 3);
      core.summary.addTable([[{ data: 'Path', header: true }, { data: 'Why', header: true }], ...leftOut.map((file) => [htmlText(file.path), htmlText(file.reason)])]);
    }
    await core.summary.write();
  } catch (error) {
    core.warning(`could not write the job summary: ${errorMessage(error)}`);
  }
  return { ok, outputs };
}
