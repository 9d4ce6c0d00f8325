import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Liquid } from 'liquidjs';
import { describe, expect, it } from 'vitest';

import { createEngine, generateProject, validateTemplate } from '../../src/template/index.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';

/** Inputs a port from cookiecutter or copier meets: tags alone on their line, indented, nested, at the start and end of a file, outputs with dashes. */
const INPUTS = [
  'a\n{%- if on %}\nb\n{%- endif %}\nc\n',
  'a\n{% if on -%}\nb\n{% endif -%}\nc\n',
  'a\n{%- if on -%}\nb\n{%- endif -%}\nc\n',
  'a\n\n{%- if on -%}\n\nb\n\n{%- endif -%}\n\nc\n',
  'a\n    {%- if on %}\n    b\n    {%- endif %}\nc\n',
  '{% if on -%}\nfirst\n{% endif -%}\nrest\n',
  'x = [\n{%- for item in items %}\n  "{{ item }}",\n{%- endfor %}\n]\n',
  'name: {{- name -}} !\n',
  '{%- if off %}never{% else %}\n  else branch\n{%- endif -%}\n\ntail',
  'line\t \n\t{%- assign n = 1 -%}\t \nnext {{ n }}\n',
  'a\r\n{%- if on %}\r\nb\r\n{%- endif %}\r\nc\r\n',
];
const SCOPE = { on: true, off: false, items: ['x', 'y'], name: 'demo' };

describe('whitespace control', () => {
  it('trims exactly as stock liquidjs does, line breaks included', () => {
    const stock = new Liquid();
    const ours = createEngine();
    for (const input of INPUTS) {
      expect(ours.parseAndRenderSync(input, SCOPE), JSON.stringify(input)).toBe(stock.parseAndRenderSync(input, SCOPE));
    }
    // The case a mechanical port meets most: `{%-` takes the line break before the tag with it.
    expect(ours.parseAndRenderSync('a\n{%- if on %}\nb\n{%- endif %}\nc', SCOPE)).toBe('a\nb\nc');
  });

  it('keeps the former line-by-line trimming as the manifest option whitespace: "line"', () => {
    const line = createEngine({ whitespace: 'line' });
    expect(line.parseAndRenderSync('a\n{%- if on -%}\nb\n{%- endif -%}\nc\n', SCOPE)).toBe('a\nb\nc\n');
    expect(line.parseAndRenderSync('a\n{%- if on %}\nb\n{%- endif %}\nc\n', SCOPE)).toBe('a\n\nb\n\nc\n');
  });

  it('generates a Jinja-style template without the blank lines the former trimming added', async () => {
    const dir = await writeTemplate({ 'template/list.txt': 'items:\n{%- for f in features %}\n- {{ f }}\n{%- endfor %}\nend\n' });
    const out = path.join(await tempDir(), 'p');
    await generateProject(dir, out, { features: ['api', 'testing'] });
    expect(await readFile(path.join(out, 'list.txt'), 'utf8')).toBe('items:\n- api\n- testing\nend\n');
  });

  it('renders a template that asks for whitespace: "line" as before', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', features: ['api', 'testing'], whitespace: 'line' },
      'template/list.txt': 'items:\n{%- for f in features -%}\n- {{ f }}\n{%- endfor -%}\nend\n',
    });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const out = path.join(await tempDir(), 'p');
    await generateProject(dir, out, { features: ['api', 'testing'] });
    expect(await readFile(path.join(out, 'list.txt'), 'utf8')).toBe('items:\n- api\n- testing\nend\n');
  });

  it('refuses an unknown whitespace mode in the manifest', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', whitespace: 'greedy' },
    });
    const result = await validateTemplate(dir);
    expect(result.errors).toContainEqual(expect.objectContaining({ file: 'template.json', pointer: '/whitespace' }));
  });
});
