import { checkbox, input, select } from '@inquirer/prompts';
import { render } from '@inquirer/testing';
import { describe, expect, it } from 'vitest';

import { loadTemplate, resolveAnswers, type LoadedTemplate } from '../../src/template/index.js';
import {
  PromptCancelledError,
  promptForAnswers,
  type CheckboxPromptOptions,
  type InputPromptOptions,
  type Prompter,
  type SelectPromptOptions,
} from '../../src/template/prompts.js';
import { writeTemplate } from '../helpers/fixtures.js';

type Call =
  | { kind: 'input'; options: InputPromptOptions }
  | { kind: 'select'; options: SelectPromptOptions }
  | { kind: 'checkbox'; options: CheckboxPromptOptions };

/** Records every call and answers from a script keyed by the question text. */
function fakePrompter(script: Record<string, unknown>): Prompter & { calls: Call[] } {
  const calls: Call[] = [];
  const answer = (message: string): unknown => {
    if (!(message in script)) throw new Error(`unexpected question ${JSON.stringify(message)}`);
    return script[message];
  };
  return {
    calls,
    input(options) {
      calls.push({ kind: 'input', options });
      return Promise.resolve(answer(options.message) as string);
    },
    select(options) {
      calls.push({ kind: 'select', options });
      return Promise.resolve(answer(options.message) as string);
    },
    checkbox(options) {
      calls.push({ kind: 'checkbox', options });
      return Promise.resolve(answer(options.message) as string[]);
    },
  };
}

const INVALID_NAME = 'Use lower-case letters, digits and hyphens, starting with a letter (for example my-service).';

/** The variables and prompts of the spec (as in examples/templates/node-service), in a temp template. */
const serviceVariables = {
  variables: {
    projectName: {
      type: 'string',
      default: 'my-service',
      validation: '^[a-z][a-z0-9-]*$',
      invalidMessage: INVALID_NAME,
      required: true,
    },
    description: { type: 'string', default: 'A small HTTP service built with Node.js and TypeScript.' },
    author: {
      type: 'object',
      properties: {
        name: { type: 'string', default: 'Your Name', required: true },
        email: { type: 'string', default: 'you@example.com', validation: '^[^@]+@[^@]+\\.[^@]+$' },
      },
    },
    features: {
      type: 'array',
      items: { type: 'string' },
      enum: ['auth', 'database', 'api', 'testing', 'docker'],
      default: ['api', 'testing'],
    },
    database: {
      type: 'string',
      enum: ['postgresql', 'mysql', 'sqlite', 'mongodb'],
      default: 'postgresql',
      condition: 'features contains "database"',
    },
  },
  computed: { packageName: 'projectName | package_name', className: 'projectName | class_name' },
};

const servicePrompts = {
  prompts: [
    { name: 'projectName', message: 'Project name', type: 'input', validate: '^[a-z][a-z0-9-]*$', invalidMessage: INVALID_NAME },
    { name: 'description', message: 'Short description', type: 'input' },
    {
      name: 'features',
      message: 'Which features do you want?',
      type: 'multiselect',
      choices: [
        { name: 'Bearer-token authentication', value: 'auth' },
        { name: 'Database connection', value: 'database' },
        { name: 'JSON API (in-memory items resource)', value: 'api' },
        { name: 'Tests (node:test)', value: 'testing' },
        { name: 'Dockerfile', value: 'docker' },
      ],
    },
    {
      name: 'database',
      message: 'Which database?',
      type: 'select',
      choices: [
        { name: 'PostgreSQL', value: 'postgresql' },
        { name: 'MySQL', value: 'mysql' },
        { name: 'SQLite', value: 'sqlite' },
        { name: 'MongoDB', value: 'mongodb' },
      ],
      when: 'features contains "database"',
    },
  ],
};

const nodeService = async (): Promise<LoadedTemplate> =>
  loadTemplate(await writeTemplate({ 'template.vars.json': serviceVariables, 'template.prompts.json': servicePrompts }));

describe('promptForAnswers with a scripted prompter', () => {
  it('asks the prompts in file order, with the defaults and choices, and returns the answers', async () => {
    const template = await nodeService();
    const prompter = fakePrompter({
      'Project name': 'orders-api',
      'Short description': 'Keeps orders',
      'Which features do you want?': ['api', 'database'],
      'Which database?': 'sqlite',
    });

    const answers = await promptForAnswers(template, {}, { prompter });

    expect(prompter.calls.map((call) => [call.kind, call.options.message])).toEqual([
      ['input', 'Project name'],
      ['input', 'Short description'],
      ['checkbox', 'Which features do you want?'],
      ['select', 'Which database?'],
    ]);
    expect(answers).toEqual({
      projectName: 'orders-api',
      description: 'Keeps orders',
      features: ['api', 'database'],
      database: 'sqlite',
    });

    const [name, description, features, database] = prompter.calls;
    expect(name?.options).toMatchObject({ default: 'my-service' });
    expect(description?.options).toMatchObject({ default: 'A small HTTP service built with Node.js and TypeScript.' });
    expect(features?.kind).toBe('checkbox');
    expect((features?.options as CheckboxPromptOptions).choices).toEqual([
      { name: 'Bearer-token authentication', value: 'auth', checked: false },
      { name: 'Database connection', value: 'database', checked: false },
      { name: 'JSON API (in-memory items resource)', value: 'api', checked: true },
      { name: 'Tests (node:test)', value: 'testing', checked: true },
      { name: 'Dockerfile', value: 'docker', checked: false },
    ]);
    expect(database?.options).toEqual({
      message: 'Which database?',
      default: 'postgresql',
      choices: [
        { name: 'PostgreSQL', value: 'postgresql' },
        { name: 'MySQL', value: 'mysql' },
        { name: 'SQLite', value: 'sqlite' },
        { name: 'MongoDB', value: 'mongodb' },
      ],
    });

    const resolved = resolveAnswers(template, answers);
    expect(resolved.answers.database).toBe('sqlite');
    expect(resolved.computed.className).toBe('OrdersApi');
  });

  it('skips the database prompt when the features just answered leave out "database"', async () => {
    const template = await nodeService();
    const prompter = fakePrompter({
      'Project name': 'orders-api',
      'Short description': 'Keeps orders',
      'Which features do you want?': ['api'],
    });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(prompter.calls.map((call) => call.options.message)).not.toContain('Which database?');
    expect(answers).toEqual({ projectName: 'orders-api', description: 'Keeps orders', features: ['api'] });
  });

  it('evaluates `when` over the defaults when features are not asked', async () => {
    const template = await nodeService();
    const withDefaults = fakePrompter({ 'Project name': 'x', 'Short description': 'y' });
    // features given without database: no database question
    await promptForAnswers(template, { features: ['api', 'testing'] }, { prompter: withDefaults });
    expect(withDefaults.calls).toHaveLength(2);

    const withDatabase = fakePrompter({ 'Project name': 'x', 'Short description': 'y', 'Which database?': 'mongodb' });
    const answers = await promptForAnswers(template, { features: ['database'] }, { prompter: withDatabase });
    expect(withDatabase.calls.map((call) => call.options.message)).toEqual(['Project name', 'Short description', 'Which database?']);
    expect(answers.database).toBe('mongodb');
  });

  it('skips prompts whose variable is already given and keeps the given answers', async () => {
    const template = await nodeService();
    const prompter = fakePrompter({ 'Short description': 'Asked' });
    const answers = await promptForAnswers(
      template,
      { projectName: 'given-name', features: ['auth'], author: { name: 'Ada' } },
      { prompter },
    );
    expect(prompter.calls.map((call) => call.options.message)).toEqual(['Short description']);
    expect(answers).toEqual({
      projectName: 'given-name',
      features: ['auth'],
      author: { name: 'Ada' },
      description: 'Asked',
    });
  });

  it('converts input for number, integer and boolean variables and checks it', async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: {
          projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' },
          description: { type: 'string', default: 'An app' },
          port: { type: 'integer', default: 3000 },
          ratio: { type: 'number' },
          strict: { type: 'boolean', default: true },
        },
      },
      'template.prompts.json': {
        prompts: [
          { name: 'port', message: 'Port?', type: 'input' },
          { name: 'ratio', message: 'Ratio?', type: 'input' },
          { name: 'strict', message: 'Strict?', type: 'input' },
        ],
      },
    });
    const template = await loadTemplate(dir);
    const prompter = fakePrompter({ 'Port?': ' 8080 ', 'Ratio?': '0.5', 'Strict?': 'n' });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(answers).toEqual({ port: 8080, ratio: 0.5, strict: false });

    const [port, ratio, strict] = prompter.calls as { kind: 'input'; options: InputPromptOptions }[];
    expect(port?.options.default).toBe('3000');
    expect(ratio?.options.default).toBeUndefined();
    expect(strict?.options.default).toBe('yes');
    expect(port?.options.validate?.('80.5')).toBe('must be an integer (got "80.5")');
    expect(port?.options.validate?.('abc')).toBe('must be a number (got "abc")');
    expect(port?.options.validate?.('443')).toBe(true);
    expect(ratio?.options.validate?.('1e3')).toBe(true);
    expect(strict?.options.validate?.('YES')).toBe(true);
    expect(strict?.options.validate?.('maybe')).toBe('answer yes or no (got "maybe")');
  });

  it('matches a number default to a select choice and converts the chosen value', async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: {
          projectName: { type: 'string', default: 'my-app' },
          description: { type: 'string', default: 'An app' },
          workers: { type: 'integer', enum: [1, 2, 4], default: 2 },
        },
      },
      'template.prompts.json': {
        prompts: [
          {
            name: 'workers',
            message: 'Workers?',
            type: 'select',
            choices: [
              { name: 'one', value: '1' },
              { name: 'two', value: '2' },
              { name: 'four', value: '4' },
            ],
          },
        ],
      },
    });
    const template = await loadTemplate(dir);
    const prompter = fakePrompter({ 'Workers?': '4' });
    const answers = await promptForAnswers(template, {}, { prompter });
    expect(prompter.calls[0]?.options).toMatchObject({ default: '2' });
    expect(answers).toEqual({ workers: 4 });
    expect(resolveAnswers(template, answers).answers.workers).toBe(4);
  });

  it('validates input with the prompt pattern and the variable pattern, each with its message', async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: {
          projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' },
          description: { type: 'string', default: 'An app', validation: '^.{3,}$', invalidMessage: 'Too short.' },
          code: { type: 'string', enum: ['a1', 'b2'] },
        },
      },
      'template.prompts.json': {
        prompts: [
          { name: 'projectName', message: 'Name?', type: 'input', validate: '^[a-z][a-z0-9-]*$' },
          { name: 'description', message: 'Description?', type: 'input', validate: '^[A-Z]', invalidMessage: 'Start with a capital.' },
          { name: 'code', message: 'Code?', type: 'input' },
        ],
      },
    });
    const template = await loadTemplate(dir);
    const prompter = fakePrompter({ 'Name?': 'ok', 'Description?': 'Fine', 'Code?': 'a1' });
    await promptForAnswers(template, {}, { prompter });
    const [name, description, code] = prompter.calls as { kind: 'input'; options: InputPromptOptions }[];
    expect(name?.options.validate?.('Bad')).toBe('must match ^[a-z][a-z0-9-]*$');
    expect(description?.options.validate?.('ab')).toBe('Start with a capital.; Too short.');
    expect(description?.options.validate?.('Ab')).toBe('Too short.');
    expect(description?.options.validate?.('Abc')).toBe(true);
    expect(code?.options.validate?.('c3')).toBe('code must be one of "a1", "b2" (got "c3")');
  });

  it('turns Ctrl-C (ExitPromptError) into PromptCancelledError', async () => {
    const template = await nodeService();
    const exit = Object.assign(new Error('User force closed the prompt with SIGINT'), { name: 'ExitPromptError' });
    const prompter: Prompter = {
      input: () => Promise.reject(exit),
      select: () => Promise.reject(exit),
      checkbox: () => Promise.reject(exit),
    };
    const failure = promptForAnswers(template, {}, { prompter });
    await expect(failure).rejects.toBeInstanceOf(PromptCancelledError);
    await expect(failure).rejects.toThrow('cancelled');
  });
});

type Rendered = Awaited<ReturnType<typeof render>>;
type Driver = (prompt: Rendered) => Promise<void> | void;

/**
 * A Prompter that renders each real @inquirer/prompts prompt with @inquirer/testing and lets
 * the test drive it, one driver per question text.
 */
function renderingPrompter(drivers: Record<string, Driver>): Prompter {
  const drive = async <T>(message: string, rendered: Omit<Rendered, 'answer'> & { answer: Promise<T> }): Promise<T> => {
    const driver = drivers[message];
    if (!driver) throw new Error(`unexpected question ${JSON.stringify(message)}`);
    await driver(rendered);
    return rendered.answer;
  };
  return {
    input: async (options) => drive(options.message, await render(input, options)),
    select: async (options) => drive(options.message, await render(select<string>, { ...options, choices: [...options.choices] })),
    checkbox: async (options) =>
      drive(options.message, await render(checkbox<string>, { ...options, choices: [...options.choices] })),
  };
}

describe('promptForAnswers with the real inquirer prompts', () => {
  it('shows the invalidMessage for a bad project name and asks again', async () => {
    const template = await nodeService();
    const seen: string[] = [];
    const prompter = renderingPrompter({
      'Project name': async ({ events, getScreen, nextRender }) => {
        expect(getScreen()).toContain('Project name (my-service)');
        events.type('My Service');
        events.keypress('enter');
        await nextRender();
        seen.push(getScreen());
        expect(getScreen()).toContain(INVALID_NAME);
        // The bad text stays for editing: clear it and type a good one.
        for (let i = 0; i < 'My Service'.length; i++) events.keypress('backspace');
        events.type('my-service-2');
        events.keypress('enter');
      },
      'Short description': ({ events }) => events.keypress('enter'),
      'Which features do you want?': ({ events }) => events.keypress('enter'),
    });

    const answers = await promptForAnswers(template, {}, { prompter });

    expect(seen[0]).toContain('My Service');
    expect(answers).toEqual({
      projectName: 'my-service-2',
      description: 'A small HTTP service built with Node.js and TypeScript.',
      features: ['api', 'testing'],
    });
  });

  it('selects checkbox items with space and asks the database question that depends on them', async () => {
    const template = await nodeService();
    const prompter = renderingPrompter({
      'Project name': ({ events }) => events.keypress('enter'),
      'Short description': ({ events }) => events.keypress('enter'),
      'Which features do you want?': ({ events, getScreen }) => {
        const screen = getScreen();
        // api and testing are checked by default; auth and database are not.
        expect(screen).toMatch(/◯ Bearer-token authentication/);
        expect(screen).toMatch(/◉ JSON API/);
        expect(screen).toMatch(/◉ Tests/);
        events.keypress('down'); // Database connection
        events.keypress('space');
        events.keypress('down'); // JSON API
        events.keypress('space'); // uncheck it
        expect(getScreen()).toMatch(/◉ Database connection/);
        events.keypress('enter');
      },
      'Which database?': ({ events, getScreen }) => {
        expect(getScreen()).toMatch(/❯ PostgreSQL/);
        events.keypress('down');
        events.keypress('down');
        events.keypress('enter');
      },
    });

    const answers = await promptForAnswers(template, {}, { prompter });

    expect(answers).toEqual({
      projectName: 'my-service',
      description: 'A small HTTP service built with Node.js and TypeScript.',
      features: ['database', 'testing'],
      database: 'sqlite',
    });
    expect(resolveAnswers(template, answers).answers).toMatchObject({ features: ['database', 'testing'], database: 'sqlite' });
  });
});
