/**
 * Five public templates ported to this format (test/fixtures/real/, each with a README saying what
 * maps to what and every difference from the original tool's output), each through the whole chain:
 * the publish action (validate, test generation, lint, change log, pack, upload, release) against a
 * local registry server, `create` from that registry for each answer set (compared byte for byte,
 * executable bits included, with the reference outputs made by Debian's cookiecutter for the three
 * cookiecutter templates), then the next version published and `update` (or `migrate`) on a project.
 * One server per template; each version is packed once, by the action.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import {
  answerSets,
  answersFile,
  createFrom,
  groupLines,
  lockOf,
  portDir,
  publishWithAction,
  readTree,
  stageVersion,
  treeDifferences,
  type ActionRun,
} from './real-chain.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

// The golang template's tasks commit with git (test generation runs them too): an identity of their
// own and no user or system configuration, whatever the machine has.
beforeEach(() => {
  vi.stubEnv('GIT_CONFIG_GLOBAL', '/dev/null');
  vi.stubEnv('GIT_CONFIG_NOSYSTEM', '1');
  for (const role of ['AUTHOR', 'COMMITTER']) {
    vi.stubEnv(`GIT_${role}_NAME`, 'Real Templates');
    vi.stubEnv(`GIT_${role}_EMAIL`, 'real-templates@example.com');
  }
});
afterEach(() => {
  vi.unstubAllEnvs();
});

/** A whole chain of one port is long: two publishes with their test generation, several creates, an update. */
const CHAIN_TIMEOUT = 120_000;

const PUBLISH_GROUPS = ['Validate', 'Test generation', 'Lint', 'Release notes', 'Pack', 'Upload', 'Release'];

/** The action published `version`: every step ran and passed, the release holds the change log section. */
function expectPublished(published: ActionRun, id: string, version: string, lintFindings: string[] = []): void {
  expect(published.ok, published.log.join('\n')).toBe(true);
  expect(published.log.filter((line) => line.startsWith('group ')).map((line) => line.slice('group '.length))).toEqual(PUBLISH_GROUPS);
  expect(groupLines(published.log, 'Validate')).toEqual(['info Validate: valid']);
  expect(groupLines(published.log, 'Test generation').filter((line) => /^info PASS /.test(line)).length).toBeGreaterThan(0);
  expect(groupLines(published.log, 'Test generation').filter((line) => /FAIL|not covered/.test(line))).toEqual([]);
  expect(published.lintFindings).toEqual(lintFindings);
  expect(published.outputs).toMatchObject({ version, uploaded: 'true' });
  expect(path.basename(published.outputs.archive ?? '')).toBe(`${id}-${version}.tgz`);
  expect(published.release).toMatchObject({ tag_name: `v${version}`, name: `${id} ${version}`, draft: false, body: published.changelogSection });
  expect(published.changelogSection).toMatch(/^### /);
  expect(published.release?.assets.map((asset) => asset.name)).toEqual([`${id}-${version}.tgz`, 'template.json']);
}

/**
 * Creates a project for every answer set of `port` and compares it with `reference/<set>/`: the
 * READMEs list no difference, so there must be none.
 */
async function createAndCompare(registry: string, port: string, spec: string): Promise<Map<string, string>> {
  const projects = new Map<string, string>();
  for (const set of await answerSets(port)) {
    const { dir, run } = await createFrom(registry, spec, answersFile(port, set));
    expect(run.code, `${set}: ${run.stderr}`).toBe(0);
    const given = JSON.parse(await readFile(answersFile(port, set), 'utf8')) as Record<string, unknown>;
    expect((await lockOf(dir)).answers, set).toMatchObject(given);
    const differences = treeDifferences(await readTree(dir, ['.template-lock.json']), await readTree(path.join(portDir(port), 'reference', set)));
    expect(differences, `${port} ${set}`).toEqual([]);
    projects.set(set, dir);
  }
  return projects;
}

interface UpdateReport {
  status: string;
  fromVersion: string;
  toVersion: string;
  files: { path: string; status: string }[];
  conflicts: string[];
}

async function update(dir: string, registry: string, ...extra: string[]): Promise<UpdateReport> {
  const result = await cli('update', '--project', dir, '--registry', registry, '--refresh', '--json', ...extra);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as UpdateReport;
}

const statuses = (report: UpdateReport): Record<string, string> => Object.fromEntries(report.files.map((file) => [file.path, file.status]));
const read = (dir: string, file: string): Promise<string> => readFile(path.join(dir, file), 'utf8');

describe('real templates through validate, lint, test, pack, the publish action, create and update', () => {
  it('cookiecutter-golang: the same bytes as cookiecutter for three answer sets, then an update merged with a local edit', async () => {
    const port = 'cookiecutter-golang';
    const versions = ['1.0.0', '1.1.0'];
    const workspace = await tempDir('tr-real-');
    const server = await startRegistryServer();
    const registry = `${server.url}/registry.json`;

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.0.0', workspace), '1.0.0', 'lacion/cookiecutter-golang'), port, '1.0.0');
    const projects = await createAndCompare(registry, port, `${port}@1.0.0`);

    // use_git: the hook's git init and first commit are tasks, run only with consent (--run-tasks).
    const untasked = await createFrom(registry, `${port}@1.0.0`, answersFile(port, 'minimal-none'), '--set', 'use_git=yes');
    expect(untasked.run.code, untasked.run.stderr).toBe(0);
    expect(untasked.run.stderr).toMatch(/3 task\(s\) were not run \(run create with --run-tasks to run them\)/);
    expect(existsSync(path.join(untasked.dir, '.git'))).toBe(false);
    expect(await read(untasked.dir, '.gitignore')).toBe('bin\nvendor');
    const tasked = await createFrom(registry, `${port}@1.0.0`, answersFile(port, 'minimal-none'), '--set', 'use_git=yes', '--run-tasks');
    expect(tasked.run.code, tasked.run.stderr).toBe(0);
    expect(execFileSync('git', ['log', '--format=%s', '-1'], { cwd: tasked.dir, encoding: 'utf8' })).toBe('Initial Commit.\n');
    expect(execFileSync('git', ['ls-files'], { cwd: tasked.dir, encoding: 'utf8' }).split('\n')).toContain('main.go');
    expect((await lockOf(tasked.dir)).tasks?.map((task) => task.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.1.0', workspace), '1.1.0', 'lacion/cookiecutter-golang'), port, '1.1.0');
    const dir = projects.get('defaults')!;
    await writeFile(path.join(dir, 'README.md'), (await read(dir, 'README.md')).replace('A Golang project.', 'A Golang project that says hello.'));
    const report = await update(dir, registry);
    expect(report).toMatchObject({ status: 'updated', fromVersion: '1.0.0', toVersion: '1.1.0', conflicts: [] });
    expect(statuses(report)).toEqual({ '.dockerignore': 'created', '.travis.yml': 'updated', 'README.md': 'merged', 'go.mod': 'updated' });
    expect(await read(dir, 'README.md')).toMatch(/^# mygolangproject\n\nA Golang project that says hello\.\n[\s\S]*``make test``\n\n``go vet \.\/\.\.\.`` checks the code/);
    expect(await read(dir, 'go.mod')).toMatch(/^module github\.com\/lacion\/mygolangproject\n\ngo 1\.13\n/);
    expect((await lockOf(dir)).template.version).toBe('1.1.0');
  }, CHAIN_TIMEOUT);

  it("cookiecutter-pypackage: computed defaults, verbatim workflows and tojson give cookiecutter's bytes; the next version merges into an edited justfile", async () => {
    const port = 'cookiecutter-pypackage';
    const versions = ['1.0.0', '1.1.0'];
    const workspace = await tempDir('tr-real-');
    const server = await startRegistryServer();
    const registry = `${server.url}/registry.json`;

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.0.0', workspace), '1.0.0', 'audreyfeldroy/cookiecutter-pypackage'), port, '1.0.0');
    const projects = await createAndCompare(registry, port, `${port}@1.0.0`);
    // The computed defaults followed the answers before them, and an answer replaced one.
    expect((await lockOf(projects.get('cool-package')!)).answers).toMatchObject({ package_name: 'My-Cool-Package', import_name: 'my_cool_package', github_repo_owner: 'ghopper', pypi_username: 'ghopper' });
    expect((await lockOf(projects.get('org-owner')!)).answers).toMatchObject({ package_name: 'data-tools', import_name: 'data_tools', github_repo_owner: 'acme-org', pypi_username: 'alice' });

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.1.0', workspace), '1.1.0', 'audreyfeldroy/cookiecutter-pypackage'), port, '1.1.0');
    const dir = projects.get('cool-package')!;
    await writeFile(path.join(dir, 'justfile'), `${await read(dir, 'justfile')}\n# Serve the docs locally\nserve:\n    uv run zensical serve\n`);
    const report = await update(dir, registry);
    expect(report).toMatchObject({ status: 'updated', fromVersion: '1.0.0', toVersion: '1.1.0', conflicts: [] });
    expect(statuses(report)).toEqual({ '.github/workflows/ci.yml': 'updated', justfile: 'merged' });
    expect(await read(dir, 'justfile')).toMatch(/ {4}uv run --python=3\.14 pytest\n {4}uv run --python=3\.15 pytest\n[\s\S]*\nserve:\n {4}uv run zensical serve\n$/);
    expect(await read(dir, '.github/workflows/ci.yml')).toContain('python-version: ["3.12", "3.13", "3.14", "3.15"]\n');
  }, CHAIN_TIMEOUT);

  it('cookiecutter-kotlin-lib: a binary jar, an executable gradlew and package folders as cookiecutter writes them; the next version renders the wrapper properties', async () => {
    const port = 'cookiecutter-kotlin-lib';
    const versions = ['1.0.0', '1.1.0'];
    const workspace = await tempDir('tr-real-');
    const server = await startRegistryServer();
    const registry = `${server.url}/registry.json`;
    // Asked upstream, used by no file.
    const unused = ['project_url', 'author_email'].map((name) => `variable-unused variable "${name}" is not used by any content file, expression or computed value`);

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.0.0', workspace), '1.0.0', 'mdklatt/cookiecutter-kotlin-lib'), port, '1.0.0', unused);
    const projects = await createAndCompare(registry, port, `${port}@1.0.0`);
    const reference = await readTree(path.join(portDir(port), 'reference', 'defaults'));
    const gradle85 = await createFrom(registry, `${port}@1.0.0`, answersFile(port, 'defaults'), '--set', 'gradle_version=8.5');
    expect(gradle85.run.code, gradle85.run.stderr).toBe(0);

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.1.0', workspace), '1.1.0', 'mdklatt/cookiecutter-kotlin-lib'), port, '1.1.0', unused);
    const report = await update(gradle85.dir, registry);
    expect(report).toMatchObject({ status: 'updated', fromVersion: '1.0.0', toVersion: '1.1.0', conflicts: [] });
    expect(statuses(report)).toEqual({ '.gitignore': 'updated', 'gradle/wrapper/gradle-wrapper.properties': 'updated' });
    expect(await read(gradle85.dir, 'gradle/wrapper/gradle-wrapper.properties')).toContain('distributionUrl=https\\://services.gradle.org/distributions/gradle-8.5-bin.zip\n');
    const after = await readTree(gradle85.dir);
    for (const file of ['gradle/wrapper/gradle-wrapper.jar', 'gradlew', 'gradlew.bat']) expect(after.get(file), file).toEqual(reference.get(file));
    expect(after.get('gradlew')!.executable).toBe(true);

    // With the default Gradle the properties render as in 1.0.0: only .gitignore changes.
    expect(statuses(await update(projects.get('defaults')!, registry))).toEqual({ '.gitignore': 'updated' });
  }, CHAIN_TIMEOUT);

  it('copier-uv: partials for the licence and its Python headers, conditional files, a symbolic link as a file; the next version keeps the changelog (_skip_if_exists)', async () => {
    const port = 'copier-uv';
    const versions = ['1.0.0', '1.1.0'];
    const workspace = await tempDir('tr-real-');
    const server = await startRegistryServer();
    const registry = `${server.url}/registry.json`;

    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.0.0', workspace), '1.0.0', 'pawamoy/copier-uv'), port, '1.0.0');

    const defaults = await createFrom(registry, `${port}@1.0.0`, answersFile(port, 'defaults'));
    expect(defaults.run.code, defaults.run.stderr).toBe(0);
    const tree = await readTree(defaults.dir, ['.template-lock.json']);
    const text = (file: string): string => tree.get(file)!.bytes.toString('utf8');
    // Copier's computed defaults: slugs of the project name, the holder from the author.
    expect((await lockOf(defaults.dir)).answers).toMatchObject({
      repository_namespace: 'pawamoy',
      repository_name: 'my-project',
      python_package_import_name: 'my_project',
      python_package_command_line_name: 'my-project',
      copyright_holder: 'Timothée Mazzucotelli',
    });
    expect(text('LICENSE')).toMatch(/^ISC License\n\nCopyright \(c\) 2026, Timothée Mazzucotelli and contributors\n\nPermission to use, copy, modify[\s\S]*PERFORMANCE OF THIS SOFTWARE\.\n$/);
    // python_comment over the included licence: every line commented, "#" alone for a blank one.
    const license = text('LICENSE').trimEnd().split('\n');
    const header = `# SPDX-License-Identifier: ISC\n#\n${license.map((line) => (line === '' ? '#' : `# ${line}`)).join('\n')}\n\n`;
    for (const file of ['src/my_project/__init__.py', 'src/my_project/_internal/cli.py', 'duties.py', 'tests/test_api.py']) expect(text(file).startsWith(header), file).toBe(true);
    expect(text('scripts/make.py').startsWith(`#!/usr/bin/env python3\n${header}`)).toBe(true);
    // scripts/make, a symbolic link to make.py upstream, is the same executable file.
    expect(tree.get('scripts/make')).toEqual(tree.get('scripts/make.py'));
    expect(tree.get('scripts/make')!.executable).toBe(true);
    expect(text('README.md')).toContain('[![documentation](https://img.shields.io/badge/docs-zensical-FF9100.svg?style=flat)](https://pawamoy.github.io/my-project/)\n');
    expect(text('src/my_project/_internal/debug.py')).toContain('var.startswith("MY_PROJECT")');
    for (const file of ['.github/workflows/sponsors.yml', 'docs/.overrides/main.html', 'src/my_project/__main__.py', 'tests/test_cli.py', 'config/zed/settings.json']) expect(tree.has(file), file).toBe(true);
    expect([...tree.keys()].filter((file) => file.includes('copier') || file.endsWith('.liquid'))).toEqual([]);
    const source = (file: string): Promise<Buffer> => readFile(path.join(portDir(port), '1.0.0', 'project', file));
    for (const file of ['.github/pull_request_template.md', 'AI_POLICY.md', 'config/ty.toml']) expect(tree.get(file)!.bytes.equals(await source(file)), file).toBe(true);

    const gpl = await createFrom(registry, `${port}@1.0.0`, answersFile(port, 'gpl-library'));
    expect(gpl.run.code, gpl.run.stderr).toBe(0);
    const gplTree = await readTree(gpl.dir, ['.template-lock.json']);
    for (const file of ['.github/workflows/sponsors.yml', 'docs/.overrides/main.html', 'src/data_tools/__main__.py', 'src/data_tools/_internal/cli.py', 'tests/test_cli.py']) {
      expect(gplTree.has(file), file).toBe(false);
    }
    expect(gplTree.get('LICENSE')!.bytes.toString('utf8')).toMatch(/^GNU GENERAL PUBLIC LICENSE\n {3}Version 3, 29 June 2007\n/);
    expect(gplTree.get('src/data_tools/__init__.py')!.bytes.toString('utf8')).toMatch(
      /^# SPDX-License-Identifier: GPL-3\.0\n#\n# GNU GENERAL PUBLIC LICENSE\n# {4}Version 3, 29 June 2007\n[\s\S]*\n\n"""Data Tools package\.\n\nTools & things for data\.\n"""\n\nfrom __future__ import annotations\n__all__: list\[str\] = \[\]\n$/,
    );
    expect(gplTree.get('pyproject.toml')!.bytes.toString('utf8')).toContain('Gitter = "https://gitter.im/data-tools/community"');

    // 1.1.0 drops Python 3.10 and changes the change log's links; CHANGELOG.md is the project's (updatePolicy once).
    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '1.1.0', workspace), '1.1.0', 'pawamoy/copier-uv'), port, '1.1.0');
    const pyproject = path.join(defaults.dir, 'pyproject.toml');
    await writeFile(pyproject, (await readFile(pyproject, 'utf8')).replace('dependencies = []', 'dependencies = ["httpx>=0.27"]'));
    const changelog = await read(defaults.dir, 'CHANGELOG.md');
    const report = await update(defaults.dir, registry);
    expect(report).toMatchObject({ status: 'updated', fromVersion: '1.0.0', toVersion: '1.1.0', conflicts: [] });
    expect(statuses(report)).toEqual({
      '.github/workflows/ci.yml': 'updated',
      'CHANGELOG.md': 'kept',
      'config/ruff.toml': 'updated',
      'pyproject.toml': 'merged',
      'scripts/gen_credits.py': 'updated',
      'scripts/make': 'updated',
      'scripts/make.py': 'updated',
    });
    expect(await read(defaults.dir, 'CHANGELOG.md')).toBe(changelog);
    expect(await read(defaults.dir, 'pyproject.toml')).toMatch(/requires-python = ">=3\.11"\n[\s\S]*dependencies = \["httpx>=0\.27"\]\n/);
    expect(await read(defaults.dir, 'pyproject.toml')).not.toMatch(/3\.10|tomli/);
  }, CHAIN_TIMEOUT);

  it('equinox-web-csharp (dotnet new): #if blocks, excludes, CRLF, BOM and executable bits as dotnet new writes them; 2.0.0 renames a file by a migration', async () => {
    const port = 'dotnet-equinox-web-csharp';
    const id = 'equinox-web-csharp';
    const versions = ['1.0.0', '2.0.0'];
    const workspace = await tempDir('tr-real-');
    const server = await startRegistryServer();
    const registry = `${server.url}/registry.json`;
    const template = await stageVersion(port, versions, '1.0.0', workspace);
    const source = (file: string): Promise<Buffer> => readFile(path.join(template, 'template', file));

    expectPublished(await publishWithAction(server, template, '1.0.0', 'jet/dotnet-templates'), id, '1.0.0');

    const defaults = await createFrom(registry, `${id}@1.0.0`, answersFile(port, 'defaults'));
    expect(defaults.run.code, defaults.run.stderr).toBe(0);
    const tree = await readTree(defaults.dir, ['.template-lock.json']);
    // dotnet new's excludes: no README, Todo or controller without todos, one store context per store chosen.
    expect([...tree.keys()].sort()).toEqual([
      'Domain/Aggregate.cs',
      'Domain/ClientId.cs',
      'Domain/Domain.csproj',
      'Domain/Infrastructure.cs',
      'Web/EquinoxContext.cs',
      'Web/MemoryStoreContext.cs',
      'Web/Program.cs',
      'Web/Properties/launchSettings.json',
      'Web/Startup.cs',
      'Web/Web.csproj',
      'Web/appsettings.Development.json',
      'Web/appsettings.json',
      'equinox-web.sln',
    ]);
    // The files with CRLF line ends and a byte-order mark come out as they are in the template, executable bits too.
    for (const file of ['Web/Properties/launchSettings.json', 'Web/appsettings.Development.json', 'equinox-web.sln', 'Domain/Domain.csproj']) {
      expect(tree.get(file)!.bytes.equals(await source(file)), file).toBe(true);
    }
    expect(tree.get('Web/appsettings.Development.json')!.bytes.toString('utf8')).toBe('{\r\n  "Logging": {\r\n    "LogLevel": {\r\n      "Default": "Debug",\r\n      "System": "Information",\r\n      "Microsoft": "Information"\r\n    }\r\n  }\r\n}\r\n');
    expect(tree.get('equinox-web.sln')!.bytes.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    expect(Object.fromEntries([...tree].map(([file, { executable }]) => [file, executable]))).toMatchObject({
      'Domain/Aggregate.cs': true,
      'Domain/Infrastructure.cs': false,
      'Web/Program.cs': true,
      'Web/EquinoxContext.cs': false,
      'Web/Properties/launchSettings.json': true,
    });
    // #if lines disappear with their line; blank lines around them stay.
    const startup = tree.get('Web/Startup.cs')!.bytes.toString('utf8');
    expect(startup).not.toMatch(/\{%|#if|#endif/);
    expect(startup).toContain('                .UseSerilogRequestLogging() // see https://nblumhardt.com/2019/10/serilog-in-aspnetcore-3/\n\n                .UseEndpoints(endpoints =>');
    expect(startup).toContain('            services.AddSingleton(sp => sp.GetRequiredService<ServiceBuilder>().CreateAggregateService());\n        }\n');
    expect(startup).toContain('        {\n            return new MemoryStoreContext(new Equinox.MemoryStore.VolatileStore<ReadOnlyMemory<byte>>());\n        }\n');
    expect(startup).not.toMatch(/UseCors|CreateTodoService|cacheMb|EventStoreContext\(|CosmosContext\(/);
    expect(tree.get('Web/Program.cs')!.bytes.toString('utf8')).toContain('namespace TodoBackendTemplate.Web\n');

    const todos = await createFrom(registry, `${id}@1.0.0`, answersFile(port, 'todos-all-stores'));
    expect(todos.run.code, todos.run.stderr).toBe(0);
    const todoTree = await readTree(todos.dir, ['.template-lock.json']);
    expect([...todoTree.keys()].filter((file) => !tree.has(file)).sort()).toEqual(['Domain/Todo.cs', 'README.md', 'Web/Controllers/TodosController.cs', 'Web/CosmosContext.cs', 'Web/EventStoreContext.cs']);
    expect([...tree.keys()].filter((file) => !todoTree.has(file))).toEqual(['Domain/Aggregate.cs']);
    const todoStartup = todoTree.get('Web/Startup.cs')!.bytes.toString('utf8');
    expect(todoStartup).toContain('                .UseSerilogRequestLogging() // see https://nblumhardt.com/2019/10/serilog-in-aspnetcore-3/\n\n                // NB Jet does now own');
    expect(todoStartup).toContain('            var cacheMb = 50;\n\n            // EVENTSTORE: see https://eventstore.org/\n');
    expect(todoStartup).toContain('            return new CosmosContext(config);\n        }\n');
    expect(todoStartup).not.toMatch(/CreateAggregateService|MemoryStoreContext\(/);
    expect(todoTree.get('Web/Program.cs')!.bytes.toString('utf8')).toMatch(/namespace TodoApp\.Web\n[\s\S]*\.WriteTo\.Sink\(new Equinox\.CosmosStore\.Prometheus\.LogSink[\s\S]*private const string AppName = "TodoApp";/);
    expect(todoTree.get('Domain/Todo.cs')!.bytes.toString('utf8')).toContain('namespace TodoApp\n');

    // 2.0.0 renames Domain/Infrastructure.cs to Domain/Store.cs, by a declarative step.
    expectPublished(await publishWithAction(server, await stageVersion(port, versions, '2.0.0', workspace), '2.0.0', 'jet/dotnet-templates'), id, '2.0.0');

    const migrated = await cli('migrate', '--project', defaults.dir, '--registry', registry, '--refresh', '--yes');
    expect(migrated.code, migrated.stderr).toBe(0);
    const afterMigrate = await readTree(defaults.dir, ['.template-lock.json']);
    expect(afterMigrate.has('Domain/Infrastructure.cs')).toBe(false);
    expect(afterMigrate.get('Domain/Store.cs')!.bytes.equals(tree.get('Domain/Infrastructure.cs')!.bytes)).toBe(true);
    expect(await lockOf(defaults.dir)).toMatchObject({ template: { version: '2.0.0' }, appliedMigrations: ['equinox-web-csharp-2.0.0-store'] });

    // update runs the same step on a project that edited the file: the edit moves with it.
    const infrastructure = path.join(todos.dir, 'Domain/Infrastructure.cs');
    await writeFile(infrastructure, `// Our codec helpers.\n${await readFile(infrastructure, 'utf8')}`);
    const report = await update(todos.dir, registry, '--yes');
    expect(report).toMatchObject({ status: 'updated', fromVersion: '1.0.0', toVersion: '2.0.0', conflicts: [] });
    expect(await read(todos.dir, 'Domain/Store.cs')).toMatch(/^\/\/ Our codec helpers\.\nusing System;\n\nnamespace TodoApp;\n/);
    expect((await readTree(todos.dir)).has('Domain/Infrastructure.cs')).toBe(false);
    expect(await lockOf(todos.dir)).toMatchObject({ template: { version: '2.0.0' }, appliedMigrations: ['equinox-web-csharp-2.0.0-store'] });
  }, CHAIN_TIMEOUT);
});
