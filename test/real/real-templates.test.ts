/**
 * Five public templates ported to this format (test/fixtures/real/, each with a README saying what
 * maps to what and every difference from the original tool's output), each through the whole chain:
 * the publish action (validate, test generation, lint, change log, pack, upload, release) against a
 * local registry server, `create` from that registry for each answer set (compared byte for byte,
 * executable bits included, with the reference outputs made by Debian's cookiecutter for the three
 * cookiecutter templates), then the next version published and `update` (or `migrate`) on a project.
 * One server per template; each version is packed once, by the action.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

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
  expect(published.release).toMatchObject({ tag_name: `v${version}`, name: `${id} ${version}`, draft: false });
  expect(published.release?.assets.map((asset) => asset.name)).toEqual([`${id}-${version}.tgz`, 'template.json']);
}

/** Creates a project for every answer set of `port` and compares it with `reference/<set>/`. */
async function createAndCompare(registry: string, port: string, spec: string, expectedDifferences: Record<string, string[]> = {}): Promise<Map<string, string>> {
  const projects = new Map<string, string>();
  for (const set of await answerSets(port)) {
    const { dir, run } = await createFrom(registry, spec, answersFile(port, set));
    expect(run.code, `${set}: ${run.stderr}`).toBe(0);
    const given = JSON.parse(await readFile(answersFile(port, set), 'utf8')) as Record<string, unknown>;
    expect((await lockOf(dir)).answers, set).toMatchObject(given);
    const differences = treeDifferences(await readTree(dir, ['.template-lock.json']), await readTree(path.join(portDir(port), 'reference', set)));
    expect(differences, `${port} ${set}`).toEqual(expectedDifferences[set] ?? []);
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
});
