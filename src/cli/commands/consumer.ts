import { stripVTControlCharacters } from 'node:util';

import { confirm } from '@inquirer/prompts';
import type { Command } from 'commander';

import { doNotTrackFrom, RegistryClient } from '../../client/index.js';
import { checkCompatibility } from '../../compat/index.js';
import { latestEntries, sortEntries } from '../../core/listing.js';
import type { TemplateEntry } from '../../core/schema-types.js';
import { isTemplateVersion } from '../../core/versions.js';
import { firstLine } from '../../core/errors.js';
import { createProject, fetchTemplateQuestions, migrateProject, ProjectLockError, TemplateNotFoundError, type MigrateProjectOptions, type MigrateProjectResult, type MigrationPlan, type TemplateQuestions } from '../../project/index.js';
import { promptForAnswers } from '../../template/prompts.js';
import { maxDocumentBytesFrom, parseTemplateSpec, registryModeFrom, registryUrlFrom, userCacheDir } from '../consumer-env.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { answerFlags, defaultNextSteps, reportTemplateError, templateNextSteps } from './generate.js';

interface RegistryFlags {
  registry?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function clientFor(flags: RegistryFlags): RegistryClient {
  const maxDocumentBytes = maxDocumentBytesFrom();
  return new RegistryClient({
    registryUrl: registryUrlFrom(flags.registry),
    cacheDir: userCacheDir(),
    mode: registryModeFrom(),
    ...(maxDocumentBytes ? { maxDocumentBytes } : {}),
  });
}

function latestPerTemplate(entries: readonly TemplateEntry[]): TemplateEntry[] {
  return sortEntries(latestEntries(entries));
}

function table(entries: readonly TemplateEntry[]): string {
  if (entries.length === 0) return 'no templates\n';
  const rows = entries.map((e) => [e.id, e.version, e.stability, String(e.stats?.downloads ?? 0), e.description]);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length), ['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS'][i]?.length ?? 0));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 4 ? c.padEnd(widths[i] ?? 0) : c)).join('  ');
  return `${[line(['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS', 'DESCRIPTION']), ...rows.map(line)].join('\n')}\n`;
}

function progress(io: CliIo): (received: number, total?: number) => void {
  if (!process.stderr.isTTY) return () => undefined;
  let last = -1;
  return (received, total) => {
    const percent = total ? Math.floor((received / total) * 100) : -1;
    if (percent === last) return;
    last = percent;
    io.stderr(`\rdownloading ${total ? `${percent}%` : `${received} bytes`}`);
    if (total && received >= total) io.stderr('\n');
  };
}

/** --yes applies breaking steps; on a terminal the user is asked; otherwise they are declined (they need --yes). */
function confirmBreaking(yes: boolean, canAsk: boolean): Pick<MigrateProjectOptions, 'confirmBreaking'> {
  if (yes) return { confirmBreaking: () => true };
  if (!canAsk) return {};
  return {
    confirmBreaking: (steps) => confirm({ message: `${steps.length} breaking step(s) (${steps.map((s) => s.id).join(', ')}). Apply them?`, default: false }),
  };
}

/** The plan of a migration: a summary, the diff of every file, then its warnings and errors. */
function printPlan({ templateId, fromVersion, toVersion, result }: MigrationPlan, io: CliIo): void {
  io.stdout(`migration plan ${templateId} ${fromVersion} -> ${toVersion}: ${result.applied.length} step(s), ${result.plan.length} file change(s)\n`);
  for (const file of result.plan) io.stdout(`${file.diff}${file.diff.endsWith('\n') ? '' : '\n'}`);
  for (const warning of result.warnings) io.stderr(`warning: ${warning}\n`);
  for (const error of result.errors) io.stderr(`error: ${error}\n`);
}

/** Prints how a migration ended (its plan is already printed) and gives the exit code. */
function printMigration(outcome: MigrateProjectResult, flags: RegistryFlags, canAsk: boolean, io: CliIo): number {
  switch (outcome.status) {
    case 'up-to-date':
      io.stdout(`${outcome.templateId} is at ${outcome.currentVersion}; nothing to migrate to (registry has ${outcome.registryVersion})\n`);
      return EXIT.ok;
    case 'plan-failed':
      return EXIT.failure;
    case 'planned':
      if (flags.json) io.stdout(`${JSON.stringify(outcome.result, null, 2)}\n`);
      return EXIT.ok;
    case 'declined':
      io.stderr(canAsk ? 'nothing was changed\n' : `${outcome.breaking.length} breaking step(s): review the migration guide, then run again with --yes\n`);
      return EXIT.failure;
    case 'applied': {
      const { applied } = outcome;
      for (const warning of applied.warnings) io.stderr(`warning: ${warning}\n`);
      for (const error of applied.errors) io.stderr(`error: ${error}\n`);
      if (flags.json) io.stdout(`${JSON.stringify(applied, null, 2)}\n`);
      else if (applied.success) {
        io.stdout(`migrated ${outcome.templateId} to ${outcome.toVersion}: ${applied.changes.length} change(s)${applied.backupDir ? `; old files kept in ${applied.backupDir}` : ''}\n`);
      }
      return applied.success ? EXIT.ok : EXIT.failure;
    }
  }
}

/** `info` reads a template's questions from its archive: a bounded download, as a template is small. */
const INFO_DOWNLOAD_MS = 30_000;
const INFO_MAX_ARCHIVE_BYTES = 50 * 1024 * 1024;

// C0 and C1 controls: text from a registry or an archive must not drive the terminal.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]+/g;

/** Text from a stranger on one line of a terminal: escape sequences and controls gone. */
function oneLine(text: string): string {
  return stripVTControlCharacters(text).replace(CONTROLS, ' ').trim();
}

const shown = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(', ') : JSON.stringify(value));

/** The entry's `dependencies` (runtime to version range) on one line. */
function dependencyList(dependencies: TemplateEntry['dependencies'] | undefined): string {
  const pairs = Object.entries(dependencies ?? {}).filter((pair): pair is [string, string] => typeof pair[1] === 'string');
  return pairs.length === 0 ? 'nothing declared' : oneLine(pairs.map(([name, range]) => `${name} ${range}`).join(', '));
}

/** The questions as `info` prints them: one line each, the variable's name first (what --set takes). */
function questionLines({ questions, unasked }: TemplateQuestions): string[] {
  if (questions.length === 0 && unasked.length === 0) return ['questions: none (the template has no variables)'];
  const width = Math.max(...questions.map((q) => q.name.length), 0);
  const lines = questions.map((question) => {
    const details = [
      question.choices ? `${question.type}: ${question.choices.map((choice) => choice.value).join(', ')}` : question.type,
      ...(question.default !== undefined ? [`default ${shown(question.default)}`] : []),
      ...(question.required ? ['required'] : []),
      ...(question.pattern ? [`must match ${question.pattern}`] : []),
      ...(question.when ? [`asked when ${question.when}`] : []),
      ...(question.condition ? [`only when ${question.condition}`] : []),
    ];
    return `  ${question.name.padEnd(width)}  ${oneLine(`${question.message}  [${details.join('; ')}]`)}`;
  });
  return [
    'questions (answer them with --set name=value or --answers FILE to skip them):',
    ...lines,
    ...(unasked.length > 0
      ? [`not asked (set with --set): ${oneLine(unasked.map((v) => (v.default !== undefined ? `${v.name} (default ${shown(v.default)})` : v.name)).join(', '))}`]
      : []),
  ];
}

export function registerConsumer(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const registryOption = (command: Command): Command =>
    command.option('--registry <url>', 'registry document URL (env TEMPLATE_REGISTRY_URL)').option('--json', 'print JSON');

  registryOption(
    program
      .command('list')
      .description('list the templates of the registry (newest stable version of each)')
      .option('--category <category>', 'only this category')
      .option('--stability <stability>', 'only this stability')
      .option('--tag <tag>', 'only templates with this tag (repeatable: all must be present)', collect, [])
      .option('--feature <feature>', 'only templates with this feature (repeatable: all must be present)', collect, [])
      .option('--author <name>', 'only templates by this author')
      .option('--all-versions', 'list every version, not only the newest'),
  ).action(async (flags: RegistryFlags & { category?: string; stability?: string; tag: string[]; feature: string[]; author?: string; allVersions?: boolean }) => {
    const entries = await clientFor(flags).listTemplates({
      ...(flags.category ? { category: flags.category } : {}),
      ...(flags.stability ? { stability: flags.stability } : {}),
      ...(flags.tag.length > 0 ? { tags: flags.tag } : {}),
      ...(flags.feature.length > 0 ? { features: flags.feature } : {}),
      ...(flags.author ? { author: flags.author } : {}),
    });
    const shown = flags.allVersions ? entries : latestPerTemplate(entries);
    io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown));
    setExit(EXIT.ok);
  });

  registryOption(program.command('search').description('search templates by name, description, tags, features and category').argument('<terms...>', 'search terms')).action(
    async (terms: string[], flags: RegistryFlags) => {
      const shown = latestPerTemplate(await clientFor(flags).search(terms.join(' ')));
      io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown));
      setExit(EXIT.ok);
    },
  );

  registryOption(
    program
      .command('info')
      .description('show a template: its entry, versions, declared dependencies and the questions it asks')
      .argument('<template>', 'id or id@version')
      .option('--no-questions', 'do not download the archive to read the questions (entry only)'),
  ).action(async (spec: string, flags: RegistryFlags & { questions: boolean }) => {
    const { id, version } = parseTemplateSpec(spec);
    const client = clientFor(flags);
    const entry = await client.getTemplate(id, version);
    if (!entry) {
      io.stderr(`template ${spec} not found in the registry\n`);
      setExit(EXIT.failure);
      return;
    }
    const versions = (await client.listVersions(id)).map((e) => e.version);
    let asked: TemplateQuestions | undefined;
    let questionsError: string | undefined;
    if (flags.questions) {
      try {
        asked = await fetchTemplateQuestions({ client, entry, signal: AbortSignal.timeout(INFO_DOWNLOAD_MS), limits: { maxBytes: INFO_MAX_ARCHIVE_BYTES } });
      } catch (error) {
        // The entry is still worth showing; the questions are what could not be had.
        questionsError = firstLine(error);
        io.stderr(`warning: the questions cannot be shown: ${questionsError}\n`);
      }
    }
    if (flags.json) {
      const questions = asked ? { questions: asked.questions, unaskedVariables: asked.unasked } : questionsError ? { questionsError } : {};
      io.stdout(`${JSON.stringify({ ...entry, versions, ...questions }, null, 2)}\n`);
    } else {
      io.stdout(
        [
          `${entry.id}@${entry.version} (${entry.stability}, ${entry.category})`,
          entry.description,
          `author:    ${entry.author?.name ?? 'unknown'}`,
          `tags:      ${(entry.tags ?? []).join(', ')}`,
          `features:  ${(entry.features ?? []).join(', ')}`,
          `requires:  ${dependencyList(entry.dependencies)}`,
          `downloads: ${entry.stats?.downloads ?? 0}`,
          `archive:   ${entry.downloadUrl}`,
          ...(entry.integrity ? [`integrity: ${entry.integrity}`] : []),
          `versions:  ${versions.join(', ')}`,
          ...(asked ? ['', ...questionLines(asked)] : []),
        ].join('\n') + '\n',
      );
    }
    setExit(EXIT.ok);
  });

  registryOption(
    program
      .command('create')
      .description('create a project from a registry template')
      .argument('<template>', 'id or id@version')
      .argument('[dir]', 'folder to create the project in (default: the template id)')
      .option('--set <key=value>', 'answer a variable (repeatable)', collect, [])
      .option('--answers <file>', 'JSON file of answers')
      .option('--defaults', 'do not ask: use the defaults')
      .option('--force', 'write into a folder that is not empty'),
  ).action(async (spec: string, dir: string | undefined, flags: RegistryFlags & { set: string[]; answers?: string; defaults?: boolean; force?: boolean }) => {
    const { id, version } = parseTemplateSpec(spec);
    try {
      const { entry, project, manifest } = await createProject({
        client: clientFor(flags),
        id,
        ...(version ? { version } : {}),
        ...(dir !== undefined ? { dir } : {}),
        ...answerFlags(flags),
        ...(!flags.defaults && process.stdin.isTTY ? { ask: promptForAnswers } : {}),
        force: flags.force ?? false,
        doNotTrack: doNotTrackFrom(process.env),
        onProgress: progress(io),
      });
      const nextSteps = await templateNextSteps(manifest, project, io);
      io.stdout(
        flags.json
          ? `${JSON.stringify({ ...project, nextSteps: nextSteps ?? null }, null, 2)}\n`
          : `created ${project.outDir} from ${id}@${entry.version} (${project.files.length} files, integrity verified)\n\n` +
              `${nextSteps ?? defaultNextSteps(project.outDir, project.template, true)}\n`,
      );
      setExit(EXIT.ok);
    } catch (error) {
      if (error instanceof TemplateNotFoundError) {
        io.stderr(`template ${spec} not found in the registry\n`);
        setExit(EXIT.failure);
        return;
      }
      setExit(reportTemplateError(error, io));
    }
  });

  registryOption(
    program
      .command('migrate')
      .description('migrate the project in this folder (or --project) to a newer template version')
      .option('--to <version>', 'target version (default: the newest the registry selects)')
      .option('--project <dir>', 'project folder', '.')
      .option('--dry-run', 'show the plan and the diffs, change nothing')
      .option('--yes', 'apply breaking steps without asking')
      .option('--no-backup', 'do not keep the old files in .template-backups/'),
  ).action(async (flags: RegistryFlags & { to?: string; project: string; dryRun?: boolean; yes?: boolean; backup: boolean }) => {
    if (flags.to !== undefined && !isTemplateVersion(flags.to)) throw new UsageError(`--to must be MAJOR.MINOR.PATCH (got ${JSON.stringify(flags.to)})`);
    const canAsk = process.stdin.isTTY === true;
    let outcome: MigrateProjectResult;
    try {
      outcome = await migrateProject({
        client: clientFor(flags),
        projectDir: flags.project,
        ...(flags.to !== undefined ? { to: flags.to } : {}),
        dryRun: flags.dryRun ?? false,
        backup: flags.backup,
        onPlan: (plan) => printPlan(plan, io),
        onProgress: progress(io),
        onRecovered: (recovery) =>
          io.stderr(`an earlier migration was interrupted; the project was rolled back to how it was before it (${recovery.restored.length} file(s) restored)\n`),
        ...confirmBreaking(flags.yes ?? false, canAsk),
      });
    } catch (error) {
      if (error instanceof ProjectLockError) throw new UsageError(error.message);
      if (error instanceof TemplateNotFoundError) {
        io.stderr(`${error.message}\n`);
        setExit(EXIT.failure);
        return;
      }
      throw error;
    }
    setExit(printMigration(outcome, flags, canAsk, io));
  });

  registryOption(
    program
      .command('check-compat')
      .description('check a template against an environment (exit 1 when incompatible)')
      .argument('<template>', 'id or id@version')
      .option('--methodology-version <version>', 'methodology version to check')
      .option('--node-version <version>', 'node version to check (default: this one)', process.versions.node)
      .option('--npm-version <version>', 'npm version to check')
      .option('--platform <platform>', 'platform to check (default: this one)', process.platform),
  ).action(async (spec: string, flags: RegistryFlags & { methodologyVersion?: string; nodeVersion: string; npmVersion?: string; platform: string }) => {
    const { id, version } = parseTemplateSpec(spec);
    const templates = await clientFor(flags).listTemplates();
    const result = checkCompatibility({ templates }, id, {
      ...(flags.methodologyVersion ? { methodologyVersion: flags.methodologyVersion } : {}),
      nodeVersion: flags.nodeVersion,
      ...(flags.npmVersion ? { npmVersion: flags.npmVersion } : {}),
      platform: flags.platform,
    }, version ? { version } : {});
    if (flags.json) io.stdout(`${JSON.stringify(result, null, 2)}\n`);
    else {
      io.stdout(`${spec}: ${result.compatible ? 'compatible' : 'NOT compatible'}\n`);
      for (const issue of result.issues) io.stdout(`  issue: ${issue}\n`);
      for (const warning of result.warnings) io.stdout(`  warning: ${warning}\n`);
    }
    setExit(result.compatible ? EXIT.ok : EXIT.failure);
  });
}
