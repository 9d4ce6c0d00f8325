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
import { readHead } from '../core/files.js';
import type { TemplateEntry } from '../core/schema-types.js';
import {
  applyPlannedRun,
  mergeRenderings,
  planRun,
  type FileUpdate,
  type MigrationRunResult,
  type Recovery,
  type RenderedContent,
} from '../migrate/index.js';
import { isInside } from '../template/paths.js';
import { loadTemplate, renderTemplate, resolveAnswers, type Answers, type LoadedTemplate, type TemplateLock } from '../template/index.js';
import { registrySource, sha256Hex } from '../template/lock.js';
import { givenAnswers, type GivenAnswers } from './answers.js';
import { lockedTarget, migrationStepsBetween, pinnedPolicy, versionDownloader, type ProjectProvenance, type UpToDate } from './locked.js';

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
   * Asks the questions the target version added, given the answers known so far (the lock's,
   * then `answers`, `answersFile`, `set`); without it, new questions take their defaults.
   */
  ask?: (template: LoadedTemplate, given: Answers) => Promise<Answers>;
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

async function rendering(template: LoadedTemplate, answers: Answers): Promise<{ files: Map<string, RenderedContent>; resolved: ReturnType<typeof resolveAnswers> }> {
  const resolved = resolveAnswers(template, answers);
  const rendered = await renderTemplate(template, resolved);
  return { files: new Map(rendered.map((file) => [file.path, { content: file.content, mode: file.mode }])), resolved };
}

/** The answers among `answers` that are variables of `template`. */
function variablesOf(template: LoadedTemplate, answers: Answers): Answers {
  return Object.fromEntries(Object.entries(answers).filter(([name]) => Object.hasOwn(template.variables, name)));
}

/** The lock after the update: the target version, its source, the new answers and the target rendering's hashes. */
function updatedLock(
  lock: TemplateLock,
  entry: TemplateEntry,
  source: string,
  resolved: ReturnType<typeof resolveAnswers>,
  target: ReadonlyMap<string, RenderedContent>,
  applied: readonly string[],
  signer: TemplateLock['signer'],
): TemplateLock {
  const files = Object.fromEntries([...target].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([file, { content }]) => [file, { sha256: sha256Hex(content), size: content.length }]));
  const { signer: _previous, ...rest } = lock;
  return {
    ...rest,
    ...(signer ? { signer } : {}),
    template: { ...lock.template, version: entry.version, source },
    answers: resolved.answers,
    computed: resolved.computed,
    files,
    appliedMigrations: [...(lock.appliedMigrations ?? []), ...applied],
  };
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
  if (!('target' in locked)) return locked;
  const { lock, templateId, fromVersion, target } = locked;
  const baseEntry = await options.client.getTemplate(templateId, fromVersion);

  const work = await mkdtemp(path.join(tmpdir(), 'template-update-'));
  try {
    const outcomes = new Map<string, ProvenanceOutcome>();
    const download = versionDownloader(work, { ...options, provenance: pinnedPolicy(options.provenance, lock), outcomes });
    // The base is only rendered to compare with: not a use of that version.
    const baseTemplate = baseEntry ? await loadTemplate(await download(baseEntry, 'base', 'inspect')) : undefined;
    const targetTemplate = await loadTemplate(await download(target, 'target', 'generate'));

    // Without the locked version (gone from the registry), the lock's hashes still tell untouched files from changed ones.
    const base = baseTemplate ? await rendering(baseTemplate, variablesOf(baseTemplate, lock.answers)) : undefined;
    let answers = await givenAnswers(targetTemplate, { ...options, answers: { ...variablesOf(targetTemplate, lock.answers), ...options.answers } });
    const unanswered = Object.keys(targetTemplate.variables).filter((name) => !Object.hasOwn(answers, name));
    if (options.ask && unanswered.length > 0) answers = await options.ask(targetTemplate, answers);
    const next = await rendering(targetTemplate, answers);
    const newAnswers = Object.fromEntries(Object.entries(next.resolved.answers).filter(([name]) => !Object.hasOwn(lock.answers, name)));

    const steps = await migrationStepsBetween({ client: options.client, lock, target, targetRoot: targetTemplate.root, download });
    const backup = options.backup ?? true;
    const planned = await planRun(steps, {
      projectPath: projectDir,
      currentVersion: fromVersion,
      targetVersion: target.version,
      templateId,
      config: lock.answers,
      dryRun: options.dryRun ?? false,
      backup,
    });
    const label = `${templateId}@${target.version}`;
    const files = planned.result.success && planned.project
      ? await mergeRenderings({ project: planned.project, base: base?.files ?? new Map(), target: next.files, lockedFiles: lock.files ?? {}, label, conflictStyle: options.conflict ?? 'inline' })
      : [];
    const breakingSteps = steps.filter((step) => step.breaking && planned.result.applied.includes(step.id));
    const guide = breakingSteps.length > 0 ? await migrationGuide(targetTemplate) : undefined;
    if (!base) planned.result.warnings.push(missingBaseWarning(templateId, fromVersion));
    const plan: UpdatePlan = {
      templateId,
      fromVersion,
      toVersion: target.version,
      steps: planned.result,
      files,
      conflicts: files.filter((file) => file.status === 'conflict').map((file) => file.path),
      newAnswers,
      breaking: { steps: breakingSteps.map((step) => ({ id: step.id, description: step.description })), ...(guide ? { guide } : {}) },
      ...(outcomes.has(target.version) ? { provenance: outcomes.get(target.version) } : {}),
    };
    options.onPlan?.(plan);
    if (!planned.result.success) return { ...plan, status: 'plan-failed', errors: planned.result.errors };
    if (options.dryRun) {
      const dry = await applyPlannedRun(planned, { dryRun: true, backup });
      return dry.success ? { ...plan, status: 'planned' } : { ...plan, status: 'plan-failed', errors: dry.errors };
    }
    if (breakingSteps.length > 0 && !(await options.confirmBreaking?.(plan.breaking))) return { ...plan, status: 'declined' };

    const source = registrySource(options.client.registryUrl, templateId, target.version);
    const applied = await applyPlannedRun(planned, {
      dryRun: false,
      backup,
      ...(options.now ? { now: options.now } : {}),
      lockFor: () =>
        updatedLock(lock, target, source, next.resolved, next.files, planned.result.applied, nextPinnedSigner(outcomes.get(target.version), lock.signer, options.provenance?.acceptNewSigner)),
    });
    const backupDir = applied.backupDir ? { backupDir: applied.backupDir } : {};
    return applied.success ? { ...plan, status: 'updated', ...backupDir } : { ...plan, status: 'failed', errors: applied.errors, ...backupDir };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
