import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { generateProject, LOCK_FILE, OutputNotEmptyError, type TemplateLock } from '../../src/template/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const example = path.resolve('examples/templates/node-service');
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const result: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) result.push(...(await listFiles(path.join(dir, entry.name), relative)));
    else result.push(relative);
  }
  return result.sort();
}

describe('generateProject', () => {
  it('generates the example with the spec computed values and a lock file listing every file with its sha256', async () => {
    const out = path.join(await tempDir(), 'proj');
    const result = await generateProject(example, out, { projectName: 'my-cool-app' });
    const pkg = JSON.parse(await readFile(path.join(out, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('my-cool-app');
    expect(await readFile(path.join(out, 'src/app.ts'), 'utf8')).toContain('MyCoolApp');

    const lock = JSON.parse(await readFile(path.join(out, LOCK_FILE), 'utf8')) as TemplateLock;
    expect(lock.template).toEqual({ name: 'node-service', version: '1.1.0' });
    expect(lock.computed).toEqual({ packageName: 'my-cool-app', className: 'MyCoolApp' });
    expect(lock.answers.projectName).toBe('my-cool-app');
    const files = (await listFiles(out)).filter((f) => f !== LOCK_FILE);
    expect(Object.keys(lock.files).sort()).toEqual(files);
    for (const file of files) expect(lock.files[file]?.sha256).toBe(sha256(await readFile(path.join(out, file))));
    expect(result.files.length).toBe(files.length);
  });

  it('leaves out files whose rule is false and keeps them when it is true', async () => {
    const plain = path.join(await tempDir(), 'plain');
    await generateProject(example, plain, {});
    const plainFiles = await listFiles(plain);
    expect(plainFiles).not.toContain('Dockerfile');
    expect(plainFiles).not.toContain('src/db.ts');
    const full = path.join(await tempDir(), 'full');
    await generateProject(example, full, { features: ['auth', 'database', 'api', 'testing', 'docker'], database: 'mongodb' });
    const fullFiles = await listFiles(full);
    expect(fullFiles).toEqual(expect.arrayContaining(['Dockerfile', 'src/db.ts', 'src/auth.ts']));
    expect(JSON.parse(await readFile(path.join(full, 'package.json'), 'utf8')).dependencies).toHaveProperty('mongodb');
  });

  it('renders file and folder names, drops .liquid and leaves out a name that renders empty', async () => {
    const dir = await writeTemplate({
      'template/src/{{ projectName }}/index.ts': 'export const name = "{{ projectName }}";\n',
      'template/config.json.liquid': '{"name": {{ projectName | json }}}\n',
      'template/{% if features contains "testing" %}test.txt{% endif %}': 'tests\n',
    });
    const out = path.join(await tempDir(), 'p');
    await generateProject(dir, out, { projectName: 'demo' });
    const files = await listFiles(out);
    expect(files).toEqual(expect.arrayContaining(['src/demo/index.ts', 'config.json']));
    expect(files).not.toContain('test.txt');
    expect(JSON.parse(await readFile(path.join(out, 'config.json'), 'utf8'))).toEqual({ name: 'demo' });
  });

  it('copies binary files byte for byte and keeps the executable bit', async () => {
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x7b, 0x7b, 0x20, 0x78, 0x20, 0x7d, 0x7d, 0xff]);
    const dir = await writeTemplate({ 'template/logo.png': bytes, 'template/run.sh': '#!/bin/sh\necho {{ projectName }}\n' });
    await chmod(path.join(dir, 'template/run.sh'), 0o755);
    const out = path.join(await tempDir(), 'p');
    await generateProject(dir, out, {});
    expect((await readFile(path.join(out, 'logo.png'))).equals(bytes)).toBe(true);
    expect((await stat(path.join(out, 'run.sh'))).mode & 0o111).not.toBe(0);
  });

  it('refuses a non-empty output folder without force, and writes into it with force', async () => {
    const out = await tempDir();
    await writeFile(path.join(out, 'keep.txt'), 'mine');
    await expect(generateProject(example, out, {})).rejects.toThrow(OutputNotEmptyError);
    expect(await readdir(out)).toEqual(['keep.txt']);
    await generateProject(example, out, {}, { force: true });
    expect(await readFile(path.join(out, 'keep.txt'), 'utf8')).toBe('mine');
    expect(await readdir(out)).toContain('package.json');
  });

  it('writes into an existing empty folder', async () => {
    const out = await tempDir();
    await generateProject(example, out, {});
    expect(await readdir(out)).toContain(LOCK_FILE);
  });

  it('leaves nothing behind when rendering fails half-way', async () => {
    const dir = await writeTemplate({
      'template/a.txt': 'fine {{ projectName }}',
      'template/z.txt': '{{ projectName | no_such_filter }}',
    });
    const parent = await tempDir();
    const out = path.join(parent, 'p');
    await expect(generateProject(dir, out, {})).rejects.toThrow(/z\.txt: its content cannot be rendered: undefined filter: no_such_filter/);
    expect(await readdir(parent)).toEqual([]);
  });

  it('leaves an existing folder as it was when answers are bad', async () => {
    const out = await tempDir();
    await mkdir(path.join(out, 'sub'));
    await expect(generateProject(example, out, { projectName: 'Bad Name' }, { force: true })).rejects.toThrow(/projectName/);
    expect(await readdir(out)).toEqual(['sub']);
  });

  it('refuses a name that renders to a path', async () => {
    const dir = await writeTemplate({ 'template/{{ projectName }}.txt': 'x' });
    await expect(generateProject(dir, path.join(await tempDir(), 'p'), { projectName: 'a' })).resolves.toBeTruthy();
    const dir2 = await writeTemplate({
      'template.vars.json': { variables: { name: { type: 'string', default: '../../escape' } } },
      'template.prompts.json': { prompts: [] },
      'template/{{ name }}.txt': 'x',
    });
    await expect(generateProject(dir2, path.join(await tempDir(), 'p'), {})).rejects.toThrow(/not a single file name/);
  });

  it('refuses a template whose manifest is invalid', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, version: '1' } });
    await expect(generateProject(dir, path.join(await tempDir(), 'p'), {})).rejects.toThrow(/\/version: must be MAJOR.MINOR.PATCH/);
  });
});
