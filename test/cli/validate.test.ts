import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/index.js';
import { validManifest, validPrompts, writeTemplate } from '../helpers/fixtures.js';

/** `line:col` where `needle` starts in `text`. */
function where(text: string, needle: string): string {
  const before = text.slice(0, text.indexOf(needle)).split('\n');
  return `${before.length}:${(before.at(-1)?.length ?? 0) + 1}`;
}

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('template-registry validate', () => {
  it('exits 0 for a valid template', async () => {
    const result = await run(['validate', await writeTemplate()]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/valid/);
  });

  it('exits 1 and prints one line per error for an invalid template', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, version: '1.0', description: 'short' },
      'CHANGELOG.md': null,
    });
    const result = await run(['validate', dir]);
    expect(result.code).toBe(1);
    const manifest = await readFile(path.join(dir, 'template.json'), 'utf8');
    expect(result.stderr).toContain(`template.json:${where(manifest, '"1.0"')} /version: must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.0")`);
    expect(result.stderr).toContain(`template.json:${where(manifest, '"short"')} /description: must be at least 10 characters long`);
    expect(result.stderr).toContain('CHANGELOG.md: required file is missing');
    expect(result.stderr.endsWith(`4 error(s) in ${dir}\n`)).toBe(true);
  });

  it('exits 1 for a validation pattern that can backtrack catastrophically, naming file, line, variable and pattern', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { projectName: { type: 'string', default: 'my-app', validation: '^(a|a)*$' } } },
      'template.prompts.json': { prompts: [] },
    });
    const result = await run(['validate', dir]);
    expect(result.code).toBe(1);
    const variables = await readFile(path.join(dir, 'template.vars.json'), 'utf8');
    expect(result.stderr).toContain(
      `template.vars.json:${where(variables, '"^(a|a)*$"')} /variables/projectName/validation: validation of variable "projectName" "^(a|a)*$" is refused: it is prone to catastrophic backtracking: (a|a)* can match the same text in more than one way`,
    );
  });

  it('names the folder it checked, also when it is the current folder', async () => {
    const dir = await writeTemplate({ 'CHANGELOG.md': null });
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const result = await run(['validate']);
      const manifest = await readFile('template.json', 'utf8');
      expect(result.stderr).toBe(
        `CHANGELOG.md: required file is missing\ntemplate.json:${where(manifest, '"CHANGELOG.md"')} /changelog: names a file that does not exist (got "CHANGELOG.md")\n2 error(s) in ${path.resolve('.')}\n`,
      );
    } finally {
      process.chdir(cwd);
    }
  });

  it('prints each mistake of a content file, an expression and a migration step at file:line:col with its fix', async () => {
    const dir = await writeTemplate({
      'template/README.md': '# {{ projcetName }}\n',
      'template.prompts.json': {
        prompts: [...validPrompts.prompts, { name: 'description', message: 'Description?', type: 'input', when: 'features contains' }],
      },
      'migrations/1.0.0-to-1.1.0.json': {
        id: 'escape',
        description: 'Writes outside',
        fromVersion: '1.0.0',
        toVersion: '1.1.0',
        breaking: false,
        automatic: true,
        changes: [{ type: 'create', path: '../outside.txt', content: 'x' }],
      },
    });
    const result = await run(['validate', dir]);
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toContainEqual(
      expect.stringMatching(/^template\/README\.md:1:6: names unknown variable "projcetName" \(did you mean "projectName"\?\); it would render empty\./),
    );
    const prompts = await readFile(path.join(dir, 'template.prompts.json'), 'utf8');
    expect(lines).toContain(
      `template.prompts.json:${where(prompts, '"features contains"')} /prompts/2/when: when of prompt "description" does not parse: ends with "contains": put a value after it, or remove it; write it as values joined by operators, e.g. features contains "docker"`,
    );
    expect(lines).toContainEqual(expect.stringMatching(/^migrations\/1\.0\.0-to-1\.1\.0\.json:\d+:\d+ \/changes\/0\/path: "\.\.\/outside\.txt" climbs out of the project/));
    expect(lines.at(-1)).toBe(`3 error(s) in ${dir}`);
  });

  it('prints the result object with --json', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, category: 'cli' } });
    const result = await run(['validate', dir, '--json']);
    expect(result.code).toBe(1);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.valid).toBe(false);
    expect(parsed.errors).toContainEqual(expect.objectContaining({ file: 'template.json', pointer: '/category', code: 'ENUM' }));
  });

  it('exits 2 on a usage error', async () => {
    expect((await run(['validate', '--no-such-flag'])).code).toBe(2);
    expect((await run(['no-such-command'])).code).toBe(2);
  });

  it('runs as the installed bin', async () => {
    const bin = path.resolve('bin/template-registry.js');
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'validate', 'examples/templates/node-service']);
    expect(stdout).toMatch(/valid/);
  });
});
