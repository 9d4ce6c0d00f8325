import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { build } from 'esbuild';

import { distBuildOptions, DIST_ENTRY_POINTS } from '../../scripts/dist-bundles.js';
import { tempDir } from './fixtures.js';

export interface ActionRun {
  code: number | null;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
}

export interface FreshBundle {
  /** The bundled action, e.g. `<temp>/action/index.js`. */
  file: string;
  remove: () => Promise<void>;
}

/**
 * Bundles one action from src/ into a temp folder, exactly as `npm run build:dist` builds dist/
 * (same esbuild options), so the end-to-end tests run the code as it is now, not the committed dist/.
 */
export async function buildFreshBundle(name: keyof typeof DIST_ENTRY_POINTS): Promise<FreshBundle> {
  const outdir = await mkdtemp(path.join(tmpdir(), 'tr-bundle-'));
  await build(distBuildOptions(outdir, { [name]: DIST_ENTRY_POINTS[name] }));
  return { file: path.join(outdir, `${name}.js`), remove: () => rm(outdir, { recursive: true, force: true }) };
}

/** Parses the GITHUB_OUTPUT file format: `name<<DELIM\nvalue\nDELIM`. */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const pattern = /^([^\n<]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (const match of text.matchAll(pattern)) outputs[match[1] ?? ''] = match[3] ?? '';
  return outputs;
}

/**
 * Runs a bundled action the way the runner does: `node <bundle>` with the given environment
 * (INPUT_* variables, GITHUB_*), plus fresh GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files and
 * RUNNER_TEMP; returns the exit code, the output streams, the outputs and the summary.
 */
export async function runBundledAction(bundle: string, env: Record<string, string>, options: { cwd?: string } = {}): Promise<ActionRun> {
  const work = await tempDir('tr-runner-');
  const outputFile = path.join(work, 'output.txt');
  const summaryFile = path.join(work, 'summary.md');
  await writeFile(outputFile, '');
  await writeFile(summaryFile, '');
  const child = spawn(process.execPath, [bundle], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      GITHUB_ACTIONS: 'true',
      GITHUB_OUTPUT: outputFile,
      GITHUB_STEP_SUMMARY: summaryFile,
      RUNNER_TEMP: work,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr, outputs: parseOutputs(await readFile(outputFile, 'utf8')), summary: await readFile(summaryFile, 'utf8') };
}
