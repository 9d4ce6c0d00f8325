/**
 * Boolean questions: a `confirm` prompt (y/N on a terminal) for a `boolean` variable, `--set
 * flag=true|false|yes|no`, and booleans deciding `when`, `condition` and `files[].when`.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { confirm, input } from '@inquirer/prompts';
import { render } from '@inquirer/testing';
import { describe, expect, it } from 'vitest';

import { generateProject, lintTemplate, loadTemplate, parseSetArguments, resolveAnswers, testTemplate, validateTemplate } from '../../src/template/index.js';
import { promptForAnswers, type Prompter } from '../../src/template/prompts.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, validVariables, writeTemplate } from '../helpers/fixtures.js';

const variables = {
  variables: {
    projectName: validVariables.variables.projectName,
    useDocker: { type: 'boolean', default: false, description: 'Add a Dockerfile' },
    dockerImage: { type: 'string', default: 'node:20', condition: 'useDocker' },
  },
};
const prompts = {
  prompts: [
    { name: 'projectName', message: 'Project name?', type: 'input' },
    { name: 'useDocker', message: 'Add a Dockerfile?', type: 'confirm' },
    { name: 'dockerImage', message: 'Base image?', type: 'input', when: 'useDocker == true' },
  ],
};

const dockerTemplate = (): Promise<string> =>
  writeTemplate({
    'template.json': { ...validManifest, files: [{ path: 'Dockerfile', when: 'useDocker' }] },
    'template.vars.json': variables,
    'template.prompts.json': prompts,
    'template/Dockerfile': 'FROM {{ dockerImage }}\n',
    'template/README.md': '# {{ projectName }}{% if useDocker %} (in a container){% endif %}\n',
  });

type Rendered = Awaited<ReturnType<typeof render>>;

/** The real inquirer prompts, rendered on a fake screen and driven by the test, one driver per question. */
function screenPrompter(drivers: Record<string, (prompt: Rendered) => Promise<void> | void>): Prompter & { screens: string[] } {
  const screens: string[] = [];
  const drive = async <T>(message: string, rendered: Omit<Rendered, 'answer'> & { answer: Promise<T> }): Promise<T> => {
    const driver = drivers[message];
    if (!driver) throw new Error(`unexpected question ${JSON.stringify(message)}`);
    screens.push(rendered.getScreen());
    await driver(rendered);
    return rendered.answer;
  };
  const unexpected = (): Promise<never> => Promise.reject(new Error('unexpected prompt kind'));
  return {
    screens,
    input: async (options) => drive(options.message, await render(input, options)),
    confirm: async (options) => drive(options.message, await render(confirm, options)),
    select: unexpected,
    checkbox: unexpected,
  };
}

describe('a confirm prompt for a boolean variable', () => {
  it('asks y/N (the default false), and y answers true: the questions its when opens follow', async () => {
    const template = await loadTemplate(await dockerTemplate());
    const prompter = screenPrompter({
      'Project name?': ({ events }) => events.keypress('enter'),
      'Add a Dockerfile?': ({ events }) => {
        events.type('y');
        events.keypress('enter');
      },
      'Base image?': ({ events }) => events.keypress('enter'),
    });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(prompter.screens[1]).toContain('Add a Dockerfile? (y/N)');
    expect(answers.useDocker).toBe(true);
    expect(prompter.screens).toHaveLength(3);
    expect(resolveAnswers(template, answers).answers).toMatchObject({ useDocker: true, dockerImage: 'node:20' });
  });

  it('takes Enter as the default, and a default of true shows (Y/n); false skips the questions its when closes', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { ...variables.variables, useDocker: { type: 'boolean', default: true } } },
      'template.prompts.json': prompts,
      'template.json': { ...validManifest, files: [{ path: 'Dockerfile', when: 'useDocker' }] },
      'template/Dockerfile': 'FROM {{ dockerImage }}\n',
    });
    const template = await loadTemplate(dir);
    const prompter = screenPrompter({
      'Project name?': ({ events }) => events.keypress('enter'),
      'Add a Dockerfile?': ({ events }) => {
        events.type('n');
        events.keypress('enter');
      },
    });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(prompter.screens[1]).toContain('Add a Dockerfile? (Y/n)');
    expect(answers).toEqual({ projectName: 'my-app', useDocker: false });
    expect(resolveAnswers(template, answers).answers).not.toHaveProperty('dockerImage');
  });

  it('is not asked when --set answered it', async () => {
    const template = await loadTemplate(await dockerTemplate());
    const prompter = screenPrompter({ 'Project name?': ({ events }) => events.keypress('enter') });
    const answers = await promptForAnswers(template, parseSetArguments(['useDocker=no'], template.variables), { prompter });
    expect(prompter.screens).toHaveLength(1);
    expect(answers.useDocker).toBe(false);
  });
});

describe('boolean answers', () => {
  it('--set takes true, false, yes and no for a boolean variable', async () => {
    const template = await loadTemplate(await dockerTemplate());
    for (const [text, value] of [['true', true], ['false', false], ['yes', true], ['no', false], ['YES', true]] as const) {
      expect(parseSetArguments([`useDocker=${text}`], template.variables)).toEqual({ useDocker: value });
    }
    expect(() => resolveAnswers(template, parseSetArguments(['useDocker=maybe'], template.variables))).toThrow('useDocker: must be a boolean (got "maybe")');
  });

  it('decide when, condition and files[].when: the Dockerfile and its image only with useDocker', async () => {
    const dir = await dockerTemplate();
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const template = await loadTemplate(dir);

    const withDocker = await generateProject(template, path.join(await tempDir(), 'on'), { useDocker: true });
    expect(await readFile(path.join(withDocker.outDir, 'Dockerfile'), 'utf8')).toBe('FROM node:20\n');
    expect(await readFile(path.join(withDocker.outDir, 'README.md'), 'utf8')).toBe('# my-app (in a container)\n');
    expect(withDocker.answers).toEqual({ projectName: 'my-app', useDocker: true, dockerImage: 'node:20' });

    const without = await generateProject(template, path.join(await tempDir(), 'off'), { useDocker: false });
    expect(existsSync(path.join(without.outDir, 'Dockerfile'))).toBe(false);
    expect(await readFile(path.join(without.outDir, 'README.md'), 'utf8')).toBe('# my-app\n');
    expect(without.answers).toEqual({ projectName: 'my-app', useDocker: false });
  });

  it('test generates both values of a boolean', async () => {
    const report = await testTemplate(await dockerTemplate());
    expect(report.passed).toBe(true);
    expect(report.sets.map((set) => set.answers.useDocker)).toEqual(expect.arrayContaining([true, false]));
  });

  it('generate --set useDocker=yes writes the Dockerfile; a value that is not yes or no is refused, naming it', async () => {
    const dir = await dockerTemplate();
    const out = path.join(await tempDir(), 'app');
    const run = await cli('generate', dir, '-o', out, '--set', 'useDocker=yes');
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(path.join(out, 'Dockerfile'), 'utf8')).toBe('FROM node:20\n');
    const bad = await cli('generate', dir, '-o', path.join(await tempDir(), 'bad'), '--set', 'useDocker=sure');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('useDocker: must be a boolean (got "sure")');
  });
});

describe('lint of confirm prompts', () => {
  it('refuses a confirm prompt whose variable is not a boolean', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { ...variables.variables, useDocker: { type: 'string', default: 'no' } } },
      'template.prompts.json': prompts,
      'template/Dockerfile': 'FROM {{ dockerImage }} {{ useDocker }}\n',
    });
    const { findings } = await lintTemplate(dir);
    expect(findings).toContainEqual(
      expect.objectContaining({
        rule: 'confirm-not-boolean',
        severity: 'error',
        file: 'template.prompts.json',
        message: 'prompt "useDocker" is a confirm (yes or no), but variable "useDocker" is a string; declare it "type": "boolean"',
      }),
    );
    expect((await lintTemplate(await dockerTemplate())).findings.filter((f) => f.rule === 'confirm-not-boolean')).toEqual([]);
  });
});
