import { describe, expect, it } from 'vitest';

import { testTemplate } from '../../src/template/index.js';
import { writeTemplate } from '../helpers/fixtures.js';

/** A template whose variables are `variables`, with `files` rules and content files. */
function templateWith(variables: object, files: Record<string, string>, rules: object[] = []): Promise<string> {
  return writeTemplate({
    'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', changelog: 'CHANGELOG.md', files: rules },
    'template.vars.json': { variables },
    'template.prompts.json': { prompts: Object.keys(variables).map((name) => ({ name, message: name, type: 'input' })) },
    'template/README.md': null,
    ...Object.fromEntries(Object.entries(files).map(([file, content]) => [`template/${file}`, content])),
  });
}

describe('test: answers for the variables a user must give', () => {
  it('answers a required variable without a default with a sample its rules accept, so the template can be tested', async () => {
    // As cookiecutter-kotlin-lib's author_name, which the user must type: before, no answer set resolved at all.
    const dir = await templateWith(
      {
        author_name: { type: 'string', required: true },
        lib_name: { type: 'string', required: true, validation: '^[a-z][a-z-]*$' },
        port: { type: 'integer' },
        compact: { type: 'boolean', default: true },
      },
      { LICENSE: 'Copyright {{ author_name }}\n', 'settings.txt': '{{ lib_name }}:{{ port }}\n', 'src/Main.kt': 'class Main\n' },
      [{ path: 'src/**', when: 'compact' }],
    );
    const report = await testTemplate(dir);
    expect(report.uncovered).toEqual([]);
    expect(report.passed).toBe(true);
    // The variable's own name, unless its rules refuse it: then the first plain value they accept.
    expect(report.sets[0]?.answers).toMatchObject({ author_name: 'author_name', lib_name: 'example', port: 0 });
  });

  it('still fails, naming what is not covered, when no sample fits the rules', async () => {
    const dir = await templateWith({ zip: { type: 'string', required: true, validation: '^[0-9]{5}$' }, on: { type: 'boolean', default: true } }, { 'a.txt': '{{ zip }}\n', 'b.txt': 'b\n' }, [{ path: 'b.txt', when: 'on' }]);
    const report = await testTemplate(dir);
    expect(report.sets).toEqual([]);
    expect(report.passed).toBe(false);
    expect(report.uncovered).toContain('on=true');
  });
});

describe('test: both sides of an equality', () => {
  it('tries a value other than the literal when the default is that literal', async () => {
    // As copier-uv's `author_username == "pawamoy"` with the default "pawamoy": the false side was never reached.
    const dir = await templateWith({ author_username: { type: 'string', default: 'pawamoy' } }, { 'README.md': '# {{ author_username }}\n', 'FUNDING.yml': 'github: {{ author_username }}\n' }, [
      { path: 'FUNDING.yml', when: 'author_username == "pawamoy"' },
    ]);
    const report = await testTemplate(dir);
    expect(report.uncovered).toEqual([]);
    expect(report.passed).toBe(true);
    expect(report.sets.map((set) => set.answers.author_username)).toContain('pawamoy');
    expect(report.sets.map((set) => set.answers.author_username).filter((name) => name !== 'pawamoy')).toHaveLength(1);
  });
});
