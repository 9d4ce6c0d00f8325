import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { AnswersError, loadTemplate, parseSetArguments, resolveAnswers, TemplateLoadError } from '../../src/template/index.js';
import { validManifest, writeTemplate } from '../helpers/fixtures.js';

const example = path.resolve('examples/templates/node-service');

describe('resolveAnswers', () => {
  it('fills defaults and computed values, leaving out a variable whose condition is false', async () => {
    const template = await loadTemplate(example);
    const { answers, computed } = resolveAnswers(template, {});
    expect(answers.projectName).toBe('my-service');
    expect(answers.features).toEqual(['api', 'testing']);
    expect(answers).not.toHaveProperty('database');
    expect(answers.author).toEqual({ name: 'Your Name', email: 'you@example.com' });
    expect(computed).toEqual({ packageName: 'my-service', className: 'MyService' });
  });

  it('includes a conditional variable when its condition holds', async () => {
    const template = await loadTemplate(example);
    const { answers } = resolveAnswers(template, { features: ['database'], database: 'sqlite' });
    expect(answers.database).toBe('sqlite');
    expect(resolveAnswers(template, { features: ['database'] }).answers.database).toBe('postgresql');
  });

  it('merges a partial object answer with the per-property defaults', async () => {
    const template = await loadTemplate(example);
    const { answers } = resolveAnswers(template, { author: { name: 'Ada' } });
    expect(answers.author).toEqual({ name: 'Ada', email: 'you@example.com' });
  });

  it('lists every bad field in one error', async () => {
    const template = await loadTemplate(example);
    try {
      resolveAnswers(template, {
        projectName: 'Bad Name',
        features: ['api', 'kubernetes'],
        author: { email: 'nope' },
        colour: 'red',
        packageName: 'x',
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AnswersError);
      const names = (error as AnswersError).problems.map((p) => p.name).sort();
      expect(names).toEqual(['author.email', 'colour', 'features[1]', 'packageName', 'projectName']);
      expect((error as AnswersError).message).toMatch(/Use lower-case letters/);
    }
  });

  it('validates defaults too', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { port: { type: 'string', default: 'abc', validation: '^\\d+$', invalidMessage: 'a port number' } } },
      'template.prompts.json': { prompts: [] },
    });
    const template = await loadTemplate(dir);
    expect(() => resolveAnswers(template, {})).toThrow(/port: a port number/);
  });

  it('rejects a value outside the enum and a value of the wrong type', async () => {
    const template = await loadTemplate(example);
    expect(() => resolveAnswers(template, { features: ['database'], database: 'oracle' })).toThrow(/database: must be one of/);
    expect(() => resolveAnswers(template, { features: 'api' })).toThrow(/features: must be an array/);
  });

  it('requires a required value that is empty', async () => {
    const template = await loadTemplate(example);
    expect(() => resolveAnswers(template, { projectName: '' })).toThrow(/projectName: is required/);
  });
});

describe('loadTemplate reference checks', () => {
  it('names the file and key of an unknown variable in a computed value', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { projectName: { type: 'string', default: 'a' } }, computed: { slug: 'projectNme | package_name' } },
      'template.prompts.json': { prompts: [] },
    });
    await expect(loadTemplate(dir)).rejects.toThrow(TemplateLoadError);
    await expect(loadTemplate(dir)).rejects.toThrow(
      /template\.vars\.json:\d+:\d+ \/computed\/slug: computed value "slug" names unknown variable "projectNme" \(did you mean "projectName"\?\)/,
    );
  });

  it('reports a cycle among computed values', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: {}, computed: { a: 'b | upcase', b: 'c | upcase', c: 'a | upcase' } },
      'template.prompts.json': { prompts: [] },
    });
    await expect(loadTemplate(dir)).rejects.toThrow(/cycle: a -> b -> c -> a/);
  });

  it('names the prompt whose when reads an unknown variable', async () => {
    const dir = await writeTemplate({
      'template.prompts.json': { prompts: [{ name: 'projectName', message: 'Name?', type: 'input', when: 'feature contains "x"' }] },
    });
    await expect(loadTemplate(dir)).rejects.toThrow(/template\.prompts\.json:\d+:\d+ \/prompts\/0\/when: .*unknown variable "feature"/);
  });

  it('reports a files rule whose when reads an unknown variable', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, files: [{ path: 'Dockerfile', when: 'docker' }] },
    });
    await expect(loadTemplate(dir)).rejects.toThrow(/template\.json:\d+:\d+ \/files\/0\/when: when of files rule "Dockerfile" names unknown variable "docker"/);
  });
});

describe('parseSetArguments', () => {
  const variables = {
    features: { type: 'array' as const },
    port: { type: 'integer' as const },
    debug: { type: 'boolean' as const },
    author: { type: 'object' as const, properties: { name: { type: 'string' as const } } },
    name: { type: 'string' as const },
  };

  it('types values by the variable definitions', () => {
    expect(parseSetArguments(['features=api,docker', 'port=8080', 'debug=yes', 'author.name=Ada', 'name=a=b'], variables)).toEqual({
      features: ['api', 'docker'],
      port: 8080,
      debug: true,
      author: { name: 'Ada' },
      name: 'a=b',
    });
  });

  it('lets later arguments win over an answers file', () => {
    expect(parseSetArguments(['name=b'], variables, { name: 'a', port: 1 })).toEqual({ name: 'b', port: 1 });
  });

  it('rejects an argument without = and prototype keys', () => {
    expect(() => parseSetArguments(['features'], variables)).toThrow(/must be key=value/);
    expect(() => parseSetArguments(['__proto__.polluted=1'], variables)).toThrow(/not an allowed name/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
