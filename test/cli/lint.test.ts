import path from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';

import { registerLint } from '../../src/cli/commands/lint.js';
import type { LintResult } from '../../src/template/lint.js';
import { validManifest, validPrompts, writeTemplate } from '../helpers/fixtures.js';

/** Runs `template-registry <argv>` with only the lint command registered. */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  let code = 0;
  const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t) };
  const program = new Command('template-registry').exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  registerLint(program, io, (c) => (code = c));
  for (const command of program.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  await program.parseAsync(argv, { from: 'user' });
  return { code, stdout, stderr };
}

const cleanFiles = {
  'template.json': { ...validManifest, features: ['api', 'testing'] },
  'template/README.md': '# {{ projectName }}\n\n{{ description }} {{ packageName }} {{ features }}\n',
};

describe('template-registry lint', () => {
  it('exits 0 and prints a zero summary for a clean template', async () => {
    const result = await run(['lint', await writeTemplate(cleanFiles)]);
    expect(result).toEqual({ code: 0, stdout: '0 error(s), 0 warning(s)\n', stderr: '' });
  });

  it('exits 0 when there are only warnings, printing one line per finding', async () => {
    const result = await run(['lint', await writeTemplate({ ...cleanFiles, 'template/README.md': '{{ projectName }} {{ features }}\n' })]);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toEqual([
      expect.stringMatching(/^template\.vars\.json:\d+:\d+ warning variable-unused variable "description" is not used/),
      expect.stringMatching(/^template\.vars\.json:\d+:\d+ warning variable-unused computed value "packageName" is not used/),
      '0 error(s), 2 warning(s)',
      '',
    ]);
  });

  it('exits 1 and prints file:line:col severity rule message for an error', async () => {
    const prompts = {
      prompts: [...validPrompts.prompts, { name: 'description', message: 'Description?', type: 'input', when: 'feature contains "api"' }],
    };
    const dir = await writeTemplate({ ...cleanFiles, 'template.prompts.json': prompts });
    const result = await run(['lint', dir]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^template\.prompts\.json:\d+:\d+ error unknown-reference when of prompt "description" names unknown variable "feature" \(did you mean "features"\?\); declare it in template\.vars\.json or fix the spelling$/m,
    );
    expect(result.stdout.endsWith('1 error(s), 0 warning(s)\n')).toBe(true);
  });

  it('prints the lint result as JSON with --json', async () => {
    const dir = await writeTemplate({ ...cleanFiles, 'CHANGELOG.md': '# Changelog\n' });
    const result = await run(['lint', dir, '--json']);
    // A change log without the version's section is a warning: the spec does not ask for one.
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as LintResult;
    expect(parsed).toEqual({
      findings: [
        expect.objectContaining({ file: 'CHANGELOG.md', line: 1, column: 1, severity: 'warning', rule: 'changelog-missing-version' }),
      ],
      errorCount: 0,
      warningCount: 1,
    });
  });

  it('reports a broken template instead of crashing', async () => {
    const result = await run(['lint', await writeTemplate({ ...cleanFiles, 'template.json': '{ oops' })]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^template\.json:1:3 error schema invalid JSON/m);
  });

  // Expected to fail until the example template (README.md, CHANGELOG.md, docs/migration.md) is complete.
  it('exits 0 for the example template', async () => {
    const result = await run(['lint', path.resolve('examples/templates/node-service')]);
    expect(result.stdout).toMatch(/^0 error\(s\)/m);
    expect(result.code).toBe(0);
  });
});
