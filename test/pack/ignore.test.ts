/** `pack` packs what the author meant: .gitignore honoured, secrets and environments left out, never its own archives. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { defaultOutDir, packTemplate } from '../../src/pack/index.js';
import { parseGitignore } from '../../src/pack/ignore-rules.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

async function packedFiles(files: Record<string, string | object>): Promise<string[]> {
  const dir = await writeTemplate(files);
  return (await packTemplate(dir, { outDir: await tempDir() })).files;
}

describe('pack and .gitignore', () => {
  it('honours the root and nested .gitignore files with git semantics', async () => {
    const files = await packedFiles({
      '.gitignore': '# build output\ndist/\n*.log\n!keep.log\n/top-only.txt\ntemplate/generated/**\n',
      'template/sub/.gitignore': 'local.txt\n!../nothing\n',
      'template/dist/bundle.js': 'x',
      'template/app.log': 'x',
      'template/keep.log': 'x',
      'top-only.txt': 'x',
      'template/top-only.txt': 'kept: the pattern is anchored at the root',
      'template/generated/a/b.txt': 'x',
      'template/sub/local.txt': 'x',
      'template/local.txt': 'kept: the nested rule covers template/sub only',
    });
    expect(files).toEqual(expect.arrayContaining(['template/keep.log', 'template/top-only.txt', 'template/local.txt', '.gitignore', 'template/sub/.gitignore']));
    for (const left of ['template/dist/bundle.js', 'template/app.log', 'top-only.txt', 'template/generated/a/b.txt', 'template/sub/local.txt']) expect(files).not.toContain(left);
  });

  it('lets a deeper .gitignore re-include what a shallower one ignored', async () => {
    const files = await packedFiles({ '.gitignore': '*.txt\n', 'template/docs/.gitignore': '!*.txt\n', 'template/docs/guide.txt': 'x', 'template/notes.txt': 'x' });
    expect(files).toContain('template/docs/guide.txt');
    expect(files).not.toContain('template/notes.txt');
  });

  it('parses comments, escapes, negations and folder-only lines', () => {
    const lines = parseGitignore('# c\n\n\\#hash\n!neg\nonly-dir/\n');
    expect(lines.map((l) => ({ negate: l.negate, directoryOnly: l.directoryOnly }))).toEqual([
      { negate: false, directoryOnly: false },
      { negate: true, directoryOnly: false },
      { negate: false, directoryOnly: true },
    ]);
    expect(lines[0]?.matches('a/#hash')).toBe(true);
  });
});

describe(".gitignore as git reads it (each expectation checked with git check-ignore)", () => {
  /** A .gitignore exercising negation, folder-only, anchored and escaped patterns; each path below is kept or left out as git decides. */
  const GITIGNORE = [
    '*.log',
    '!keep.log',
    'first.txt',
    '!first.txt',
    '!late.log',
    '*.log',
    'build/',
    '/root.txt',
    'docs/*.md',
    '\\#notes.txt',
    '\\!bang.txt',
    'star\\*.txt',
    'space\\ ',
    'a/**/b.txt',
    'logs/',
    '!logs/keep.txt',
    '[Tt]emp.txt',
    '',
  ].join('\n');
  const IGNORED = [
    'keep.log', // the later `*.log` undoes the earlier `!keep.log`: the last matching line wins
    'app.log',
    'late.log', // a negation before the line it would undo does nothing
    'build/x', // a folder-only pattern, at any depth
    'template/out/build/x',
    'root.txt', // anchored by its leading slash
    'docs/a.md', // anchored by the slash in its middle
    '#notes.txt', // escaped `#`: a name, not a comment
    '!bang.txt', // escaped `!`: a name, not a negation
    'star*.txt', // escaped `*`: the character itself
    'space ', // escaped trailing space: part of the name
    'a/b.txt', // `**` matches no folder too
    'a/x/y/b.txt',
    'logs/keep.txt', // a file in an ignored folder cannot be re-included
    'Temp.txt',
    'temp.txt',
  ];
  const KEPT = [
    'first.txt', // re-included by the next line
    'template/build', // a file, not a folder: `build/` does not match it
    'template/root.txt', // `/root.txt` is anchored at the .gitignore's folder
    'template/docs/a.md', // `docs/*.md` too
    'docs/sub/b.md', // `*` does not cross a slash
    'starX.txt',
    'space', // without the escaped space
    'xemp.txt',
  ];

  it('leaves out and keeps exactly what git would', async () => {
    const files = await packedFiles({ '.gitignore': GITIGNORE, ...Object.fromEntries([...IGNORED, ...KEPT].map((file) => [file, 'x'])) });
    expect(IGNORED.filter((file) => files.includes(file))).toEqual([]);
    expect(KEPT.filter((file) => !files.includes(file))).toEqual([]);
  });

  it('anchors a nested .gitignore at its own folder, and lets its negation win over the root one', async () => {
    const files = await packedFiles({
      '.gitignore': '*.tmp\n',
      'template/sub/.gitignore': '/local.txt\n!wanted.tmp\nnested/\n',
      'template/sub/local.txt': 'x',
      'template/sub/deeper/local.txt': 'kept: anchored at template/sub',
      'template/local.txt': 'kept: outside template/sub',
      'template/sub/wanted.tmp': 'kept: re-included by the deeper file',
      'template/other.tmp': 'x',
      'template/sub/nested/file.txt': 'x',
    });
    expect(files).toEqual(expect.arrayContaining(['template/sub/deeper/local.txt', 'template/local.txt', 'template/sub/wanted.tmp']));
    for (const left of ['template/sub/local.txt', 'template/other.tmp', 'template/sub/nested/file.txt']) expect(files).not.toContain(left);
  });
});

describe('what pack always leaves out', () => {
  it('leaves out .env files, .venv, __pycache__ and its own archives', async () => {
    const files = await packedFiles({
      '.env': 'SECRET=1',
      'template/.env.local': 'SECRET=2',
      '.venv/bin/python': 'x',
      'template/__pycache__/m.cpython-312.pyc': 'x',
      'demo-template-1.0.0.tgz': 'an earlier pack',
      'template/demo-template-0.9.0-beta.1.tgz': 'another',
      'template/other-1.0.0.tgz': 'kept: not this template\'s archive',
    });
    for (const left of ['.env', 'template/.env.local', '.venv/bin/python', 'template/__pycache__/m.cpython-312.pyc', 'demo-template-1.0.0.tgz', 'template/demo-template-0.9.0-beta.1.tgz']) {
      expect(files).not.toContain(left);
    }
    expect(files).toContain('template/other-1.0.0.tgz');
  });

  it('packs a .env file the manifest names in its files rules', async () => {
    const files = await packedFiles({
      'template.json': { ...validManifest, files: [{ path: '.env.example', when: 'features contains "api"' }] },
      'template/.env.example': 'PORT=3000',
      'template/.env': 'SECRET=1',
    });
    expect(files).toContain('template/.env.example');
    expect(files).not.toContain('template/.env');
  });
});

describe("the manifest's include globs", () => {
  it('pack a .env or gitignored file on purpose, and nothing else', async () => {
    const files = await packedFiles({
      'template.json': { ...validManifest, include: ['template/.env.example', 'template/build/keep.txt'] },
      '.gitignore': 'template/build/*\n',
      'template/.env.example': 'PORT=3000',
      'template/.env': 'SECRET=1',
      'template/build/keep.txt': 'x',
      'template/build/drop.txt': 'x',
    });
    expect(files).toEqual(expect.arrayContaining(['template/.env.example', 'template/build/keep.txt']));
    expect(files).not.toContain('template/.env');
    expect(files).not.toContain('template/build/drop.txt');
  });
});

describe('the default output folder', () => {
  it('is outside the template folder', async () => {
    const dir = await writeTemplate();
    await mkdir(path.join(dir, 'template', 'deep'), { recursive: true });
    expect(defaultOutDir(dir, dir)).toBe(path.dirname(dir));
    expect(defaultOutDir(dir, path.join(dir, 'template', 'deep'))).toBe(path.dirname(dir));
    const elsewhere = await tempDir();
    expect(defaultOutDir(dir, elsewhere)).toBe(elsewhere);
    await writeFile(path.join(elsewhere, 'x'), '');
  });
});
