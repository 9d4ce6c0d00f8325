import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { changelogHasVersion, lintTemplate, type LintFinding, type LintResult } from '../../src/template/lint.js';
import { tempDir, validManifest, validPrompts, validVariables, writeTemplate, type FileTree } from '../helpers/fixtures.js';

/** The fixture template, adjusted to lint clean: every feature declared, every variable used. */
const cleanFiles: FileTree = {
  'template.json': { ...validManifest, features: ['api', 'testing'] },
  'template/README.md': '# {{ projectName }}\n\n{{ description }}\n\nPackage {{ packageName }}.\n',
  'template/src/{% if features contains "api" %}api{% endif %}.ts': 'export {};\n',
};

async function lintWith(files: FileTree = {}): Promise<LintResult> {
  return lintTemplate(await writeTemplate({ ...cleanFiles, ...files }));
}

const byRule = (result: LintResult, rule: string): LintFinding[] => result.findings.filter((f) => f.rule === rule);

/** The 1-based line and column where `needle` (the n-th occurrence) starts in `text`. */
function positionOf(text: string, needle: string, occurrence = 1): { line: number; column: number } {
  let index = -1;
  for (let i = 0; i < occurrence; i++) index = text.indexOf(needle, index + 1);
  if (index < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

const variables = (extra: Record<string, unknown> = {}, computed: Record<string, string> = validVariables.computed) => ({
  variables: { ...validVariables.variables, ...extra },
  computed,
});
const prompts = (...extra: object[]) => ({ prompts: [...validPrompts.prompts, ...extra] });

describe('lintTemplate', () => {
  it('finds nothing in a clean template', async () => {
    expect(await lintWith()).toEqual({ findings: [], errorCount: 0, warningCount: 0 });
  });

  // Expected to fail until the example template (README.md, CHANGELOG.md, docs/migration.md) is complete.
  it('finds no errors in the example template', async () => {
    const result = await lintTemplate(path.resolve('examples/templates/node-service'));
    expect(result.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(result.errorCount).toBe(0);
  });

  describe('schema', () => {
    it('reports invalid JSON as a schema finding with its line and column, without crashing', async () => {
      const result = await lintWith({ 'template.vars.json': '{\n  "variables": {\n    "x": nope\n  }\n}\n' });
      const [finding, ...rest] = byRule(result, 'schema');
      expect(rest).toEqual([]);
      expect(finding).toMatchObject({ file: 'template.vars.json', severity: 'error', line: 3, column: 10 });
      expect(finding?.message).toMatch(/invalid JSON/);
      // Rules that need the variables are skipped, the others still run.
      expect(byRule(result, 'prompt-unknown-variable')).toEqual([]);
      expect(result.errorCount).toBe(1);
    });

    it('reports an unparsable manifest and still lints the variables and prompts', async () => {
      const result = await lintWith({
        'template.json': '{ "name": ',
        'template.prompts.json': prompts({ name: 'nope', message: 'Nope?', type: 'input' }),
      });
      expect(byRule(result, 'schema')).toContainEqual(expect.objectContaining({ file: 'template.json', line: 1, column: 11 }));
      expect(byRule(result, 'prompt-unknown-variable')).toHaveLength(1);
    });

    it('keeps the file, pointer and position of each schema error', async () => {
      const result = await lintWith({ 'template.json': { ...cleanFiles['template.json'] as object, version: '1.0' } });
      const text = await readFile(path.join(await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } }), 'template.json'), 'utf8');
      expect(byRule(result, 'schema')).toEqual([
        expect.objectContaining({ file: 'template.json', pointer: '/version', ...positionOf(text, '"1.0"'), severity: 'error' }),
      ]);
    });

    it('reports missing files and a missing folder without crashing', async () => {
      const missingVars = await lintWith({ 'template.vars.json': null });
      expect(byRule(missingVars, 'schema')).toContainEqual(
        expect.objectContaining({ file: 'template.vars.json', line: 1, column: 1, message: 'required file is missing' }),
      );
      const missingFolder = await lintTemplate(path.join(await tempDir(), 'nope'));
      expect(missingFolder.findings).toEqual([expect.objectContaining({ file: '.', rule: 'schema', line: 1, column: 1 })]);
      expect(missingFolder.errorCount).toBe(1);
    });

    it('names the missing field of a REQUIRED finding, as validate does', async () => {
      const { name: _name, ...withoutName } = validManifest;
      const result = await lintWith({ 'template.json': { ...withoutName, features: ['api', 'testing'] } });
      expect(byRule(result, 'schema')).toEqual([
        expect.objectContaining({ file: 'template.json', pointer: '/name', line: 1, column: 1, message: '/name: is required' }),
      ]);
    });

    it('survives documents of the wrong shape', async () => {
      const result = await lintWith({
        'template.json': [],
        'template.vars.json': { variables: [], computed: 'x' },
        'template.prompts.json': { prompts: [1, { name: 2, choices: 'x' }] },
      });
      expect(result.errorCount).toBeGreaterThan(0);
      expect(result.findings.every((f) => f.line >= 1 && f.column >= 1)).toBe(true);
    });
  });

  describe('prompt-unknown-variable', () => {
    it('fails for a prompt naming a variable that is not declared', async () => {
      const result = await lintWith({ 'template.prompts.json': prompts({ name: 'colour', message: 'Colour?', type: 'input' }) });
      expect(byRule(result, 'prompt-unknown-variable')).toEqual([
        expect.objectContaining({
          file: 'template.prompts.json',
          pointer: '/prompts/2/name',
          severity: 'error',
          message: 'prompt "colour" names unknown variable "colour"',
        }),
      ]);
    });

    it('fails for a prompt naming a computed value', async () => {
      const result = await lintWith({ 'template.prompts.json': prompts({ name: 'packageName', message: 'Package?', type: 'input' }) });
      expect(byRule(result, 'prompt-unknown-variable')[0]?.message).toMatch(/computed value "packageName"/);
    });

    it('passes when every prompt names a variable', async () => {
      expect(byRule(await lintWith(), 'prompt-unknown-variable')).toEqual([]);
    });
  });

  describe('variable-without-prompt', () => {
    it('fails for a variable with neither default nor prompt', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ licence: { type: 'string' } }),
        'template/LICENSE': '{{ licence }}\n',
      });
      expect(byRule(result, 'variable-without-prompt')).toEqual([
        expect.objectContaining({ file: 'template.vars.json', pointer: '/variables/licence', message: 'variable "licence" has no default and no prompt' }),
      ]);
    });

    it('passes for a prompted variable and for an object whose properties all have defaults', async () => {
      const result = await lintWith({
        'template.vars.json': variables({
          licence: { type: 'string' },
          author: { type: 'object', properties: { name: { type: 'string', default: 'Me' } } },
        }),
        'template.prompts.json': prompts({ name: 'licence', message: 'Licence?', type: 'input' }),
        'template/LICENSE': '{{ licence }} {{ author.name }}\n',
      });
      expect(byRule(result, 'variable-without-prompt')).toEqual([]);
      expect(result.findings).toEqual([]);
    });
  });

  describe('choices-match-enum', () => {
    const databaseVariable = { type: 'string', enum: ['postgresql', 'mysql', 'mongodb'], default: 'postgresql' };
    const databasePrompt = (values: string[]) => ({
      name: 'database',
      message: 'Database?',
      type: 'select',
      choices: values.map((value) => ({ name: value, value })),
    });

    it('fails for a select choice missing from the enum and an enum value without a choice', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ database: databaseVariable }),
        'template.prompts.json': prompts(databasePrompt(['postgresql', 'mysql', 'oracle'])),
        'template/db.txt': '{{ database }}\n',
      });
      expect(byRule(result, 'choices-match-enum')).toEqual([
        expect.objectContaining({
          file: 'template.prompts.json',
          pointer: '/prompts/2/choices',
          message: 'enum value "mongodb" has no choice in prompt "database"',
        }),
        expect.objectContaining({
          file: 'template.prompts.json',
          pointer: '/prompts/2/choices/2/value',
          message: 'choice "oracle" is not in the enum of variable "database"',
        }),
      ]);
    });

    it('compares a multiselect with the items enum of an array variable', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ features: { type: 'array', items: { type: 'string', enum: ['api'] }, default: ['api'] } }),
      });
      expect(byRule(result, 'choices-match-enum').map((f) => f.message)).toEqual(['choice "testing" is not in the enum of variable "features"']);
    });

    it('passes when the choices equal the enum as sets', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ database: databaseVariable }),
        'template.prompts.json': prompts(databasePrompt(['mongodb', 'postgresql', 'mysql'])),
        'template/db.txt': '{{ database }}\n',
      });
      expect(result.findings).toEqual([]);
    });
  });

  describe('default-invalid', () => {
    it('fails for a default that breaks its own validation', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ projectName: { type: 'string', default: 'my-app', validation: '^[0-9]+$' } }),
        'template.prompts.json': { prompts: [validPrompts.prompts[1]] },
      });
      expect(byRule(result, 'default-invalid')).toEqual([
        expect.objectContaining({
          pointer: '/variables/projectName/default',
          message: 'default "my-app" of variable "projectName" does not match its validation /^[0-9]+$/',
        }),
      ]);
    });

    it("fails for a default that breaks the prompt's validate pattern", async () => {
      const result = await lintWith({
        'template.prompts.json': {
          prompts: [{ ...validPrompts.prompts[0], validate: '^[a-z]+$' }, validPrompts.prompts[1]],
        },
      });
      expect(byRule(result, 'default-invalid').map((f) => f.message)).toEqual([
        'default "my-app" of variable "projectName" does not match the validate pattern of prompt "projectName" /^[a-z]+$/',
      ]);
    });

    it('fails for defaults outside the enum, array items one by one and object properties one by one', async () => {
      const result = await lintWith({
        'template.vars.json': variables({
          features: { type: 'array', enum: ['api', 'testing'], default: ['api', 'docker'] },
          database: { type: 'string', enum: ['postgresql'], default: 'oracle' },
          author: {
            type: 'object',
            default: { email: 'nobody' },
            properties: { email: { type: 'string', default: 'also-nobody', validation: '^[^@]+@[^@]+$' } },
          },
        }),
        'template.prompts.json': prompts({ name: 'database', message: 'Db?', type: 'select', choices: [{ name: 'pg', value: 'postgresql' }] }),
        'template.json': { ...validManifest, features: ['api', 'testing', 'docker'] },
        'template/x.txt': '{{ database }} {{ author.email }}\n',
      });
      expect(byRule(result, 'default-invalid').map((f) => [f.pointer, f.message])).toEqual([
        ['/variables/features/default/1', 'item "docker" of the default of variable "features" is not in its enum ("api", "testing")'],
        ['/variables/database/default', 'default "oracle" of variable "database" is not in its enum ("postgresql")'],
        ['/variables/author/default/email', 'default "nobody" of variable "author.email" does not match its validation /^[^@]+@[^@]+$/'],
        ['/variables/author/properties/email/default', 'default "also-nobody" of variable "author.email" does not match its validation /^[^@]+@[^@]+$/'],
      ]);
    });

    it('passes for defaults that satisfy validation, validate and enum', async () => {
      expect(byRule(await lintWith(), 'default-invalid')).toEqual([]);
    });
  });

  describe('regex-invalid and regex-unsafe', () => {
    it('fails for a validation that is not a regular expression', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ description: { type: 'string', default: 'An app', validation: '([a-z' } }),
      });
      expect(byRule(result, 'regex-invalid')).toEqual([
        expect.objectContaining({ pointer: '/variables/description/validation', message: expect.stringMatching(/^validation of variable "description" is not a valid regular expression: /) }),
      ]);
      // Reported once: not also as the schema's "must be a valid regular expression".
      expect(result.findings).toHaveLength(1);
    });

    it('fails for a validate pattern prone to catastrophic backtracking', async () => {
      const result = await lintWith({
        'template.prompts.json': { prompts: [{ ...validPrompts.prompts[0], validate: '^([a-z]+)+$' }, validPrompts.prompts[1]] },
      });
      expect(byRule(result, 'regex-unsafe')).toEqual([
        expect.objectContaining({ file: 'template.prompts.json', pointer: '/prompts/0/validate', severity: 'error' }),
      ]);
      expect(byRule(result, 'regex-invalid')).toEqual([]);
    });

    it.each([
      ['^([a-z][a-z0-9]+)?$', 'app'],
      ['^([a-z][a-z0-9]+)?$', ''],
      ['^(?:[a-z][a-z0-9-]*)?$', 'my-app'],
      ['^[^@]+@[^@]+\\.[^@]+$', 'you@example.com'],
    ])('passes for the linear pattern %s (an optional group of a linear body) and its default %j', async (pattern, fallback) => {
      const result = await lintWith({
        'template.vars.json': variables({ description: { type: 'string', default: fallback, validation: pattern } }),
      });
      expect([...byRule(result, 'regex-invalid'), ...byRule(result, 'regex-unsafe'), ...byRule(result, 'default-invalid')]).toEqual([]);
    });

    it.each(['^(a|a)*$', '^(b|b)*$', '^(a+)+$'])('fails for %s once, and never runs it on the default', async (pattern) => {
      // With a backtracking matcher this default alone would take 2^50 steps to refuse.
      const result = await lintWith({
        'template.vars.json': variables({ description: { type: 'string', default: `${'a'.repeat(50)}!`, validation: pattern } }),
      });
      expect(byRule(result, 'regex-unsafe')).toEqual([
        expect.objectContaining({
          file: 'template.vars.json',
          pointer: '/variables/description/validation',
          severity: 'error',
          message: expect.stringMatching(/^validation of variable "description" .* is refused: it is prone to catastrophic backtracking/),
        }),
      ]);
      expect(byRule(result, 'default-invalid')).toEqual([]);
      expect(result.findings.filter((f) => f.rule === 'schema')).toEqual([]);
    });

    it('fails for a default longer than the matcher takes, instead of matching it', async () => {
      const result = await lintWith({
        'template.vars.json': variables({ description: { type: 'string', default: 'a'.repeat(20_000), validation: '^a*$' } }),
      });
      expect(byRule(result, 'default-invalid')).toEqual([
        expect.objectContaining({ pointer: '/variables/description/default', message: expect.stringContaining('is 20000 characters long; at most 10000 are matched') }),
      ]);
    });

    it('passes for safe, valid patterns', async () => {
      const result = await lintWith();
      expect([...byRule(result, 'regex-invalid'), ...byRule(result, 'regex-unsafe')]).toEqual([]);
    });
  });

  describe('unknown-reference, expression-invalid, computed-cycle', () => {
    it('fails for a prompt whose when names an unknown variable, naming the file, pointer and name', async () => {
      const dir = await writeTemplate({
        ...cleanFiles,
        'template.vars.json': variables({ database: { type: 'string', default: 'sqlite' } }),
        'template.prompts.json': prompts(
          { name: 'description', message: 'Description?', type: 'input' },
          { name: 'database', message: 'Database?', type: 'input', when: 'feature contains "database"' },
        ),
        'template/db.txt': '{{ database }}\n',
      });
      const result = await lintTemplate(dir);
      const text = await readFile(path.join(dir, 'template.prompts.json'), 'utf8');
      expect(byRule(result, 'unknown-reference')).toEqual([
        {
          file: 'template.prompts.json',
          pointer: '/prompts/3/when',
          ...positionOf(text, '"feature contains'),
          severity: 'error',
          rule: 'unknown-reference',
          message: 'when of prompt "database" names unknown variable "feature" (did you mean "features"?); declare it in template.vars.json or fix the spelling',
        },
      ]);
    });

    it('fails for a condition naming a computed value, a computed value and a files rule naming unknown names', async () => {
      const result = await lintWith({
        'template.vars.json': variables(
          { database: { type: 'string', default: 'sqlite', condition: 'packageName == "x"' } },
          { packageName: 'projectName | package_name', title: 'projectTitle | upcase' },
        ),
        'template.json': { ...cleanFiles['template.json'] as object, files: [{ path: 'docker/**', when: 'docker' }] },
        'template/x.txt': '{{ database }} {{ title }}\n',
      });
      expect(byRule(result, 'unknown-reference').map((f) => [f.file, f.pointer, f.message])).toEqual([
        ['template.json', '/files/0/when', 'when of files rule "docker/**" names unknown variable "docker"; declare it in template.vars.json or fix the spelling'],
        [
          'template.vars.json',
          '/variables/database/condition',
          'condition of variable "database" names computed value "packageName"; a condition of a variable can only name variables (they are resolved before computed values)',
        ],
        ['template.vars.json', '/computed/title', 'computed value "title" names unknown variable "projectTitle" (did you mean "projectName"?); declare it in template.vars.json or fix the spelling'],
      ]);
    });

    it('fails for an expression that does not parse', async () => {
      const result = await lintWith({ 'template.vars.json': variables({}, { packageName: '(projectName' }) });
      expect(byRule(result, 'expression-invalid')).toEqual([
        expect.objectContaining({ pointer: '/computed/packageName', message: expect.stringMatching(/^computed value "packageName" does not parse: /) }),
      ]);
    });

    it('fails for computed values that depend on each other in a cycle', async () => {
      const result = await lintWith({
        'template.vars.json': variables({}, { packageName: 'other | upcase', other: 'packageName | downcase' }),
      });
      expect(byRule(result, 'computed-cycle').map((f) => f.message)).toEqual([
        'computed values depend on each other in a cycle: packageName -> other -> packageName',
      ]);
    });

    it('fails, as loadTemplate does, for conditions in a cycle and a computed value named like a variable', async () => {
      const result = await lintWith({
        'template.vars.json': variables(
          {
            database: { type: 'string', default: 'sqlite', condition: 'orm' },
            orm: { type: 'boolean', default: true, condition: 'database' },
          },
          { packageName: 'projectName | package_name', description: 'projectName' },
        ),
        'template/x.txt': '{{ database }} {{ orm }}\n',
      });
      expect(byRule(result, 'condition-cycle').map((f) => f.message)).toEqual([
        'conditions depend on each other in a cycle: database -> orm -> database',
      ]);
      expect(byRule(result, 'duplicate-name').map((f) => f.pointer)).toEqual(['/computed/description']);
    });

    it('passes when every expression parses and names known names', async () => {
      const result = await lintWith({
        'template.vars.json': variables(
          { database: { type: 'string', default: 'sqlite', condition: 'features contains "api"' } },
          { packageName: 'projectName | package_name', title: 'packageName | upcase' },
        ),
        'template.prompts.json': prompts({ name: 'database', message: 'Db?', type: 'input', when: 'features contains "api" and title != ""' }),
        'template.json': { ...cleanFiles['template.json'] as object, files: [{ path: 'db/**', when: 'database == "sqlite"' }] },
      });
      expect(result.findings).toEqual([]);
    });
  });

  describe('feature-not-declared', () => {
    it('fails for feature values in the features variable and in expressions that the manifest does not declare', async () => {
      const result = await lintWith({
        'template.json': { ...validManifest, features: ['api'], files: [{ path: 'Dockerfile', when: 'features contains "docker"' }] },
      });
      expect(byRule(result, 'feature-not-declared').map((f) => [f.file, f.pointer, f.message])).toEqual([
        ['template.json', '/files/0/when', 'feature "docker" named in when of files rule "Dockerfile" is not declared in the manifest features'],
        ['template.prompts.json', '/prompts/1/choices/1/value', 'feature "testing" named in a choice of prompt "features" is not declared in the manifest features'],
        ['template.vars.json', '/variables/features/enum/1', 'feature "testing" named in the enum of variable "features" is not declared in the manifest features'],
      ]);
    });

    it('passes when the manifest declares every feature', async () => {
      expect(byRule(await lintWith(), 'feature-not-declared')).toEqual([]);
    });
  });

  describe('changelog-missing-version', () => {
    it('warns (no error: the spec does not ask for an entry) when the change log has no section for the manifest version', async () => {
      const result = await lintWith({ 'CHANGELOG.md': '# Changelog\n\n## [0.9.0] - 2025-12-01\n\n- Early\n' });
      expect(byRule(result, 'changelog-missing-version')).toEqual([
        expect.objectContaining({ file: 'CHANGELOG.md', line: 1, column: 1, severity: 'warning', message: expect.stringContaining('1.0.0') }),
      ]);
      expect(result.errorCount).toBe(0);
    });

    it("reads the manifest's changelog path", async () => {
      const result = await lintWith({
        'template.json': { ...cleanFiles['template.json'] as object, changelog: 'docs/HISTORY.md' },
        'docs/HISTORY.md': '## 0.1.0\n',
      });
      expect(byRule(result, 'changelog-missing-version')).toEqual([expect.objectContaining({ file: 'docs/HISTORY.md' })]);
    });

    it('accepts the usual heading forms', () => {
      for (const heading of ['## 1.2.0', '## [1.2.0]', '## [1.2.0] - 2026-01-31', '## v1.2.0', '## 1.2.0\r']) {
        expect(changelogHasVersion(`# Changelog\n\n${heading}\n\n- x\n`, '1.2.0'), heading).toBe(true);
      }
      for (const heading of ['## 1.2.01', '### 1.2.0', '## 1.2.0-beta', '## 11.2.0', '- 1.2.0', '## 1x2x0']) {
        expect(changelogHasVersion(`${heading}\n`, '1.2.0'), heading).toBe(false);
      }
    });

    it('passes when the version has a section', async () => {
      expect(byRule(await lintWith(), 'changelog-missing-version')).toEqual([]);
    });
  });

  describe('liquid-syntax', () => {
    it('reports a content file that is not valid Liquid, where liquidjs says, and an unknown filter', async () => {
      const result = await lintWith({ 'template/src/app.js': 'const a = 1;\nconst b = "{{ projectName | upcase";\n', 'template/x.md': '{{ projectName | no_such_filter }}' });
      expect(byRule(result, 'liquid-syntax')).toEqual([
        expect.objectContaining({ file: 'template/src/app.js', line: 2, severity: 'error', message: expect.stringContaining('not valid Liquid') }),
        expect.objectContaining({ file: 'template/x.md', message: expect.stringContaining('no_such_filter') }),
      ]);
    });

    it('reports a file name that is not valid Liquid', async () => {
      const result = await lintWith({ 'template/{{ projectName.md': 'x' });
      expect(byRule(result, 'liquid-syntax')).toEqual([expect.objectContaining({ file: 'template/{{ projectName.md', message: expect.stringContaining('its name') })]);
    });

    it('passes valid Liquid', async () => {
      expect(byRule(await lintWith({ 'template/{{ projectName }}.md': '{% if features contains "api" %}{{ projectName }}{% endif %}' }), 'liquid-syntax')).toEqual([]);
    });
  });

  describe('variable-unused', () => {
    it('warns for a variable and a computed value that nothing uses', async () => {
      const result = await lintWith({ 'template/README.md': '# {{ projectName }}\n' });
      expect(byRule(result, 'variable-unused').map((f) => [f.pointer, f.severity])).toEqual([
        ['/variables/description', 'warning'],
        ['/computed/packageName', 'warning'],
      ]);
      expect(result.errorCount).toBe(0);
      expect(result.warningCount).toBe(2);
    });

    it('counts a use in a path name, an expression or another computed value, but not in its own expression', async () => {
      const result = await lintWith({
        'template/README.md': '# {{ projectName }}\n',
        'template/{{ description }}.md': 'x\n',
        'template.vars.json': variables(
          { database: { type: 'string', default: 'sqlite', condition: 'database == "x" or features.size > 0' } },
          { packageName: 'projectName | package_name', title: 'packageName | upcase' },
        ),
        'template.json': { ...cleanFiles['template.json'] as object, files: [{ path: 'x', when: 'title != ""' }] },
      });
      expect(byRule(result, 'variable-unused').map((f) => f.pointer)).toEqual(['/variables/database']);
    });

    it('uses the manifest content folder', async () => {
      const result = await lintWith({
        'template.json': { ...cleanFiles['template.json'] as object, content: 'files' },
        'files/README.md': '{{ projectName }} {{ features }}\n',
      });
      expect(byRule(result, 'variable-unused').map((f) => f.pointer)).toEqual(['/variables/description', '/computed/packageName']);
    });
  });

  it('sorts findings by file, line and column', async () => {
    const result = await lintWith({
      'template.json': { ...validManifest, features: [] },
      'template.prompts.json': prompts({ name: 'colour', message: 'Colour?', type: 'input', when: 'nope' }),
      'CHANGELOG.md': '# Nothing\n',
    });
    const keys = result.findings.map((f) => [f.file, f.line, f.column] as const);
    const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2]));
    expect(keys).toEqual(sorted);
    expect(new Set(result.findings.map((f) => f.file)).size).toBeGreaterThan(2);
  });
});
