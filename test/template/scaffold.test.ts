import { chmod, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import {
  generateProject,
  lintTemplate,
  requireChangelogSection,
  scaffoldTemplate,
  ScaffoldError,
  testTemplate,
  validateTemplate,
} from '../../src/template/index.js';
import { tempDir } from '../helpers/fixtures.js';

const values = { name: 'hello-template', category: 'backend', description: 'A small starting point for any language.' };

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

describe('scaffoldTemplate', () => {
  it('writes the five files, a content folder, a change log with the first version and the publish workflow', async () => {
    const dir = path.join(await tempDir(), 'hello-template');
    const result = await scaffoldTemplate(dir, { ...values, now: () => new Date('2026-03-04T10:00:00Z') });
    expect(result.dir).toBe(dir);
    expect(await filesUnder(dir)).toEqual(result.files);
    expect(result.files).toEqual(
      expect.arrayContaining(['template.json', 'template.vars.json', 'template.prompts.json', 'README.md', 'CHANGELOG.md', '.github/workflows/publish.yml']),
    );
    expect(result.files.filter((file) => file.startsWith('template/')).length).toBeGreaterThan(0);

    const manifest = JSON.parse(await readFile(path.join(dir, 'template.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ ...values, version: '0.1.0' });
    const changelog = await readFile(path.join(dir, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(/^## \[0\.1\.0\] - 2026-03-04$/m);
    expect(requireChangelogSection(changelog, '0.1.0')).toMatch(/First version/);
  });

  it('passes validate, lint (no finding at all) and test as it is', async () => {
    const dir = path.join(await tempDir(), 'fresh');
    await scaffoldTemplate(dir, values);

    const validation = await validateTemplate(dir);
    expect(validation.errors).toEqual([]);
    expect(validation.valid).toBe(true);

    const lint = await lintTemplate(dir);
    expect(lint.findings).toEqual([]);

    const report = await testTemplate(dir);
    expect(report.uncovered).toEqual([]);
    expect(report.sets.flatMap((set) => set.problems)).toEqual([]);
    expect(report.passed).toBe(true);
    // Both outcomes of each feature's files rule are generated.
    expect(report.sets.length).toBeGreaterThanOrEqual(2);
  });

  it('generates a project whose README carries the answers and whose optional files follow the features', async () => {
    const dir = path.join(await tempDir(), 'fresh');
    await scaffoldTemplate(dir, values);
    const withDocs = path.join(await tempDir(), 'p1');
    await generateProject(dir, withDocs, { projectName: 'cool-app', description: 'Does cool things.', features: ['docs'] });
    expect(await filesUnder(withDocs)).toEqual(['.gitignore', '.template-lock.json', 'README.md', 'docs/index.md']);
    const readme = await readFile(path.join(withDocs, 'README.md'), 'utf8');
    expect(readme).toBe('# cool-app\n\nDoes cool things.\n\n## Getting started\n\nWrite here how to install, run and test cool-app.\n\nMore documentation is in [docs/index.md](docs/index.md).\n');

    const without = path.join(await tempDir(), 'p2');
    await generateProject(dir, without, { features: ['changelog'] });
    expect(await filesUnder(without)).toEqual(['.gitignore', '.template-lock.json', 'CHANGELOG.md', 'README.md']);
    expect(await readFile(path.join(without, 'README.md'), 'utf8')).toBe(
      '# my-project\n\nA new project.\n\n## Getting started\n\nWrite here how to install, run and test my-project.\n',
    );
    expect(await readFile(path.join(without, 'CHANGELOG.md'), 'utf8')).toContain('Created from the hello-template template.');
  });

  it('packs into an archive without the workflow, which uses this project\'s action on v* tags', async () => {
    const dir = path.join(await tempDir(), 'fresh');
    await scaffoldTemplate(dir, values);
    const workflow = await readFile(path.join(dir, '.github/workflows/publish.yml'), 'utf8');
    expect(workflow).toMatch(/tags: \['v\*'\]/);
    expect(workflow).toMatch(/contents: write/);
    expect(workflow).toMatch(/uses: template-registry\/template-registry@v1/);
    expect(workflow).toMatch(/registry-url: \$\{\{ vars\.TEMPLATE_REGISTRY_URL \}\}/);
    expect(workflow).toMatch(/registry-token: \$\{\{ secrets\.TEMPLATE_REGISTRY_TOKEN \}\}/);
    // Its inputs are the action's.
    const action = await readFile(path.resolve('action.yml'), 'utf8');
    for (const input of workflow.matchAll(/^ {10}([a-z-]+):/gm)) expect(action).toContain(`\n  ${input[1]}:\n`);

    const packed = await packTemplate(dir, { outDir: await tempDir() });
    expect(packed.files).not.toContain('.github/workflows/publish.yml');
    expect(packed.files).toContain('template/README.md');
  });

  it('refuses a name, category or description the manifest schema refuses, naming the field', async () => {
    const dir = path.join(await tempDir(), 'x');
    const attempt = (override: Partial<typeof values>): Promise<unknown> => scaffoldTemplate(dir, { ...values, ...override });
    await expect(attempt({ name: 'Hello World' })).rejects.toMatchObject({ field: 'name', message: expect.stringMatching(/^name must start with a lower-case letter/) as unknown });
    await expect(attempt({ category: 'cli' })).rejects.toMatchObject({
      field: 'category',
      message: expect.stringMatching(/^category must be one of "frontend", "backend", "fullstack", "mobile", "desktop" \(got "cli"\)/) as unknown,
    });
    await expect(attempt({ description: 'short' })).rejects.toMatchObject({ field: 'description', message: expect.stringMatching(/at least 10 characters/) as unknown });
    await expect(attempt({ name: '' })).rejects.toBeInstanceOf(ScaffoldError);
    await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a folder with files unless force, and with force replaces only its own files', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'notes.txt'), 'mine');
    await writeFile(path.join(dir, 'README.md'), 'old readme');
    await expect(scaffoldTemplate(dir, values)).rejects.toMatchObject({ field: 'dir', message: expect.stringMatching(/is not empty.*--force/) as unknown });
    expect(await filesUnder(dir)).toEqual(['README.md', 'notes.txt']);

    await scaffoldTemplate(dir, { ...values, force: true });
    expect(await readFile(path.join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toMatch(/^# hello-template/);
    expect((await validateTemplate(dir)).valid).toBe(true);
  });

  it('writes into an empty folder', async () => {
    const empty = await tempDir();
    await scaffoldTemplate(empty, values);
    expect((await validateTemplate(empty)).valid).toBe(true);
  });

  it('with force, never replaces a folder or writes through a link, and leaves the folder as it was', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'CHANGELOG.md'), 'old changelog');
    await mkdir(path.join(dir, 'template.json'));
    await writeFile(path.join(dir, 'template.json', 'keep.txt'), 'x');
    await expect(scaffoldTemplate(dir, { ...values, force: true })).rejects.toMatchObject({
      field: 'dir',
      message: expect.stringMatching(/template\.json exists and is not a file/) as unknown,
    });
    expect(await filesUnder(dir)).toEqual(['CHANGELOG.md', 'template.json/keep.txt']);
    expect(await readFile(path.join(dir, 'CHANGELOG.md'), 'utf8')).toBe('old changelog');
    expect((await readdir(path.dirname(dir))).filter((name) => name.startsWith(`.${path.basename(dir)}.tmp-`))).toEqual([]);

    // A content folder that is a link to somewhere else is not written through.
    const elsewhere = await tempDir();
    const linked = await tempDir();
    await symlink(elsewhere, path.join(linked, 'template'));
    await expect(scaffoldTemplate(linked, { ...values, force: true })).rejects.toThrow(/template exists and is not a folder/);
    expect(await readdir(elsewhere)).toEqual([]);
    expect(await readdir(linked)).toEqual(['template']);
  });

  it('refuses a path that is a file', async () => {
    const file = path.join(await tempDir(), 'file');
    await writeFile(file, 'x');
    await chmod(file, 0o644);
    await expect(scaffoldTemplate(file, values)).rejects.toMatchObject({ field: 'dir', message: expect.stringMatching(/is not a folder/) as unknown });
  });
});
