import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { MAX_UNKNOWN_NAME_PROBLEMS } from '../../src/template/content-check.js';
import { lintTemplate } from '../../src/template/lint.js';
import { closestName, editDistance } from '../../src/template/suggest.js';
import { generateProject, validateTemplate, type TemplateValidationError } from '../../src/template/index.js';
import { tempDir, validVariables, writeTemplate, type FileTree } from '../helpers/fixtures.js';

/** The 1-based line and column where `needle` starts in `text`. */
function positionOf(text: string, needle: string): { line: number; column: number } {
  const index = text.indexOf(needle);
  if (index < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

async function errorsOf(files: FileTree): Promise<TemplateValidationError[]> {
  return (await validateTemplate(await writeTemplate(files))).errors;
}

const onlyCode = (errors: TemplateValidationError[], code: string): TemplateValidationError[] => errors.filter((e) => e.code === code);

describe('validate: names in content files and file names', () => {
  it('reports an unknown variable at its line and column, with the closest known name', async () => {
    const text = 'line one\n  Name: {{ projcetName }}\n';
    const errors = await errorsOf({ 'template/README.md': text });
    expect(errors).toEqual([
      {
        file: 'template/README.md',
        pointer: '',
        code: 'UNKNOWN_CONTENT_VARIABLE',
        ...positionOf(text, 'projcetName'),
        message: expect.stringMatching(/^names unknown variable "projcetName" \(did you mean "projectName"\?\); it would render empty\. Declare it in template\.vars\.json, fix the spelling/),
      },
    ]);
  });

  it('reports each unknown name once per file, saying how often it is used', async () => {
    const errors = await errorsOf({ 'template/a.txt': '{{ nope }} {{ nope }}\n{{ nope | upcase }}\n' });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ line: 1, column: 4, message: expect.stringContaining('(used 3 times)') });
    expect(errors[0]?.message).not.toContain('did you mean');
  });

  it('reports an unknown variable in a file or folder name', async () => {
    const errors = await errorsOf({ 'template/src/{{ projectNam }}/x.txt': 'x' });
    expect(errors).toEqual([
      expect.objectContaining({
        file: 'template/src/{{ projectNam }}',
        code: 'UNKNOWN_CONTENT_VARIABLE',
        line: 1,
        column: 1,
        message: expect.stringMatching(/^its name names unknown variable "projectNam" \(did you mean "projectName"\?\)/),
      }),
    ]);
  });

  it('knows variables, computed values, packageName and className, loop variables, locals and forloop', async () => {
    const text = [
      '{{ projectName }} {{ description }} {{ packageName }} {{ className }}',
      '{% for feature in features %}{{ forloop.index }}: {{ feature | upcase }}{% endfor %}',
      '{% assign title = projectName | upcase %}{{ title }}',
      '{% capture banner %}** {{ title }} **{% endcapture %}{{ banner }}',
      '{% tablerow f in features %}{{ tablerowloop.col }}{{ f }}{% endtablerow %}',
      '{% raw %}{{ not.a.variable }}{% endraw %} {% if features == empty or description == blank %}{% endif %}',
      '{% increment counter %}{{ features.size }} {{ features.first }}',
    ].join('\n');
    expect(await errorsOf({ 'template/all.txt': text, 'template/{{ className }}.txt': 'x' })).toEqual([]);
  });

  it('knows the names a render or include passes to the file it renders', async () => {
    const errors = await errorsOf({
      'template/main.txt': '{% assign shared = "s" %}{% render "partials/card.liquid", title: projectName %}{% include "partials/box.liquid" %}',
      'template/partials/card.liquid': '[{{ title }}]',
      'template/partials/box.liquid': '[{{ shared }}] [{{ missing }}]',
    });
    expect(errors).toEqual([expect.objectContaining({ file: 'template/partials/box.liquid', message: expect.stringContaining('"missing"') })]);
  });

  it('reports an unknown property of an object variable whose properties are declared', async () => {
    const variables = {
      ...validVariables,
      variables: {
        ...validVariables.variables,
        author: { type: 'object', properties: { name: { type: 'string', default: 'A' }, email: { type: 'string', default: 'a@b.c' } } },
      },
    };
    const text = '{{ author.name }} <{{ author.emial }}> {{ author.size }}\n';
    const errors = await errorsOf({ 'template.vars.json': variables, 'template/AUTHORS': text });
    expect(errors).toEqual([
      expect.objectContaining({
        file: 'template/AUTHORS',
        ...positionOf(text, 'author.emial'),
        message: expect.stringMatching(/^names unknown property "emial" of variable "author" \(did you mean "email"\?\)/),
      }),
    ]);
  });

  it('lists the first 200 unknown names of a template full of them, and counts the rest', async () => {
    const text = Array.from({ length: 300 }, (_, i) => `{{ unknown_${i} }}`).join('\n');
    const errors = await errorsOf({ 'template/many.txt': text });
    expect(errors).toHaveLength(MAX_UNKNOWN_NAME_PROBLEMS + 1);
    expect(errors.at(-1)).toMatchObject({ file: 'template', message: 'and 100 more unknown name(s) in the content folder, not listed; fix the ones above first' });
  });

  it('leaves generation alone: a template published before these checks still generates, the unknown name empty', async () => {
    const dir = await writeTemplate({ 'template/README.md': '# {{ projcetName }}!\n' });
    expect((await validateTemplate(dir)).valid).toBe(false);
    const out = path.join(await tempDir(), 'out');
    await generateProject(dir, out, {});
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('# !\n');
  });

  it('does not look inside binary files', async () => {
    expect(await errorsOf({ 'template/logo.bin': Buffer.from([0, 123, 123, 32, 110, 111, 112, 101, 32, 125, 125]) })).toEqual([]);
  });
});

describe('validate: Liquid syntax and filters of content files and file names', () => {
  it('reports a syntax error where liquidjs finds it', async () => {
    const errors = await errorsOf({ 'template/src/app.js': 'const a = 1;\nconst b = "{{ projectName | upcase";\n' });
    expect(errors).toEqual([
      expect.objectContaining({ file: 'template/src/app.js', code: 'LIQUID_SYNTAX', line: 2, message: expect.stringMatching(/^is not valid Liquid: /) }),
    ]);
  });

  it('reports an unknown filter at its name, with the closest filter', async () => {
    const text = 'a\n  {{ projectName | pascal_cse }}\n';
    const errors = await errorsOf({ 'template/x.md': text });
    expect(errors).toEqual([
      expect.objectContaining({
        file: 'template/x.md',
        code: 'UNKNOWN_FILTER',
        ...positionOf(text, 'pascal_cse'),
        message: expect.stringMatching(/^is not valid Liquid: unknown filter "pascal_cse" \(did you mean "pascal_case"\?\)/),
      }),
    ]);
  });

  it('reports a file name that is not valid Liquid, or uses an unknown filter', async () => {
    const errors = await errorsOf({ 'template/{{ projectName.md': 'x', 'template/{{ projectName | nope }}.md': 'y' });
    expect(errors.map((e) => [e.file, e.code])).toEqual([
      ['template/{{ projectName | nope }}.md', 'UNKNOWN_FILTER'],
      ['template/{{ projectName.md', 'LIQUID_SYNTAX'],
    ]);
    expect(errors.every((e) => e.message.startsWith('its name is not valid Liquid'))).toBe(true);
  });

  it('checks the content folder the manifest names', async () => {
    const errors = await errorsOf({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', content: 'files' },
      'files/README.md': '{{ nope }}',
    });
    expect(onlyCode(errors, 'UNKNOWN_CONTENT_VARIABLE').map((e) => e.file)).toEqual(['files/README.md']);
  });
});

describe('lint reports content problems once, under their own rules', () => {
  it('unknown-variable and liquid-syntax findings carry the file, line and column', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', features: ['api', 'testing'] },
      'template/README.md': '# {{ projectName }} {{ description }} {{ features }} {{ packageName }}\n{{ projcetName }}\n',
      'template/x.md': '{{ projectName | upcse }}',
    });
    const { findings } = await lintTemplate(dir);
    expect(findings.map((f) => [f.file, f.line, f.column, f.severity, f.rule])).toEqual([
      ['template/README.md', 2, 4, 'error', 'unknown-variable'],
      ['template/x.md', 1, 18, 'error', 'liquid-syntax'],
    ]);
  });
});

describe('did you mean', () => {
  it('counts a swap of two neighbouring characters as one edit', () => {
    expect(editDistance('projcetName', 'projectName')).toBe(1);
    expect(editDistance('feature', 'features')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('suggests the closest name when it is close enough, and nothing otherwise', () => {
    expect(closestName('projcetName', ['projectName', 'description', 'features'])).toBe('projectName');
    expect(closestName('ProjectName', ['projectName', 'packageName'])).toBe('projectName');
    expect(closestName('colour', ['projectName', 'features'])).toBeUndefined();
    expect(closestName('x'.repeat(65), ['x'.repeat(64)])).toBeUndefined();
  });
});
