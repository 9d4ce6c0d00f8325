/**
 * `template-registry init`: flags, questions on a terminal (the real @inquirer/prompts, drawn on
 * @inquirer/testing's virtual screen), what it does without a terminal, and exit codes. The
 * scaffolded template is then checked with the CLI's own validate, lint and test.
 */
import { screen } from '@inquirer/testing/vitest';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { cli, type CliRun } from '../helpers/cli.js';
import { tempDir, isolateConsumerEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const DESCRIPTION = 'A starting point for small services.';

let stdinWasTty: boolean | undefined;

/** Makes the CLI see a terminal on stdin, as when a person runs it. */
function onTerminal(): void {
  Object.defineProperty(process.stdin, 'isTTY', { value: true, configurable: true });
}

beforeEach(() => {
  stdinWasTty = process.stdin.isTTY;
});

afterEach(() => {
  Object.defineProperty(process.stdin, 'isTTY', { value: stdinWasTty, configurable: true });
});

async function manifestOf(dir: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(dir, 'template.json'), 'utf8')) as Record<string, unknown>;
}

/** Waits for the screen to show `text` (the CLI runs on while the test types). */
async function waitForScreen(text: string): Promise<string> {
  for (let attempt = 0; attempt < 50 && !screen.getScreen().includes(text); attempt++) await screen.next();
  const shown = screen.getScreen();
  expect(shown).toContain(text);
  return shown;
}

describe('template-registry init without a terminal', () => {
  it('scaffolds a template named after its folder that the CLI validates, lints and tests clean', async () => {
    const dir = path.join(await tempDir(), 'shop-service');
    const result = await cli('init', dir, '--category', 'backend', '--description', DESCRIPTION);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^created template shop-service@0\.1\.0 in .*shop-service \(\d+ files\)$/m);
    expect(result.stdout).toContain(`cd ${dir}`);
    expect(result.stdout).toMatch(/tag v0\.1\.0/);
    expect(await manifestOf(dir)).toMatchObject({ name: 'shop-service', category: 'backend', description: DESCRIPTION, version: '0.1.0' });

    const validate = await cli('validate', dir);
    expect(validate.code, validate.stderr).toBe(0);
    const lint = await cli('lint', dir);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout + lint.stderr).toMatch(/0 error\(s\), 0 warning\(s\)/);
    const test = await cli('test', dir);
    expect(test.code, test.stdout + test.stderr).toBe(0);
  });

  it('takes --name over the folder name, and prints one JSON document with --json', async () => {
    const dir = path.join(await tempDir(), 'Not A Name');
    const result = await cli('init', dir, '--name', 'web-starter', '--category', 'frontend', '--description', DESCRIPTION, '--json');
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as { name: string; version: string; dir: string; files: string[] };
    expect(printed).toMatchObject({ name: 'web-starter', category: 'frontend', version: '0.1.0', dir });
    expect(printed.files).toContain('.github/workflows/publish.yml');
    expect(await manifestOf(dir)).toMatchObject({ name: 'web-starter', category: 'frontend' });
  });

  it('exits 2 listing every missing value with what it may be, and writes nothing', async () => {
    const parent = await tempDir();
    const dir = path.join(parent, 'Bad Folder');
    const result = await cli('init', dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--name \(the template name .*the folder name "Bad Folder" is not one\)/);
    expect(result.stderr).toContain('--category (one of frontend, backend, fullstack, mobile, desktop)');
    expect(result.stderr).toContain('--description (at least 10 characters)');
    expect(await readdir(parent)).toEqual([]);
  });

  it('exits 2 naming the flag and the rule for a bad value, on a terminal too', async () => {
    const dir = path.join(await tempDir(), 'x');
    const category = await cli('init', dir, '--category', 'cli', '--description', DESCRIPTION);
    expect(category.code).toBe(2);
    expect(category.stderr).toMatch(/--category must be one of "frontend", "backend", "fullstack", "mobile", "desktop" \(got "cli"\)/);
    const name = await cli('init', dir, '--name', '9lives', '--category', 'backend', '--description', DESCRIPTION);
    expect(name.code).toBe(2);
    expect(name.stderr).toMatch(/--name must start with a lower-case letter/);
    onTerminal();
    const short = await cli('init', dir, '--name', 'ok', '--category', 'backend', '--description', 'short');
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/--description must be at least 10 characters long \(got "short"\)/);
    await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a folder with files (exit 1) unless --force', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'notes.md'), 'keep me');
    const args = ['init', dir, '--name', 'kept', '--category', 'desktop', '--description', DESCRIPTION];
    const refused = await cli(...args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is not empty.*--force/);
    expect(await readdir(dir)).toEqual(['notes.md']);
    const forced = await cli(...args, '--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(await readFile(path.join(dir, 'notes.md'), 'utf8')).toBe('keep me');
    expect((await cli('validate', dir)).code).toBe(0);
  });

  it('scaffolds into the current folder by default', async () => {
    const dir = path.join(await tempDir(), 'here-template');
    await mkdir(dir);
    const cwd = process.cwd();
    process.chdir(dir);
    let result: CliRun;
    try {
      result = await cli('init', '--category', 'mobile', '--description', DESCRIPTION);
    } finally {
      process.chdir(cwd);
    }
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('  cd ');
    expect(await manifestOf(dir)).toMatchObject({ name: 'here-template', category: 'mobile' });
  });
});

describe('template-registry init on a terminal', () => {
  it('asks for the name (offering the folder name), the category and the description, re-asking a bad answer', async () => {
    onTerminal();
    const dir = path.join(await tempDir(), 'asked-template');
    const run = cli('init', dir);

    expect(await waitForScreen('Template name')).toContain('(asked-template)');
    screen.keypress('enter');

    await waitForScreen('Category');
    expect(screen.getScreen()).toMatch(/frontend[\s\S]*backend[\s\S]*desktop/);
    screen.keypress('down');
    screen.keypress('enter');

    await waitForScreen('Description');
    screen.type('too short');
    screen.keypress('enter');
    await waitForScreen('must be at least 10 characters long');
    for (let i = 0; i < 'too short'.length; i++) screen.keypress('backspace');
    screen.type(DESCRIPTION);
    screen.keypress('enter');

    const result = await run;
    expect(result.code, result.stderr).toBe(0);
    expect(await manifestOf(dir)).toMatchObject({ name: 'asked-template', category: 'backend', description: DESCRIPTION });
  });

  it('asks only for what the flags leave out, and nothing with --yes', async () => {
    onTerminal();
    const dir = path.join(await tempDir(), 'partly');
    const run = cli('init', dir, '--name', 'given-name', '--description', DESCRIPTION);
    const shown = await waitForScreen('Category');
    expect(shown).not.toContain('Template name');
    screen.keypress('enter');
    const result = await run;
    expect(result.code, result.stderr).toBe(0);
    expect(await manifestOf(dir)).toMatchObject({ name: 'given-name', category: 'frontend', description: DESCRIPTION });

    const other = path.join(await tempDir(), 'quiet');
    const quiet = await cli('init', other, '--yes', '--category', 'backend');
    expect(quiet.code).toBe(2);
    expect(quiet.stderr).toContain('missing --description');
  });

  it('exits 130 on Ctrl-C and writes nothing', async () => {
    onTerminal();
    const parent = await tempDir();
    const run = cli('init', path.join(parent, 'stopped'));
    await waitForScreen('Template name');
    screen.keypress({ name: 'c', ctrl: true });
    const result = await run;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('cancelled: nothing was written');
    expect(await readdir(parent)).toEqual([]);
  });
});

describe('a template started with init', () => {
  isolateConsumerEnvironment();

  it('becomes a Python template with its own features, then is checked, published and created with its message', async () => {
    const dir = path.join(await tempDir(), 'py-tool');
    expect((await cli('init', dir, '--category', 'backend', '--description', 'A small Python command-line tool.')).code).toBe(0);

    // What an author does next, following the docs: their own features, files and message.
    const features = ['tests', 'docker', 'lint'];
    const json = async (file: string, edit: (value: Record<string, unknown>) => void): Promise<void> => {
      const value = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as Record<string, unknown>;
      edit(value);
      await writeFile(path.join(dir, file), `${JSON.stringify(value, null, 2)}\n`);
    };
    await json('template.json', (manifest) => {
      manifest.features = features;
      manifest.dependencies = { python: '>=3.11' };
      manifest.files = [
        { path: 'tests/**', when: 'features contains "tests"' },
        { path: 'Dockerfile', when: 'features contains "docker"' },
        { path: 'ruff.toml', when: 'features contains "lint"' },
      ];
      manifest.nextSteps = 'cd into the project, then: pip install -e .{% if features contains "tests" %} && python -m unittest{% endif %}\nThe command is {{ moduleName }}.';
    });
    await json('template.vars.json', (variables) => {
      const declared = variables.variables as Record<string, Record<string, unknown>>;
      declared.features = { ...declared.features, enum: features, default: ['tests'] };
      variables.computed = { moduleName: 'projectName | snake_case' };
    });
    await json('template.prompts.json', (prompts) => {
      const list = prompts.prompts as Record<string, unknown>[];
      const choices = features.map((value) => ({ name: value, value }));
      prompts.prompts = list.map((prompt) => (prompt.name === 'features' ? { ...prompt, choices } : prompt));
    });
    await rm(path.join(dir, 'template/docs'), { recursive: true });
    await rm(path.join(dir, 'template/CHANGELOG.md'));
    const content = {
      'pyproject.toml': '[project]\nname = "{{ packageName }}"\ndescription = "{{ description }}"\n',
      'src/{{ moduleName }}/__init__.py': '"""{{ description }}"""\n',
      'tests/test_{{ moduleName }}.py': 'import unittest\n',
      Dockerfile: 'FROM python:3.12-slim\n',
      'ruff.toml': 'line-length = 100\n',
    };
    for (const [file, text] of Object.entries(content)) {
      await mkdir(path.dirname(path.join(dir, 'template', file)), { recursive: true });
      await writeFile(path.join(dir, 'template', file), text);
    }

    expect((await cli('validate', dir)).code).toBe(0);
    const lint = await cli('lint', dir);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout + lint.stderr).toMatch(/0 error\(s\), 0 warning\(s\)/);
    const tested = await cli('test', dir);
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);

    const server = await startRegistryServer();
    const published = await cli('publish', dir, '--registry', server.url, '--token', server.token);
    expect(published.code, published.stderr).toBe(0);
    expect(published.stdout).toMatch(/^published py-tool@0\.1\.0 /);

    const project = path.join(await tempDir(), 'cool-tool');
    const created = await cli('create', 'py-tool', project, '--registry', `${server.url}/registry.json`, '--defaults', '--set', 'projectName=cool-tool', '--set', 'features=tests,docker');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/\n\ncd into the project, then: pip install -e \. && python -m unittest\nThe command is cool_tool\.\n$/);
    expect((await readdir(project, { recursive: true })).sort()).toEqual(
      ['.gitignore', '.template-lock.json', 'Dockerfile', 'README.md', 'pyproject.toml', 'src', 'src/cool_tool', 'src/cool_tool/__init__.py', 'tests', 'tests/test_cool_tool.py'].sort(),
    );
    const info = await cli('info', 'py-tool', '--registry', `${server.url}/registry.json`);
    expect(info.stdout).toContain('requires:  methodology *, python >=3.11');
    expect(info.stdout).toMatch(/^ {2}features +Which optional parts do you want\? {2}\[multiselect: tests, docker, lint; default tests\]$/m);
  }, 120_000);
});
