/**
 * A reader that closes early (`template-registry lint DIR | head -1`) ends the command quietly:
 * status 0, nothing on stderr, in every run (the broken pipe used to be a stack trace in about
 * half of them). Runs the built CLI (`npm run build` first).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from '../project/versions.js';

const BIN = path.resolve('bin/template-registry.js');
const RUNS = 30;

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

/** Runs the CLI with its stdout read up to the first line and then closed (what `| head -1` does). */
function runIntoHead(args: readonly string[]): Promise<{ code: number | null; firstLine: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, '--no-color', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let out = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) child.stdout.destroy();
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, firstLine: out.split('\n')[0] ?? '', stderr }));
  });
}

/** A template whose lint prints hundreds of lines (a warning per unused variable). */
async function noisyTemplate(): Promise<string> {
  const variables: Record<string, object> = { projectName: { type: 'string', default: 'app' } };
  for (let n = 0; n < 400; n++) variables[`unusedVariable${n}`] = { type: 'string', default: 'x' };
  return writeTemplate({ 'template.vars.json': { variables }, 'template.prompts.json': { prompts: [] } });
}

describe('a reader that closes early', () => {
  it('ends `lint DIR | head -1` with status 0 and nothing on stderr, every time', async () => {
    const dir = await noisyTemplate();
    for (let run = 0; run < RUNS; run++) {
      const result = await runIntoHead(['lint', dir]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.firstLine).toMatch(/warning variable-unused/);
    }
  }, 120_000);

  it('ends `update --dry-run | head -1` with status 0 and nothing on stderr, every time', async () => {
    const server = await startRegistryServer();
    const many = (label: string): string => Array.from({ length: 400 }, (_, n) => `line ${n} ${label}\n`).join('');
    await publishVersions(server, [
      { version: '1.0.0', files: { 'template/a.txt': many('one'), 'template/b.txt': many('one') } },
      { version: '1.1.0', files: { 'template/a.txt': many('two'), 'template/b.txt': many('two') } },
    ]);
    const registry = `${server.url}/registry.json`;
    const dir = path.join(await tempDir(), 'shop');
    const created = await cli('create', `${TEMPLATE}@1.0.0`, dir, '--registry', registry, '--defaults');
    expect(created.code, created.stderr).toBe(0);
    for (let run = 0; run < RUNS; run++) {
      const result = await runIntoHead(['update', '--dry-run', '--project', dir, '--registry', registry]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.firstLine).toMatch(/update plan demo-template 1\.0\.0 -> 1\.1\.0/);
    }
  }, 180_000);
});
