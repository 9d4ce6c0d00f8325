import type { Command } from 'commander';

import { AnswersFileError, givenAnswers } from '../../project/index.js';
import { AnswersError, generateProject, loadTemplate, TemplateLoadError } from '../../template/index.js';
import { promptForAnswers, PromptCancelledError } from '../../template/prompts.js';
import { EXIT, UsageError, type CliIo } from '../io.js';

interface GenerateFlags {
  out?: string;
  set: string[];
  answers?: string;
  defaults?: boolean;
  force?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** The answer flags as the library takes them: `--answers FILE` then `--set k=v` (later ones win). */
export function answerFlags(flags: { set: string[]; answers?: string }): { set: string[]; answersFile?: string } {
  return flags.answers ? { set: flags.set, answersFile: flags.answers } : { set: flags.set };
}

/**
 * Prints a library error the user can act on, and gives its exit code; a bad `--answers` file
 * becomes a usage error; rethrows anything else.
 */
export function reportTemplateError(error: unknown, io: CliIo): number {
  if (error instanceof AnswersFileError) throw new UsageError(`--answers: ${error.message}`);
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
        let answers = await givenAnswers(template, answerFlags(flags));
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
