/** `migrate`: runs the template's migration steps from the locked version to a newer one. */
import { confirm } from '@inquirer/prompts';
import type { Command } from 'commander';

import { migrateProject, type MigrateProjectOptions, type MigrateProjectResult, type MigrationPlan } from '../../project/index.js';
import { EXIT, type CliIo } from '../io.js';
import { stderrStyle, stdoutStyle } from '../style.js';
import { checkTargetVersion, clientFor, EXIT_CONFLICTS, projectTargetOptions, printProblems, progress, registryOption, reportProjectError, type RegistryFlags } from './consumer.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** --yes applies breaking steps; on a terminal the user is asked; otherwise they are declined (they need --yes). */
function confirmBreaking(yes: boolean, canAsk: boolean): Pick<MigrateProjectOptions, 'confirmBreaking'> {
  if (yes) return { confirmBreaking: () => true };
  if (!canAsk) return {};
  return {
    confirmBreaking: (steps) => confirm({ message: `${steps.length} breaking step(s) (${steps.map((s) => s.id).join(', ')}). Apply them?`, default: false }),
  };
}

/**
 * The plan of a migration: a summary and the diff of every file (on stdout, unless --json, whose
 * document holds them), then its warnings and errors (on stderr).
 */
function printPlan({ templateId, fromVersion, toVersion, result }: MigrationPlan, json: boolean, io: CliIo): void {
  if (!json) {
    const paint = stdoutStyle(io);
    io.stdout(paint.bold(`migration plan ${templateId} ${fromVersion} -> ${toVersion}: ${result.applied.length} step(s), ${result.plan.length} file change(s)`) + '\n');
    for (const file of result.plan) io.stdout(`${file.diff}${file.diff.endsWith('\n') ? '' : '\n'}`);
  }
  printProblems(result, io);
}

/**
 * The `--json` document of a migration, whatever its outcome: the run result (the plan's, or the
 * applied run's) with `status`, the template and both versions; `breaking` step ids when declined.
 */
function migrationJson(outcome: MigrateProjectResult): Record<string, unknown> {
  if (outcome.status === 'up-to-date') {
    const { status, templateId, currentVersion, registryVersion } = outcome;
    return { status, templateId, currentVersion, registryVersion };
  }
  const { status, templateId, fromVersion, toVersion } = outcome;
  if (outcome.status === 'no-steps') return { status, templateId, fromVersion, toVersion, hint: noStepsHint(outcome) };
  const run = outcome.status === 'applied' ? outcome.applied : outcome.result;
  return {
    status,
    templateId,
    fromVersion,
    toVersion,
    ...run,
    files: outcome.files,
    conflicts: outcome.conflicts,
    ...(outcome.status === 'declined' ? { breaking: outcome.breaking.map((step) => step.id) } : {}),
    ...(outcome.status === 'changed-files' ? { changedFiles: outcome.changedFiles } : {}),
  };
}

function noStepsHint(outcome: { templateId: string; fromVersion: string; toVersion: string }): string {
  return `${outcome.templateId} has no migration steps from ${outcome.fromVersion} to ${outcome.toVersion}; run \`template-registry update\` to bring in the files of ${outcome.toVersion}`;
}

/** Prints how a migration ended (its plan is already printed) and gives the exit code. */
function printMigration(outcome: MigrateProjectResult, flags: RegistryFlags, canAsk: boolean, io: CliIo): number {
  if (outcome.status === 'applied') printProblems(outcome.applied, io);
  if (outcome.status === 'declined') {
    io.stderr(canAsk ? 'nothing was changed\n' : `${outcome.breaking.length} breaking step(s): review the migration guide, then run again with --yes\n`);
  }
  if (flags.json) io.stdout(`${JSON.stringify(migrationJson(outcome), null, 2)}\n`);
  switch (outcome.status) {
    case 'up-to-date':
      if (!flags.json) io.stdout(`${outcome.templateId} is at ${outcome.currentVersion}; nothing to migrate to (registry has ${outcome.registryVersion})\n`);
      return EXIT.ok;
    case 'no-steps':
      io.stderr(`${noStepsHint(outcome)}\n`);
      return EXIT.failure;
    case 'changed-files':
      io.stderr(
        `migrate does not overwrite files changed in the project (or whose changes conflict with the template's): ${outcome.changedFiles.join(', ')}\n` +
          'run `template-registry update` to merge the template\'s changes with yours, or `migrate --force` to overwrite them (the old files are kept in .template-backups/)\n',
      );
      return EXIT.failure;
    case 'plan-failed':
      return EXIT.failure;
    case 'planned':
      return EXIT.ok;
    case 'declined':
      return EXIT.failure;
    case 'applied': {
      // The steps, then the target version's own files: the project is at toVersion, whatever version the steps reached.
      const { applied } = outcome;
      if (!flags.json && applied.success) {
        const paint = stdoutStyle(io);
        io.stdout(
          `${paint.green('migrated')} ${outcome.templateId} ${outcome.fromVersion} -> ${outcome.toVersion}: ${applied.applied.length} step(s), ${applied.plan.length} file change(s)${applied.backupDir ? `; old files kept in ${applied.backupDir}` : ''}\n`,
        );
      }
      if (!applied.success) return EXIT.failure;
      if (outcome.conflicts.length === 0) return EXIT.ok;
      io.stderr(`${stderrStyle(io).red(`${outcome.conflicts.length} file(s) with conflicts to resolve`)}: ${outcome.conflicts.join(', ')}\n`);
      return EXIT_CONFLICTS;
    }
  }
}

export function registerMigrate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  registryOption(
    projectTargetOptions(program.command('migrate').description(COMMAND_SUMMARIES.migrate.description), 'apply breaking steps without asking')
      .option('--no-backup', 'do not keep the old files in .template-backups/')
      .option('--force', 'let the steps overwrite or remove files changed in the project, and write conflict markers where the template\'s change conflicts with yours (exit 3)'),
  ).action(async (flags: RegistryFlags & { to?: string; project: string; dryRun?: boolean; yes?: boolean; backup: boolean; force?: boolean }) => {
    checkTargetVersion(flags.to);
    const canAsk = process.stdin.isTTY === true;
    let outcome: MigrateProjectResult;
    try {
      outcome = await migrateProject({
        client: clientFor(flags, io),
        projectDir: flags.project,
        ...(flags.to !== undefined ? { to: flags.to } : {}),
        dryRun: flags.dryRun ?? false,
        backup: flags.backup,
        force: flags.force ?? false,
        onPlan: (plan) => printPlan(plan, flags.json ?? false, io),
        onProgress: progress(io),
        onRecovered: (recovery) =>
          io.stderr(`an earlier migration was interrupted; the project was rolled back to how it was before it (${recovery.restored.length} file(s) restored)\n`),
        ...confirmBreaking(flags.yes ?? false, canAsk),
      });
    } catch (error) {
      setExit(reportProjectError(error, io));
      return;
    }
    setExit(printMigration(outcome, flags, canAsk, io));
  });
}
