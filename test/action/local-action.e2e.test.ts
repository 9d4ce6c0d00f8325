import { execFile } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/fixtures.js';

const root = path.resolve('.');
const example = 'examples/templates/node-service';

/** The `::set-output name=<name>::<value>` lines local-action prints for core.setOutput. */
function printedOutputs(stdout: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const match of stdout.matchAll(/^::set-output name=([^:]+)::(.*)$/gm)) outputs[match[1] ?? ''] = match[2] ?? '';
  return outputs;
}

describe('GitHub local-action runs the publish action from its TypeScript source', () => {
  it('dry-runs the example template: every check passes and the archive is packed', async () => {
    const { version } = JSON.parse(await readFile(path.join(root, example, 'template.json'), 'utf8')) as { version: string };
    const work = await tempDir('tr-local-action-');
    const summary = path.join(work, 'summary.md');
    const dotenv = path.join(work, '.env');
    // The example has no test command of its own, so test generation only renders its answer sets: the run takes seconds.
    await writeFile(
      dotenv,
      [`INPUT_TEMPLATE-PATH=${example}`, `INPUT_VERSION=${version}`, 'INPUT_DRY-RUN=true', 'INPUT_CREATE-RELEASE=false', `GITHUB_STEP_SUMMARY=${summary}`, `RUNNER_TEMP=${work}`, ''].join('\n'),
    );

    // A clean environment: GITHUB_* variables of a CI runner must not leak into the action's inputs.
    const { stdout } = await promisify(execFile)(path.join(root, 'node_modules/.bin/local-action'), ['run', '.', 'src/action/main.ts', dotenv], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? work },
      maxBuffer: 16 * 1024 * 1024,
    });

    // local-action exits 0 whatever the action reports: a failure shows as ::error:: lines.
    expect(stdout.split('\n').filter((line) => line.startsWith('::error'))).toEqual([]);
    expect(stdout).toContain('::group::Release notes');
    const outputs = printedOutputs(stdout);
    expect(outputs).toMatchObject({ version, uploaded: 'false', integrity: expect.stringMatching(/^sha512-/), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(outputs.archive).toBe(path.join(path.dirname(outputs.archive ?? ''), `node-service-${version}.tgz`));
    expect(path.dirname(path.dirname(outputs.archive ?? ''))).toBe(work);
    expect(String((await stat(outputs.archive ?? '')).size)).toBe(outputs.size);
    expect(await readFile(summary, 'utf8')).toMatch(/Template publish[\s\S]*Upload[\s\S]*skipped \(dry-run\)/);
  }, 120_000);
});
