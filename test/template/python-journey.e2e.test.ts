/**
 * The "any template, any language" journey: the python-cli example (its own `features`,
 * no `database`, no `author`) goes through publish (validate, test generation, lint, pack,
 * upload) and create against a served registry.
 */
import { cp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const pythonExample = path.resolve('examples/templates/python-cli');

let server: TestServer;
let savedEnv: Record<string, string | undefined>;

beforeEach(async () => {
  savedEnv = { TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
  process.env.DO_NOT_TRACK = '1';
  server = await startRegistryServer();
});

afterEach(() => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('a Python template with its own features enum', () => {
  it('is published with no lint finding and creates a project with its own answers', async () => {
    const dir = path.join(await tempDir(), 'python-cli');
    await cp(pythonExample, dir, { recursive: true });
    const published = await cli('publish', dir, '--registry', server.url, '--token', server.token);
    expect(published.code, published.stderr).toBe(0);
    expect(published.stderr).toMatch(/^Validate: valid$/m);
    expect(published.stderr).toMatch(/^Lint: 0 error\(s\), 0 warning\(s\)$/m);
    expect(published.stdout).toMatch(/^published python-cli@1\.0\.0 /);

    const project = path.join(await tempDir(), 'cool-tool');
    const created = await cli('create', 'python-cli', project, '--registry', `${server.url}/registry.json`, '--defaults', '--set', 'projectName=cool-tool', '--set', 'features=tests,docker');
    expect(created.code, created.stderr).toBe(0);
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lock.template).toMatchObject({ name: 'python-cli', version: '1.0.0' });
    expect(lock.answers).toEqual({ projectName: 'cool-tool', description: 'A command-line tool written in Python.', features: ['tests', 'docker'], pythonVersion: '3.12' });
    expect(lock.computed).toEqual({ moduleName: 'cool_tool', packageName: 'cool-tool', className: 'CoolTool' });
    expect(Object.keys(lock.files).sort()).toEqual([
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
  }, 60_000);
});
