import path from 'node:path';

import type { Command } from 'commander';

import type { TemplateManifest } from '../../core/schema-types.js';
import { AnswersFileError, givenAnswers } from '../../project/index.js';
import { AnswersError, generateProject, loadTemplate, NextStepsError, renderNextSteps, TemplateLoadError, type GeneratedValues } from '../../template/index.js';
import { promptForAnswers, PromptCancelledError } from '../../template/prompts.js';
import { readTemplateTree } from '../../template/tree.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { templateFolderCommand } from './template-folder.js';

interface GenerateFlags {
  out?: string;
  set: string[];
  answers?: string;
  defaults?: boolean;
  force?: boolean;
  json?: boolean;
}

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

/**
 * The template's `nextSteps` message rendered for the project just written, or undefined when it
 * has none. One that cannot be rendered is reported on stderr as a warning: the project is
 * written already, so it never fails the command.
 */
export async function templateNextSteps(manifest: Pick<TemplateManifest, 'nextSteps'>, project: GeneratedValues, io: CliIo): Promise<string | undefined> {
  try {
    return await renderNextSteps(manifest, project);
  } catch (error) {
    if (!(error instanceof NextStepsError)) throw error;
    io.stderr(`warning: template.json: ${error.message}\n`);
    return undefined;
  }
}

/** A folder as a person would type it in a shell: relative to here when inside it, quoted when it needs quotes. */
function shellPath(dir: string): string {
  const relative = path.relative(process.cwd(), dir);
  const shown = relative === '' ? '.' : relative.startsWith('..') || path.isAbsolute(relative) ? dir : relative;
  return /^[\w@%+=:,./-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", `'\\''`)}'`;
}

/**
 * What to print after a project is written when its template says nothing itself: where the
 * project is, and how it is updated to a newer version of its template later.
 */
export function defaultNextSteps(outDir: string, template: { name: string; version: string }, fromRegistry: boolean): string {
  const dir = shellPath(outDir);
  return [
    'Next steps:',
    ...(dir === '.' ? [] : [`  cd ${dir}`]),
    `  commit .template-lock.json with the project: it records ${template.name}@${template.version} and your answers`,
    fromRegistry
      ? `  later, update the project to a newer version of ${template.name} with: template-registry migrate${dir === '.' ? '' : ` --project ${dir}`} (add --dry-run to see the changes first)`
      : `  later, once ${template.name} is published to a registry: template-registry migrate${dir === '.' ? '' : ` --project ${dir}`} updates the project to a newer version`,
  ].join('\n');
}

export function registerGenerate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  templateFolderCommand(program, 'generate')
    .requiredOption('-o, --out <dir>', 'folder to generate the project into')
    .option('--set <key=value>', 'answer a variable (repeatable; arrays as a,b; nested keys as author.name)', collect, [])
    .option('--answers <file>', 'JSON file of answers')
    .option('--defaults', 'do not ask: use the defaults for everything not given')
    .option('--force', 'write into a folder that is not empty')
    .option('--json', 'print the result as JSON')
    .action(async (dir: string, flags: GenerateFlags) => {
      try {
        const template = await loadTemplate(await readTemplateTree(dir));
        let answers = await givenAnswers(template, { ...answerFlags(flags), env: process.env });
        if (!flags.defaults && process.stdin.isTTY) answers = await promptForAnswers(template, answers);
        const result = await generateProject(template, flags.out ?? '', answers, { force: flags.force ?? false });
        const nextSteps = await templateNextSteps(template.manifest, result, io);
        if (flags.json) {
          io.stdout(`${JSON.stringify({ ...result, nextSteps: nextSteps ?? null }, null, 2)}\n`);
        } else {
          io.stdout(
            `generated ${result.template.name}@${result.template.version} into ${result.outDir} (${result.files.length} files)\n\n` +
              `${nextSteps ?? defaultNextSteps(result.outDir, result.template, false)}\n`,
          );
        }
        setExit(EXIT.ok);
      } catch (error) {
        setExit(reportTemplateError(error, io));
      }
    });
}
