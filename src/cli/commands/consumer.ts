import { stripVTControlCharacters } from 'node:util';

import { confirm } from '@inquirer/prompts';
import { Option, type Command } from 'commander';

import { DEFAULT_CACHE_TTL_MS, doNotTrackFrom, RegistryClient, type StaleNotice } from '../../client/index.js';
import { checkCompatibility, checkedEntry, declaresRuntime, KNOWN_PLATFORMS } from '../../compat/index.js';
import { latestEntries, sortEntries, STABILITY_ORDER } from '../../core/listing.js';
import type { TemplateEntry } from '../../core/schema-types.js';
import { firstLine } from '../../core/errors.js';
import { isTemplateVersion, VERSION_RULE } from '../../core/versions.js';
import { REGISTRY_KEY_ENV, REGISTRY_URL_ENV } from '../../core/env-names.js';
import { createProject, fetchTemplateQuestions, ProjectLockError, TemplateNotFoundError, type TemplateQuestions } from '../../project/index.js';
import { TEMPLATE_CATEGORIES } from '../../template/index.js';
import { promptForAnswers } from '../../template/prompts.js';
import { DEFAULT_TASK_TIMEOUT_MS, TASK_INTERRUPTED, taskCommandLine, type PlannedTask, type TaskOutcome } from '../../template/tasks.js';
import { isCiFrom, localNpmVersion, maxDocumentBytesFrom, parseTemplateSpec, registryKeysFrom, registryModeFrom, registryUrlsFrom, runtimeVersionFrom, taskTimeoutFrom, userCacheDir } from '../consumer-env.js';
import { EXIT, oneOf, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { paintStability, stderrStyle, stdoutStyle, type Style } from '../style.js';
import { answerFlags, defaultNextSteps, reportTemplateError, templateNextSteps } from './generate.js';
import { provenanceLine, provenanceOptions, provenancePolicyFor, type ProvenanceFlags } from './provenance.js';

export interface RegistryFlags {
  /** Every --registry given, in order (the first, then its fallbacks). */
  registry?: string | string[];
  /** Every --registry-key given. */
  registryKey?: string[];
  json?: boolean;
  refresh?: boolean;
}

/** `ms` in the largest unit that keeps it readable: `45 seconds`, `12 minutes`, `3 hours`, `2 days`. */
export function formatAge(ms: number): string {
  const units: [string, number][] = [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ];
  for (const [unit, size] of units) {
    const count = Math.floor(ms / size);
    // `90 minutes` rather than `1 hour`; an exact `1 hour` stays one.
    if (count >= 2 || (count === 1 && (unit === 'minute' || ms % size === 0))) return `${count} ${unit}${count === 1 ? '' : 's'}`;
  }
  const seconds = Math.floor(ms / 1000);
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** The one line a command prints when a cached copy answers because the registry could not be read. */
function staleNoticeLine(notice: StaleNotice, ttlMs: number = DEFAULT_CACHE_TTL_MS): string {
  const age = `the copy cached ${formatAge(notice.ageMs)} ago`;
  return `cannot fetch the ${notice.what} from ${notice.url} (${oneLine(notice.reason)}); using ${age}${notice.expired ? `, older than the cache lifetime of ${formatAge(ttlMs)}` : ''}`;
}

export function clientFor(flags: RegistryFlags, io: CliIo, fallbackRegistry?: string): RegistryClient {
  const maxDocumentBytes = maxDocumentBytesFrom();
  // One line per command, however many of the registry's files answered from the cache.
  let told = false;
  const [registryUrl = '', ...fallbackUrls] = registryUrlsFrom(flags.registry, process.env, fallbackRegistry);
  const keys = registryKeysFrom(flags.registryKey);
  return new RegistryClient({
    registryUrl,
    ...(fallbackUrls.length > 0 ? { fallbackUrls } : {}),
    // Signed registries: the keys given, else the ones each registry publishes, pinned on first use.
    signatures: keys ? { keys } : { pinOnFirstUse: true },
    onFallback: (notice) => io.stderr(`${stderrStyle(io).yellow('warning')}: cannot reach the registry ${notice.from} (${oneLine(notice.reason)}); trying ${notice.to}\n`),
    cacheDir: userCacheDir(),
    mode: registryModeFrom(),
    ...(maxDocumentBytes ? { maxDocumentBytes } : {}),
    ...(flags.refresh ? { refresh: true } : {}),
    onStale: (notice) => {
      if (told) return;
      told = true;
      io.stderr(`${stderrStyle(io).yellow('warning')}: ${staleNoticeLine(notice)}\n`);
    },
    onSkipped: (notice) => io.stderr(`${stderrStyle(io).yellow('warning')}: ${notice.message}\n`),
  });
}

/** `--category`: the manifest's categories, or another one the registry has (a registry may define its own). */
async function checkCategory(client: RegistryClient, category: string): Promise<void> {
  if (TEMPLATE_CATEGORIES.includes(category)) return;
  const document = await client.document();
  const extra = [...new Set([...document.categories.map((c) => c.id), ...document.templates.map((e) => e.category)])]
    .filter((id) => !TEMPLATE_CATEGORIES.includes(id))
    .sort();
  oneOf('--category', category, [...TEMPLATE_CATEGORIES, ...extra]);
}

function latestPerTemplate(entries: readonly TemplateEntry[]): TemplateEntry[] {
  return sortEntries(latestEntries(entries));
}

function table(entries: readonly TemplateEntry[], paint: Style): string {
  if (entries.length === 0) return 'no templates\n';
  const rows = entries.map((e) => [
    oneLine(e.id),
    oneLine(e.version),
    oneLine(e.yanked ? `${e.stability}, yanked` : e.stability),
    String(e.stats?.downloads ?? 0),
    oneLine(e.deprecationMessage ? `[deprecated: ${e.deprecationMessage}] ${e.description}` : e.description),
  ]);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length), ['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS'][i]?.length ?? 0));
  // Padded before painting: escape sequences take no room on the screen.
  const pad = (cells: string[]): string[] => cells.map((c, i) => (i < 4 ? c.padEnd(widths[i] ?? 0) : c));
  const header = paint.bold(pad(['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS', 'DESCRIPTION']).join('  ').trimEnd());
  const lines = rows.map((row, n) => {
    const [name = '', version = '', stability = '', downloads = '', description = ''] = pad(row);
    return [paint.bold(name), version, paintStability(paint, entries[n]?.stability ?? '', stability), downloads, description].join('  ');
  });
  return `${[header, ...lines].join('\n')}\n`;
}

export function progress(io: CliIo): (received: number, total?: number) => void {
  if (!io.isTTY?.stderr) return () => undefined;
  let last = -1;
  return (received, total) => {
    const percent = total ? Math.floor((received / total) * 100) : -1;
    if (percent === last) return;
    last = percent;
    io.stderr(`\rdownloading ${total ? `${percent}%` : `${received} bytes`}`);
    if (total && received >= total) io.stderr('\n');
  };
}

/** Warnings in yellow and errors in red, on stderr. */
export function printProblems(result: { warnings: readonly string[]; errors: readonly string[] }, io: CliIo): void {
  const paint = stderrStyle(io);
  for (const warning of result.warnings) io.stderr(`${paint.yellow('warning')}: ${warning}\n`);
  for (const error of result.errors) io.stderr(`${paint.red('error')}: ${error}\n`);
}

/** Exit code of an update or a forced migration that left conflicts to resolve. */
export const EXIT_CONFLICTS = 3;

/**
 * The exit code of an error of a workflow on a project (migrate, update, check-update): no lock
 * file is a usage error, a template the registry lacks a failure (said on stderr); anything else
 * is rethrown.
 */
export function reportProjectError(error: unknown, io: CliIo): number {
  if (error instanceof ProjectLockError) throw new UsageError(error.message);
  if (error instanceof TemplateNotFoundError) {
    io.stderr(`${error.message}\n`);
    return EXIT.failure;
  }
  throw error;
}

/** The tasks, one line each, as they are listed before the user is asked (or told they did not run). */
function taskLines(tasks: readonly PlannedTask[]): string {
  return tasks.map((task) => `  ${oneLine(task.description)}: ${oneLine(taskCommandLine(task))}\n`).join('');
}

/**
 * On a terminal (not CI, not --json) the user is shown the template's tasks and asked whether to
 * run them; anywhere else they are not asked (the tasks need --run-tasks).
 */
function confirmTasksOnTerminal(canAsk: boolean, io: CliIo): ((tasks: readonly PlannedTask[]) => Promise<boolean>) | undefined {
  if (!canAsk) return undefined;
  return (tasks) => {
    io.stderr(`the template has ${tasks.length} task(s) to run in the new project:\n${taskLines(tasks)}`);
    return confirm({ message: 'Run them now?', default: false });
  };
}

/** What create says about the tasks after the project is written; gives the exit code. */
function reportTasks(outcomes: readonly TaskOutcome[], asked: boolean, outDir: string, io: CliIo): number {
  const paint = stderrStyle(io);
  if (outcomes.length === 0) return EXIT.ok;
  if (outcomes.every((outcome) => outcome.status === 'skipped')) {
    io.stderr(
      asked
        ? `the template's ${outcomes.length} task(s) were not run\n`
        : `${paint.yellow('note')}: the template's ${outcomes.length} task(s) were not run (run create with --run-tasks to run them):\n${taskLines(outcomes)}`,
    );
    return EXIT.ok;
  }
  const failed = outcomes.find((outcome) => outcome.status === 'failed' || outcome.status === 'timed-out');
  if (!failed) return EXIT.ok;
  const how =
    failed.status === 'timed-out'
      ? 'ran out of time and was stopped'
      : failed.error === TASK_INTERRUPTED
        ? 'was interrupted'
        : failed.error !== undefined
          ? `could not run (${oneLine(failed.error)})`
          : `exited with ${String(failed.exitCode)}`;
  const skipped = outcomes.filter((outcome) => outcome.status === 'skipped').length;
  io.stderr(
    `${paint.red('error')}: task ${JSON.stringify(oneLine(failed.description))} (${oneLine(taskCommandLine(failed))}) ${how}` +
      `${skipped > 0 ? `; the ${skipped} task(s) after it were not run` : ''}. The project's files are generated in ${outDir}; run the rest yourself\n`,
  );
  return EXIT.failure;
}

/** `info` reads a template's questions from its archive: a bounded download, as a template is small. */
const INFO_DOWNLOAD_MS = 30_000;
const INFO_MAX_ARCHIVE_BYTES = 50 * 1024 * 1024;

// C0 and C1 controls: text from a registry or an archive must not drive the terminal.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]+/g;

/** Text from a stranger on one line of a terminal: escape sequences and controls gone. */
export function oneLine(text: string): string {
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
      ...(question.secret ? ['secret'] : []),
      ...(question.env ? [`or env ${question.env}`] : []),
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

/** The flags of every command that reads a registry: --registry, --refresh, --json. */
export function registryOption(command: Command): Command {
  return command
    .option('--registry <url>', `the registry: its base URL or its registry.json URL; repeat it to list mirrors, tried in order when one cannot be reached (env ${REGISTRY_URL_ENV}, comma-separated)`, collect, [])
    .option('--registry-key <jwk-or-file>', `the registry's public signing key (a JWK or JWK Set, or a file holding it), pinned from the start: documents not signed by it are refused (env ${REGISTRY_KEY_ENV}; default: the keys the registry publishes, pinned on first use)`, collect, [])
    .option('--refresh', 'fetch the registry now instead of using a cached copy younger than an hour')
    .option('--json', 'print JSON');
}

/**
 * The options `migrate` and `update` share: the target version, the project, a dry run, and `--yes`
 * (`yesHelp`: which steps it lets through without asking).
 */
export function projectTargetOptions(command: Command, yesHelp: string): Command {
  return command
    .option('--to <version>', 'target version (default: the newest the registry selects)')
    .option('--project <dir>', 'project folder', '.')
    .option('--dry-run', 'show the plan and the diffs, change nothing')
    .option('--yes', yesHelp);
}

/** `--to` of `migrate` and `update`: a version (a UsageError naming the flag). */
export function checkTargetVersion(to: string | undefined): void {
  if (to !== undefined && !isTemplateVersion(to)) throw new UsageError(`--to ${VERSION_RULE} (got ${JSON.stringify(to)})`);
}

export function registerConsumer(program: Command, io: CliIo, setExit: (code: number) => void): void {

  registryOption(
    program
      .command('list')
      .description(COMMAND_SUMMARIES.list.description)
      .option('--category <category>', `only this category: ${TEMPLATE_CATEGORIES.join(', ')}, or another the registry defines`)
      .addOption(new Option('--stability <stability>', 'only this stability').choices(STABILITY_ORDER))
      .option('--tag <tag>', 'only templates with this tag (repeatable: all must be present)', collect, [])
      .option('--feature <feature>', 'only templates with this feature (repeatable: all must be present)', collect, [])
      .option('--author <name>', 'only templates by this author')
      .option('--all-versions', 'list every version, not only the newest'),
  ).action(async (flags: RegistryFlags & { category?: string; stability?: string; tag: string[]; feature: string[]; author?: string; allVersions?: boolean }) => {
    const client = clientFor(flags, io);
    if (flags.category !== undefined) await checkCategory(client, flags.category);
    const entries = await client.listTemplates({
      ...(flags.category ? { category: flags.category } : {}),
      ...(flags.stability ? { stability: flags.stability } : {}),
      ...(flags.tag.length > 0 ? { tags: flags.tag } : {}),
      ...(flags.feature.length > 0 ? { features: flags.feature } : {}),
      ...(flags.author ? { author: flags.author } : {}),
    });
    const shown = flags.allVersions ? entries : latestPerTemplate(entries);
    io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown, stdoutStyle(io)));
    setExit(EXIT.ok);
  });

  registryOption(program.command('search').description(COMMAND_SUMMARIES.search.description).argument('<terms...>', 'search terms')).action(
    async (terms: string[], flags: RegistryFlags) => {
      const shown = latestPerTemplate(await clientFor(flags, io).search(terms.join(' ')));
      io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown, stdoutStyle(io)));
      setExit(EXIT.ok);
    },
  );

  registryOption(
    provenanceOptions(
      program
        .command('info')
        .description(COMMAND_SUMMARIES.info.description)
        .argument('<template>', 'id or id@version')
        .option('--no-questions', 'do not download the archive to read the questions (entry only)'),
      { acceptNewSigner: false },
    ),
  ).action(async (spec: string, flags: RegistryFlags & ProvenanceFlags & { questions: boolean }) => {
    const { id, version } = parseTemplateSpec(spec);
    const client = clientFor(flags, io);
    const entry = await client.getTemplate(id, version);
    if (!entry) {
      io.stderr(`template ${spec} not found in the registry\n`);
      setExit(EXIT.failure);
      return;
    }
    const allVersions = await client.listVersions(id, { includeYanked: true });
    const versions = allVersions.map((e) => e.version);
    let asked: TemplateQuestions | undefined;
    let questionsError: string | undefined;
    if (flags.questions) {
      try {
        const provenance = await provenancePolicyFor(flags, client.registryUrl, io);
        asked = await fetchTemplateQuestions({ client, entry, signal: AbortSignal.timeout(INFO_DOWNLOAD_MS), limits: { maxBytes: INFO_MAX_ARCHIVE_BYTES }, provenance });
      } catch (error) {
        if (error instanceof UsageError) throw error;
        // The entry is still worth showing; the questions are what could not be had.
        questionsError = firstLine(error);
        io.stderr(`${stderrStyle(io).yellow('warning')}: the questions cannot be shown: ${questionsError}\n`);
      }
    }
    if (flags.json) {
      const questions = asked ? { questions: asked.questions, unaskedVariables: asked.unasked } : questionsError ? { questionsError } : {};
      io.stdout(`${JSON.stringify({ ...entry, versions, ...questions, ...(asked?.provenance ? { provenance: asked.provenance } : {}) }, null, 2)}\n`);
    } else {
      const paint = stdoutStyle(io);
      io.stdout(
        [
          `${paint.bold(`${entry.id}@${entry.version}`)} (${paintStability(paint, entry.stability)}, ${entry.category})`,
          entry.description,
          ...(entry.stability === 'deprecated' ? [`${paint.yellow('deprecated')}: ${oneLine(entry.deprecationMessage ?? 'this version is deprecated')}`] : []),
          ...(entry.yanked ? [`${paint.red('yanked')}: this version was withdrawn; it is never chosen as the latest`] : []),
          `author:    ${entry.author?.name ?? 'unknown'}`,
          `tags:      ${(entry.tags ?? []).join(', ')}`,
          `features:  ${(entry.features ?? []).join(', ')}`,
          `requires:  ${dependencyList(entry.dependencies)}`,
          `downloads: ${entry.stats?.downloads ?? 0}`,
          `archive:   ${entry.downloadUrl}`,
          ...(entry.integrity ? [`integrity: ${entry.integrity}`] : []),
          ...(entry.publisher ? [`built by:  ${oneLine(`${entry.publisher.repository} @ ${entry.publisher.workflow}`)}${entry.publisher.runUrl ? ` (${oneLine(entry.publisher.runUrl)})` : ''}`] : []),
          ...(provenanceLine(asked?.provenance) ? [oneLine(provenanceLine(asked?.provenance) ?? '')] : []),
          `versions:  ${allVersions.map((e) => (e.yanked ? `${e.version} (yanked)` : e.stability === 'deprecated' ? `${e.version} (deprecated)` : e.version)).join(', ')}`,
          ...(asked ? ['', ...questionLines(asked)] : []),
        ].join('\n') + '\n',
      );
    }
    setExit(EXIT.ok);
  });

  registryOption(
    provenanceOptions(
      program
        .command('create')
        .description(COMMAND_SUMMARIES.create.description)
        .argument('<template>', 'id or id@version')
        .argument('[dir]', 'folder to create the project in (default: the template id)')
        .option('--set <key=value>', 'answer a variable (repeatable)', collect, [])
        .option('--answers <file>', 'JSON file of answers')
        .option('--defaults', 'do not ask: use the defaults')
        .option('--force', 'write into a folder that is not empty')
        .option('--run-tasks', "run the template's tasks (git init, npm install, ...) in the new project without asking")
        .option('--task-timeout <seconds>', `time limit of each task (default ${DEFAULT_TASK_TIMEOUT_MS / 1000})`),
      { acceptNewSigner: false },
    ),
  ).action(async (spec: string, dir: string | undefined, flags: RegistryFlags & ProvenanceFlags & { set: string[]; answers?: string; defaults?: boolean; force?: boolean; runTasks?: boolean; taskTimeout?: string }) => {
    const { id, version } = parseTemplateSpec(spec);
    const timeoutMs = taskTimeoutFrom(flags.taskTimeout);
    // Tasks run programs on the user's machine: asked on a terminal only, never in CI or with --json.
    const confirmTasks = flags.runTasks ? undefined : confirmTasksOnTerminal(process.stdin.isTTY === true && !isCiFrom(process.env) && !flags.json, io);
    // A task runs in its own process group: Ctrl-C while one runs is passed on to it, then create stops.
    const interrupt = new AbortController();
    const onSigint = (): void => interrupt.abort();
    const client = clientFor(flags, io);
    const provenance = await provenancePolicyFor(flags, client.registryUrl, io);
    try {
      const { entry, project, manifest, tasks, provenance: checked } = await createProject({
        client,
        provenance,
        id,
        ...(version ? { version } : {}),
        ...(dir !== undefined ? { dir } : {}),
        ...answerFlags(flags),
        env: process.env,
        ...(!flags.defaults && process.stdin.isTTY ? { ask: promptForAnswers } : {}),
        force: flags.force ?? false,
        doNotTrack: doNotTrackFrom(process.env),
        onProgress: progress(io),
        runTasks: flags.runTasks ?? false,
        ...(confirmTasks ? { confirmTasks } : {}),
        tasks: {
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          signal: interrupt.signal,
          onStart: (task) => {
            if (process.listeners('SIGINT').every((listener) => listener !== onSigint)) process.on('SIGINT', onSigint);
            io.stderr(`${stderrStyle(io).bold('running')} ${oneLine(taskCommandLine(task))}\n`);
          },
          // The tasks' own output goes to stderr: stdout is the command's result (--json).
          onOutput: (text) => io.stderr(text),
        },
      });
      const nextSteps = await templateNextSteps(manifest, project, io);
      const verified = entry.integrity !== undefined || entry.sha256 !== undefined;
      if (!verified) io.stderr(`${stderrStyle(io).yellow('warning')}: the registry gives no integrity for ${id}@${entry.version}: its archive was used as served, unverified\n`);
      const built = provenanceLine(checked);
      io.stdout(
        flags.json
          ? `${JSON.stringify({ ...project, tasks: tasks.map(({ output: _output, ...outcome }) => outcome), nextSteps: nextSteps ?? null, provenance: checked }, null, 2)}\n`
          : `${stdoutStyle(io).green('created')} ${project.outDir} from ${id}@${entry.version} (${project.files.length} files${verified ? ', integrity verified' : ''})\n${built ? `${oneLine(built)}\n` : ''}\n` +
              `${nextSteps ?? defaultNextSteps(project.outDir, project.template, true)}\n`,
      );
      const code = reportTasks(tasks, confirmTasks !== undefined, project.outDir, io);
      setExit(interrupt.signal.aborted ? EXIT.cancelled : code);
    } catch (error) {
      if (error instanceof TemplateNotFoundError) {
        io.stderr(`template ${spec} not found in the registry\n`);
        setExit(EXIT.failure);
        return;
      }
      setExit(reportTemplateError(error, io));
    } finally {
      process.removeListener('SIGINT', onSigint);
    }
  });

}

export function registerCheckCompat(program: Command, io: CliIo, setExit: (code: number) => void): void {
  registryOption(
    program
      .command('check-compat')
      .description(COMMAND_SUMMARIES['check-compat'].description)
      .argument('<template>', 'id or id@version')
      .option('--methodology-version <version>', 'methodology version to check (MAJOR.MINOR.PATCH)')
      .option('--node-version <version>', 'node version to check (default: this one)', process.versions.node)
      .option('--npm-version <version>', "npm version to check (default: this machine's, when the template declares an npm range)")
      .addOption(new Option('--platform <platform>', 'platform to check (default: this one)').choices(KNOWN_PLATFORMS).default(process.platform)),
  ).action(async (spec: string, flags: RegistryFlags & { methodologyVersion?: string; nodeVersion: string; npmVersion?: string; platform: string }) => {
    const { id, version } = parseTemplateSpec(spec);
    const methodologyVersion = flags.methodologyVersion === undefined ? undefined : runtimeVersionFrom('--methodology-version', flags.methodologyVersion);
    const nodeVersion = runtimeVersionFrom('--node-version', flags.nodeVersion);
    let npmVersion = flags.npmVersion === undefined ? undefined : runtimeVersionFrom('--npm-version', flags.npmVersion);
    const templates = await clientFor(flags, io).listTemplates();
    const options = version ? { version } : {};
    const entry = checkedEntry({ templates }, id, options);
    // Finding npm's version may run npm: only when the template declares a range for it.
    if (npmVersion === undefined && entry && declaresRuntime(entry, 'npm')) npmVersion = await localNpmVersion();
    const result = checkCompatibility(
      { templates },
      id,
      { ...(methodologyVersion ? { methodologyVersion } : {}), nodeVersion, ...(npmVersion ? { npmVersion } : {}), platform: flags.platform },
      options,
    );
    if (flags.json) io.stdout(`${JSON.stringify(result, null, 2)}\n`);
    else {
      const paint = stdoutStyle(io);
      const checked = entry ? `${entry.id}@${entry.version}` : spec;
      const verdict = result.compatible ? paint.green('compatible') : paint.red('NOT compatible');
      const count = result.warnings.length > 0 ? ` (${result.warnings.length} warning${result.warnings.length === 1 ? '' : 's'})` : '';
      io.stdout(`${oneLine(checked)}: ${verdict}${count}\n`);
      for (const issue of result.issues) io.stdout(`  ${paint.red('issue')}: ${oneLine(issue)}\n`);
      for (const warning of result.warnings) io.stdout(`  ${paint.yellow('warning')}: ${oneLine(warning)}\n`);
    }
    setExit(result.compatible ? EXIT.ok : EXIT.failure);
  });
}
