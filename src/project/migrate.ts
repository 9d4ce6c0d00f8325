/**
 * Migrates a generated project to a newer version of its template: read the lock file, choose
 * the target version, download it, load its declarative steps, plan them (a dry run), report the
 * plan, confirm the breaking steps, apply.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { RegistryClient } from '../client/index.js';
import type { TemplateEntry } from '../core/schema-types.js';
import {
  chainSteps,
  runMigrations,
  type MigrationRunContext,
  type Recovery,
  type MigrationRunResult,
  type MigrationStep,
} from '../migrate/index.js';
import { registrySource } from '../template/lock.js';
import { lockedTarget, migrationStepsBetween, versionDownloader, type UpToDate } from './locked.js';

export interface MigrateProjectOptions {
  /** The registry to read. */
  client: RegistryClient;
  /** The project folder (holding `.template-lock.json`); the working folder unless given. */
  projectDir?: string;
  /** The target version; the one the registry selects (newest stable, else newest) unless given. */
  to?: string;
  /** Plan and report, change nothing. */
  dryRun?: boolean;
  /** Keep every replaced or removed file in `.template-backups/<timestamp>/`; true unless false. */
  backup?: boolean;
  /** Called with the plan (a dry run of every step) before anything is confirmed or applied. */
  onPlan?: (plan: MigrationPlan) => void;
  /**
   * Asked before breaking steps are applied; true applies them. Without it, a migration with
   * breaking steps is declined (a caller that cannot ask passes one only when told to go ahead).
   */
  confirmBreaking?: (steps: readonly MigrationStep[]) => boolean | Promise<boolean>;
  /** Overwrite or remove files the project changed since generation (refused unless true). */
  force?: boolean;
  /** Download progress; `total` is the archive's size when known. */
  onProgress?: (received: number, total?: number) => void;
  fetch?: typeof globalThis.fetch;
  /** Told when an earlier migration, interrupted by a crash, was rolled back before this one. */
  onRecovered?: (recovery: Recovery) => void;
}

/** What the steps would do, as planned by a dry run. */
export interface MigrationPlan {
  templateId: string;
  fromVersion: string;
  toVersion: string;
  /** The dry run: `applied` the steps that would run, `plan` the net change of every file with its diff. */
  result: MigrationRunResult;
}

interface Planned extends MigrationPlan {
  /** The registry entry of the target version. */
  target: TemplateEntry;
  /** The steps loaded from the target version's migrations/ folder that lead at most to it. */
  steps: MigrationStep[];
}

export type MigrateProjectResult =
  /** The registry has nothing newer than the project's version. */
  | UpToDate
  /** The target version has no migration steps from the project's version: `update` brings its files. */
  | { status: 'no-steps'; templateId: string; fromVersion: string; toVersion: string }
  /** The plan failed (a step failed or a change cannot be made): nothing was changed. */
  | (Planned & { status: 'plan-failed' })
  /** The steps would overwrite or remove files the project changed (`changedFiles`); without `force`, nothing was changed. */
  | (Planned & { status: 'changed-files'; changedFiles: string[] })
  /** A dry run: the plan, nothing changed. */
  | (Planned & { status: 'planned' })
  /** Breaking steps were not confirmed: nothing was changed. */
  | (Planned & { status: 'declined'; breaking: MigrationStep[] })
  /** The steps ran; `applied.success` says whether the changes were made (else nothing was). */
  | (Planned & { status: 'applied'; applied: MigrationRunResult });

/**
 * Migrates the project in `projectDir` to `to` (or the version the registry selects).
 * Throws ProjectLockError, TemplateNotFoundError, the download's errors and
 * MigrationStepFileError; a refused or failed migration is a result, not an error.
 */
export async function migrateProject(options: MigrateProjectOptions): Promise<MigrateProjectResult> {
  const projectDir = options.projectDir ?? '.';
  const locked = await lockedTarget({ client: options.client, projectDir, ...(options.to !== undefined ? { to: options.to } : {}), ...(options.onRecovered ? { onRecovered: options.onRecovered } : {}) });
  if (!('target' in locked)) return locked;
  const { lock, templateId, fromVersion, target } = locked;

  const work = await mkdtemp(path.join(tmpdir(), 'template-migrate-'));
  try {
    const download = versionDownloader(work, options);
    const targetRoot = await download(target, 'template', 'generate');
    const steps = await migrationStepsBetween({ client: options.client, lock, target, targetRoot, download });
    if (chainSteps(steps, { currentVersion: fromVersion, templateId }).steps.length === 0) {
      return { status: 'no-steps', templateId, fromVersion, toVersion: target.version };
    }
    // The source follows the version the steps reach, in the form `create` records.
    const registryUrl = options.client.registryUrl;
    const runOptions = { protectChangedFiles: !options.force, lockSource: (version: string) => registrySource(registryUrl, templateId, version) };
    const context: Omit<MigrationRunContext, 'dryRun'> = {
      projectPath: path.resolve(projectDir),
      currentVersion: fromVersion,
      targetVersion: target.version,
      templateId,
      config: lock.answers,
      backup: options.backup ?? true,
    };
    const plan = await runMigrations(steps, { ...context, dryRun: true }, runOptions);
    const planned: Planned = { templateId, fromVersion, toVersion: target.version, result: plan, target, steps };
    if (plan.changedFiles) return { ...planned, status: 'changed-files', changedFiles: plan.changedFiles };
    options.onPlan?.({ templateId, fromVersion, toVersion: target.version, result: plan });
    if (!plan.success) return { ...planned, status: 'plan-failed' };
    if (options.dryRun) return { ...planned, status: 'planned' };

    const breaking = steps.filter((step) => step.breaking && plan.applied.includes(step.id));
    if (breaking.length > 0 && !(await options.confirmBreaking?.(breaking))) return { ...planned, status: 'declined', breaking };

    const applied = await runMigrations(steps, { ...context, dryRun: false }, runOptions);
    return { ...planned, status: 'applied', applied };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
