import path from 'node:path';

import type { Command } from 'commander';

import { formatValidationErrorAt } from '../../core/validation.js';
import { readTemplateTree } from '../../template/tree.js';
import { validateTemplate } from '../../template/validate.js';
import { EXIT, type CliIo } from '../io.js';
import { templateFolderCommand } from './template-folder.js';
import { stderrStyle, stdoutStyle } from '../style.js';

/** The folder as the user will recognise it: as given, or the full path for `.`. */
function folderName(dir: string): string {
  return dir === '.' || dir === './' ? path.resolve(dir) : dir;
}

export function registerValidate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  templateFolderCommand(program, 'validate')
    .option('--json', 'print the result object as JSON')
    .action(async (dir: string, options: { json?: boolean }) => {
      const result = await validateTemplate(await readTemplateTree(dir));
      if (options.json) {
        io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      } else if (result.valid) {
        io.stdout(`${folderName(dir)}: ${stdoutStyle(io).green('template is valid')}\n`);
      } else {
        const paint = stderrStyle(io);
        // `file:line:col /pointer: message`, as lint prints its findings (the location in bold).
        for (const error of result.errors) {
          const line = formatValidationErrorAt(error);
          const location = error.line !== undefined ? `${error.file}:${error.line}:${error.column ?? 1}` : error.file;
          io.stderr(`${line.startsWith(location) ? `${paint.bold(location)}${line.slice(location.length)}` : line}\n`);
        }
        io.stderr(`${paint.red(`${result.errors.length} error(s)`)} in ${folderName(dir)}\n`);
      }
      setExit(result.valid ? EXIT.ok : EXIT.failure);
    });
}
