/**
 * Updates a generated project to a newer version of its template, keeping what the project
 * changed: the migration steps between the two versions run first (chained), then the template's
 * own change (its rendering at the locked version against its rendering at the target version,
 * both with the project's answers) is merged into the project file by file
 * (`migrate/merge-files.ts`). Everything is planned before anything is written; the apply is
 * all-or-nothing with backups, and the lock records the new version, answers and file hashes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { nextPinnedSigner, type ProvenanceOutcome, type RegistryClient } from '../client/index.js';
import { errorMessage } from '../core/errors.js';
import { readHead, writeFileAtomic } from '../core/files.js';
import type { TemplateEntry } from '../core/schema-types.js';
import {
  applyPlannedRun,
  chainSteps,
  mergeRenderings,
  plannedChangesToChangedFiles,
  recoverAndPlanRun,
  updatePolicies,
  type FileChange,
  type FileUpdate,
  type MigrationRunResult,
  type MigrationStep,
  type PlannedRun,
  type Recovery,
  type RenderedContent,
} from '../migrate/index.js';
import { isInside } from '../template/paths.js';
import { AnswersError, ExpressionEvaluator, loadTemplate, renderTemplate, resolveAnswers, type Answers, type LoadedTemplate, type RenderedFile, type TemplateLock } from '../template/index.js';
import { LOCK_FILE, lockSkipGlobs, registrySource, serializeLock, sha256Hex, skipGlobProblem } from '../template/lock.js';
import { maskSecrets, secretValues, secretVariables, withoutSecrets } from '../template/secrets.js';
import { givenAnswers, type GivenAnswers } from './answers.js';
import { DECIDES_FILES, secretsAnUpdateNeeds } from './update-secrets.js';
import { ProjectLockError } from './errors.js';
import { lockedTarget, migrationStepsBetween, pinnedPolicy, projectLock, versionDownloader, type LockedTarget, type ProjectProvenance, type UpToDate } from './locked.js';

export interface UpdateProjectOptions extends GivenAnswers {
  /** The registry to read. */
  client: RegistryClient;
  /** The project folder (holding `.template-lock.json`); the working folder unless given. */
  projectDir?: string;
  /** The target version; the one the registry selects (newest stable, else newest) unless given. */
  to?: string;
  /** Plan and report, change nothing. */
  dryRun?: boolean;
  /** Conflicts as markers in the file (`inline`, the default) or as a `.rej` patch beside the untouched file. */
  conflict?: 'inline' | 'rej';
  /** Keep every replaced or removed file in `.template-backups/<timestamp>/`; true unless false. */
  backup?: boolean;
  /**
   * Globs of project paths the update must never write, create or remove (the project's own rules,
   * as a template's `updatePolicy` `once`); recorded in the lock's `skip` so every later update
   * honours them too (also when the project is already current), unless a dry run.
   */
  skip?: string[];
  /**
   * Asks the questions the target version added, given the answers known so far (the lock's,
   * then `answers`, `answersFile`, `set`, the environment); without it, new questions take their
   * defaults. `skip` names the secrets not to ask for: no file the update renders needs them.
   */
  ask?: (template: LoadedTemplate, given: Answers, options?: { skip?: ReadonlySet<string> }) => Promise<Answers>;
  /** Called with the plan before anything is confirmed or applied. */
  onPlan?: (plan: UpdatePlan) => void;
  /**
   * Asked before breaking steps are applied; true applies them. Without it, an update with
   * breaking steps is declined (a caller that cannot ask passes one only when told to go ahead).
   */
  confirmBreaking?: (breaking: BreakingChanges) => boolean | Promise<boolean>;
  /** Download progress; `total` is the archive's size when known. */
  onProgress?: (received: number, total?: number) => void;
  fetch?: typeof globalThis.fetch;
  /** Told when an earlier migration or update, interrupted by a crash, was rolled back before this one. */
  onRecovered?: (recovery: Recovery) => void;
  /** The clock, for the backup folder's name. */
  now?: () => Date;
  /**
   * How provenance is checked (default `warn`, the public-good root): every version downloaded must
   * be signed by the signer the lock pins, unless `acceptNewSigner`; the target's signer is pinned next.
   */
  provenance?: ProjectProvenance;
}

/** The breaking steps of an update, with where the template's migration guide is. */
export interface BreakingChanges {
  steps: { id: string; description: string }[];
  /** The guide the target version's manifest names (`migration.guide`), with its first lines. */
  guide?: { path: string; firstLines: string[] };
}

/** What an update will do, planned before anything is written. */
export interface UpdatePlan {
  templateId: string;
  fromVersion: string;
  toVersion: string;
  /** The migration steps: `applied` those that run (chained), with their changes, warnings and errors. */
  steps: MigrationRunResult;
  /** Each step that runs, in order: id, description, breaking, versions, and the file changes it asks for. */
  migrations: PlannedStep[];
  /** The migration guide the target version's manifest names (`migration.guide`), when steps run. */
  guide?: string;
  /** What happens to every file that changes or needs attention, in path order. */
  files: FileUpdate[];
  /** Paths with conflicts left to resolve. */
  conflicts: string[];
  /** Answers the target version's new questions got. */
  newAnswers: Answers;
  breaking: BreakingChanges;
  /** What the provenance check of the target version found. */
  provenance?: ProvenanceOutcome;
}

export type UpdateProjectResult =
  /** The registry has nothing newer than the project's version. */
  | UpToDate
  /** The plan failed (a step failed, or a change cannot be made): nothing was changed. */
  | (UpdatePlan & { status: 'plan-failed'; errors: string[] })
  /** A dry run: the plan, nothing changed. */
  | (UpdatePlan & { status: 'planned' })
  /** Breaking steps were not confirmed: nothing was changed. */
  | (UpdatePlan & { status: 'declined' })
  /** Written; `conflicts` lists what is left to resolve. */
  | (UpdatePlan & { status: 'updated'; backupDir?: string })
  /** Writing failed and was rolled back (`errors` says what happened). */
  | (UpdatePlan & { status: 'failed'; errors: string[]; backupDir?: string });

/** The plan's warning when the registry no longer has the version the project is locked at (the merge base). */
export function missingBaseWarning(templateId: string, version: string): string {
  return `template ${templateId}@${version}, the version the project is locked at, is not in the registry: the lock's hashes tell which files the project changed, but not which lines, so files changed on both sides are shown whole, as conflicts`;
}

/** Most lines of the migration guide shown with breaking steps, and most bytes read for them. */
const GUIDE_LINES = 8;
const GUIDE_BYTES = 16 * 1024;

/** The first lines of the guide the manifest names, read inside the template only; undefined when there is none. */
async function migrationGuide(template: LoadedTemplate): Promise<BreakingChanges['guide']> {
  const guide = template.manifest.migration?.guide;
  if (typeof guide !== 'string' || guide === '') return undefined;
  const file = path.resolve(template.root, guide);
  if (!isInside(template.root, file)) return undefined;
  let head: string;
  try {
    head = await readHead(file, GUIDE_BYTES);
  } catch {
    return { path: guide, firstLines: [] };
  }
  const firstLines = head.split(/\r?\n/).filter((line) => line.trim() !== '').slice(0, GUIDE_LINES);
  return { path: guide, firstLines };
}

interface Rendering {
  files: Map<string, RenderedContent>;
  rendered: RenderedFile[];
  resolved: ReturnType<typeof resolveAnswers>;
}

/** A version rendered with `answers`; the secrets of `withhold` not among them are left out (unknown, not needed). */
async function rendering(template: LoadedTemplate, answers: Answers, withhold: ReadonlySet<string> = new Set()): Promise<Rendering> {
  const resolved = resolveAnswers(template, answers, { withhold });
  const rendered = await renderTemplate(template, resolved);
  return { files: new Map(rendered.map((file) => [file.path, { content: file.content, mode: file.mode }])), rendered, resolved };
}

const scopeOf = (r: Rendering): Record<string, unknown> => ({ ...r.resolved.answers, ...r.resolved.computed });

/** The secrets of `template` that `answers` does not give. */
const missingSecrets = (template: LoadedTemplate, answers: Answers): string[] => secretVariables(template).filter((name) => !Object.hasOwn(answers, name));

/** The answers a version is rendered with: the lock's (which hold no secret), and the secrets given for this update. */
function answersFor(template: LoadedTemplate, lock: TemplateLock, answers: Answers): Answers {
  const secrets = Object.fromEntries(secretVariables(template).filter((name) => Object.hasOwn(answers, name)).map((name) => [name, answers[name]]));
  return variablesOf(template, { ...lock.answers, ...secrets });
}

/** How a secret can be given, for the message of an update that needs it. */
function secretNeededMessage(template: LoadedTemplate, name: string, needs: readonly string[], canAsk: boolean): string {
  const env = template.variables[name]?.env;
  const what = needs.map((item) => (item === DECIDES_FILES ? item : JSON.stringify(item))).join(', ');
  const ways = [`--set ${name}=...`, ...(env ? [`the environment variable ${env}`] : []), ...(canAsk ? [] : ['running update on a terminal to be asked'])];
  return `is a secret (kept in no file) that this update needs to render ${what} again: give it with ${ways.join(' or ')}`;
}

/** The answers among `answers` that are variables of `template`. */
function variablesOf(template: LoadedTemplate, answers: Answers): Answers {
  return Object.fromEntries(Object.entries(answers).filter(([name]) => Object.hasOwn(template.variables, name)));
}

/**
 * The lock after the update: the target version, its source, the new answers (no secret) and the
 * target rendering's hashes; a file rendered without a secret it uses (not rendered again: the
 * project keeps it) keeps the hash the lock had.
 */
function updatedLock(
  lock: TemplateLock,
  entry: TemplateEntry,
  source: string,
  values: { answers: Answers; computed: Record<string, string> },
  target: ReadonlyMap<string, RenderedContent>,
  applied: readonly string[],
  keptWithoutSecret: ReadonlySet<string>,
  signer: TemplateLock['signer'],
): TemplateLock {
  const files = Object.fromEntries(
    [...target]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([file, { content }]) => [file, (keptWithoutSecret.has(file) ? lock.files[file] : undefined) ?? { sha256: sha256Hex(content), size: content.length }]),
  );
  const { signer: _previous, ...rest } = lock;
  return {
    ...rest,
    ...(signer ? { signer } : {}),
    template: { ...lock.template, version: entry.version, source },
    answers: values.answers,
    computed: values.computed,
    files,
    appliedMigrations: [...(lock.appliedMigrations ?? []), ...applied],
  };
}

/** One migration step of the plan, as the plan shows it: what it is and what it changes (without contents). */
export interface PlannedStep {
  id: string;
  description: string;
  breaking: boolean;
  fromVersion: string;
  toVersion: string;
  /** Each file change the step asks for: its type, path and, for a rename, the new path. */
  changes: { type: FileChange['type']; path: string; newPath?: string }[];
}

/** The steps that ran in the plan, in order, with their changes. */
function plannedSteps(steps: readonly MigrationStep[], planned: PlannedRun): PlannedStep[] {
  const byId = new Map(steps.map((step) => [step.id, step]));
  return planned.stepChanges.flatMap(({ id, changes }) => {
    const step = byId.get(id);
    if (!step) return [];
    return [
      {
        id,
        description: step.description,
        breaking: step.breaking,
        fromVersion: step.fromVersion,
        toVersion: step.toVersion,
        changes: changes.map((change) => ({ type: change.type, path: change.path, ...(change.type === 'rename' ? { newPath: change.newPath } : {}) })),
      },
    ];
  });
}

/** The project's own `skip` globs (the lock's and those given now); a damaged list is the lock's fault. */
function skipGlobs(lock: TemplateLock, added: readonly string[]): string[] {
  for (const glob of added) {
    const problem = skipGlobProblem(glob);
    if (problem) throw new TypeError(`skip: ${JSON.stringify(glob)} ${problem}`);
  }
  try {
    return [...new Set([...lockSkipGlobs(lock), ...added])];
  } catch (error) {
    throw new ProjectLockError(errorMessage(error), { cause: error });
  }
}

/** An update planned over the project, nothing written yet: what `update` and `migrate` finish. */
export interface PreparedUpdate {
  plan: UpdatePlan;
  /** The steps and the merge laid over the project. */
  planned: PlannedRun;
  /** The steps between the versions (loaded from the archives). */
  steps: MigrationStep[];
  /** Files the steps alone would replace or remove although the project changed them (for `migrate`). */
  stepsOverChangedFiles: string[];
  /** The lock to write with the changes. */
  lockFor: () => TemplateLock;
}

/** What `prepareUpdate` reads of the update's options. */
export type PrepareOptions = Omit<UpdateProjectOptions, 'to' | 'onPlan' | 'confirmBreaking' | 'onRecovered'>;

/**
 * Plans the update from the locked version to `locked.target` in `work`: downloads both versions,
 * renders them with the project's answers (and the new questions' answers), plans the chained steps
 * over the project and lays the file-by-file merge over them (with the target's `updatePolicy` and
 * the project's `skip` globs). With `requireSteps`, stops (`no-steps`) when no step leads anywhere,
 * before anything is rendered.
 */
export function prepareUpdate(options: PrepareOptions, locked: LockedTarget, work: string): Promise<PreparedUpdate>;
export function prepareUpdate(options: PrepareOptions, locked: LockedTarget, work: string, how: { requireSteps: true }): Promise<PreparedUpdate | { status: 'no-steps' }>;
export async function prepareUpdate(options: PrepareOptions, locked: LockedTarget, work: string, how: { requireSteps?: boolean } = {}): Promise<PreparedUpdate | { status: 'no-steps' }> {
  const projectDir = path.resolve(options.projectDir ?? '.');
  const { lock, templateId, fromVersion, target } = locked;
  const skip = skipGlobs(lock, options.skip ?? []);
  const outcomes = new Map<string, ProvenanceOutcome>();
  const download = versionDownloader(work, { ...options, provenance: pinnedPolicy(options.provenance, lock), outcomes });
  const targetTemplate = await loadTemplate(await download(target, 'target', 'generate'));
  const steps = await migrationStepsBetween({ client: options.client, lock, target, targetRoot: targetTemplate.root, download });
  if (how.requireSteps && chainSteps(steps, { currentVersion: fromVersion, templateId }).steps.length === 0) return { status: 'no-steps' };

  const baseEntry = await options.client.getTemplate(templateId, fromVersion);
  // The base is only rendered to compare with: not a use of that version.
  const baseTemplate = baseEntry ? await loadTemplate(await download(baseEntry, 'base', 'inspect')) : undefined;
  const evaluator = new ExpressionEvaluator();
  let answers = await givenAnswers(targetTemplate, { ...options, answers: { ...variablesOf(targetTemplate, lock.answers), ...options.answers } });

  // Secrets are in no lock: those not given are asked for only when a file that uses them must be
  // rendered again. The other new questions first; then, knowing every other answer, the secrets needed.
  const secrets = secretVariables(targetTemplate);
  const unanswered = Object.keys(targetTemplate.variables).filter((name) => !Object.hasOwn(answers, name) && !secrets.includes(name));
  if (options.ask && unanswered.length > 0) answers = await options.ask(targetTemplate, answers, { skip: new Set(missingSecrets(targetTemplate, answers)) });
  const missing = missingSecrets(targetTemplate, answers);
  let withhold = new Set<string>();
  let secretNeeds: Awaited<ReturnType<typeof secretsAnUpdateNeeds>> | undefined;
  if (missing.length > 0) {
    const probe = await rendering(targetTemplate, answers, new Set(missing));
    const baseAnswers = baseTemplate ? answersFor(baseTemplate, lock, answers) : {};
    const baseProbe = baseTemplate ? await rendering(baseTemplate, baseAnswers, new Set(missingSecrets(baseTemplate, baseAnswers))) : undefined;
    secretNeeds = await secretsAnUpdateNeeds({
      target: { template: targetTemplate, files: probe.rendered, scope: scopeOf(probe) },
      ...(baseTemplate && baseProbe ? { base: { template: baseTemplate, files: baseProbe.rendered, scope: scopeOf(baseProbe) } } : {}),
      missing,
      evaluator,
    });
    withhold = new Set(missing.filter((name) => !secretNeeds?.needed.has(name)));
    const needed = missing.filter((name) => !withhold.has(name));
    if (options.ask && needed.length > 0) {
      const others = Object.keys(targetTemplate.variables).filter((name) => !needed.includes(name));
      answers = await options.ask(targetTemplate, answers, { skip: new Set(others) });
    }
  }
  const stillMissing = [...(secretNeeds?.needed.keys() ?? [])].filter((name) => !Object.hasOwn(answers, name));
  const next = await rendering(targetTemplate, answers, new Set([...withhold, ...stillMissing]));
  // A needed secret whose condition is false is not needed after all.
  const lacking = (next.resolved.withheld ?? []).filter((name) => stillMissing.includes(name));
  if (lacking.length > 0) {
    throw new AnswersError(lacking.map((name) => ({ name, message: secretNeededMessage(targetTemplate, name, secretNeeds?.needed.get(name) ?? [], options.ask !== undefined) })));
  }
  // Without the locked version (gone from the registry), the lock's hashes still tell untouched files from changed ones.
  const baseAnswers = baseTemplate ? answersFor(baseTemplate, lock, answers) : {};
  const base = baseTemplate ? await rendering(baseTemplate, baseAnswers, new Set(missingSecrets(baseTemplate, baseAnswers))) : undefined;
  const shown = withoutSecrets(targetTemplate, next.resolved, evaluator);
  const newAnswers = Object.fromEntries(Object.entries(shown.answers).filter(([name]) => !Object.hasOwn(lock.answers, name)));
  // Files that use a secret this update did without: the project keeps them, and the lock their hash.
  const keptWithoutSecret = new Set([...(secretNeeds?.usedBy ?? [])].filter(([, used]) => [...used].some((name) => withhold.has(name))).map(([file]) => file));

  const planned = await recoverAndPlanRun(steps, {
    projectPath: projectDir,
    currentVersion: fromVersion,
    targetVersion: target.version,
    templateId,
    config: lock.answers,
    dryRun: options.dryRun ?? false,
    backup: options.backup ?? true,
  });
  const stepsOverChangedFiles = planned.result.success ? await plannedChangesToChangedFiles(planned) : [];
  const label = `${templateId}@${target.version}`;
  const merged =
    planned.result.success && planned.project
      ? await mergeRenderings({
          project: planned.project,
          base: base?.files ?? new Map(),
          target: next.files,
          lockedFiles: lock.files ?? {},
          label,
          conflictStyle: options.conflict ?? 'inline',
          policyOf: updatePolicies(targetTemplate.manifest.updatePolicy ?? [], skip),
        })
      : [];
  // The plan is printed, logged and put in --json: a diff never shows a secret.
  const shownSecrets = secretValues(targetTemplate, next.resolved, evaluator);
  const files = merged.map((file) => {
    if (shownSecrets.length === 0 || file.diff === '') return file;
    const diff = maskSecrets(file.diff, shownSecrets);
    return { ...file, diff: diff ?? '(diff not shown: it would show a secret)\n' };
  });
  const breakingSteps = steps.filter((step) => step.breaking && planned.result.applied.includes(step.id));
  const guide = await migrationGuide(targetTemplate);
  if (!base) planned.result.warnings.push(missingBaseWarning(templateId, fromVersion));
  const plan: UpdatePlan = {
    templateId,
    fromVersion,
    toVersion: target.version,
    steps: planned.result,
    migrations: plannedSteps(steps, planned),
    ...(guide && planned.result.applied.length > 0 ? { guide: guide.path } : {}),
    files,
    conflicts: files.filter((file) => file.status === 'conflict').map((file) => file.path),
    newAnswers,
    breaking: { steps: breakingSteps.map((step) => ({ id: step.id, description: step.description })), ...(guide && breakingSteps.length > 0 ? { guide } : {}) },
    ...(outcomes.has(target.version) ? { provenance: outcomes.get(target.version) } : {}),
  };
  const source = registrySource(options.client.registryUrl, templateId, target.version);
  const lockFor = (): TemplateLock => {
    const updated = updatedLock(lock, target, source, shown, next.files, planned.result.applied, keptWithoutSecret, nextPinnedSigner(outcomes.get(target.version), lock.signer, options.provenance?.acceptNewSigner));
    return skip.length > 0 ? { ...updated, skip } : updated;
  };
  return { plan, planned, steps, stepsOverChangedFiles, lockFor };
}

/** Writes `skip` into the lock of a project that is not updated now (already current), so the next update honours it. */
async function rememberSkip(projectDir: string, added: readonly string[]): Promise<void> {
  const lock = await projectLock(projectDir);
  const skip = skipGlobs(lock, added);
  if (skip.length === lockSkipGlobs(lock).length) return;
  await writeFileAtomic(path.join(projectDir, LOCK_FILE), serializeLock({ ...lock, skip }));
}

/**
 * Updates the project in `projectDir` to `to` (or the version the registry selects).
 * Throws ProjectLockError, TemplateNotFoundError, the download's
 * errors, TemplateLoadError, AnswersError, AnswersFileError, RenderError and
 * MigrationStepFileError; a refused or failed update is a result, not an error.
 */
export async function updateProject(options: UpdateProjectOptions): Promise<UpdateProjectResult> {
  const projectDir = path.resolve(options.projectDir ?? '.');
  const locked = await lockedTarget({ client: options.client, projectDir, ...(options.to !== undefined ? { to: options.to } : {}), ...(options.onRecovered ? { onRecovered: options.onRecovered } : {}) });
  if (!('target' in locked)) {
    if ((options.skip ?? []).length > 0 && !options.dryRun) await rememberSkip(projectDir, options.skip ?? []);
    return locked;
  }

  const work = await mkdtemp(path.join(tmpdir(), 'template-update-'));
  try {
    const { plan, planned, steps, lockFor } = await prepareUpdate({ ...options, projectDir }, locked, work);
    const backup = options.backup ?? true;
    options.onPlan?.(plan);
    if (!planned.result.success) return { ...plan, status: 'plan-failed', errors: planned.result.errors };
    if (options.dryRun) {
      const dry = await applyPlannedRun(planned, { dryRun: true, backup });
      return dry.success ? { ...plan, status: 'planned' } : { ...plan, status: 'plan-failed', errors: dry.errors };
    }
    const breakingSteps = steps.filter((step) => step.breaking && planned.result.applied.includes(step.id));
    if (breakingSteps.length > 0 && !(await options.confirmBreaking?.(plan.breaking))) return { ...plan, status: 'declined' };

    const applied = await applyPlannedRun(planned, { dryRun: false, backup, ...(options.now ? { now: options.now } : {}), lockFor });
    const backupDir = applied.backupDir ? { backupDir: applied.backupDir } : {};
    return applied.success ? { ...plan, status: 'updated', ...backupDir } : { ...plan, status: 'failed', errors: applied.errors, ...backupDir };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
