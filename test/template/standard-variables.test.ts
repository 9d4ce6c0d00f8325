import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

import { generateProject, lintTemplate, loadTemplate, readLock, testTemplate, validateTemplate } from '../../src/template/index.js';
import { tempDir, validManifest, validPrompts, writeTemplate } from '../helpers/fixtures.js';

const nodeExample = path.resolve('examples/templates/node-service');
const pythonExample = path.resolve('examples/templates/python-cli');

function positionOf(text: string, needle: string): { line: number; column: number } {
  const index = text.indexOf(needle);
  if (index < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

async function python(): Promise<boolean> {
  return promisify(execFile)('python3', ['--version']).then(
    () => true,
    () => false,
  );
}

describe('any template, any language: the python-cli example', () => {
  it('is valid, lints clean and covers every feature and Python version', async () => {
    expect(await validateTemplate(pythonExample)).toEqual({ valid: true, errors: [] });
    expect(await lintTemplate(pythonExample)).toEqual({ findings: [], errorCount: 0, warningCount: 0 });
    const report = await testTemplate(pythonExample);
    expect(report.uncovered).toEqual([]);
    expect(report.passed).toBe(true);
    expect(new Set(report.sets.flatMap((set) => set.answers.features as string[]))).toEqual(new Set(['tests', 'docker', 'lint']));
    expect(new Set(report.sets.map((set) => set.answers.pythonVersion))).toEqual(new Set(['3.11', '3.12', '3.13']));
  });

  it('generates a project with its own answers and the standard computed values it did not declare', async () => {
    const out = path.join(await tempDir(), 'cool-tool');
    const result = await generateProject(pythonExample, out, { projectName: 'cool-tool', features: ['tests', 'docker'], pythonVersion: '3.11' });
    expect(result.computed).toEqual({ moduleName: 'cool_tool', packageName: 'cool-tool', className: 'CoolTool' });
    expect(result.files.map((f) => f.path).sort()).toEqual([
      '.dockerignore',
      '.gitignore',
      'Dockerfile',
      'README.md',
      'pyproject.toml',
      'src/cool_tool/__init__.py',
      'src/cool_tool/__main__.py',
      'src/cool_tool/cli.py',
      'tests/test_cli.py',
    ]);
    const pyproject = await readFile(path.join(out, 'pyproject.toml'), 'utf8');
    expect(pyproject).toContain('name = "cool-tool"\n');
    expect(pyproject).toContain('requires-python = ">=3.11"\n');
    expect(pyproject).toContain('cool-tool = "cool_tool.cli:main"\n');
    expect(pyproject).not.toContain('ruff');
    expect(await readFile(path.join(out, 'src/cool_tool/cli.py'), 'utf8')).toContain('class CoolToolError(Exception):');
    expect(await readFile(path.join(out, 'Dockerfile'), 'utf8')).toMatch(/^FROM python:3\.11-slim$/m);
    expect((await readLock(out)).answers).toEqual({
      projectName: 'cool-tool',
      description: 'A command-line tool written in Python.',
      features: ['tests', 'docker'],
      pythonVersion: '3.11',
    });

    // The generated project is a working Python project, when Python is there to run it.
    if (await python()) {
      const run = promisify(execFile);
      const env = { ...process.env, PYTHONPATH: path.join(out, 'src') };
      const tests = await run('python3', ['-m', 'unittest', 'discover', '-s', 'tests'], { cwd: out, env });
      expect(tests.stderr).toMatch(/Ran 3 tests[\s\S]*OK/);
      expect((await run('python3', ['-m', 'cool_tool', 'Ada'], { cwd: out, env })).stdout).toBe('Hello, Ada!\n');
    }
  });
});

describe('packageName and className', () => {
  it('are computed whenever projectName exists, from the spec rules', async () => {
    const dir = await writeTemplate({ 'template.vars.json': { variables: { projectName: { type: 'string', default: 'My_Cool-app 2' } } }, 'template.prompts.json': { prompts: [] } });
    const template = await loadTemplate(dir);
    expect(template.computed).toEqual({ packageName: 'projectName | package_name', className: 'projectName | class_name' });
    const result = await generateProject(template, path.join(await tempDir(), 'out'), {});
    expect(result.computed).toEqual({ packageName: 'my-cool-app-2', className: 'My_CoolApp 2' });
  });

  it('leave a template its own computed value or variable of the same name', async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: { projectName: { type: 'string', default: 'my-app' }, className: { type: 'string', default: 'Main' } },
        computed: { packageName: 'projectName | snake_case' },
      },
      'template.prompts.json': { prompts: [] },
    });
    const result = await generateProject(dir, path.join(await tempDir(), 'out'), {});
    expect(result.computed).toEqual({ packageName: 'my_app' });
    expect(result.answers.className).toBe('Main');
  });

  it('are not computed without projectName', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { name: { type: 'string', default: 'x' } } },
      'template.prompts.json': { prompts: [] },
      'template/README.md': '{{ name }}\n',
    });
    expect((await loadTemplate(dir)).computed).toEqual({});
    expect((await validateTemplate(await writeTemplate({ 'template.vars.json': { variables: { name: { type: 'string', default: 'x' } } }, 'template.prompts.json': { prompts: [] }, 'template/README.md': '{{ packageName }}' }))).errors).toEqual([
      expect.objectContaining({ code: 'UNKNOWN_CONTENT_VARIABLE', message: expect.stringContaining('"packageName"') }),
    ]);
  });
});

describe('lint: a standard name with another shape', () => {
  it('warns, never errors, naming the standard shape, at the type that differs', async () => {
    const variables = {
      variables: {
        projectName: { type: 'string', default: 'my-app' },
        features: { type: 'string', default: 'all' },
        database: { type: 'integer', default: 1 },
        author: { type: 'object', properties: { name: { type: 'string', default: 'A' }, email: { type: 'array', default: [] } } },
        description: { type: 'string', default: 'x' },
      },
    };
    const dir = await writeTemplate({
      'template.json': { ...validManifest, features: undefined },
      'template.vars.json': variables,
      'template.prompts.json': { prompts: [validPrompts.prompts[0]] },
      'template/README.md': '{{ projectName }} {{ features }} {{ database }} {{ author.name }} {{ author.email }} {{ description }}\n',
    });
    const result = await lintTemplate(dir);
    const text = await readFile(path.join(dir, 'template.vars.json'), 'utf8');
    expect(result.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(result.findings.map((f) => [f.severity, f.rule, f.pointer, f.line, f.column])).toEqual([
      ['warning', 'standard-variable-shape', '/variables/features/type', ...Object.values(positionOf(text, '"string",\n      "default": "all"'))],
      ['warning', 'standard-variable-shape', '/variables/database/type', ...Object.values(positionOf(text, '"integer"'))],
      ['warning', 'standard-variable-shape', '/variables/author/properties/email/type', ...Object.values(positionOf(text, '"array"'))],
    ]);
    expect(result.findings[0]?.message).toBe(
      'variable "features" has type string; the standard variable "features" is an array of strings (the features chosen). Rename it if it means something else, so tools and readers that know the standard name are not misled',
    );
  });

  it('finds nothing at all in the node-service example, which keeps the standard variables exactly', async () => {
    expect(await lintTemplate(nodeExample)).toEqual({ findings: [], errorCount: 0, warningCount: 0 });
  });
});
