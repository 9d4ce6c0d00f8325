import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';

const example = path.resolve('examples/templates/node-service');

describe('template-registry generate', () => {
  it('generates the example with --defaults; packageName and className follow the spec', async () => {
    const out = path.join(await tempDir(), 'x');
    const result = await cli('generate', example, '--defaults', '--out', out, '--set', 'projectName=my-cool-app');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lock = JSON.parse(await readFile(path.join(out, '.template-lock.json'), 'utf8'));
    expect(lock.computed).toEqual({ packageName: 'my-cool-app', className: 'MyCoolApp' });
    expect(Object.keys(lock.files)).toContain('package.json');
  });

  it('takes answers from a file and lets --set override them', async () => {
    const dir = await tempDir();
    const answersFile = path.join(dir, 'answers.json');
    await writeFile(answersFile, JSON.stringify({ projectName: 'from-file', features: ['database'], database: 'mysql' }));
    const out = path.join(dir, 'p');
    const result = await cli('generate', example, '--defaults', '--out', out, '--answers', answersFile, '--set', 'database=sqlite');
    expect(result.code).toBe(0);
    const lock = JSON.parse(await readFile(path.join(out, '.template-lock.json'), 'utf8'));
    expect(lock.answers).toMatchObject({ projectName: 'from-file', features: ['database'], database: 'sqlite' });
  });

  it('exits 1 listing every bad answer', async () => {
    const out = path.join(await tempDir(), 'p');
    const result = await cli('generate', example, '--defaults', '--out', out, '--set', 'projectName=Bad Name', '--set', 'features=api,k8s');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/projectName: Use lower-case letters/);
    expect(result.stderr).toMatch(/features\[1\]: must be one of/);
  });

  it('refuses a non-empty output folder without --force', async () => {
    const out = await tempDir();
    await writeFile(path.join(out, 'x.txt'), 'x');
    const result = await cli('generate', example, '--defaults', '--out', out);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/not empty; use --force/);
    expect((await cli('generate', example, '--defaults', '--out', out, '--force')).code).toBe(0);
  });

  it('exits 2 without --out', async () => {
    expect((await cli('generate', example, '--defaults')).code).toBe(2);
  });
});
