/**
 * The publish pipeline: the spec's publishing steps, in the spec's order, for one template folder.
 *
 *   validate -> test generation -> lint -> changelog section -> stamp + pack -> upload
 *
 * The publish action, `template-registry publish` and `npm start` all call `runPublishPipeline`,
 * so they accept and refuse the same templates with the same messages. The caller learns what
 * happens through hooks (steps, findings with their file and position, upload retries) and prints
 * or annotates as it likes; the pipeline itself writes nothing but the archive.
 *
 * A failing step throws `PublishPipelineError` naming the step, and nothing is uploaded: the
 * upload is the last step.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { errorMessage } from '../core/errors.js';
import { archiveUrl } from '../core/routes.js';
import { formatValidationError } from '../core/validation.js';
import { VERSION_PATTERN, VERSION_RULE } from '../core/versions.js';
import { packTemplate, selectPackFiles, type PackResult } from '../pack/pack.js';
import { extractChangelogSection, missingEntryNotes } from '../core/changelog.js';
import { formatLintFinding, lintTemplate } from '../template/lint.js';
import { testTemplate } from '../template/test-template.js';
import { MANIFEST_FILE, readTemplateTree, treePath, type TemplateTree } from '../template/tree.js';
import { validateTemplate } from '../template/validate.js';
import { publishTemplate, type PublishOptions, type PublishResult, type PublishRetryInfo } from './upload.js';

/** The steps, in the order they run. */
export const PUBLISH_STEPS = ['validate', 'test', 'lint', 'changelog', 'pack', 'upload'] as const;

export type PublishStep = (typeof PUBLISH_STEPS)[number];

/** How each step is called in logs and summaries. */
export const PUBLISH_STEP_TITLES: Readonly<Record<PublishStep, string>> = {
  validate: 'Validate',
  test: 'Test generation',
  lint: 'Lint',
  changelog: 'Release notes',
  pack: 'Pack',
  upload: 'Upload',
};

/** The change log file when the manifest names none. */
export const DEFAULT_CHANGELOG_FILE = 'CHANGELOG.md';

/** Something a step found in the template: an error fails the step, a warning does not. */
export interface PublishFinding {
  step: PublishStep;
  severity: 'error' | 'warning';
  /** The file, relative to the template folder; absent when the finding concerns no file of it (a generated project). */
  file?: string;
  /** 1-based, when known. */
  line?: number;
  column?: number;
  /** What was broken: the validation error code, the lint rule id, `test-generation` or `changelog-section`. */
  rule: string;
  /** A title for an annotation, e.g. `lint: prompt-unknown-variable`. */
  title: string;
  /** The finding in words, without its place (an annotation shows the file and line beside it). */
  message: string;
  /**
   * The finding as one line for a terminal, as `template-registry validate`, `lint` and `test`
   * print it: `template.json /version: must be ...`, `file:line:col severity rule message`.
   */
  text: string;
}

export interface PublishHooks {
  onStepStarted?(step: PublishStep): void;
  /** The step passed; `result` says how in one line (`3 answer set(s) passed`). */
  onStepFinished?(step: PublishStep, result: string): void;
  /** The step did not run: `reason` is `dry-run` or the option that skipped it. */
  onStepSkipped?(step: PublishStep, reason: string): void;
  /** The step failed; the same error is thrown next. */
  onStepFailed?(step: PublishStep, error: PublishPipelineError): void;
  onFinding?(finding: PublishFinding): void;
  /** Progress inside a step, e.g. `PASS defaults: 12 files`. */
  onInfo?(step: PublishStep, message: string): void;
  /** The archive is written (before the upload): outputs can name it even when the upload fails. */
  onPacked?(packed: PackResult): void;
  /** An upload attempt failed and will be retried after `delayMs`. */
  onRetry?(info: PublishRetryInfo): void;
  /** Bytes of the upload's body sent so far, of `total`; starts again at 0 when an attempt is retried. */
  onUploadProgress?(sent: number, total: number): void;
}

export interface PublishPipelineOptions {
  /** The template folder (the one holding template.json). */
  templateDir: string;
  /** The version to publish, MAJOR.MINOR.PATCH; stamped into the packed template.json. Default: the manifest's. */
  version?: string;
  /** Extra globs left out of the archive. */
  exclude?: string[];
  /** Shell command run in each test-generated project; default the manifest's `test.command`. */
  testCommand?: string;
  /** Skip test generation. The only step that can be skipped: validation, lint and the changelog section always run. */
  skipTest?: boolean;
  /** Where the archive is written; default a new temporary folder (the archive is the caller's to remove). */
  outDir?: string;
  /** Every step but the upload. */
  dryRun?: boolean;
  /** The registry's base URL; required unless `dryRun`. */
  registryUrl?: string;
  /**
   * The registry API token; required unless `dryRun`. Or a function giving it, called once right
   * before the upload (trusted publishing: an OIDC ID token exchanged for a short-lived token, only
   * once every check passed); its failure fails the upload step.
   */
  token?: string | (() => Promise<string>);
  /** Replaces `publishTemplate` (tests). */
  upload?: (options: PublishOptions) => Promise<PublishResult>;
  /**
   * Signs the build provenance of the packed archive (`attestProvenance`), called once in the upload
   * step before the upload: its bundle is sent as the `attestation` part; undefined sends none. Its
   * failure fails the upload step (nothing is uploaded).
   */
  attest?: (packed: PackResult) => Promise<string | undefined>;
}

export interface PublishPipelineResult {
  /** The version published (or that would be, in a dry run). */
  version: string;
  /** The archive, its digests and the manifest as packed (with the version stamped). */
  packed: PackResult;
  /** The change log file, relative to the template folder. */
  changelogFile: string;
  /**
   * The release notes: the change log section of the version, or, when the change log has none (or
   * an empty one), a line saying so (`missingEntryNotes`); the pipeline warns and goes on then.
   */
  releaseNotes: string;
  /** Whether the change log has a section (with text) for the version. */
  changelogEntry: boolean;
  /** What the registry answered; absent in a dry run. */
  upload?: PublishResult;
  /** Where the registry serves the archive; absent in a dry run. */
  downloadUrl?: string;
}

/** A step of the pipeline failed (its findings were reported through `onFinding`); nothing was uploaded unless `step` is `upload`. */
export class PublishPipelineError extends Error {
  override readonly name = 'PublishPipelineError';
  readonly step: PublishStep;

  constructor(step: PublishStep, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.step = step;
  }
}

interface StepContext {
  options: PublishPipelineOptions;
  /** The template folder, read once for every step. */
  tree: TemplateTree;
  report: (finding: Omit<PublishFinding, 'step'>) => void;
  info: (message: string) => void;
}

/** A step's own refusal: its message is the pipeline's failure message. */
class StepRefusal extends Error {}

async function validateStep({ tree, report }: StepContext): Promise<string> {
  const result = await validateTemplate(tree);
  for (const problem of result.errors) {
    const text = formatValidationError(problem);
    report({
      severity: 'error',
      file: problem.file,
      ...(problem.line ? { line: problem.line } : {}),
      ...(problem.column ? { column: problem.column } : {}),
      rule: problem.code,
      title: `template validation: ${problem.code}`,
      message: text,
      text,
    });
  }
  if (!result.valid) throw new StepRefusal(`template validation failed with ${result.errors.length} error(s)`);
  return 'valid';
}

async function testStep({ options, tree, report, info }: StepContext): Promise<string> {
  // Generated from exactly the files the archive will hold: what is tested is what is published.
  const packedFiles = await selectPackFiles(tree, { exclude: options.exclude ?? [] });
  const outcome = await testTemplate(tree, { packedFiles, ...(options.testCommand ? { command: options.testCommand } : {}) });
  for (const set of outcome.sets) {
    info(`${set.passed ? 'PASS' : 'FAIL'} ${set.name}: ${set.files} files`);
    for (const problem of set.problems) {
      const message = `${set.name}: ${problem}`;
      report({ severity: 'error', rule: 'test-generation', title: 'test generation', message, text: message });
    }
    // The end of the command's output says why it failed.
    if (!set.passed && set.command?.output) for (const line of set.command.output.trimEnd().split('\n')) info(`  | ${line}`);
  }
  // One finding per target: each is its own problem, with its own fix.
  for (const target of outcome.uncovered) {
    const message = `not covered by any valid answer set: ${target}`;
    report({ severity: 'error', rule: 'test-generation', title: 'test generation', message, text: message });
  }
  if (!outcome.passed) throw new StepRefusal('test generation failed');
  return `${outcome.sets.length} answer set(s) passed`;
}

async function lintStep({ tree, report }: StepContext): Promise<string> {
  const result = await lintTemplate(tree);
  for (const finding of result.findings) {
    report({
      severity: finding.severity,
      file: finding.file,
      line: finding.line,
      column: finding.column,
      rule: finding.rule,
      title: `lint: ${finding.rule}`,
      message: finding.message,
      text: formatLintFinding(finding),
    });
  }
  if (result.errorCount > 0) throw new StepRefusal(`lint found ${result.errorCount} error(s)`);
  return `${result.errorCount} error(s), ${result.warningCount} warning(s)`;
}

/** The release notes of a version, and whether the change log had an entry for it. */
interface ReleaseNotes {
  notes: string;
  entry: boolean;
}

/**
 * The change log section of the version, as the release notes. A missing or empty section is a
 * warning, not a refusal (the spec does not ask for one): the notes then say the change log has no
 * entry for the version. A change log that cannot be read at all still fails the step.
 */
async function changelogStep(
  { tree, report }: StepContext,
  changelogFile: string,
  version: string,
): Promise<ReleaseNotes> {
  const where = { file: changelogFile, rule: 'changelog-section', title: 'release notes' } as const;
  if (treePath(changelogFile) === undefined || tree.problemAt(changelogFile)?.code === 'LINK_OUTSIDE_TEMPLATE') {
    const message = `the changelog ${JSON.stringify(changelogFile)} of ${MANIFEST_FILE} must be a path inside the template folder`;
    report({ severity: 'error', ...where, message, text: message });
    throw new StepRefusal(message);
  }
  let text: string;
  try {
    if (tree.kindOf(changelogFile) !== 'file') throw new Error('it is not a file of the template');
    text = (await tree.bytes(changelogFile)).toString('utf8');
  } catch (error) {
    const message = `cannot read ${changelogFile}: ${errorMessage(error)}`;
    report({ severity: 'error', ...where, message, text: message });
    throw new StepRefusal(message);
  }
  const section = extractChangelogSection(text, version);
  if (!section) {
    const missing =
      section === '' ? `the section of ${changelogFile} for ${version} is empty` : `${changelogFile} has no section for ${version} (a heading such as "## [${version}] - YYYY-MM-DD")`;
    const message = `${missing}; the release notes will say the change log has no entry for ${version}`;
    report({ severity: 'warning', ...where, message, text: `warning: ${message}` });
    return { notes: missingEntryNotes(version, changelogFile), entry: false };
  }
  return { notes: section, entry: true };
}

/** The manifest fields the pipeline needs; read after validation, so it is a valid manifest. */
async function readManifest(tree: TemplateTree): Promise<{ version: string; changelog?: string }> {
  return (await tree.manifest()).value as { version: string; changelog?: string };
}

function checkOptions(options: PublishPipelineOptions): void {
  if (options.version !== undefined && !VERSION_PATTERN.test(options.version)) {
    throw new TypeError(`version ${VERSION_RULE} (got ${JSON.stringify(options.version)})`);
  }
  if (!options.dryRun && (!options.registryUrl || !options.token)) {
    throw new TypeError('registryUrl and token are required to upload (unless dryRun is true)');
  }
}

/**
 * Runs the publish pipeline on a template folder: validate, test-generate (unless `skipTest`),
 * lint, find the change log section of the version, pack with the version stamped, and upload
 * (unless `dryRun`). Throws `PublishPipelineError` at the first step that fails, after reporting
 * its findings; nothing is uploaded then. Throws TypeError for options that cannot work (a
 * version that is not MAJOR.MINOR.PATCH, no registry or token without `dryRun`).
 */
export async function runPublishPipeline(options: PublishPipelineOptions, hooks: PublishHooks = {}): Promise<PublishPipelineResult> {
  checkOptions(options);
  // Read once: every step sees the same files, with the same symbolic-link and text/binary rules.
  const tree = await readTemplateTree(options.templateDir);

  const step = async <T>(name: PublishStep, work: (context: StepContext) => Promise<T>, describe: (value: T) => string): Promise<T> => {
    const context: StepContext = {
      options,
      tree,
      report: (finding) => hooks.onFinding?.({ step: name, ...finding }),
      info: (message) => hooks.onInfo?.(name, message),
    };
    hooks.onStepStarted?.(name);
    let value: T;
    try {
      value = await work(context);
    } catch (error) {
      // A step's own refusal is the message; anything else thrown (PackError, PublishError, ...) is kept as the cause.
      const failure = new PublishPipelineError(name, errorMessage(error), error instanceof StepRefusal ? {} : { cause: error });
      hooks.onStepFailed?.(name, failure);
      throw failure;
    }
    hooks.onStepFinished?.(name, describe(value));
    return value;
  };

  await step('validate', validateStep, (result) => result);
  if (options.skipTest) hooks.onStepSkipped?.('test', 'skip-test');
  else await step('test', testStep, (result) => result);
  await step('lint', lintStep, (result) => result);

  const manifest = await readManifest(tree);
  const version = options.version ?? manifest.version;
  const changelogFile = manifest.changelog ?? DEFAULT_CHANGELOG_FILE;
  const { notes: releaseNotes, entry: changelogEntry } = await step(
    'changelog',
    (context) => changelogStep(context, changelogFile, version),
    (found) => (found.entry ? `section for ${version} found in ${changelogFile}` : `no entry for ${version} in ${changelogFile}: the release notes say so`),
  );

  const outDir = options.outDir ?? (await mkdtemp(path.join(tmpdir(), 'template-publish-')));
  const packed = await step(
    'pack',
    async ({ info }) => {
      const result = await packTemplate(tree, { version, outDir, exclude: options.exclude ?? [] });
      // Nothing is left out silently: each file or folder, and why.
      for (const file of result.leftOut) info(`left out: ${file.path} (${file.reason})`);
      return result;
    },
    (p) => `${path.basename(p.file)}: ${p.size} bytes, ${p.files.length} files${p.leftOut.length > 0 ? ` (${p.leftOut.length} left out)` : ''}, sha256 ${p.sha256}`,
  );
  hooks.onPacked?.(packed);

  if (options.dryRun) {
    hooks.onStepSkipped?.('upload', 'dry-run');
    return { version, packed, changelogFile, releaseNotes, changelogEntry };
  }

  const registryUrl = options.registryUrl ?? '';
  const upload = await step(
    'upload',
    async () => {
      const attestation = await options.attest?.(packed);
      return (options.upload ?? publishTemplate)({
        registryUrl,
        token: typeof options.token === 'function' ? await options.token() : (options.token ?? ''),
        archive: packed.file,
        manifest: packed.manifest,
        integrity: packed.integrity,
        ...(attestation === undefined ? {} : { attestation }),
        onRetry: (info) => hooks.onRetry?.(info),
        onProgress: (sent, total) => hooks.onUploadProgress?.(sent, total),
      });
    },
    (result) => (result.uploaded ? `uploaded to ${registryUrl}` : 'already published with the same integrity (re-run)'),
  );
  return {
    version,
    packed,
    changelogFile,
    releaseNotes,
    changelogEntry,
    upload,
    downloadUrl: upload.downloadUrl ?? archiveUrl(registryUrl, packed.manifest.name, version),
  };
}
