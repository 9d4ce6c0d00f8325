/**
 * Defaults computed from other answers: `"default": "{{ projectName | snake_case }}"` is worked
 * out from the answers before it, shown as the prompt's default, overridden by --set, and checked
 * by validate and lint (names, question order, cycles).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { lintTemplate, loadTemplate, resolveAnswers, TemplateLoadError, validateTemplate } from '../../src/template/index.js';
import { promptForAnswers, type InputPromptOptions, type Prompter } from '../../src/template/prompts.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validVariables, writeTemplate } from '../helpers/fixtures.js';

const variables = {
  variables: {
    projectName: validVariables.variables.projectName,
    moduleName: { type: 'string', default: '{{ projectName | snake_case }}', validation: '^[a-z_]+$' },
    title: { type: 'string', default: '{{ projectName | pascal_case }} service' },
    port: { type: 'integer', default: 3000 },
    debugPort: { type: 'integer', default: '{{ port | plus: 1 }}' },
  },
};
const prompts = {
  prompts: [
    { name: 'projectName', message: 'Project name?', type: 'input' },
    { name: 'moduleName', message: 'Module name?', type: 'input' },
    { name: 'port', message: 'Port?', type: 'input' },
  ],
};
const content = {
  'template/README.md': '# {{ title }}\n\nimport {{ moduleName }}; port {{ port }}, debug {{ debugPort }}\n',
};

const templateWith = (files: Record<string, unknown> = {}): Promise<string> =>
  writeTemplate({ 'template.vars.json': variables, 'template.prompts.json': prompts, ...content, ...files });

/** Answers inputs from a script and records the default each question offered. */
function scriptedInputs(script: Record<string, string | undefined>): Prompter & { offered: Record<string, string | undefined> } {
  const offered: Record<string, string | undefined> = {};
  const unexpected = (): Promise<never> => Promise.reject(new Error('unexpected prompt kind'));
  return {
    offered,
    input(options: InputPromptOptions) {
      offered[options.message] = options.default;
      const typed = script[options.message];
      return Promise.resolve(typed ?? options.default ?? '');
    },
    select: unexpected,
    checkbox: unexpected,
  };
}

describe('a default computed from other answers', () => {
  it('is worked out from the answers before it and typed like its variable', async () => {
    const template = await loadTemplate(await templateWith());
    expect(resolveAnswers(template, { projectName: 'my-cool-app' }).answers).toEqual({
      projectName: 'my-cool-app',
      moduleName: 'my_cool_app',
      title: 'MyCoolApp service',
      port: 3000,
      debugPort: 3001,
    });
    expect(resolveAnswers(template, { port: 8080 }).answers).toMatchObject({ moduleName: 'my_app', debugPort: 8081 });
  });

  it('gives way to an answer, and the answer is validated as any other', async () => {
    const template = await loadTemplate(await templateWith());
    expect(resolveAnswers(template, { projectName: 'shop', moduleName: 'store' }).answers.moduleName).toBe('store');
    // A computed value breaking the variable's own validation is reported like a bad answer.
    expect(() => resolveAnswers(template, { projectName: 'shop2' })).toThrow('moduleName: must match ^[a-z_]+$ (got "shop2")');
  });

  it('is what the prompt offers, worked out from what was just answered', async () => {
    const template = await loadTemplate(await templateWith());
    const prompter = scriptedInputs({ 'Project name?': 'orders-api', 'Port?': '8000' });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(prompter.offered).toEqual({ 'Project name?': 'my-app', 'Module name?': 'orders_api', 'Port?': '3000' });
    expect(resolveAnswers(template, answers).answers).toMatchObject({ projectName: 'orders-api', moduleName: 'orders_api', port: 8000, debugPort: 8001 });
  });

  it('generate --set overrides it, and otherwise it follows the answers it reads', async () => {
    const dir = await templateWith();
    const out = path.join(await tempDir(), 'a');
    const run = await cli('generate', dir, '-o', out, '--set', 'projectName=shop-api');
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('# ShopApi service\n\nimport shop_api; port 3000, debug 3001\n');

    const other = path.join(await tempDir(), 'b');
    const set = await cli('generate', dir, '-o', other, '--set', 'projectName=shop-api', '--set', 'moduleName=store', '--set', 'debugPort=9229');
    expect(set.code, set.stderr).toBe(0);
    expect(await readFile(path.join(other, 'README.md'), 'utf8')).toBe('# ShopApi service\n\nimport store; port 3000, debug 9229\n');
    const lock = JSON.parse(await readFile(path.join(other, '.template-lock.json'), 'utf8')) as { answers: Record<string, unknown> };
    expect(lock.answers).toMatchObject({ moduleName: 'store', title: 'ShopApi service', debugPort: 9229 });
  });
});

describe('checks of computed defaults', () => {
  it('validate refuses an unknown name, a computed value, a tag or a malformed placeholder, at the default', async () => {
    const dir = await templateWith({
      'template.vars.json': {
        variables: {
          ...variables.variables,
          moduleName: { type: 'string', default: '{{ projetName | snake_case }}' },
          title: { type: 'string', default: '{{ packageName }}' },
          port: { type: 'integer', default: '{% include "x" %}{{ 1 }}' },
          debugPort: { type: 'integer', default: '{{ port + 1 }}' },
        },
      },
    });
    const { errors } = await validateTemplate(dir);
    const at = (pointer: string) => errors.filter((error) => error.pointer === pointer).map((error) => `${error.code} ${error.message}`);
    expect(at('/variables/moduleName/default')).toEqual([
      'UNKNOWN_VARIABLE default of variable "moduleName" names unknown variable "projetName" (did you mean "projectName"?); declare it in template.vars.json or fix the spelling',
    ]);
    expect(at('/variables/title/default')).toEqual([
      'UNKNOWN_VARIABLE default of variable "title" names computed value "packageName"; a default of a variable can only name variables (they are resolved before computed values)',
    ]);
    expect(at('/variables/port/default')[0]).toMatch(/^INVALID_EXPRESSION default of variable "port" does not parse: a default holds \{\{ value \}\} placeholders only, not tags such as "\{% include \\"x\\" %\}"/);
    expect(at('/variables/debugPort/default')[0]).toMatch(/^INVALID_EXPRESSION default of variable "debugPort" does not parse: .*write it as text with \{\{ value \}\} placeholders/);
  });

  it('a computed default is allowed for a boolean or a number, not for an array', async () => {
    const ok = await templateWith({
      'template.vars.json': { variables: { ...variables.variables, debug: { type: 'boolean', default: '{{ port == 3000 }}' } } },
      'template/README.md': '{{ debug }} {{ moduleName }} {{ title }} {{ debugPort }}\n',
    });
    expect((await validateTemplate(ok)).errors).toEqual([]);
    expect(resolveAnswers(await loadTemplate(ok), {}).answers.debug).toBe(true);
    const bad = await templateWith({ 'template.vars.json': { variables: { ...variables.variables, list: { type: 'array', default: '{{ projectName }}' } } } });
    expect((await validateTemplate(bad)).errors).toContainEqual(expect.objectContaining({ file: 'template.vars.json', pointer: '/variables/list/default' }));
  });

  it('defaults that read each other in a cycle are refused by load and lint', async () => {
    const dir = await templateWith({
      'template.vars.json': {
        variables: {
          projectName: validVariables.variables.projectName,
          moduleName: { type: 'string', default: '{{ title }}' },
          title: { type: 'string', default: '{{ moduleName }}' },
          port: { type: 'integer', default: 3000 },
          debugPort: { type: 'integer', default: 3001 },
        },
      },
    });
    const error = await loadTemplate(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemplateLoadError);
    expect((error as TemplateLoadError).message).toContain('conditions and computed defaults depend on each other in a cycle: moduleName -> title -> moduleName');
    expect((await lintTemplate(dir)).findings).toContainEqual(
      expect.objectContaining({ rule: 'condition-cycle', message: 'conditions and computed defaults depend on each other in a cycle: moduleName -> title -> moduleName' }),
    );
  });

  it('lint: a default may only read variables asked before it; its value is not checked as a literal; what it reads is used', async () => {
    const clean = await lintTemplate(await templateWith());
    expect(clean.findings.filter((f) => ['default-order', 'default-invalid', 'variable-unused'].includes(f.rule))).toEqual([]);

    const reordered = await templateWith({
      'template.prompts.json': { prompts: [prompts.prompts[1], prompts.prompts[0], prompts.prompts[2]] },
    });
    const { findings } = await lintTemplate(reordered);
    expect(findings.filter((f) => f.rule === 'default-order')).toEqual([
      expect.objectContaining({
        severity: 'error',
        file: 'template.vars.json',
        pointer: '/variables/moduleName/default',
        message: 'default of variable "moduleName" reads "projectName", which is asked after it (prompt 2, "moduleName" is prompt 1); ask "projectName" first',
      }),
    ]);
  });

  it('lint: a default of a variable that is not secret must not read a secret', async () => {
    const dir = await templateWith({
      'template.vars.json': {
        variables: { ...variables.variables, token: { type: 'string', secret: true, default: 'x' }, tokenHint: { type: 'string', default: '{{ token | slice: 0, 4 }}' } },
      },
      'template/README.md': '{{ tokenHint }} {{ moduleName }} {{ title }} {{ debugPort }} {{ token }}\n',
    });
    expect((await lintTemplate(dir)).findings).toContainEqual(
      expect.objectContaining({
        rule: 'secret-in-default',
        message: 'default of variable "tokenHint" reads secret "token": the value would be written to the lock file; make "tokenHint" a secret too, or compute it another way',
      }),
    );
  });
});
