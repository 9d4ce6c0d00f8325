import { readFile } from 'node:fs/promises';

import type { Command } from 'commander';

import {
  AnswersError,
  generateProject,
  loadTemplate,
  parseSetArguments,
  TemplateLoadError,
  type Answers,
  type LoadedTemplate,
} from '../../template/index.js';
import { promptForAnswers, PromptCancelledError } from '../../template/prompts.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { errorMessage } from '../../core/errors.js';

interface GenerateFlags {
  out?: string;
  set: string[];
  answers?: string;
  defaults?: boolean;
  force?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

async function readAnswersFile(file: string): Promise<Answers> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new UsageError(`--answers: cannot read ${file}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--answers: ${file} is not valid JSON (${errorMessage(error)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--answers: ${file} must hold a JSON object of answers`);
  }
  return value as Answers;
}

/** Given answers from `--answers FILE` then `--set k=v` (later ones win), typed by the template's variables. */
export async function givenAnswers(template: LoadedTemplate, flags: { set: string[]; answers?: string }): Promise<Answers> {
  const fromFile = flags.answers ? await readAnswersFile(flags.answers) : {};
  return parseSetArguments(flags.set, template.variables, fromFile);
}

/** Prints a library error the user can act on, and gives its exit code; rethrows anything else. */
export function reportTemplateError(error: unknown, io: CliIo): number {
  if (error instanceof TemplateLoadError) {
    io.stderr(`${error.message}\n`);
    return EXIT.failure;
  }
  if (error instanceof AnswersError) {
    io.stderr(`${error.message}\n`);
    return EXIT.failure;
  }
  if (error instanceof PromptCancelledError) {
    io.stderr('cancelled: nothing was generated\n');
    return EXIT.cancelled;
  }
  throw error;
}

export function registerGenerate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('generate')
    .description('generate a project from a template folder')
    .argument('[dir]', 'template folder', '.')
    .requiredOption('-o, --out <dir>', 'folder to generate the project into')
    .option('--set <key=value>', 'answer a variable (repeatable; arrays as a,b; nested keys as author.name)', collect, [])
    .option('--answers <file>', 'JSON file of answers')
    .option('--defaults', 'do not ask: use the defaults for everything not given')
    .option('--force', 'write into a folder that is not empty')
    .option('--json', 'print the result as JSON')
    .action(async (dir: string, flags: GenerateFlags) => {
      try {
        const template = await loadTemplate(dir);
        let answers = await givenAnswers(template, flags);
        if (!flags.defaults && process.stdin.isTTY) answers = await promptForAnswers(template, answers);
        const result = await generateProject(template, flags.out ?? '', answers, { force: flags.force ?? false });
        if (flags.json) {
          io.stdout(`${JSON.stringify(result, null, 2)}\n`);
        } else {
          io.stdout(
            `generated ${result.template.name}@${result.template.version} into ${result.outDir} (${result.files.length} files)\n`,
          );
        }
        setExit(EXIT.ok);
      } catch (error) {
        setExit(reportTemplateError(error, io));
      }
    });
}
