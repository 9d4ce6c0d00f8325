import { describe, expect, it } from 'vitest';

import { lintTemplate, type LintFinding, type LintResult } from '../../src/template/index.js';
import { validManifest, validPrompts, validVariables, writeTemplate, type FileTree } from '../helpers/fixtures.js';

const lintWith = async (files: FileTree): Promise<LintResult> =>
  lintTemplate(await writeTemplate({ 'template/README.md': '# {{ projectName }}\n{{ description }} {{ packageName }}\n', ...files }));
const byRule = (result: LintResult, rule: string): LintFinding[] => result.findings.filter((f) => f.rule === rule);
const at = (finding: LintFinding | undefined) => finding && [finding.file, finding.line, finding.column];

describe('lint: Jinja habits', () => {
  it('jinja-comment: a {# #} comment passes into the output; the finding names {% comment %}', async () => {
    const result = await lintWith({ 'template/app.py': 'import os\n  {# set up #}\nx = 1  {#- trimmed -#}\n' });
    const findings = byRule(result, 'jinja-comment');
    expect(findings.map(at)).toEqual([
      ['template/app.py', 2, 3],
      ['template/app.py', 3, 8],
    ]);
    expect(findings[0]).toMatchObject({ severity: 'warning' });
    expect(findings[0]?.message).toMatch(/\{% comment %\}/);
  });

  it('jinja-comment: not inside {% raw %} or {% comment %}, nor in a shell ${#array[@]}', async () => {
    const result = await lintWith({
      'template/a.html': '{% raw %}{# kept on purpose for Jinja #}{% endraw %}\n{% comment %}{# x #}{% endcomment %}\n',
      'template/run.sh': 'echo ${#items[@]}\n',
    });
    expect(byRule(result, 'jinja-comment')).toEqual([]);
  });

  it('string-truthiness: {% if stringVar %} is true for the empty string; the finding names != ""', async () => {
    const result = await lintWith({
      'template/a.txt': 'x\n{% if description %}has one{% endif %}\n{% unless packageName %}{% endunless %}\n{% if features contains "api" and description %}{% endif %}\n',
      'template/b.txt': '{% if description != "" %}{% endif %}{% if features %}{% endif %}{% if description == "x" %}{% endif %}\n',
    });
    const findings = byRule(result, 'string-truthiness');
    expect(findings.map(at)).toEqual([
      ['template/a.txt', 2, 1],
      ['template/a.txt', 3, 1],
      ['template/a.txt', 4, 1],
    ]);
    expect(findings[0]?.message).toMatch(/description != ""/);
  });

  it('string-truthiness: not for a string variable with a condition, which is absent when the condition is false', async () => {
    const result = await lintWith({
      'template.vars.json': { ...validVariables, variables: { ...validVariables.variables, database: { type: 'string', default: 'pg', condition: 'features contains "api"' } } },
      'template/a.txt': '{% if database %}{{ database }}{% endif %}\n',
    });
    expect(byRule(result, 'string-truthiness')).toEqual([]);
  });

  it('string-truthiness: in a when or files condition too', async () => {
    const result = await lintWith({
      'template.json': { ...validManifest, files: [{ path: 'README.md', when: 'description' }] },
    });
    expect(byRule(result, 'string-truthiness')).toEqual([expect.objectContaining({ file: 'template.json', pointer: '/files/0/when' })]);
  });

  it('prompt-order: a when that reads a variable asked later (directly or through a computed value)', async () => {
    const result = await lintWith({
      'template.prompts.json': {
        prompts: [
          { name: 'features', message: 'Features?', type: 'multiselect', when: 'projectName != "x"', choices: [{ name: 'API', value: 'api' }, { name: 'Tests', value: 'testing' }] },
          { name: 'description', message: 'Description?', type: 'input', when: 'packageName != "y"' },
          ...validPrompts.prompts.filter((p) => p.name === 'projectName'),
        ],
      },
    });
    const findings = byRule(result, 'prompt-order');
    expect(findings.map((f) => [f.pointer, f.severity])).toEqual([
      ['/prompts/0/when', 'warning'],
      ['/prompts/1/when', 'warning'],
    ]);
    expect(findings[0]?.message).toMatch(/reads "projectName", which is asked later \(prompt 3\).*Move the prompt for "projectName" before "features"/);
  });

  it('prompt-order: nothing when the variable is asked first', async () => {
    const result = await lintWith({
      'template.prompts.json': { prompts: [validPrompts.prompts[0], { ...validPrompts.prompts[1], when: 'projectName != "x"' }] },
    });
    expect(byRule(result, 'prompt-order')).toEqual([]);
  });

  it('jinja-syntax: x if y else z, "a" in b, .replace(...) each get the Liquid way', async () => {
    const result = await lintWith({
      'template/a.txt': [
        '{{ projectName if description else "none" }}',
        '{% if "api" in features %}api{% endif %}',
        '{% for f in features %}{{ f }}{% endfor %}',
        '{{ "in if else .x()" }}',
        '{% elif x %}',
      ].join('\n'),
      'template/b.txt': '{{ projectName.replace("-", "_") }}\n{{ projectName | replace("-", "_") }}\n',
    });
    const findings = byRule(result, 'jinja-syntax');
    const messages = (file: string, line: number) => findings.filter((f) => f.file === file && f.line === line).map((f) => f.message);
    expect(messages('template/a.txt', 1)).toEqual([expect.stringContaining('{% if c %}a{% else %}b{% endif %}')]);
    expect(messages('template/a.txt', 2)).toEqual([expect.stringContaining('contains "a"')]);
    expect(messages('template/a.txt', 3)).toEqual([]);
    expect(messages('template/a.txt', 4)).toEqual([]);
    expect(messages('template/a.txt', 5)).toEqual([expect.stringContaining('{% elsif %}')]);
    expect(messages('template/b.txt', 1)).toEqual([expect.stringContaining('| replace: "a", "b"')]);
    expect(messages('template/b.txt', 2)).toEqual([expect.stringContaining('| replace: argument, argument')]);
  });

  it('reads the partials and leaves {% raw %} alone', async () => {
    const result = await lintWith({
      'template.json': { ...validManifest, partials: 'partials' },
      'partials/p.liquid': '{# note #}\n',
      'template/a.txt': '{% render "p" %}{% raw %}{{ a if b else c }}{% endraw %}\n',
    });
    expect(byRule(result, 'jinja-comment').map(at)).toEqual([['partials/p.liquid', 1, 1]]);
    expect(byRule(result, 'jinja-syntax')).toEqual([]);
  });
});
