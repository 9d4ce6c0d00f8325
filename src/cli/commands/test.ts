import type { Command } from 'commander';

import { PackError, selectPackFiles } from '../../pack/index.js';
import { text } from '../../template/filters.js';
import { loadTemplate, testTemplate, type AnswerSetReport, type TestTemplateReport } from '../../template/index.js';
import { readTemplateTree } from '../../template/tree.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { templateFolderCommand } from './template-folder.js';
import { style, stdoutStyle, type Style } from '../style.js';
import { reportTemplateError } from './generate.js';

function describeAnswers(report: AnswerSetReport): string {
  return Object.entries(report.answers)
    .map(([name, value]) => `${name}=${Array.isArray(value) ? `[${value.map(text).join(',')}]` : text(value)}`)
    .join(' ');
}

function formatTestReport(report: TestTemplateReport, paint: Style = style(false)): string {
  const lines = [`test-generating ${report.template.name}@${report.template.version}: ${report.sets.length} answer set(s)`];
  for (const set of report.sets) {
    lines.push(`${set.passed ? paint.green('PASS') : paint.red('FAIL')} ${set.name}: ${set.files} files; ${describeAnswers(set)}`);
    if (set.command) {
      lines.push(`     command ${JSON.stringify(set.command.command)} exited ${set.command.timedOut ? 'by timeout' : String(set.command.exitCode)}`);
    }
    for (const problem of set.problems) lines.push(`     ${problem}`);
    if (!set.passed && set.command?.output) lines.push(...set.command.output.trimEnd().split('\n').map((l) => `     | ${l}`));
    if (set.projectDir !== undefined) lines.push(`     kept in ${set.projectDir}`);
  }
  if (report.uncovered.length > 0) {
    lines.push(`${paint.yellow('not covered')} by any valid answer set (${report.uncovered.length}):`);
    for (const target of report.uncovered) lines.push(`     ${target}`);
    lines.push(
      '     a condition that no valid answers make true (or false) is always false (or true): check its expression against the variables\' enums, types and defaults',
    );
  }
  if (report.leftOut && report.leftOut.length > 0) {
    lines.push(`left out of the archive, so not generated (${report.leftOut.length}):`);
    for (const file of report.leftOut) lines.push(`     ${file.path} (${file.reason})`);
  }
  lines.push(report.passed ? paint.green('all answer sets passed') : paint.red('test generation failed'));
  return `${lines.join('\n')}\n`;
}

export function registerTest(program: Command, io: CliIo, setExit: (code: number) => void): void {
  templateFolderCommand(program, 'test')
    .option('--run <command>', 'shell command to run inside each generated project')
    .option('--timeout <seconds>', 'time limit of the command per answer set')
    .option('--keep', 'keep the generated projects (each set\'s folder is printed, and is projectDir in --json)')
    .option('--exclude <glob>', 'leave matching files out, as pack and publish --exclude do (repeatable)', collect, [])
    .option('--json', 'print the report as JSON')
    .action(async (dir: string, flags: { run?: string; timeout?: string; keep?: boolean; json?: boolean; exclude: string[] }) => {
      let timeoutMs: number | undefined;
      if (flags.timeout !== undefined) {
        const seconds = Number(flags.timeout);
        if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds (got ${flags.timeout})`);
        timeoutMs = seconds * 1000;
      }
      try {
        // Generated from exactly the files pack would put in the archive: what is tested is what is published.
        // Read once: the files pack selects are the files test generates from.
        const tree = await readTemplateTree(dir);
        let packedFiles;
        try {
          packedFiles = await selectPackFiles(tree, { exclude: flags.exclude });
        } catch (error) {
          // A template's own problems (a bad manifest) are reported as loading reports them, with their places.
          if (error instanceof PackError) await loadTemplate(tree);
          throw error;
        }
        const report = await testTemplate(tree, {
          packedFiles,
          ...(flags.run ? { command: flags.run } : {}),
          ...(timeoutMs ? { timeoutMs } : {}),
          keep: flags.keep ?? false,
        });
        io.stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatTestReport(report, stdoutStyle(io)));
        setExit(report.passed ? EXIT.ok : EXIT.failure);
      } catch (error) {
        setExit(reportTemplateError(error, io));
      }
    });
}
