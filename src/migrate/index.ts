/**
 * Migrations: move a generated project from one template version to the next, with steps written
 * in code or as JSON files in the template's `migrations/` folder. See docs/migrations.md.
 */
export {
  runMigrations,
  applicableSteps,
  chainSteps,
  recoverAndPlanRun,
  applyPlannedRun,
  changedByUser,
  plannedChangesToChangedFiles,
  changedFilesMessage,
  PlannedProject,
  type ChainedStep,
  type PlannedRun,
  type ApplyPlannedRunOptions,
  type NetChange,
  breakingWarning,
  BACKUP_FOLDER,
  type MigrationStep,
  type MigrationContext,
  type MigrationRunContext,
  type MigrationResult,
  type MigrationRunResult,
  type RunMigrationsOptions,
  type PlannedFile,
  type ProjectFiles,
  type FileChange,
} from './run.js';
export {
  loadDeclarativeSteps,
  migrationScope,
  formatStepFileProblem,
  MigrationStepFileError,
  MIGRATIONS_FOLDER,
  type DeclarativeStepOptions,
  type StepFileProblem,
} from './declarative.js';
export {
  applyOperations,
  recoverInterruptedApply,
  JOURNAL_FILE,
  ApplyError,
  nodeFileSystem,
  type ApplyOperation,
  type ApplyOptions,
  type ApplyOutcome,
  type ApplyFileSystem,
  type Recovery,
  type RecoverOptions,
} from './apply.js';
export { unifiedDiff, diffLines, splitLines, type DiffLine, type UnifiedDiffOptions } from './diff.js';
export { mergeThreeWay, type MergeLabels, type MergeResult } from './merge.js';
export {
  mergeRenderings,
  updatePolicies,
  REJECT_SUFFIX,
  type FilePolicy,
  type FileUpdate,
  type FileUpdateStatus,
  type MergeRenderingsInput,
  type RenderedContent,
  type UpdatePolicy,
  type UpdatePolicyRule,
} from './merge-files.js';
export { mergeJsonByKey } from './json-merge.js';
