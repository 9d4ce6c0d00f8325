/**
 * Templates come from strangers: bounded JSON files, patterns that cannot hang an answer, a total
 * budget for generation, and variable names checked as own properties.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  AnswersError,
  generateProject,
  lintTemplate,
  loadTemplate,
  RenderError,
  renderTemplate,
  resolveAnswers,
  TemplateLoadError,
  validateTemplate,
} from '../../src/template/index.js';
import { tempDir, validVariables, writeTemplate } from '../helpers/fixtures.js';

describe("a template's JSON files", () => {
  it('are refused over 1 MiB each, naming the file and the limit', async () => {
    const padding = 'x'.repeat(1024 * 1024);
    const dir = await writeTemplate({ 'template.prompts.json': `{"prompts": [], "padding": "${padding}"}` });
    const { errors } = await validateTemplate(dir);
    expect(errors).toContainEqual(expect.objectContaining({ file: 'template.prompts.json', code: 'FILE_TOO_LARGE', message: expect.stringContaining('at most 1048576 bytes') }));
    await expect(loadTemplate(dir)).rejects.toThrow(TemplateLoadError);
  });
});

describe('validation patterns', () => {
  const unsafe = { ...validVariables, variables: { ...validVariables.variables, projectName: { type: 'string', default: 'my-app', validation: '^(a+)+$' } } };

  it('are checked for catastrophic backtracking when the template is loaded', async () => {
    const dir = await writeTemplate({ 'template.vars.json': unsafe, 'template.prompts.json': { prompts: [] } });
    const error = await loadTemplate(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemplateLoadError);
    expect((error as TemplateLoadError).message).toMatch(/validation of variable "projectName" "\^\(a\+\)\+\$" is refused: it is prone to catastrophic backtracking/);
  });

  it('of a template that reached a registry before that check are never run on an answer', async () => {
    const template = await loadTemplate(await writeTemplate());
    const poisoned = { ...template, variables: { ...template.variables, projectName: { type: 'string', validation: '^(a+)+$' } } } as typeof template;
    const started = Date.now();
    const error = (() => {
      try {
        resolveAnswers(poisoned, { projectName: `${'a'.repeat(40)}!` });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(AnswersError);
    expect((error as Error).message).toMatch(/is not run: it is prone to catastrophic backtracking/);
  });

  it('are matched against answers of bounded length only', async () => {
    const template = await loadTemplate(await writeTemplate());
    expect(() => resolveAnswers(template, { projectName: 'a'.repeat(20_000) })).toThrow(/at most 10000 are matched/);
  });
});

describe('the generation budget', () => {
  const slow = '{% for i in (1..300) %}{% for j in (1..300) %}x{% endfor %}{% endfor %}';

  it('stops a generation that passes its total time budget, naming the file it was rendering', async () => {
    const dir = await writeTemplate({ 'template/a.txt': slow, 'template/b.txt': slow, 'template/c.txt': slow });
    const template = await loadTemplate(dir);
    const error = await renderTemplate(template, resolveAnswers(template), { maxTotalMs: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RenderError);
    // Which file the 5 ms run out in depends on the machine's load; whichever it is, it is named.
    const { file, message } = error as RenderError;
    expect(await readdir(path.join(dir, 'template'), { recursive: true })).toContain(file);
    expect(message).toBe(`${file}: generation passed its time budget of 5 ms (maxTotalMs) while rendering this file`);
  });

  it('stops a generation whose output passes its total size budget, naming the file', async () => {
    const dir = await writeTemplate({ 'template/a.txt': 'x'.repeat(600), 'template/b.txt': 'y'.repeat(600) });
    const template = await loadTemplate(dir);
    const error = await renderTemplate(template, resolveAnswers(template), { maxTotalBytes: 1000 }).catch((e: unknown) => e);
    expect((error as RenderError).file).toBe('b.txt');
    expect((error as Error).message).toMatch(/output budget of 1000 bytes/);
  });

  it('leaves a generous default', async () => {
    const template = await loadTemplate(await writeTemplate({ 'template/a.txt': slow }));
    const files = await renderTemplate(template, resolveAnswers(template));
    expect(files.find((f) => f.path === 'a.txt')?.content.length).toBe(90_000);
  });
});

describe('variable names', () => {
  const named = (names: Record<string, object>) => ({ variables: { ...validVariables.variables, ...names }, computed: validVariables.computed });

  it('refuses __proto__, constructor and prototype at validation, saying why', async () => {
    const text = `{"variables": {"projectName": {"type": "string", "default": "my-app"}, "constructor": {"type": "string", "default": "x"}, "__proto__": {"type": "string", "default": "y"}}}`;
    const dir = await writeTemplate({ 'template.vars.json': text, 'template.prompts.json': { prompts: [] } });
    const { errors } = await validateTemplate(dir);
    const reserved = errors.filter((e) => e.code === 'RESERVED_NAME');
    expect(reserved.map((e) => e.pointer).sort()).toEqual(['/variables/__proto__', '/variables/constructor']);
    expect(reserved[0]?.message).toMatch(/has a reserved name .* rename it/);
    expect(reserved[0]?.line).toBe(1);
    expect((await lintTemplate(dir)).findings.some((f) => f.message.includes('reserved name'))).toBe(true);
  });

  it('makes every other name work, toString and hasOwnProperty included', async () => {
    const dir = await writeTemplate({
      'template.vars.json': named({ toString: { type: 'string', default: 'ts-default' }, hasOwnProperty: { type: 'string', default: 'hop-default' }, valueOf: { type: 'string', default: 'v' } }),
      'template.prompts.json': { prompts: [] },
      'template/names.txt': '{{ toString }}|{{ hasOwnProperty }}|{{ valueOf }}',
    });
    const out = path.join(await tempDir(), 'project');
    const result = await generateProject(dir, out, { toString: 'given', hasOwnProperty: 'also given' });
    expect(await readFile(path.join(out, 'names.txt'), 'utf8')).toBe('given|also given|v');
    expect(result.answers).toMatchObject({ toString: 'given', hasOwnProperty: 'also given', valueOf: 'v' });
  });

  it('calls an answer to a name that is no variable "not a variable", never "a computed value"', async () => {
    const template = await loadTemplate(await writeTemplate());
    const error = (() => {
      try {
        resolveAnswers(template, JSON.parse('{"constructor": "x", "toString": "y", "__proto__": "z"}') as Record<string, unknown>);
        return undefined;
      } catch (e) {
        return e as AnswersError;
      }
    })();
    expect(error).toBeInstanceOf(AnswersError);
    expect(error?.message).not.toMatch(/computed value/);
    expect(error?.message).toMatch(/constructor.*is not a variable/s);
  });
});


describe('generate --force into an existing folder', () => {
  it('leaves the old content byte for byte when writing fails half-way, and no temp folder', async () => {
    const dir = await writeTemplate({ 'template/a.txt': 'new a', 'template/sub/x.txt': 'new x' });
    const parent = await tempDir('tr-force-');
    const out = path.join(parent, 'project');
    await mkdir(out);
    await writeFile(path.join(out, 'README.md'), 'my own readme');
    await writeFile(path.join(out, 'a.txt'), 'my own a');
    // A file where the template needs a folder: the move fails after README.md and a.txt were replaced.
    await writeFile(path.join(out, 'sub'), 'a file in the way');
    await expect(generateProject(dir, out, {}, { force: true })).rejects.toThrow();
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('my own readme');
    expect(await readFile(path.join(out, 'a.txt'), 'utf8')).toBe('my own a');
    expect(await readFile(path.join(out, 'sub'), 'utf8')).toBe('a file in the way');
    expect((await readdir(out)).sort()).toEqual(['README.md', 'a.txt', 'sub']);
    expect(await readdir(parent)).toEqual(['project']);
  });

  it('refuses, before writing anything, a folder where the template writes a file (its content is never lost)', async () => {
    const dir = await writeTemplate({ 'template/a.txt': 'new a' });
    const out = await tempDir('tr-force-dir-');
    await mkdir(path.join(out, 'README.md'));
    await writeFile(path.join(out, 'README.md', 'precious.txt'), 'keep me');
    await writeFile(path.join(out, 'a.txt'), 'my own a');
    await expect(generateProject(dir, out, {}, { force: true })).rejects.toThrow(/README\.md exists and is not a file; move it away first/);
    expect(await readFile(path.join(out, 'README.md', 'precious.txt'), 'utf8')).toBe('keep me');
    expect(await readFile(path.join(out, 'a.txt'), 'utf8')).toBe('my own a');
  });
});
