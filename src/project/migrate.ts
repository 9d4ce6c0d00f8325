/**
 * Migrates a generated project to a newer version of its template: read the lock file, choose
 * the target version, download it, load its declarative steps and plan them, then lay the target
 * version's own files over them as `update` does (`prepareUpdate`), report the plan, confirm the
 * breaking steps, apply. The project then has the target version's files and its lock says so:
 * it is never left at a version whose files it lacks. Unlike `update`, it needs steps (none: it
 * points to `update`), and it does not touch a file the project changed where the steps would
 * overwrite or remove it, or where the template's change conflicts with the project's, unless
 * `force`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { RegistryClient } from '../client/index.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { applyPlannedRun, changedFilesMessage, type FileUpdate, type Recovery, type MigrationRunResult, type MigrationStep } from '../migrate/index.js';
import { lockedTarget, type UpToDate } from './locked.js';
import { prepareUpdate } from './update.js';

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
  /** Overwrite or remove files the project changed since generation, and write conflict markers (refused unless true). */
  force?: boolean;
  /** Conflicts (with `force`) as markers in the file (`inline`, the default) or as a `.rej` patch beside it. */
  conflict?: 'inline' | 'rej';
  /** The clock, for the backup folder's name. */
  now?: () => Date;
  /** Download progress; `total` is the archive's size when known. */
  onProgress?: (received: number, total?: number) => void;
  fetch?: typeof globalThis.fetch;
  /** Told when an earlier migration, interrupted by a crash, was rolled back before this one. */
  onRecovered?: (recovery: Recovery) => void;
}

/** What the migration would do, as planned by a dry run. */
export interface MigrationPlan {
  templateId: string;
  fromVersion: string;
  toVersion: string;
  /** The dry run: `applied` the steps that would run, `plan` the net change of every file (steps and the target's files) with its diff. */
  result: MigrationRunResult;
  /** What happens to every file the target version's own change touches, as `update` reports it. */
  files: FileUpdate[];
  /** Files with conflicts (written only with `force`). */
  conflicts: string[];
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
  /**
   * The steps would overwrite or remove files the project changed, or the target's change conflicts
   * with the project's in them (`changedFiles`); without `force`, nothing was changed.
   */
  | (Planned & { status: 'changed-files'; changedFiles: string[] })
  /** A dry run: the plan, nothing changed. */
  | (Planned & { status: 'planned' })
  /** Breaking steps were not confirmed: nothing was changed. */
  | (Planned & { status: 'declined'; breaking: MigrationStep[] })
  /** The steps and the target's files were applied; `applied.success` says whether the changes were made (else nothing was). */
  | (Planned & { status: 'applied'; applied: MigrationRunResult });

/**
 * Migrates the project in `projectDir` to `to` (or the version the registry selects): the steps
 * between the versions, then the target version's own files, merged as `update` merges them, with
 * the lock moved to the target version.
 * Throws ProjectLockError, TemplateNotFoundError, the download's errors, AnswersError and
 * MigrationStepFileError; a refused or failed migration is a result, not an error.
 */
export async function migrateProject(options: MigrateProjectOptions): Promise<MigrateProjectResult> {
  const projectDir = path.resolve(options.projectDir ?? '.');
  const locked = await lockedTarget({ client: options.client, projectDir, ...(options.to !== undefined ? { to: options.to } : {}), ...(options.onRecovered ? { onRecovered: options.onRecovered } : {}) });
  if (!('target' in locked)) return locked;
  const { templateId, fromVersion, target } = locked;

  const work = await mkdtemp(path.join(tmpdir(), 'template-migrate-'));
  try {
    const backup = options.backup ?? true;
    const prepared = await prepareUpdate(
      {
        client: options.client,
        projectDir,
        dryRun: options.dryRun ?? false,
        backup,
        ...(options.conflict ? { conflict: options.conflict } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.fetch ? { fetch: options.fetch } : {}),
      },
      locked,
      work,
      { requireSteps: true },
    );
    if ('status' in prepared) return { status: 'no-steps', templateId, fromVersion, toVersion: target.version };
    const { plan: update, planned, steps, stepsOverChangedFiles, lockFor } = prepared;
    const shown = (result: MigrationRunResult): Planned => ({ templateId, fromVersion, toVersion: target.version, result, files: update.files, conflicts: update.conflicts, target, steps });

    const changedFiles = options.force ? [] : [...new Set([...stepsOverChangedFiles, ...update.conflicts])];
    if (changedFiles.length > 0) {
      const refused = { ...planned.result, success: false, errors: [...planned.result.errors, changedFilesMessage(changedFiles)], plan: [], changedFiles };
      return { ...shown(refused), status: 'changed-files', changedFiles };
    }
    const dry = await applyPlannedRun(planned, { dryRun: true, backup });
    const planView = shown(dry);
    options.onPlan?.({ templateId, fromVersion, toVersion: target.version, result: dry, files: update.files, conflicts: update.conflicts });
    if (!dry.success) return { ...planView, status: 'plan-failed' };
    if (options.dryRun) return { ...planView, status: 'planned' };

    const breaking = steps.filter((step) => step.breaking && dry.applied.includes(step.id));
    if (breaking.length > 0 && !(await options.confirmBreaking?.(breaking))) return { ...planView, status: 'declined', breaking };

    const applied = await applyPlannedRun(planned, { dryRun: false, backup, ...(options.now ? { now: options.now } : {}), lockFor });
    return { ...planView, status: 'applied', applied };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
