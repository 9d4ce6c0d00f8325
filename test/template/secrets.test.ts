/**
 * Secret questions (`"secret": true`): asked without echo, taken from --set or the environment
 * variable the definition names, rendered into the files and written nowhere else: not in the
 * lock file, the command's output (--json), error messages or the test report.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { input, password } from '@inquirer/prompts';
import { render } from '@inquirer/testing';
import { describe, expect, it } from 'vitest';

import { givenAnswers } from '../../src/project/index.js';
import { generateProject, lintTemplate, loadTemplate, resolveAnswers, testTemplate, validateTemplate, type TemplateLock } from '../../src/template/index.js';
import { promptForAnswers, type Prompter } from '../../src/template/prompts.js';
import { maskSecrets, secretValues, SECRET_MASK } from '../../src/template/secrets.js';
import { cli } from '../helpers/cli.js';
import { tempDir, withoutEnvironment, writeTemplate } from '../helpers/fixtures.js';
import { SECRET_ENV, secretFiles } from '../helpers/secret-template.js';

const TOKEN = 'tok_4f9a8b7c6d5e';
const ENV = SECRET_ENV;

withoutEnvironment([ENV]);

const secretTemplate = (): Promise<string> => writeTemplate(secretFiles);

type Rendered = Awaited<ReturnType<typeof render>>;

/** The real inquirer prompts on a fake screen, driven by the test; every screen is kept. */
function screenPrompter(drivers: Record<string, (prompt: Rendered, screens: string[]) => Promise<void> | void>): Prompter & { screens: string[] } {
  const screens: string[] = [];
  const drive = async <T>(message: string, rendered: Omit<Rendered, 'answer'> & { answer: Promise<T> }): Promise<T> => {
    const driver = drivers[message];
    if (!driver) throw new Error(`unexpected question ${JSON.stringify(message)}`);
    screens.push(rendered.getScreen());
    await driver(rendered, screens);
    screens.push(rendered.getScreen());
    return rendered.answer;
  };
  const unexpected = (): Promise<never> => Promise.reject(new Error('unexpected prompt kind'));
  return {
    screens,
    input: async (options) => drive(options.message, await render(input, options)),
    password: async (options) => drive(options.message, await render(password, options)),
    select: unexpected,
    checkbox: unexpected,
  };
}

describe('a secret question', () => {
  it('is asked without echo; a bad value is refused without showing it, and asked again', async () => {
    const template = await loadTemplate(await secretTemplate());
    const prompter = screenPrompter({
      'Project name?': ({ events }) => events.keypress('enter'),
      'API token?': async ({ events, getScreen, nextRender }, screens) => {
        events.type('wrong-value-123');
        events.keypress('enter');
        await nextRender();
        screens.push(getScreen());
        expect(getScreen()).toContain('An API token starts with tok_.');
        for (let i = 0; i < 'wrong-value-123'.length; i++) events.keypress('backspace');
        events.type(TOKEN);
        events.keypress('enter');
      },
    });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(answers.apiToken).toBe(TOKEN);
    for (const screen of prompter.screens) {
      expect(screen).not.toContain(TOKEN);
      expect(screen).not.toContain('wrong-value-123');
    }
    expect(prompter.screens.join('\n')).toContain('API token?');
  });

  it('cannot be asked by a prompter without a password question: the error says how to give it', async () => {
    const template = await loadTemplate(await secretTemplate());
    const prompter: Prompter = {
      input: (options) => Promise.resolve(options.default ?? ''),
      select: () => Promise.reject(new Error('no')),
      checkbox: () => Promise.reject(new Error('no')),
    };
    await expect(promptForAnswers(template, {}, { prompter })).rejects.toThrow(`this prompter cannot ask for the secret "apiToken" without echo; give it with --set or the environment variable ${ENV}`);
  });

  it('comes from --set, else from the environment variable the definition names (only when the caller passes an environment)', async () => {
    const template = await loadTemplate(await secretTemplate());
    expect(await givenAnswers(template, { env: { [ENV]: TOKEN } })).toEqual({ apiToken: TOKEN });
    expect(await givenAnswers(template, { set: ['apiToken=tok_fromset'], env: { [ENV]: TOKEN } })).toEqual({ apiToken: 'tok_fromset' });
    expect(await givenAnswers(template, { env: { [ENV]: '' } })).toEqual({});
    expect(await givenAnswers(template, {})).toEqual({});
  });

  it('a bad or missing secret is reported by name, never with its value', async () => {
    const template = await loadTemplate(await secretTemplate());
    const bad = (() => {
      try {
        resolveAnswers(template, { apiToken: 'Leaked-Value-42' });
        return undefined;
      } catch (error) {
        return error as Error;
      }
    })();
    expect(bad?.message).toContain('apiToken: An API token starts with tok_.');
    expect(bad?.message).not.toContain('Leaked-Value-42');
    expect(() => resolveAnswers(template, {})).toThrow(`apiToken: is required (give it with --set or the environment variable ${ENV})`);
  });
});

describe('a generated project with a secret', () => {
  it('has the secret in its files, and nowhere in the lock file or the result', async () => {
    const template = await loadTemplate(await secretTemplate());
    const result = await generateProject(template, path.join(await tempDir(), 'app'), { apiToken: TOKEN });
    expect(await readFile(path.join(result.outDir, 'config/api.txt'), 'utf8')).toBe(`token=${TOKEN}\nheader=Bearer ${TOKEN}\n`);

    const lockText = await readFile(result.lockFile, 'utf8');
    expect(lockText).not.toContain(TOKEN);
    const lock = JSON.parse(lockText) as TemplateLock;
    expect(lock.answers).toEqual({ projectName: 'my-app' });
    // A computed value reading the secret is a secret too.
    expect(lock.computed).toEqual({ packageName: 'my-app', className: 'MyApp' });
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(result.answers).toEqual({ projectName: 'my-app' });
  });

  it('generate takes it from the environment variable; --json and the messages never show it', async () => {
    const dir = await secretTemplate();
    const out = path.join(await tempDir(), 'app');
    process.env[ENV] = TOKEN;
    const run = await cli('generate', dir, '-o', out, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain(TOKEN);
    expect(run.stderr).not.toContain(TOKEN);
    expect(await readFile(path.join(out, 'config/api.txt'), 'utf8')).toContain(`token=${TOKEN}`);

    delete process.env[ENV];
    const missing = await cli('generate', dir, '-o', path.join(await tempDir(), 'none'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`apiToken: is required (give it with --set or the environment variable ${ENV})`);
  });

  it('test generates a template whose secret has no default (it renders empty), and its report holds no secret', async () => {
    const dir = await secretTemplate();
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const report = await testTemplate(dir);
    expect(report.passed, JSON.stringify(report.sets.map((set) => set.problems))).toBe(true);
    expect(report.sets[0]?.answers).toEqual({ projectName: 'my-app' });
  });
});

describe('lint of secrets', () => {
  it('a secret without a prompt needs no default when an environment variable can give it', async () => {
    const withoutPrompt = { prompts: [secretFiles['template.prompts.json'].prompts[0]] };
    const clean = await lintTemplate(await writeTemplate({ ...secretFiles, 'template.prompts.json': withoutPrompt }));
    expect(clean.findings.filter((finding) => finding.severity === 'error')).toEqual([]);
    const { env: _env, ...noEnv } = secretFiles['template.vars.json'].variables.apiToken;
    const unsourced = await lintTemplate(
      await writeTemplate({
        ...secretFiles,
        'template.prompts.json': withoutPrompt,
        'template.vars.json': { ...secretFiles['template.vars.json'], variables: { ...secretFiles['template.vars.json'].variables, apiToken: noEnv } },
      }),
    );
    expect(unsourced.findings).toContainEqual(expect.objectContaining({ rule: 'variable-without-prompt', message: 'variable "apiToken" has no default and no prompt' }));
  });
});

describe('masking secrets in what is shown', () => {
  it('masks every secret value in a text, the longest first; a text holding a very short secret is withheld', async () => {
    const template = await loadTemplate(await secretTemplate());
    const values = secretValues(template, resolveAnswers(template, { apiToken: TOKEN }));
    expect(values).toEqual([`Bearer ${TOKEN}`, TOKEN]);
    expect(maskSecrets(`-token=old\n+token=${TOKEN}\n+header=Bearer ${TOKEN}\n`, values)).toBe(`-token=old\n+token=${SECRET_MASK}\n+header=${SECRET_MASK}\n`);
    expect(maskSecrets('nothing secret', values)).toBe('nothing secret');
    expect(maskSecrets('pin=123', ['123'])).toBeUndefined();
  });
});
