import path from 'node:path';

import type { Command } from 'commander';

import { REGISTRY_TOKEN_ENV, REGISTRY_URL_ENV } from '../../core/env-names.js';
import { isTemplateName } from '../../core/versions.js';
import { defaultPrompter, type Prompter } from '../../template/prompts.js';
import {
  FIRST_VERSION,
  scaffoldFieldProblem,
  scaffoldProblems,
  scaffoldTemplate,
  ScaffoldError,
  TEMPLATE_CATEGORIES,
  type ScaffoldValues,
} from '../../template/index.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';

interface InitFlags {
  name?: string;
  category?: string;
  description?: string;
  yes?: boolean;
  force?: boolean;
  json?: boolean;
}

/** What the command needs from its surroundings; tests pass their own. */
export interface InitDependencies {
  /** Asks the questions (default: @inquirer/prompts on the terminal). */
  prompter?: Prompter;
  /** Whether questions may be asked (default: stdin is a terminal). */
  interactive?: boolean;
  /** The clock, for the change log's date. */
  now?: () => Date;
}

const FLAG_HINTS: Record<keyof Omit<ScaffoldValues, 'version'>, string> = {
  name: 'the template name (lower-case letters, digits and -, starting with a letter)',
  category: `one of ${TEMPLATE_CATEGORIES.join(', ')}`,
  description: 'at least 10 characters',
};

/** The flags given, each checked against the manifest schema: a bad one is a usage error naming it. */
function givenValues(flags: InitFlags): Partial<ScaffoldValues> {
  const given: Partial<ScaffoldValues> = {
    ...(flags.name !== undefined ? { name: flags.name } : {}),
    ...(flags.category !== undefined ? { category: flags.category } : {}),
    ...(flags.description !== undefined ? { description: flags.description } : {}),
  };
  const problems = scaffoldProblems(given).filter((problem) => problem.field in given);
  if (problems.length > 0) throw new UsageError(problems.map((problem) => `--${problem.field} ${problem.rule}`).join('\n'));
  return given;
}

/** The folder's own name, when it is a valid template name: the default of --name. */
function nameFromFolder(dir: string): string | undefined {
  const base = path.basename(path.resolve(dir));
  return isTemplateName(base) ? base : undefined;
}

const validator =
  (field: keyof ScaffoldValues) =>
  (value: string): true | string =>
    scaffoldFieldProblem(field, value.trim()) ?? true;

/** Asks for what is missing, in manifest order; a value given as a flag is not asked again. */
async function askMissing(prompter: Prompter, given: Partial<ScaffoldValues>, folderName: string | undefined): Promise<ScaffoldValues> {
  const name =
    given.name ??
    (await prompter.input({ message: 'Template name', ...(folderName ? { default: folderName } : {}), validate: validator('name') })).trim();
  const category =
    given.category ??
    (await prompter.select({ message: 'Category', choices: TEMPLATE_CATEGORIES.map((value) => ({ name: value, value })) }));
  const description = given.description ?? (await prompter.input({ message: 'Description (at least 10 characters)', validate: validator('description') })).trim();
  return { name, category, description };
}

/**
 * Without questions, a missing --name is the folder's name; --category and --description have no
 * sensible default (they are published as they are), so their absence is a usage error listing
 * what to pass.
 */
function withoutQuestions(given: Partial<ScaffoldValues>, folderName: string | undefined, dir: string): ScaffoldValues {
  const name = given.name ?? folderName;
  const missing: string[] = [];
  if (name === undefined) missing.push(`--name (${FLAG_HINTS.name}; the folder name ${JSON.stringify(path.basename(path.resolve(dir)))} is not one)`);
  if (given.category === undefined) missing.push(`--category (${FLAG_HINTS.category})`);
  if (given.description === undefined) missing.push(`--description (${FLAG_HINTS.description})`);
  if (name === undefined || given.category === undefined || given.description === undefined) {
    throw new UsageError(`missing ${missing.join(', ')}: pass them, or run init on a terminal without --yes to be asked`);
  }
  return { name, category: given.category, description: given.description };
}

function isCancel(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExitPromptError';
}

function nextSteps(dir: string, values: ScaffoldValues): string {
  const here = path.resolve(dir) === path.resolve('.');
  return [
    'Next steps:',
    ...(here ? [] : [`  cd ${dir}`]),
    '  edit template/ (the project\'s files), template.vars.json, template.prompts.json and README.md',
    '  template-registry validate && template-registry lint && template-registry test',
    `  publish: commit, push, then tag v${FIRST_VERSION}; .github/workflows/publish.yml publishes ${values.name}`,
    `    (it needs the repository variable ${REGISTRY_URL_ENV} and the secret ${REGISTRY_TOKEN_ENV})`,
  ].join('\n');
}

export function registerInit(program: Command, io: CliIo, setExit: (code: number) => void, dependencies: InitDependencies = {}): void {
  program
    .command('init')
    .description(COMMAND_SUMMARIES.init.description)
    .argument('[dir]', 'folder to create the template in (created when missing)', '.')
    .option('--name <name>', 'template name (default: the folder name, when valid)')
    .option('--category <category>', `template category: ${TEMPLATE_CATEGORIES.join(', ')}`)
    .option('--description <text>', 'one-line description of the template (at least 10 characters)')
    .option('-y, --yes', 'ask nothing: --name defaults to the folder name; --category and --description are required')
    .option('--force', 'write into a folder that is not empty (files of the same name are replaced)')
    .option('--json', 'print the result as JSON (asks nothing, as --yes)')
    .action(async (dir: string, flags: InitFlags) => {
      const given = givenValues(flags);
      const folderName = nameFromFolder(dir);
      const canAsk = !flags.yes && !flags.json && (dependencies.interactive ?? process.stdin.isTTY === true);
      let values: ScaffoldValues;
      try {
        values = canAsk ? await askMissing(dependencies.prompter ?? defaultPrompter, given, folderName) : withoutQuestions(given, folderName, dir);
      } catch (error) {
        if (!isCancel(error)) throw error;
        io.stderr('cancelled: nothing was written\n');
        setExit(EXIT.cancelled);
        return;
      }
      try {
        const result = await scaffoldTemplate(dir, { ...values, force: flags.force ?? false, ...(dependencies.now ? { now: dependencies.now } : {}) });
        if (flags.json) {
          io.stdout(`${JSON.stringify({ ...values, version: FIRST_VERSION, dir: result.dir, files: result.files }, null, 2)}\n`);
        } else {
          io.stdout(`created template ${values.name}@${FIRST_VERSION} in ${result.dir} (${result.files.length} files)\n\n${nextSteps(dir, values)}\n`);
        }
        setExit(EXIT.ok);
      } catch (error) {
        if (!(error instanceof ScaffoldError)) throw error;
        // A value a prompt let through cannot be refused here; what remains is the folder.
        io.stderr(`${error.message}\n`);
        setExit(error.field === 'dir' ? EXIT.failure : EXIT.usage);
      }
    });
}
