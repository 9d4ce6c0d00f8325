import type { Command } from 'commander';

import { formatValidationError, validateTemplate } from '../../template/index.js';
import { EXIT, type CliIo } from '../io.js';

export function registerValidate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('validate')
    .description('check a template folder: required files, manifest, variables and prompts files')
    .argument('[dir]', 'template folder', '.')
    .option('--json', 'print the result object as JSON')
    .action(async (dir: string, options: { json?: boolean }) => {
      const result = await validateTemplate(dir);
      if (options.json) {
        io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      } else if (result.valid) {
        io.stdout(`${dir}: template is valid\n`);
      } else {
        for (const error of result.errors) io.stderr(`${formatValidationError(error)}\n`);
        io.stderr(`${result.errors.length} error(s) in ${dir}\n`);
      }
      setExit(result.valid ? EXIT.ok : EXIT.failure);
    });
}
