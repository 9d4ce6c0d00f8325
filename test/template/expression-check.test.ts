import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { ExpressionEvaluator, validateTemplate } from '../../src/template/index.js';
import { validManifest, validPrompts, validVariables, writeTemplate } from '../helpers/fixtures.js';

function positionOf(text: string, needle: string): { line: number; column: number } {
  const index = text.indexOf(needle);
  if (index < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

describe('ExpressionEvaluator.check: malformed expressions Liquid itself would accept', () => {
  const evaluator = new ExpressionEvaluator();
  const problem = (expression: string, kind: 'condition' | 'value' = 'condition'): string => {
    try {
      evaluator.check(expression, kind);
      return 'accepted';
    } catch (error) {
      return (error as Error).message;
    }
  };

  it.each([
    ['extras contains', 'ends with "contains": put a value after it, or remove it'],
    ['extras == ', 'ends with "==": put a value after it, or remove it'],
    ['features contains "api" and', 'ends with "and"'],
    ['== "x"', 'starts with the operator "=="'],
    ['features "api"', 'expected an operator (==, !=, <, >, <=, >=, contains, and, or) between "features" and "\\"api\\""'],
    ['a or or b', 'expected a value after "or", found "or"'],
    ['a not', '"not" goes before a value'],
    ['a <> b', 'expected a value after "<", found ">"'],
    ['features contains "api" | upcse', 'undefined filter: upcse (did you mean "upcase"?)'],
  ])('refuses the condition %j', (expression, message) => {
    expect(problem(expression)).toContain(message);
  });

  it.each(['projectName |', 'projectName | upcase | '])('refuses the value %j ending with a pipe', (expression) => {
    expect(problem(expression, 'value')).toContain('ends with "|"');
  });

  it.each([
    'features contains "database"',
    "features contains 'docker' and database == \"sqlite\"",
    'not features contains "api"',
    'features.size > 0',
    'features == empty',
    'description != ""',
    'a[0] == "x" or port >= 1024',
    '(1..3) contains port',
  ])('accepts the condition %j', (expression) => {
    expect(problem(expression)).toBe('accepted');
  });

  it.each(['projectName | package_name', 'projectName | replace: "-", "_" | upcase', 'projectName'])('accepts the value %j', (expression) => {
    expect(problem(expression, 'value')).toBe('accepted');
  });
});

describe('validate: conditions, whens and computed values', () => {
  it('reports a malformed when, condition, files rule and computed value at the line and column of its string', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, files: [{ path: 'Dockerfile', when: 'features == ' }] },
      'template.vars.json': {
        variables: { ...validVariables.variables, extras: { type: 'array', default: [], condition: 'features contains' } },
        computed: { packageName: 'projectName |' },
      },
      'template.prompts.json': { prompts: [...validPrompts.prompts, { name: 'description', message: 'About?', type: 'input', when: 'extras contains' }] },
      'template/README.md': '{{ projectName }} {{ extras }}',
    });
    const { errors } = await validateTemplate(dir);
    const text = async (file: string): Promise<string> => readFile(path.join(dir, file), 'utf8');
    expect(errors.filter((e) => e.code === 'INVALID_EXPRESSION')).toEqual([
      {
        file: 'template.vars.json',
        pointer: '/variables/extras/condition',
        code: 'INVALID_EXPRESSION',
        ...positionOf(await text('template.vars.json'), '"features contains"'),
        message: 'condition of variable "extras" does not parse: ends with "contains": put a value after it, or remove it; write it as values joined by operators, e.g. features contains "docker"',
      },
      expect.objectContaining({
        file: 'template.vars.json',
        pointer: '/computed/packageName',
        ...positionOf(await text('template.vars.json'), '"projectName |"'),
        message: expect.stringMatching(/^computed value "packageName" does not parse: ends with "\|": name a filter after it, or remove it; write it as a value with filters/),
      }),
      expect.objectContaining({
        file: 'template.prompts.json',
        pointer: '/prompts/2/when',
        ...positionOf(await text('template.prompts.json'), '"extras contains"'),
        message: expect.stringMatching(/^when of prompt "description" does not parse: ends with "contains"/),
      }),
      expect.objectContaining({
        file: 'template.json',
        pointer: '/files/0/when',
        ...positionOf(await text('template.json'), '"features == "'),
        message: expect.stringMatching(/^when of files rule "Dockerfile" does not parse: ends with "=="/),
      }),
    ]);
  });

  it('reports an unknown name in a condition with the closest variable, and a computed value in a condition', async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: { ...validVariables.variables, database: { type: 'string', default: 'x', condition: 'featurs contains "api" or packageName == "x"' } },
        computed: validVariables.computed,
      },
      'template/README.md': '{{ projectName }} {{ database }}',
    });
    const { errors } = await validateTemplate(dir);
    expect(errors.map((e) => [e.pointer, e.code, e.message])).toEqual([
      [
        '/variables/database/condition',
        'UNKNOWN_VARIABLE',
        'condition of variable "database" names unknown variable "featurs" (did you mean "features"?); declare it in template.vars.json or fix the spelling',
      ],
      [
        '/variables/database/condition',
        'UNKNOWN_VARIABLE',
        'condition of variable "database" names computed value "packageName"; a condition of a variable can only name variables (they are resolved before computed values)',
      ],
    ]);
    expect(errors.every((e) => e.line !== undefined && e.column !== undefined)).toBe(true);
  });

  it('reports only the missing variables file, not every name of every expression, when it cannot be read', async () => {
    const dir = await writeTemplate({
      'template.vars.json': null,
      'template.prompts.json': { prompts: [{ ...validPrompts.prompts[0], when: 'features contains "api"' }, { ...validPrompts.prompts[1], when: 'features contains' }] },
    });
    const { errors } = await validateTemplate(dir);
    expect(errors.map((e) => [e.file, e.code])).toEqual([
      ['template.vars.json', 'MISSING_FILE'],
      ['template.prompts.json', 'INVALID_EXPRESSION'],
    ]);
  });

  it('lets a when and a computed value name packageName and className without declaring them', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: validVariables.variables, computed: { title: 'className | upcase' } },
      'template.prompts.json': { prompts: [...validPrompts.prompts, { name: 'description', message: 'About?', type: 'input', when: 'packageName != "x"' }] },
    });
    expect((await validateTemplate(dir)).errors).toEqual([]);
  });
});
