import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { validPrompts, validVariables, writeTemplate } from '../helpers/fixtures.js';

const example = path.resolve('examples/templates/node-service');

describe('template-registry test', () => {
  it('covers every database and every feature of the example and passes', async () => {
    const result = await cli('test', example, '--json');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.passed).toBe(true);
    const databases = new Set(report.sets.map((s: { answers: { database?: string } }) => s.answers.database).filter(Boolean));
    expect([...databases].sort()).toEqual(['mongodb', 'mysql', 'postgresql', 'sqlite']);
    const features = new Set(report.sets.flatMap((s: { answers: { features: string[] } }) => s.answers.features));
    expect([...features].sort()).toEqual(['api', 'auth', 'database', 'docker', 'testing']);
    expect(report.uncovered).toEqual([]);
  });

  it('prints each answer set and its result', async () => {
    const result = await cli('test', example);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/PASS set 1 \(defaults\)/);
    expect(result.stdout).toMatch(/database=mongodb/);
    expect(result.stdout).toMatch(/all answer sets passed/);
  });

  it('runs the command inside each generated project and fails when it fails', async () => {
    const ok = await cli('test', example, '--run', 'test -f package.json && test -f .template-lock.json');
    expect(ok.code).toBe(0);
    const bad = await cli('test', example, '--run', 'test -f Dockerfile');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/FAIL set 1 \(defaults\)/);
    expect(bad.stdout).toMatch(/command exited with 1/);
  });

  it('stops a command that runs past the time limit', async () => {
    const result = await cli('test', example, '--run', 'sleep 30', '--timeout', '0.5', '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).sets[0].command.timedOut).toBe(true);
  });

  it('fails a template that writes invalid JSON, naming the line, and passes the braces {% raw %} wrote', async () => {
    const dir = await writeTemplate({
      'template/data.json': '{"name": "{{ projectName }}",}',
      'template/notes.txt': '{% raw %}{{ left }}{% endraw %}',
    });
    const result = await cli('test', dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/data\.json:1: not valid JSON/);
    expect(result.stdout).not.toMatch(/notes\.txt/);
  });

  it('exits 1 and names each condition outcome no valid answer set reaches', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', files: [{ path: 'schema.graphql', when: 'features contains "graphql"' }] },
      'template/schema.graphql': 'type Query { name: String }\n',
    });
    const result = await cli('test', dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('not covered by any valid answer set (1):\n     files rule schema.graphql: true\n');
    expect(result.stdout).toMatch(/test generation failed\n$/);
    const json = JSON.parse((await cli('test', dir, '--json')).stdout);
    expect(json).toMatchObject({ passed: false, uncovered: ['files rule schema.graphql: true'] });
    expect(json.sets.every((set: { passed: boolean }) => set.passed)).toBe(true);
  });

  it('covers conditions comparing a variable with a literal by trying answers on both sides', async () => {
    const dir = await writeTemplate({
      'template.json': {
        name: 'demo-template',
        version: '1.0.0',
        description: 'A demo template used by the tests',
        category: 'backend',
        features: ['api', 'testing'],
        files: [
          { path: 'LICENSE', when: 'license == "MIT"' },
          { path: 'privileged.txt', when: 'port < 1024' },
          { path: 'web.txt', when: 'description contains "web"' },
        ],
      },
      'template.vars.json': {
        variables: {
          ...validVariables.variables,
          license: { type: 'string', default: 'Apache-2.0' },
          port: { type: 'integer', default: 8080 },
        },
      },
      'template.prompts.json': {
        prompts: [...validPrompts.prompts, { name: 'license', message: 'Licence?', type: 'input' }, { name: 'port', message: 'Port?', type: 'input' }],
      },
      'template/LICENSE': '{{ license }}\n',
      'template/privileged.txt': '{{ port }}\n',
      'template/web.txt': '{{ description }}\n',
    });
    const result = await cli('test', dir, '--json');
    const report = JSON.parse(result.stdout);
    expect(report.uncovered).toEqual([]);
    expect(result.code).toBe(0);
    const given = report.sets.map((set: { given: Record<string, unknown> }) => set.given);
    expect(given).toContainEqual(expect.objectContaining({ license: 'MIT' }));
    expect(given).toContainEqual(expect.objectContaining({ port: 1023 }));
    expect(given).toContainEqual(expect.objectContaining({ description: 'web' }));
  });

  it('generates from exactly the files pack would pack: an .env it leaves out is not generated, and the report says so', async () => {
    const dir = await writeTemplate({ 'template/.env': 'NAME={{ projectName }}\n', 'template/local.cfg': 'x', '.gitignore': 'template/local.cfg\n' });
    const needsEnv = await cli('test', dir, '--run', 'test -f .env');
    expect(needsEnv.code).toBe(1);
    expect(needsEnv.stdout).toMatch(/command exited with 1: test -f \.env/);
    expect(needsEnv.stdout).toContain('left out of the archive, so not generated (2):');
    expect(needsEnv.stdout).toContain('template/.env (an .env file;');
    expect(needsEnv.stdout).toContain('template/local.cfg (ignored by .gitignore)');

    const json = await cli('test', dir, '--run', 'test ! -e .env && test ! -e local.cfg', '--json');
    expect(json.code, json.stdout).toBe(0);
    expect(JSON.parse(json.stdout).leftOut).toEqual([
      { path: 'template/.env', reason: expect.stringContaining('.env file') },
      { path: 'template/local.cfg', reason: 'ignored by .gitignore' },
    ]);
  });

  it('generates an .env file the manifest names in its files rules (pack packs it), and honours --exclude as pack does', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', files: [{ path: '.env', when: 'features contains "api"' }] },
      'template/.env': 'NAME={{ projectName }}\n',
      'template/notes.md': 'notes\n',
    });
    const named = await cli('test', dir, '--json', '--keep');
    expect(named.code, named.stdout).toBe(0);
    const report = JSON.parse(named.stdout) as { leftOut: unknown[]; sets: { answers: { features: string[] }; projectDir: string }[] };
    expect(report.leftOut).toEqual([]);
    const withApi = report.sets.find((set) => set.answers.features.includes('api'));
    expect(await readFile(path.join(withApi!.projectDir, '.env'), 'utf8')).toMatch(/^NAME=/);
    for (const set of report.sets) await rm(path.dirname(set.projectDir), { recursive: true, force: true });

    const excluded = await cli('test', dir, '--exclude', 'template/notes.md', '--run', 'test ! -e notes.md', '--json');
    expect(excluded.code, excluded.stdout).toBe(0);
    expect(JSON.parse(excluded.stdout).leftOut).toEqual([{ path: 'template/notes.md', reason: 'matches the exclude glob "template/notes.md"' }]);
  });
});

describe('template-registry test --keep', () => {
  it('prints where it kept each generated project, and the folders are there', async () => {
    const dir = await writeTemplate();
    const result = await cli('test', dir, '--keep');
    expect(result.code, result.stdout).toBe(0);
    const kept = [...result.stdout.matchAll(/^ {5}kept in (.+)$/gm)].map((match) => match[1] as string);
    const json = JSON.parse((await cli('test', dir, '--keep', '--json')).stdout) as { sets: { projectDir?: string }[] };
    expect(kept).toHaveLength(json.sets.length);
    for (const folder of kept) expect(existsSync(path.join(folder, 'README.md'))).toBe(true);
    for (const folder of [...kept, ...json.sets.map((set) => set.projectDir as string)]) await rm(path.dirname(folder), { recursive: true, force: true });
  });

  it('prints no folder without --keep', async () => {
    const result = await cli('test', await writeTemplate());
    expect(result.stdout).not.toMatch(/kept in/);
  });
});
