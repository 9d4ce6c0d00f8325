import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { expectInvalid, expectValid, without } from './helpers.js';

const S = 'template-prompts';

const projectNamePrompt = {
  name: 'projectName',
  message: 'Project name?',
  type: 'input',
  validate: '^[a-z][a-z0-9-]*$',
  invalidMessage: 'Use lower-case letters, digits and -',
};
const featuresPrompt = {
  name: 'features',
  message: 'Features?',
  type: 'multiselect',
  choices: ['auth', 'database', 'api', 'testing', 'docker'].map((value) => ({ name: value.toUpperCase(), value })),
};
const databasePrompt = {
  name: 'database',
  message: 'Database?',
  type: 'select',
  choices: [
    { name: 'PostgreSQL', value: 'postgresql' },
    { name: 'MySQL', value: 'mysql' },
    { name: 'SQLite', value: 'sqlite' },
    { name: 'MongoDB', value: 'mongodb' },
  ],
  when: "features contains 'database'",
};
const promptsFile = {
  $schema: '../../schemas/template-prompts.schema.json',
  prompts: [projectNamePrompt, { name: 'description', message: 'Description?', type: 'input' }, featuresPrompt, databasePrompt],
};

const withPrompt = (prompt: unknown): unknown => ({ prompts: [prompt] });

describe('template-prompts schema', () => {
  it("accepts the spec's four prompts", () => {
    expectValid(S, promptsFile);
  });

  it('accepts an empty prompt list', () => {
    expectValid(S, { prompts: [] });
  });

  it('rejects a file without prompts', () => {
    expectInvalid(S, {}, { keyword: 'required', instancePath: '', params: { missingProperty: 'prompts' } });
  });

  it('rejects prompts that is not an array', () => {
    expectInvalid(S, { prompts: { projectName: projectNamePrompt } }, { keyword: 'type', instancePath: '/prompts' });
  });

  it('rejects a $schema that is not a string', () => {
    expectInvalid(S, { ...promptsFile, $schema: true }, { keyword: 'type', instancePath: '/$schema' });
  });

  it('rejects an unknown top-level key', () => {
    expectInvalid(S, { ...promptsFile, questions: [] }, { keyword: 'additionalProperties', instancePath: '' });
  });

  describe('a prompt', () => {
    it.each(['name', 'message', 'type'] as const)('rejects a prompt without %s', (field) => {
      expectInvalid(S, withPrompt(without(projectNamePrompt, field)), {
        keyword: 'required',
        instancePath: '/prompts/0',
        params: { missingProperty: field },
      });
    });

    it('rejects a prompt name that is not a variable name', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, name: 'project name' }), {
        keyword: 'pattern',
        instancePath: '/prompts/0/name',
      });
    });

    it('rejects an empty message', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, message: '' }), { keyword: 'minLength', instancePath: '/prompts/0/message' });
    });

    it.each(['input', 'select', 'multiselect'])('accepts type %s', (type) => {
      expectValid(S, withPrompt({ ...databasePrompt, type }));
    });

    it('accepts type confirm (a yes/no question) without choices', () => {
      expectValid(S, withPrompt({ name: 'useDocker', message: 'Add a Dockerfile?', type: 'confirm' }));
    });

    it('rejects a type other than input, select, multiselect, confirm', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, type: 'password' }), { keyword: 'enum', instancePath: '/prompts/0/type' });
    });

    it('rejects a validate that is not a regular expression', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, validate: '[a-z' }), {
        keyword: 'format',
        instancePath: '/prompts/0/validate',
        params: { format: 'regex' },
      });
    });

    it('rejects an invalidMessage that is not a string', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, invalidMessage: 1 }), {
        keyword: 'type',
        instancePath: '/prompts/0/invalidMessage',
      });
    });

    it('rejects an empty when', () => {
      expectInvalid(S, withPrompt({ ...databasePrompt, when: '' }), { keyword: 'minLength', instancePath: '/prompts/0/when' });
    });

    it('rejects an unknown key in a prompt', () => {
      expectInvalid(S, withPrompt({ ...projectNamePrompt, default: 'x' }), {
        keyword: 'additionalProperties',
        instancePath: '/prompts/0',
        params: { additionalProperty: 'default' },
      });
    });
  });

  describe('choices', () => {
    it.each(['select', 'multiselect'])('rejects a %s prompt without choices', (type) => {
      expectInvalid(S, withPrompt({ ...without(databasePrompt, 'choices'), type }), {
        keyword: 'required',
        instancePath: '/prompts/0',
        params: { missingProperty: 'choices' },
      });
    });

    it('says in plain words why choices are missing', () => {
      const error = schemaErrors(S, withPrompt(without(databasePrompt, 'choices'))).find((e) => e.keyword === 'required');
      expect(error?.parentSchema?.['x-messages']).toEqual({ required: 'a select or multiselect prompt needs choices' });
    });

    it('accepts an input prompt without choices', () => {
      expectValid(S, withPrompt({ name: 'description', message: 'Description?', type: 'input' }));
    });

    it('rejects an empty choice list', () => {
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: [] }), { keyword: 'minItems', instancePath: '/prompts/0/choices' });
    });

    it.each(['name', 'value'])('rejects a choice without %s', (field) => {
      const choice: Record<string, string> = { name: 'PostgreSQL', value: 'postgresql' };
      delete choice[field];
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: [choice] }), {
        keyword: 'required',
        instancePath: '/prompts/0/choices/0',
        params: { missingProperty: field },
      });
    });

    it('rejects a plain string as a choice', () => {
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: ['postgresql'] }), {
        keyword: 'type',
        instancePath: '/prompts/0/choices/0',
      });
    });

    it('rejects a choice value or name that is not a string', () => {
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: [{ name: 'One', value: 1 }] }), {
        keyword: 'type',
        instancePath: '/prompts/0/choices/0/value',
      });
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: [{ name: 1, value: 'one' }] }), {
        keyword: 'type',
        instancePath: '/prompts/0/choices/0/name',
      });
    });

    it('rejects an unknown key in a choice', () => {
      expectInvalid(S, withPrompt({ ...databasePrompt, choices: [{ name: 'A', value: 'a', checked: true }] }), {
        keyword: 'additionalProperties',
        instancePath: '/prompts/0/choices/0',
      });
    });
  });
});
