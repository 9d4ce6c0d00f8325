import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { generateProject, lintTemplate, testTemplate, validateTemplate } from '../../src/template/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const manifest = (extra: object) => ({ ...validManifest, ...extra });
// A Jinja template of the generated app: full of braces that are not meant for Liquid, and not valid Liquid either.
const jinja = '{% extends "base.html" %}\n{% block body %}<p>{{ user.name | title }}</p>{# a comment #}{% endblock %}\n';
const workflow = 'on: push\njobs:\n  test:\n    runs-on: ${{ matrix.os }}\n    steps:\n      - run: echo ${{ github.sha }}\n';

describe('verbatim files', () => {
  it('are copied byte for byte and never parsed, their paths still rendered', async () => {
    const dir = await writeTemplate({
      'template.json': manifest({ verbatim: ['app/templates/**', '.github/workflows/*.yml', 'theme/*.liquid'] }),
      'template/app/templates/index.html': jinja,
      'template/app/templates/{{ projectName }}/page.html': jinja,
      'template/.github/workflows/ci.yml': workflow,
      'template/theme/header.liquid': '{{ section.settings.title }}\n',
      'template/app/main.py': 'NAME = "{{ projectName }}"\n',
    });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const out = path.join(await tempDir(), 'p');
    const result = await generateProject(dir, out, { projectName: 'demo' });
    expect(await readFile(path.join(out, 'app/templates/index.html'), 'utf8')).toBe(jinja);
    expect(await readFile(path.join(out, 'app/templates/demo/page.html'), 'utf8')).toBe(jinja);
    expect(await readFile(path.join(out, '.github/workflows/ci.yml'), 'utf8')).toBe(workflow);
    // A verbatim file is no template: it keeps its .liquid suffix (a Shopify theme's sections).
    expect(await readFile(path.join(out, 'theme/header.liquid'), 'utf8')).toBe('{{ section.settings.title }}\n');
    expect(await readFile(path.join(out, 'app/main.py'), 'utf8')).toBe('NAME = "demo"\n');
    expect(result.files.map((f) => f.path)).toContain('app/templates/demo/page.html');
    expect((await testTemplate(dir)).passed).toBe(true);
  });

  it('are neither parsed by validate nor read by the Jinja habit rules of lint', async () => {
    const dir = await writeTemplate({
      'template.json': manifest({ verbatim: ['app/templates/**'] }),
      'template/app/templates/index.html': jinja,
    });
    const findings = (await lintTemplate(dir)).findings.filter((f) => f.file.startsWith('template/app'));
    expect(findings).toEqual([]);
  });

  it('without the field the same file is a Liquid error at its line', async () => {
    const dir = await writeTemplate({ 'template/app/templates/index.html': jinja });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ file: 'template/app/templates/index.html', code: 'LIQUID_SYNTAX', line: 1 }));
  });

  it('must be a list of non-empty globs', async () => {
    const dir = await writeTemplate({ 'template.json': manifest({ verbatim: ['ok/**', ''] }) });
    expect((await validateTemplate(dir)).errors).toContainEqual(expect.objectContaining({ file: 'template.json', pointer: '/verbatim/1' }));
  });
});

describe('globs from a template are matched in linear time', () => {
  it('does not hang on a glob built to make a backtracking matcher run for years', async () => {
    const { globMatcher } = await import('../../src/core/glob.js');
    const evil = `${'*a'.repeat(40)}b`;
    const name = 'a'.repeat(5000);
    // A step count, not a clock: the linear matcher answers; a backtracking one would not return.
    expect(globMatcher(evil)(name)).toBe(false);
    const { verbatimRule } = await import('../../src/template/text-files.js');
    expect(verbatimRule([evil])(name)).toBe(false);
  });
});
