/**
 * The chain each real template goes through (test/fixtures/real/<port>/): its versions staged as
 * template folders, published with the publish action's run() against a local registry server,
 * projects created from that registry, and generated trees compared with reference outputs.
 */
import { constants } from 'node:fs';
import { cp, lstat, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

import { expect } from 'vitest';

import { run, type ActionCore } from '../../src/action/main.js';
import { extractChangelogSection, type TemplateLock } from '../../src/template/index.js';
import { cli, type CliRun } from '../helpers/cli.js';
import { memoryReleaseApi, type MemoryRelease } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/registry-server.js';

export const REAL_FIXTURES = path.resolve('test/fixtures/real');

/** The folder of one port's fixtures. */
export const portDir = (port: string): string => path.join(REAL_FIXTURES, port);

/**
 * A version of a port as a template folder in `workspace`: the first version (`<port>/1.0.0`),
 * then, for a later one, each `<port>/<version>-changes` overlay up to it in order (files copied
 * over, with their modes; the paths listed in its `REMOVED` file deleted).
 */
export async function stageVersion(port: string, versions: readonly string[], version: string, workspace: string): Promise<string> {
  const dir = path.join(workspace, `${port}-${version}`);
  await cp(path.join(portDir(port), versions[0]!), dir, { recursive: true });
  for (const later of versions.slice(1, versions.indexOf(version) + 1)) {
    const overlay = path.join(portDir(port), `${later}-changes`);
    const removed = await readFile(path.join(overlay, 'REMOVED'), 'utf8').catch(() => '');
    for (const file of removed.split('\n').filter((line) => line.trim() !== '')) await rm(path.join(dir, file));
    await cp(overlay, dir, { recursive: true, filter: (source) => path.relative(overlay, source) !== 'REMOVED' });
  }
  return dir;
}

/** A core that records what the action logs, annotates and outputs. */
function recordingCore() {
  const log: string[] = [];
  const annotations: { level: 'error' | 'warning'; message: string; title?: string }[] = [];
  const outputs: Record<string, string> = {};
  const failed: string[] = [];
  const core: ActionCore = {
    setOutput: (name, value) => void (outputs[name] = String(value)),
    setSecret: () => undefined,
    setFailed: (message) => void failed.push(message),
    info: (message) => void log.push(`info ${message}`),
    warning: (message, properties) => {
      log.push(`warning ${message}`);
      annotations.push({ level: 'warning', message, ...(properties?.title ? { title: properties.title } : {}) });
    },
    error: (message, properties) => {
      log.push(`error ${message}`);
      annotations.push({ level: 'error', message, ...(properties?.title ? { title: properties.title } : {}) });
    },
    startGroup: (name) => void log.push(`group ${name}`),
    endGroup: () => void log.push('endgroup'),
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, log, annotations, outputs, failed };
}

export interface ActionRun {
  ok: boolean;
  /** `group <name>`, `info ...`, `warning ...`, `error ...`, `endgroup`, in order. */
  log: string[];
  /** Lint findings annotated by the action, as `<rule> <message>`. */
  lintFindings: string[];
  outputs: Record<string, string>;
  release: MemoryRelease | undefined;
  /** The section of the template's CHANGELOG.md for the version published. */
  changelogSection: string | undefined;
}

/** The log lines inside the group `name`. */
export function groupLines(log: readonly string[], name: string): string[] {
  const start = log.indexOf(`group ${name}`);
  if (start < 0) return [];
  const end = log.indexOf('endgroup', start);
  return log.slice(start + 1, end < 0 ? undefined : end);
}

/**
 * Publishes the template folder `dir` as `version` with the publish action's run(): on tag
 * v<version> of `repository`, to `server`, creating the GitHub release through a fake API. The
 * action validates, test-generates (the template's own matrix), lints, finds the change log
 * section, packs, uploads and releases.
 */
export async function publishWithAction(server: TestServer, dir: string, version: string, repository: string): Promise<ActionRun> {
  const { core, log, annotations, outputs, failed } = recordingCore();
  const { api, releases } = memoryReleaseApi();
  const outcome = await run({
    env: {
      GITHUB_WORKSPACE: path.dirname(dir),
      GITHUB_REPOSITORY: repository,
      GITHUB_REF: `refs/tags/v${version}`,
      RUNNER_TEMP: await tempDir('tr-runner-'),
      'INPUT_TEMPLATE-PATH': path.basename(dir),
      'INPUT_REGISTRY-URL': server.url,
      'INPUT_REGISTRY-TOKEN': server.token,
      'INPUT_GITHUB-TOKEN': 'ghs_real_templates',
    },
    core,
    setExitCode: (code) => void failed.push(`exit code ${code}`),
    releaseApi: () => api,
  });
  expect(failed, log.join('\n')).toEqual([]);
  return {
    ok: outcome.ok,
    log,
    lintFindings: annotations.filter((a) => a.title?.startsWith('lint: ')).map((a) => `${a.title!.slice('lint: '.length)} ${a.message}`),
    outputs,
    release: releases[0],
    changelogSection: extractChangelogSection(await readFile(path.join(dir, 'CHANGELOG.md'), 'utf8'), version),
  };
}

/** `template-registry create <id>@<version> <dir> --answers <file> --defaults --json` from `registry`. */
export async function createFrom(registry: string, spec: string, answers: string, ...extra: string[]): Promise<{ dir: string; run: CliRun }> {
  const dir = path.join(await tempDir('tr-real-project-'), 'project');
  const result = await cli('create', spec, dir, '--registry', registry, '--answers', answers, '--defaults', '--json', ...extra);
  return { dir, run: result };
}

export interface TreeFile {
  bytes: Buffer;
  executable: boolean;
}

/** Every file under `root` (relative `/` paths) with its bytes and executable bit; `skip` names files left out. */
export async function readTree(root: string, skip: readonly string[] = []): Promise<Map<string, TreeFile>> {
  const files = new Map<string, TreeFile>();
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(path.join(root, relative), { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) await walk(child);
      else if (!skip.includes(child)) {
        const absolute = path.join(root, child);
        files.set(child, { bytes: await readFile(absolute), executable: ((await lstat(absolute)).mode & constants.S_IXUSR) !== 0 });
      }
    }
  };
  await walk('');
  return files;
}

/**
 * The differences between a generated tree and the reference: files only on one side, files whose
 * bytes differ (with the first differing line), files whose executable bit differs. Empty when the
 * trees are equal byte for byte.
 */
export function treeDifferences(actual: Map<string, TreeFile>, expected: Map<string, TreeFile>): string[] {
  const differences: string[] = [];
  for (const file of [...new Set([...actual.keys(), ...expected.keys()])].sort()) {
    const ours = actual.get(file);
    const theirs = expected.get(file);
    if (!ours) differences.push(`${file}: only in the reference`);
    else if (!theirs) differences.push(`${file}: only in our output`);
    else {
      if (!ours.bytes.equals(theirs.bytes)) differences.push(`${file}: ${firstDifference(ours.bytes, theirs.bytes)}`);
      if (ours.executable !== theirs.executable) differences.push(`${file}: executable ${String(ours.executable)}, reference ${String(theirs.executable)}`);
    }
  }
  return differences;
}

function firstDifference(ours: Buffer, theirs: Buffer): string {
  const a = ours.toString('utf8').split('\n');
  const b = theirs.toString('utf8').split('\n');
  const line = a.findIndex((text, index) => text !== b[index]);
  const at = line < 0 ? a.length : line;
  return `differs at line ${at + 1}: ${JSON.stringify(a[at] ?? '<end>')} vs reference ${JSON.stringify(b[at] ?? '<end>')}`;
}

/** The project's lock file. */
export async function lockOf(dir: string): Promise<TemplateLock> {
  return JSON.parse(await readFile(path.join(dir, '.template-lock.json'), 'utf8')) as TemplateLock;
}

/** The answer sets of a port: `answers/<name>.json`, by name. */
export async function answerSets(port: string): Promise<string[]> {
  return (await readdir(path.join(portDir(port), 'answers'))).filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -'.json'.length)).sort();
}

export const answersFile = (port: string, set: string): string => path.join(portDir(port), 'answers', `${set}.json`);
