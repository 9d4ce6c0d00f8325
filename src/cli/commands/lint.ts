import type { Command } from 'commander';

import { formatLintFinding, lintTemplate, type LintResult } from '../../template/lint.js';
import { EXIT, type CliIo } from '../io.js';

export function formatLintSummary(result: LintResult): string {
  return `${result.errorCount} error(s), ${result.warningCount} warning(s)`;
}

export function registerLint(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('lint')
    .description('check a template for mistakes its schemas cannot see: prompts, enums, defaults, regexes, expressions, change log, unused variables')
    .argument('[dir]', 'template folder', '.')
    .option('--json', 'print the result object as JSON')
    .action(async (dir: string, options: { json?: boolean }) => {
      const result = await lintTemplate(dir);
      if (options.json) {
        io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      } else {
        for (const finding of result.findings) io.stdout(`${formatLintFinding(finding)}\n`);
        io.stdout(`${formatLintSummary(result)}\n`);
      }
      setExit(result.errorCount > 0 ? EXIT.failure : EXIT.ok);
    });
}
