/**
 * One reader of a template folder (`readTemplateTree`): validate, lint, pack and generate give the
 * same verdict on the same symbolic links, and treat a binary file the same way.
 */
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate, selectPackFiles } from '../../src/pack/index.js';
import { generateProject } from '../../src/template/generate.js';
import { lintTemplate } from '../../src/template/lint.js';
import { readTemplateTree } from '../../src/template/tree.js';
import { validateTemplate } from '../../src/template/validate.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';

/** What each command makes of a template folder: accepted, or the text of its refusal. */
async function verdicts(dir: string): Promise<Record<'validate' | 'lint' | 'pack' | 'generate', string>> {
  const validation = await validateTemplate(dir);
  const lint = await lintTemplate(dir);
  const pack = await packTemplate(dir, { outDir: await tempDir() }).then(
    () => 'accepted',
    (error: unknown) => String(error),
  );
  const generate = await generateProject(dir, path.join(await tempDir(), 'project'), {}).then(
    () => 'accepted',
    (error: unknown) => String(error),
  );
  return {
    validate: validation.valid ? 'accepted' : validation.errors.map((e) => `${e.file}: ${e.message}`).join('\n'),
    lint: lint.errorCount === 0 ? 'accepted' : lint.findings.filter((f) => f.severity === 'error').map((f) => `${f.file}: ${f.message}`).join('\n'),
    pack,
    generate,
  };
}

/** Links that every command must refuse, each built in a fresh template; the path each refusal must name. */
const REFUSED_LAYOUTS: { name: string; named: string; make: (dir: string, outside: string) => Promise<void> }[] = [
  {
    name: 'a content file linked to a file outside the template',
    named: 'template/leak.txt',
    make: (dir, outside) => symlink(path.join(outside, 'secret.txt'), path.join(dir, 'template/leak.txt')),
  },
  {
    name: 'a folder beside the content linked to a folder outside the template',
    named: 'shared',
    make: (dir, outside) => symlink(outside, path.join(dir, 'shared')),
  },
  {
    name: 'a content folder linked out through ..',
    named: 'template/up',
    make: (dir) => symlink('../..', path.join(dir, 'template/up')),
  },
  {
    name: 'a link to nothing',
    named: 'template/gone.txt',
    make: (dir) => symlink('missing.txt', path.join(dir, 'template/gone.txt')),
  },
  {
    name: 'a link back to a folder that holds it',
    named: 'template/loop',
    make: (dir) => symlink('..', path.join(dir, 'template/loop')),
  },
];

describe('one symbolic-link policy for validate, lint, pack and generate', () => {
  for (const layout of REFUSED_LAYOUTS) {
    it(`refuses ${layout.name} in every command, naming the link`, async () => {
      const outside = await tempDir('tr-outside-');
      await writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
      const dir = await writeTemplate();
      await layout.make(dir, outside);
      const found = await verdicts(dir);
      for (const [command, verdict] of Object.entries(found)) {
        expect(verdict, command).not.toBe('accepted');
        expect(verdict, command).toContain(layout.named);
        expect(verdict, command).toMatch(/symbolic link/);
        expect(verdict, command).not.toContain('TOP SECRET');
      }
    });
  }

  it('follows links that stay inside the template, in every command alike', async () => {
    const dir = await writeTemplate({ 'template/real.txt': 'hello {{ projectName }}\n', 'shared/notes.txt': 'shared {{ projectName }}\n' });
    await symlink('real.txt', path.join(dir, 'template/alias.txt'));
    await symlink('../shared', path.join(dir, 'template/linked'));
    expect(await verdicts(dir)).toEqual({ validate: 'accepted', lint: 'accepted', pack: 'accepted', generate: 'accepted' });

    const out = path.join(await tempDir(), 'project');
    await generateProject(dir, out, {});
    expect(await readFile(path.join(out, 'alias.txt'), 'utf8')).toBe('hello my-app\n');
    expect(await readFile(path.join(out, 'linked/notes.txt'), 'utf8')).toBe('shared my-app\n');
    expect((await selectPackFiles(dir)).files).toEqual(expect.arrayContaining(['template/alias.txt', 'template/linked/notes.txt']));
  });

  it('lists but never opens version-control data and installed dependencies, whatever their links', async () => {
    const outside = await tempDir('tr-outside-');
    const dir = await writeTemplate({ 'node_modules/pkg/index.js': 'x', '.git/HEAD': 'ref: refs/heads/main\n' });
    await symlink(outside, path.join(dir, 'node_modules/linked-workspace'));
    const tree = await readTemplateTree(dir);
    expect(tree.problems).toEqual([]);
    expect(tree.entry('node_modules')).toMatchObject({ kind: 'directory', unread: true });
    expect(tree.entry('node_modules/pkg/index.js')).toBeUndefined();
    expect(await verdicts(dir)).toEqual({ validate: 'accepted', lint: 'accepted', pack: 'accepted', generate: 'accepted' });
  });
});

describe('one text/binary rule', () => {
  it('treats a binary file holding Liquid markers as bytes in validate, lint, generate and pack', async () => {
    // A NUL in the first 8 KiB makes a file binary: its `{{ unknown }}` is data, not Liquid.
    const binary = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n\0\0'), Buffer.from('{{ unknown_variable | no_such_filter }}'), Buffer.from([0xff, 0x00, 0x10])]);
    const dir = await writeTemplate({ 'template/logo.png': binary });
    expect(await verdicts(dir)).toEqual({ validate: 'accepted', lint: 'accepted', pack: 'accepted', generate: 'accepted' });

    const out = path.join(await tempDir(), 'project');
    await generateProject(dir, out, {});
    expect(Buffer.compare(await readFile(path.join(out, 'logo.png')), binary)).toBe(0);
    expect((await selectPackFiles(dir)).files).toContain('template/logo.png');
    const tree = await readTemplateTree(dir);
    expect(await tree.liquidText('template/logo.png')).toBeUndefined();
  });

  it('finds broken Liquid in a text file in validate, lint and generate alike', async () => {
    const dir = await writeTemplate({ 'template/notes.txt': '{{ unknown_variable | no_such_filter }}\n' });
    const found = await verdicts(dir);
    expect(found.validate).toContain('template/notes.txt');
    expect(found.lint).toContain('template/notes.txt');
    expect(found.generate).toContain('notes.txt');
  });
});

describe('the template read once', () => {
  it('gives validate, lint and pack the same tree object without reading the folder again', async () => {
    const dir = await writeTemplate({ 'template/a.txt': 'a {{ projectName }}\n' });
    const tree = await readTemplateTree(dir);
    await mkdir(path.join(dir, 'template/added-later'));
    await writeFile(path.join(dir, 'template/added-later/b.txt'), '{{ broken');
    // Read before the file was added: every step sees the folder as it was read.
    expect((await validateTemplate(tree)).valid).toBe(true);
    expect((await lintTemplate(tree)).errorCount).toBe(0);
    expect((await selectPackFiles(tree)).files).not.toContain('template/added-later/b.txt');
  });
});
