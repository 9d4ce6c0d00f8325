/**
 * Creates a project from a registry template: find the entry, download and verify its archive,
 * load the template, collect the answers, generate the project (with its lock file), and tell
 * the registry how the generation went.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { downloadTemplate, sendAnalyticsEvent, type EventDelivery, type ProvenanceOutcome, type ProvenancePolicy, type RegistryClient } from '../client/index.js';
import type { TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { checkOutputFolder } from '../template/generate.js';
import { registrySource } from '../template/lock.js';
import { AnswersError, generateProject, loadTemplate, type AnswerProblem, type Answers, type GenerateResult, type LoadedTemplate } from '../template/index.js';
import { checkValue } from '../template/answers.js';
import { PROJECT_NAME } from '../template/standard-variables.js';
import { recordTasks, runTasks, skippedTasks, type PlannedTask, type RunTasksOptions, type TaskOutcome } from '../template/tasks.js';
import { givenAnswers, type GivenAnswers } from './answers.js';
import { TemplateNotFoundError } from './errors.js';

export interface CreateProjectOptions extends GivenAnswers {
  /** The registry to read; its `registryUrl` is recorded as the project's source and takes the generation event. */
  client: RegistryClient;
  /** The template id. */
  id: string;
  /** The version; the one the registry selects for `id` (newest stable, else newest) unless given. */
  version?: string;
  /** The folder to create the project in; a folder named after the template id unless given. */
  dir?: string;
  /**
   * Asks for the answers still missing, given those given up front (the CLI prompts on a
   * terminal); without it, every answer not given takes its default.
   */
  ask?: (template: LoadedTemplate, given: Answers) => Promise<Answers>;
  /** Write into a folder that is not empty. */
  force?: boolean;
  /** Run the template's tasks without asking (the CLI's `--run-tasks`). */
  runTasks?: boolean;
  /**
   * Asked, with the tasks that apply, whether to run them (the CLI asks on a terminal); without
   * it, and without `runTasks`, no task runs.
   */
  confirmTasks?: (tasks: readonly PlannedTask[]) => boolean | Promise<boolean>;
  /** Time limit, output and start notices of the tasks that run. */
  tasks?: RunTasksOptions;
  /** Send no generation event: the user asked not to be tracked (the CLI passes `DO_NOT_TRACK=1`). */
  doNotTrack?: boolean;
  /** Download progress; `total` is the archive's size when known. */
  onProgress?: (received: number, total?: number) => void;
  /** For the download and the event. */
  fetch?: typeof globalThis.fetch;
  /** The clock, for the event's timestamp and duration. */
  now?: () => Date;
  /** How the template's build provenance is checked (default `warn`, the public-good root); the signer of a verified one is pinned in the lock. */
  provenance?: Omit<ProvenancePolicy, 'pinned' | 'acceptNewSigner'>;
}

export interface CreateProjectResult {
  /** The registry entry the project was generated from. */
  entry: TemplateEntry;
  /** The generated project: folder, answers, files and lock file. */
  project: GenerateResult;
  /** The template's manifest, as the archive held it (its `nextSteps`, for one, is for the person who created the project). */
  manifest: TemplateManifest;
  /** What became of the generation event. */
  event: EventDelivery;
  /** What became of each of the template's tasks that apply to the project (also recorded in its lock file). */
  tasks: TaskOutcome[];
  /** What the provenance check found. */
  provenance: ProvenanceOutcome;
}

/**
 * `projectName` from the name of the folder the project is created in, as `npm create` does:
 * only for a template with a `projectName` variable that no answer gives. Undefined when it does
 * not apply; else the name and the problems it has against the variable's rules (and its
 * prompt's pattern).
 */
export function projectNameFromFolder(template: LoadedTemplate, answers: Answers, dir: string): { name: string; problems: AnswerProblem[] } | undefined {
  const definition = Object.hasOwn(template.variables, PROJECT_NAME) ? template.variables[PROJECT_NAME] : undefined;
  if (!definition || Object.hasOwn(answers, PROJECT_NAME)) return undefined;
  if (definition.type !== undefined && definition.type !== 'string') return undefined;
  const name = path.basename(path.resolve(dir));
  const problems: AnswerProblem[] = [];
  const prompt = template.prompts.find((p) => p.name === PROJECT_NAME && p.validate !== undefined);
  checkValue(PROJECT_NAME, definition, name, problems, prompt?.validate ? { source: prompt.validate, ...(prompt.invalidMessage ? { message: prompt.invalidMessage } : {}) } : undefined);
  return { name, problems };
}

/**
 * Creates a project from the template `id` (at `version`) of the registry `client` reads.
 *
 * The archive is downloaded into a temp folder (removed in the end) and checked against the
 * entry's integrity before anything is unpacked. Answers are `answers`, then `answersFile`, then
 * `set`, then what `ask` adds. Once the template is loaded, a generation event (success or
 * failure, with its duration) goes to the registry unless `doNotTrack`; it never fails the
 * creation. Throws TemplateNotFoundError, the download's errors (DownloadError, IntegrityError,
 * UnsafeArchiveError), TemplateLoadError, AnswersFileError, AnswersError, what `ask` throws, and
 * OutputNotEmptyError.
 *
 * Given a `dir` and no `projectName` answer, a template's `projectName` is the folder's name when
 * that name is valid for it; otherwise it is asked (with `ask`) or the creation fails. After the
 * project is written, the template's tasks that apply run if the user agreed (`runTasks`,
 * `confirmTasks`); the lock file records what became of them.
 */
export async function createProject(options: CreateProjectOptions): Promise<CreateProjectResult> {
  const { client, id } = options;
  const now = options.now ?? (() => new Date());
  const entry = await client.getTemplate(id, options.version);
  if (!entry) throw new TemplateNotFoundError(id, options.version);

  const report = (success: boolean, started: number): Promise<EventDelivery> => {
    const at = now();
    return sendAnalyticsEvent(
      client.registryUrl,
      { type: 'generation', templateId: id, version: entry.version, success, duration: at.getTime() - started, timestamp: at.toISOString() },
      { doNotTrack: options.doNotTrack ?? false, ...(options.fetch ? { fetch: options.fetch } : {}) },
    );
  };

  const work = await mkdtemp(path.join(tmpdir(), 'template-create-'));
  const started = now().getTime();
  let loaded = false;
  try {
    const downloaded = await downloadTemplate(entry, path.join(work, 'template'), {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      documentUrl: client.registryUrl,
      // A registry that follows the specification alone gives no integrity: its archive is used as served (the CLI says so).
      allowUnverified: true,
      ...(options.provenance ? { provenance: options.provenance } : {}),
    });
    const template = await loadTemplate(downloaded.dir);
    loaded = true;
    // Before any question: a folder that cannot be written into is known now.
    await checkOutputFolder(options.dir ?? id, options.force ?? false);
    let answers = await givenAnswers(template, options);
    if (options.dir !== undefined) {
      const fromFolder = projectNameFromFolder(template, answers, options.dir);
      if (fromFolder && fromFolder.problems.length === 0) answers = { ...answers, [PROJECT_NAME]: fromFolder.name };
      else if (fromFolder && !options.ask) {
        // Without questions, a name the folder cannot give is an error, not a silent default.
        const reasons = fromFolder.problems.map((problem) => problem.message).join('; ');
        throw new AnswersError([
          { name: PROJECT_NAME, message: `is taken from the folder name ${JSON.stringify(fromFolder.name)} when not given, and that name is not valid: ${reasons}; pass --set ${PROJECT_NAME}=<name> or create the project in a folder with a valid name` },
        ]);
      }
    }
    if (options.ask) answers = await options.ask(template, answers);
    const project = await generateProject(template, options.dir ?? id, answers, {
      force: options.force ?? false,
      source: registrySource(client.registryUrl, id, entry.version),
      ...(downloaded.provenance.status === 'verified' ? { signer: downloaded.provenance.signer } : {}),
    });
    const event = await report(true, started);
    return { entry, project, manifest: template.manifest, event, tasks: await projectTasks(project, options), provenance: downloaded.provenance };
  } catch (error) {
    // Only a template that could be used counts as a generation; a failed download is not one.
    if (loaded) await report(false, started);
    throw error;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Runs the project's tasks when the user agreed (`runTasks`, or `confirmTasks` said yes), else
 * skips them, and records in the lock file what became of each. A task that fails is a result,
 * not an error: the project is generated already and stays.
 */
async function projectTasks(project: GenerateResult, options: CreateProjectOptions): Promise<TaskOutcome[]> {
  if (project.tasks.length === 0) return [];
  const consent = options.runTasks === true || (options.confirmTasks ? await options.confirmTasks(project.tasks) : false);
  const outcomes = consent ? await runTasks(project.tasks, project.outDir, options.tasks) : skippedTasks(project.tasks);
  await recordTasks(project.outDir, outcomes);
  return outcomes;
}
