import type { Command } from 'commander';

import { formatLintFinding, lintTemplate, type LintFinding, type LintResult } from '../../template/lint.js';
import { readTemplateTree } from '../../template/tree.js';
import { EXIT, type CliIo } from '../io.js';
import { templateFolderCommand } from './template-folder.js';
import { paintSeverity, stdoutStyle, type Style } from '../style.js';

function formatLintSummary(result: LintResult): string {
  return `${result.errorCount} error(s), ${result.warningCount} warning(s)`;
}

/** A finding's line as `formatLintFinding` writes it, its location in bold and its severity in colour. */
function paintedFinding(finding: LintFinding, paint: Style): string {
  const line = formatLintFinding(finding);
  const location = `${finding.file}:${finding.line}:${finding.column}`;
  const head = `${location} ${finding.severity} `;
  if (!paint.enabled || !line.startsWith(head)) return line;
  return `${paint.bold(location)} ${paintSeverity(paint, finding.severity)} ${line.slice(head.length)}`;
}

export function registerLint(program: Command, io: CliIo, setExit: (code: number) => void): void {
  templateFolderCommand(program, 'lint')
    .option('--json', 'print the result object as JSON')
    .action(async (dir: string, options: { json?: boolean }) => {
      const result = await lintTemplate(await readTemplateTree(dir));
      if (options.json) {
        io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      } else {
        const paint = stdoutStyle(io);
        for (const finding of result.findings) io.stdout(`${paintedFinding(finding, paint)}\n`);
        const summary = formatLintSummary(result);
        io.stdout(`${result.errorCount > 0 ? paint.red(summary) : result.warningCount > 0 ? paint.yellow(summary) : paint.green(summary)}\n`);
      }
      setExit(result.errorCount > 0 ? EXIT.failure : EXIT.ok);
    });
}
