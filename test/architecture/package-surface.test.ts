import { spawnSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { groupsFor } from '../../src/cli/program.js';

/**
 * The CommonJS packages a fresh Node process has loaded after running `script` (an ES module),
 * from the require cache: fastify, better-sqlite3 and the prompts are CommonJS, so importing
 * them, even from ESM, leaves them there. Runs against build/ (npm test builds first).
 */
function loadedAfter(script: string): string[] {
  const probe = `${script}
const { createRequire } = await import('node:module');
const names = Object.keys(createRequire(import.meta.url).cache)
  .map((file) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file)?.[1])
  .filter(Boolean);
console.log(JSON.stringify([...new Set(names)]));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
}

const HEAVY = ['fastify', 'better-sqlite3', '@inquirer/core', '@octokit/core'];

describe('the package surface', () => {
  it("imports template-registry/client without loading fastify or better-sqlite3", () => {
    const loaded = loadedAfter("const client = await import('template-registry/client'); if (typeof client.RegistryClient !== 'function') process.exit(3);");
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
  });

  it('exports each documented sub-path', () => {
    const run = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const names = {};
for (const sub of ['client', 'server', 'template', 'registry', 'migrate']) names[sub] = Object.keys(await import('template-registry/' + sub)).sort();
console.log(JSON.stringify(names));`,
      ],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const names = JSON.parse(run.stdout) as Record<string, string[]>;
    expect(names.client).toEqual(expect.arrayContaining(['RegistryClient', 'downloadTemplate']));
    expect(names.server).toEqual(expect.arrayContaining(['createServer', 'verifyWebhookSignature']));
    expect(names.template).toEqual(expect.arrayContaining(['validateTemplate', 'generateProject', 'lintTemplate']));
    expect(names.registry).toEqual(expect.arrayContaining(['buildRegistry', 'buildDocument']));
    expect(names.migrate).toEqual(expect.arrayContaining(['runMigrations', 'loadDeclarativeSteps']));
  });

  it('answers template-registry --version without loading the command parser or any command', () => {
    const loaded = loadedAfter(
      "const { runCli } = await import('./build/src/cli/index.js'); let out = ''; const code = await runCli(['--version'], { stdout: (t) => (out += t), stderr: () => {} }); if (code !== 0 || !/^\\d+\\.\\d+\\.\\d+\\n$/.test(out)) process.exit(3);",
    );
    expect(loaded).toEqual([]);
  });

  it('answers template-registry --help without loading any command', () => {
    const loaded = loadedAfter(
      "const { runCli } = await import('./build/src/cli/index.js'); let out = ''; const code = await runCli(['--help'], { stdout: (t) => (out += t), stderr: () => {} }); if (code !== 0 || !out.includes('check-update')) process.exit(3);",
    );
    expect(loaded).toEqual(['commander']);
  });

  it('loads the commands of one group for a command, and every group for help or an unknown command', () => {
    expect(groupsFor(['--version'])).toHaveLength(0);
    expect(groupsFor(['list', '--json']).map((g) => g.commands)).toEqual([['list', 'search', 'info', 'create']]);
    expect(groupsFor(['migrate', '--help']).map((g) => g.commands)).toEqual([['migrate']]);
    expect(groupsFor(['validate', '.']).map((g) => g.commands)).toEqual([['validate']]);
    const all = groupsFor(['--help']).length;
    expect(all).toBeGreaterThan(5);
    expect(groupsFor(['nosuch'])).toHaveLength(all);
    expect(groupsFor([])).toHaveLength(all);
  });
});
