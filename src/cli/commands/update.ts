/**
 * `update` and `check-update`: keep a generated project in sync with its template. Both read the
 * registry from --registry, TEMPLATE_REGISTRY_URL, or else the one the project's lock file names.
 */
import { confirm } from '@inquirer/prompts';
import { Option, type Command } from 'commander';

import type { FileUpdate } from '../../migrate/index.js';
import {
  checkForUpdate,
  ProjectLockError,
  TemplateNotFoundError,
  updateProject,
  type BreakingChanges,
  type UpdatePlan,
  type UpdateProjectResult,
} from '../../project/index.js';
import { readLock, sourceRegistry } from '../../template/index.js';
import { skipGlobProblem } from '../../template/lock.js';
import { promptForAnswers } from '../../template/prompts.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { stderrStyle, stdoutStyle, type Style } from '../style.js';
import { checkTargetVersion, clientFor, EXIT_CONFLICTS, projectTargetOptions, oneLine, printProblems, progress, registryOption, reportProjectError, type RegistryFlags } from './consumer.js';
import { answerFlags, reportTemplateError } from './generate.js';
import { provenanceLine, provenanceOptions, provenancePolicyFor, type ProvenanceFlags } from './provenance.js';

export { EXIT_CONFLICTS } from './consumer.js';

/** The registry the project's lock file names, if any (a lock that cannot be read is `update`'s to report). */
async function lockRegistry(projectDir: string): Promise<string | undefined> {
  return readLock(projectDir).then((lock) => sourceRegistry(lock.template.source), () => undefined);
}

/** The breaking steps and the guide's first lines, on stderr, before the question. */
function announceBreaking(breaking: BreakingChanges, io: CliIo): void {
  const paint = stderrStyle(io);
  io.stderr(`${paint.yellow('breaking changes')}: ${breaking.steps.length} breaking migration step(s)\n`);
  for (const step of breaking.steps) io.stderr(`  ${oneLine(step.id)}: ${oneLine(step.description)}\n`);
  if (breaking.guide) {
    io.stderr(`migration guide: ${oneLine(breaking.guide.path)} (in the template)\n`);
    for (const line of breaking.guide.firstLines) io.stderr(`  | ${oneLine(line)}\n`);
  }
}

const STATUS_WIDTH = 'conflict'.length;

function fileLine(file: FileUpdate): string {
  const details = [file.reason, file.rejectFile ? `see ${file.rejectFile}` : undefined].filter((part) => part !== undefined);
  return `  ${file.status.padEnd(STATUS_WIDTH)}  ${oneLine(file.path)}${details.length > 0 ? `  (${oneLine(details.join('; '))})` : ''}\n`;
}

/** The migration steps of a plan as text: each step's id, versions, whether it is breaking, its description, then its file changes. */
function stepLines(plan: Pick<UpdatePlan, 'migrations' | 'steps' | 'guide'>, paint: Style): string[] {
  const lines: string[] = [];
  if (plan.migrations.length > 0) lines.push('migration steps:');
  for (const step of plan.migrations) {
    const breaking = step.breaking ? `, ${paint.red('breaking')}` : '';
    lines.push(`  ${oneLine(step.id)} (${step.fromVersion} -> ${step.toVersion}${breaking}): ${oneLine(step.description)}`);
    for (const change of step.changes) lines.push(`    ${change.type.padEnd('rename'.length)}  ${oneLine(change.path)}${change.newPath !== undefined ? ` -> ${oneLine(change.newPath)}` : ''}`);
    if (step.changes.length === 0) lines.push('    (no file changes)');
  }
  if (plan.steps.skipped.length > 0) lines.push(`already applied, skipped: ${plan.steps.skipped.map(oneLine).join(', ')}`);
  if (plan.guide !== undefined) lines.push(`migration guide: ${oneLine(plan.guide)} (in the template)`);
  return lines;
}

/**
 * The plan: a summary, the migration steps (each with its file changes) and the guide, a line per
 * file, and with --dry-run the diffs (what --json holds, as text); the steps' problems on stderr.
 */
function printPlan(plan: UpdatePlan, flags: { json?: boolean; dryRun?: boolean }, io: CliIo): void {
  if (!flags.json) {
    const paint = stdoutStyle(io);
    io.stdout(paint.bold(`update plan ${plan.templateId} ${plan.fromVersion} -> ${plan.toVersion}: ${plan.steps.applied.length} migration step(s), ${plan.files.length} file(s)`) + '\n');
    const built = provenanceLine(plan.provenance);
    if (built) io.stdout(`${oneLine(built)}\n`);
    for (const line of stepLines(plan, paint)) io.stdout(`${line}\n`);
    if (plan.files.length > 0 && plan.migrations.length > 0) io.stdout('files:\n');
    for (const file of plan.files) io.stdout(fileLine(file));
    if (flags.dryRun) for (const file of plan.files) if (file.diff !== '') io.stdout(`${file.diff}${file.diff.endsWith('\n') ? '' : '\n'}`);
  }
  printProblems(plan.steps, io);
}

/** The --json document of an update, whatever its outcome. */
function updateJson(outcome: UpdateProjectResult): Record<string, unknown> {
  if (outcome.status === 'up-to-date') return { ...outcome };
  const { steps, ...rest } = outcome;
  return {
    ...rest,
    steps: { applied: steps.applied, skipped: steps.skipped, changes: steps.changes, warnings: steps.warnings, errors: steps.errors, ...(steps.reachedVersion ? { reachedVersion: steps.reachedVersion } : {}) },
  };
}

function counts(files: readonly FileUpdate[]): string {
  const byStatus = new Map<string, number>();
  for (const file of files) byStatus.set(file.status, (byStatus.get(file.status) ?? 0) + 1);
  return byStatus.size === 0 ? 'no file changes' : [...byStatus].map(([status, count]) => `${count} ${status}`).join(', ');
}

/** Prints how an update ended (its plan is printed already) and gives the exit code. */
function printOutcome(outcome: UpdateProjectResult, flags: { json?: boolean }, canAsk: boolean, io: CliIo): number {
  if (flags.json) io.stdout(`${JSON.stringify(updateJson(outcome), null, 2)}\n`);
  const paint = stdoutStyle(io);
  switch (outcome.status) {
    case 'up-to-date':
      if (!flags.json) io.stdout(`${outcome.templateId} is at ${outcome.currentVersion}, the latest the registry has (${outcome.registryVersion}): nothing to update\n`);
      return EXIT.ok;
    case 'plan-failed':
    case 'failed':
      for (const error of outcome.errors.filter((e) => !outcome.steps.errors.includes(e))) io.stderr(`${stderrStyle(io).red('error')}: ${error}\n`);
      io.stderr('nothing was changed\n');
      return EXIT.failure;
    case 'planned':
      if (!flags.json) io.stdout(`dry run: nothing was changed${outcome.conflicts.length > 0 ? `; ${outcome.conflicts.length} file(s) would have conflicts` : ''}\n`);
      return EXIT.ok;
    case 'declined':
      io.stderr(canAsk ? 'nothing was changed\n' : `${outcome.breaking.steps.length} breaking step(s): review the migration guide, then run again with --yes\n`);
      return EXIT.failure;
    case 'updated': {
      if (!flags.json) {
        io.stdout(`${paint.green('updated')} ${outcome.templateId} ${outcome.fromVersion} -> ${outcome.toVersion}: ${counts(outcome.files)}${outcome.backupDir ? `; old files kept in ${outcome.backupDir}` : ''}\n`);
      }
      if (outcome.conflicts.length === 0) return EXIT.ok;
      const red = stderrStyle(io).red;
      io.stderr(`${red(`${outcome.conflicts.length} file(s) with conflicts to resolve`)}:\n`);
      for (const file of outcome.files.filter((f) => f.status === 'conflict')) io.stderr(fileLine(file));
      io.stderr('resolve them (markers <<<<<<< project / ======= / >>>>>>>, or the .rej patches), then commit\n');
      return EXIT_CONFLICTS;
    }
  }
}

export function registerUpdate(program: Command, io: CliIo, setExit: (code: number) => void): void {

  registryOption(
    provenanceOptions(projectTargetOptions(program.command('update').description(COMMAND_SUMMARIES.update.description), 'apply breaking migration steps without asking')
      .addOption(new Option('--conflict <style>', 'conflicts as markers in the file, or as a .rej patch beside it').choices(['inline', 'rej']).default('inline'))
      .option('--set <key=value>', 'answer a variable, new or changed (repeatable)', collect, [])
      .option('--answers <file>', 'JSON file of answers')
      .option('--defaults', 'do not ask the new questions: use their defaults')
      .option('--no-backup', 'do not keep the old files in .template-backups/')
      .option('--skip <glob>', 'never write, create or remove the project files matching this glob (repeatable); remembered in .template-lock.json for every later update', collect, [])),
  ).action(
    async (
      flags: RegistryFlags &
        ProvenanceFlags & {
          to?: string;
          project: string;
          dryRun?: boolean;
          yes?: boolean;
          conflict: 'inline' | 'rej';
          set: string[];
          answers?: string;
          defaults?: boolean;
          backup: boolean;
          skip: string[];
        },
    ) => {
      checkTargetVersion(flags.to);
      for (const glob of flags.skip) {
        const problem = skipGlobProblem(glob);
        if (problem) throw new UsageError(`--skip ${problem} (got ${JSON.stringify(glob)})`);
      }
      const canAsk = process.stdin.isTTY === true;
      let outcome: UpdateProjectResult;
      // An update always revalidates what it reads (a copy cached a minute ago may miss the version just published).
      const client = clientFor({ ...flags, refresh: true }, io, await lockRegistry(flags.project));
      const provenance = await provenancePolicyFor(flags, client.registryUrl, io);
      try {
        outcome = await updateProject({
          client,
          provenance,
          projectDir: flags.project,
          ...(flags.to !== undefined ? { to: flags.to } : {}),
          dryRun: flags.dryRun ?? false,
          conflict: flags.conflict,
          backup: flags.backup,
          ...(flags.skip.length > 0 ? { skip: flags.skip } : {}),
          ...answerFlags(flags),
          env: process.env,
          ...(!flags.defaults && canAsk ? { ask: promptForAnswers } : {}),
          onPlan: (plan) => printPlan(plan, flags, io),
          onProgress: progress(io),
          onRecovered: (recovery) => io.stderr(`an earlier migration or update was interrupted; the project was rolled back to how it was before it (${recovery.restored.length} file(s) restored)\n`),
          confirmBreaking: async (breaking) => {
            announceBreaking(breaking, io);
            if (flags.yes) return true;
            return canAsk ? confirm({ message: 'Apply the breaking changes?', default: false }) : false;
          },
        });
      } catch (error) {
        setExit(error instanceof ProjectLockError || error instanceof TemplateNotFoundError ? reportProjectError(error, io) : reportTemplateError(error, io));
        return;
      }
      setExit(printOutcome(outcome, flags, canAsk, io));
    },
  );

  registryOption(
    provenanceOptions(
      program
        .command('check-update')
        .description(COMMAND_SUMMARIES['check-update'].description)
        .option('--project <dir>', 'project folder', '.')
        .option('--exit-code', 'exit 1 when an update is available'),
    ),
  ).action(async (flags: RegistryFlags & ProvenanceFlags & { project: string; exitCode?: boolean }) => {
    let check;
    // Always revalidated: the question is whether something was published since.
    const client = clientFor({ ...flags, refresh: true }, io, await lockRegistry(flags.project));
    const provenance = await provenancePolicyFor(flags, client.registryUrl, io);
    try {
      check = await checkForUpdate({ client, provenance, projectDir: flags.project, signal: AbortSignal.timeout(60_000) });
    } catch (error) {
      setExit(reportProjectError(error, io));
      return;
    }
    if (check.changelogError) io.stderr(`${stderrStyle(io).yellow('warning')}: the change log cannot be shown: ${oneLine(check.changelogError)}\n`);
    if (flags.json) io.stdout(`${JSON.stringify(check, null, 2)}\n`);
    else if (!check.updateAvailable) {
      io.stdout(`${check.templateId} is up to date at ${check.currentVersion} (latest ${check.latestVersion})\n`);
    } else {
      const paint = stdoutStyle(io);
      io.stdout(`${paint.bold(check.templateId)}: ${check.currentVersion} -> ${paint.green(check.latestVersion)} available${check.breaking ? ` (${paint.red('breaking')})` : ''}\n`);
      for (const reason of check.breakingReasons) io.stdout(`  breaking: ${oneLine(reason)}\n`);
      const built = provenanceLine(check.provenance);
      if (built) io.stdout(`  ${oneLine(built)}\n`);
      for (const entry of check.changelog) {
        io.stdout(`\n## ${entry.version}\n`);
        if (entry.body !== '') io.stdout(`${entry.body.split('\n').map((line) => `${/^[ \t]*/.exec(line)?.[0] ?? ''}${oneLine(line)}`).join('\n')}\n`);
      }
      io.stdout('\nrun `template-registry update` to update the project\n');
    }
    setExit(flags.exitCode && check.updateAvailable ? EXIT.failure : EXIT.ok);
  });
}
