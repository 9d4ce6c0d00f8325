import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { extractArchive } from '../../src/archive/index.js';
import { packTemplate } from '../../src/pack/index.js';
import { generateProject, lintTemplate, testTemplate, validateTemplate } from '../../src/template/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const manifest = (extra: object) => ({ ...validManifest, ...extra });

const withPartials = (extra: Record<string, string | Buffer | object> = {}) =>
  writeTemplate({
    'template.json': manifest({ partials: 'partials' }),
    'partials/header.liquid': '# {{ title }} ({{ projectName }})\n',
    'partials/license': 'MIT License for {{ projectName }}\n',
    'template/README.md': '{% render "header", title: "Read me", projectName: projectName %}\n{% include "license" %}',
    'template/docs/guide.md': '{% render "header.liquid", title: "Guide", projectName: projectName %}{{ description }}\n',
    ...extra,
  });

describe('partials', () => {
  it('are read by render and include (with or without .liquid) and never generated', async () => {
    const dir = await withPartials();
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const out = path.join(await tempDir(), 'p');
    const result = await generateProject(dir, out, { projectName: 'demo' });
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('# Read me (demo)\n\nMIT License for demo\n');
    expect(await readFile(path.join(out, 'docs/guide.md'), 'utf8')).toBe('# Guide (demo)\nAn app\n');
    expect(result.files.map((f) => f.path).sort()).toEqual(['README.md', 'docs/guide.md']);
  });

  it('pass test without being generated or counted, and lint finds nothing', async () => {
    const dir = await withPartials();
    const report = await testTemplate(dir);
    expect(report.passed).toBe(true);
    expect(report.uncovered).toEqual([]);
    expect(report.sets.every((set) => set.files === 2)).toBe(true);
    const lint = await lintTemplate(dir);
    expect(lint.findings.filter((f) => f.severity === 'error')).toEqual([]);
  });

  it('are checked by validate as Liquid with the names the tag passes', async () => {
    const dir = await withPartials({
      'partials/footer.liquid': '{{ projcetName }} {% if %}\n',
      'partials/ok.liquid': '{{ label }}\n',
      'template/FOOTER.md': '{% render "ok", label: "x" %}',
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ file: 'partials/footer.liquid', code: 'LIQUID_SYNTAX', line: 1 }));
    expect(errors.filter((e) => e.file === 'partials/ok.liquid')).toEqual([]);
    const names = await withPartials({ 'partials/footer.liquid': '{{ projcetName }}\n', 'template/FOOTER.md': '{% include "footer" %}' });
    expect((await validateTemplate(names)).errors).toContainEqual(
      expect.objectContaining({ file: 'partials/footer.liquid', code: 'UNKNOWN_CONTENT_VARIABLE', message: expect.stringContaining('did you mean "projectName"') }),
    );
  });

  it('must be a folder of the template outside the content folder', async () => {
    const missing = await writeTemplate({ 'template.json': manifest({ partials: 'snippets' }) });
    expect((await validateTemplate(missing)).errors).toContainEqual(expect.objectContaining({ pointer: '/partials', code: 'FILE_NOT_FOUND' }));
    const outside = await writeTemplate({ 'template.json': manifest({ partials: '../elsewhere' }) });
    expect((await validateTemplate(outside)).errors).toContainEqual(expect.objectContaining({ pointer: '/partials', code: 'PATH_OUTSIDE_TEMPLATE' }));
    const inside = await writeTemplate({ 'template.json': manifest({ partials: 'template/_partials' }), 'template/_partials/x.liquid': 'x' });
    expect((await validateTemplate(inside)).errors).toContainEqual(expect.objectContaining({ pointer: '/partials', code: 'PARTIALS_IN_CONTENT' }));
  });

  it('cannot be reached outside the partials and content folders', async () => {
    const dir = await withPartials({ 'secret.txt': 'secret', 'template/LEAK.md': '{% include "../secret.txt" %}' });
    await expect(generateProject(dir, path.join(await tempDir(), 'p'), {})).rejects.toThrow(/LEAK\.md: its content cannot be rendered/);
  });

  it('are read as UTF-8 only: a partial in another encoding fails rendering instead of being corrupted', async () => {
    const dir = await withPartials({ 'partials/latin1.liquid': Buffer.from('caf\xe9 {{ projectName }}\n', 'latin1'), 'template/CAFE.md': '{% render "latin1", projectName: projectName %}' });
    await expect(generateProject(dir, path.join(await tempDir(), 'p'), {})).rejects.toThrow(/CAFE\.md: its content cannot be rendered: .*latin1\.liquid is not valid UTF-8/);
  });

  it('are packed, so that a project generates from the archive as from the folder', async () => {
    const dir = await withPartials();
    const packed = await packTemplate(dir, { outDir: await tempDir() });
    expect(packed.files).toEqual(expect.arrayContaining(['partials/header.liquid', 'partials/license']));
    const unpacked = await tempDir();
    await extractArchive(packed.file, unpacked);
    const out = path.join(await tempDir(), 'p');
    await generateProject(unpacked, out, { projectName: 'demo' });
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('# Read me (demo)\n\nMIT License for demo\n');
  });
});
