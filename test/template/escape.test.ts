import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { createEngine, generateProject } from '../../src/template/index.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';

/** Generates a one-file template and returns the rendered text, or the error. */
async function render(content: string, extra: Record<string, string> = {}): Promise<string> {
  const dir = await writeTemplate({ 'template/out.txt': content, ...extra });
  const out = path.join(await tempDir(), 'p');
  await generateProject(dir, out, {});
  return readFile(path.join(out, 'out.txt'), 'utf8');
}

describe('rendering untrusted templates', () => {
  it('gives no access to constructors or prototypes', async () => {
    const text = await render(
      [
        '{{ projectName.constructor }}',
        '{{ projectName.constructor.constructor }}',
        "{{ projectName.constructor.constructor('return process')() }}",
        '{{ features.__proto__ }}',
        '{{ features.constructor.name }}',
        '{% assign f = projectName.constructor %}{{ f.name }}',
      ].join('|'),
    ).catch((error: unknown) => String(error));
    expect(text).not.toMatch(/function|process|Object|String|Array/);
  });

  it('does not let __proto__ answers pollute prototypes', async () => {
    await render('{% assign __proto__ = "x" %}{{ __proto__.polluted }}').catch(() => undefined);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses to include a file outside the content folder', async () => {
    const outside = await tempDir();
    await writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET');
    const relative = path.relative('/', path.join(outside, 'secret.txt'));
    for (const payload of [
      `{% include '../../../../../../../../${relative}' %}`,
      `{% include '/${relative}' %}`,
      `{% render '../template.json' %}`,
      `{% layout '../README.md' %}`,
    ]) {
      const result = await render(payload).catch((error: unknown) => String(error));
      expect(result, payload).not.toContain('TOP SECRET');
      expect(result, payload).not.toContain('"name"');
    }
  });

  it('refuses an include that escapes through a symbolic link', async () => {
    const outside = await tempDir();
    await writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET');
    const dir = await writeTemplate({ 'template/out.txt': "{% include 'partials/link.txt' %}" });
    await symlink(path.join(outside, 'secret.txt'), path.join(dir, 'template', 'link.txt'));
    const out = path.join(await tempDir(), 'p');
    await expect(generateProject(dir, out, {})).rejects.toThrow(/symbolic link that points outside/);
  });

  it('allows an include inside the content folder', async () => {
    expect(await render("{% include 'partial.txt' %}", { 'template/partial.txt': 'hello {{ projectName }}' })).toBe('hello my-app');
  });

  it('stops a runaway loop with a clear error', async () => {
    const error = await render('{% for i in (1..100000000) %}{% for j in (1..100000000) %}x{% endfor %}{% endfor %}').catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(/out\.txt: its content cannot be rendered: .*limit/i);
  });

  it('stops a huge output built by doubling strings', async () => {
    const doubling = `{% assign s = "xxxxxxxxxxxxxxxx" %}${'{% assign s = s | append: s %}'.repeat(40)}{{ s }}`;
    const error = await render(doubling).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(/limit/i);
  });

  it('refuses a template larger than the parse limit', async () => {
    const error = await render(`{{ projectName }}${'a'.repeat(1_100_000)}`).catch((e: unknown) => e as Error);
    expect(String(error)).toMatch(/parse length limit|limit/i);
  });

  it('refuses a file whose rendered output is over the size limit', async () => {
    const dir = await writeTemplate({ 'template/out.txt': '{% for i in (1..2000) %}{{ big }}{% endfor %}' });
    const vars = { variables: { big: { type: 'string', default: 'y'.repeat(10_000) } } };
    await writeFile(path.join(dir, 'template.vars.json'), JSON.stringify(vars));
    await writeFile(path.join(dir, 'template.prompts.json'), JSON.stringify({ prompts: [] }));
    const parent = await tempDir();
    await expect(generateProject(dir, path.join(parent, 'p'), {}, { maxFileBytes: 1_000_000 })).rejects.toThrow(/more than the limit/);
    expect(await readdir(parent)).toEqual([]);
  });

  it('rejects filters that do not exist instead of ignoring them', async () => {
    await expect(render('{{ projectName | system }}')).rejects.toThrow(/undefined filter: system/);
  });
});

describe('the Liquid engine without a root folder (expressions, migration steps)', () => {
  /** A folder holding secret.txt, and the same tags naming it by absolute path and a file of the working folder by relative path. */
  async function payloads(): Promise<{ dir: string; sources: string[] }> {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'secret.txt'), 'TOP SECRET');
    const secret = path.join(dir, 'secret.txt');
    const sources = [secret, 'package.json'].flatMap((file) => [
      `{% include '${file}' %}`,
      `{% render '${file}' %}`,
      `{% layout '${file}' %}body`,
      `{% include "${file}" with projectName %}`,
    ]);
    return { dir, sources };
  }

  it('reads an include from its root when it has one (the payloads would work there)', async () => {
    const { dir } = await payloads();
    expect(await createEngine({ root: dir }).parseAndRender("{% include 'secret.txt' %}")).toBe('TOP SECRET');
  });

  it('refuses include, render and layout, by absolute or relative path, reading nothing from disk', async () => {
    const { sources } = await payloads();
    const engine = createEngine();
    for (const source of sources) {
      const rendered = await engine.parseAndRender(source, { projectName: 'x' }).then(
        (text: unknown) => `rendered: ${String(text)}`,
        (error: unknown) => `refused: ${String(error)}`,
      );
      expect(rendered, source).toMatch(/^refused: .*(Failed to lookup|not allowed)/);
      expect(rendered, source).not.toContain('TOP SECRET');
      expect(rendered, source).not.toContain('template-registry');
      expect(() => {
        engine.parseAndRenderSync(source, { projectName: 'x' });
      }, source).toThrow(/Failed to lookup|not allowed/);
    }
  });
});
