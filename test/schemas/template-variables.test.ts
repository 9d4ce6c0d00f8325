import { describe, it } from 'vitest';

import { clone, expectInvalid, expectValid } from './helpers.js';

const S = 'template-variables';

const FEATURES = ['auth', 'database', 'api', 'testing', 'docker'];
const DATABASES = ['postgresql', 'mysql', 'sqlite', 'mongodb'];

const variablesFile = {
  $schema: '../../schemas/template-variables.schema.json',
  variables: {
    projectName: {
      type: 'string',
      description: 'Name of the project',
      default: 'my-app',
      validation: '^[a-z][a-z0-9-]*$',
      invalidMessage: 'lower-case letters, digits and -',
    },
    description: { type: 'string', description: 'What the project does', default: 'A new project' },
    author: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        email: { type: 'string', validation: '^[^@]+@[^@]+\\.[^@]+$' },
      },
    },
    features: { type: 'array', items: { type: 'string', enum: FEATURES }, default: ['api', 'testing'] },
    database: {
      type: 'string',
      enum: DATABASES,
      default: 'postgresql',
      condition: "features contains 'database'",
    },
    port: { type: 'integer', default: 3000, required: true },
  },
  computed: {
    packageName: "projectName | downcase | replace_regex: '[^a-z0-9-]', '-'",
    className: 'projectName | pascal_case',
  },
};

/** The fixture with one variable replaced. */
function withVariable(name: string, variable: unknown): unknown {
  const data = clone(variablesFile) as { variables: Record<string, unknown> };
  data.variables[name] = variable;
  return data;
}

describe('template-variables schema', () => {
  it('accepts a file with the well-known variables, another variable and computed values', () => {
    expectValid(S, variablesFile);
  });

  it('accepts a file with an empty variables object and no computed values', () => {
    expectValid(S, { variables: {} });
  });

  it('rejects a file without variables', () => {
    expectInvalid(S, { computed: {} }, { keyword: 'required', instancePath: '', params: { missingProperty: 'variables' } });
  });

  it('rejects a $schema that is not a string', () => {
    expectInvalid(S, { ...variablesFile, $schema: 1 }, { keyword: 'type', instancePath: '/$schema' });
  });

  it('rejects an unknown top-level key', () => {
    expectInvalid(S, { ...variablesFile, prompts: [] }, { keyword: 'additionalProperties', instancePath: '' });
  });

  describe('any variable', () => {
    it.each(['string', 'number', 'integer', 'boolean', 'array', 'object'])('accepts type %s', (type) => {
      expectValid(S, withVariable('extra', { type }));
    });

    it('rejects a type outside the list', () => {
      expectInvalid(S, withVariable('extra', { type: 'date' }), { keyword: 'enum', instancePath: '/variables/extra/type' });
    });

    it.each([
      ['string', 'text'],
      ['number', 1.5],
      ['integer', 2],
      ['boolean', false],
      ['array', ['a']],
      ['object', { a: 1 }],
    ])('accepts a %s variable whose default is of that type', (type, value) => {
      expectValid(S, withVariable('extra', { type, default: value }));
    });

    it.each([
      ['string', 1, 'string'],
      ['number', '1', 'number'],
      ['integer', 1.5, 'integer'],
      ['boolean', 'true', 'boolean'],
      ['array', 'a', 'array'],
      ['object', [], 'object'],
    ])('rejects a %s variable whose default is not of that type', (type, value, expectedType) => {
      expectInvalid(S, withVariable('extra', { type, default: value }), {
        keyword: 'type',
        instancePath: '/variables/extra/default',
        params: { type: expectedType },
      });
    });

    it('accepts a default of any type when the variable has no type', () => {
      expectValid(S, withVariable('extra', { default: { any: ['thing'] } }));
    });

    it('rejects a variable name that is not an identifier', () => {
      expectInvalid(S, withVariable('my-var', { type: 'string' }), {
        keyword: 'pattern',
        instancePath: '/variables',
        params: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      });
    });

    it('rejects an unknown key in a variable', () => {
      expectInvalid(S, withVariable('extra', { type: 'string', label: 'x' }), {
        keyword: 'additionalProperties',
        instancePath: '/variables/extra',
        params: { additionalProperty: 'label' },
      });
    });

    it('rejects a validation that is not a regular expression', () => {
      expectInvalid(S, withVariable('extra', { type: 'string', validation: '([a-z]' }), {
        keyword: 'format',
        instancePath: '/variables/extra/validation',
        params: { format: 'regex' },
      });
    });

    it('rejects an empty enum, or an enum that is not an array', () => {
      expectInvalid(S, withVariable('extra', { type: 'string', enum: [] }), {
        keyword: 'minItems',
        instancePath: '/variables/extra/enum',
      });
      expectInvalid(S, withVariable('extra', { type: 'string', enum: 'a' }), {
        keyword: 'type',
        instancePath: '/variables/extra/enum',
      });
    });

    it('checks items and properties as variables themselves', () => {
      expectValid(S, withVariable('extra', { type: 'array', items: { type: 'number', default: 1 } }));
      expectInvalid(S, withVariable('extra', { type: 'array', items: { type: 'list' } }), {
        keyword: 'enum',
        instancePath: '/variables/extra/items/type',
      });
      expectInvalid(S, withVariable('extra', { type: 'object', properties: { a: { type: 'string', default: 1 } } }), {
        keyword: 'type',
        instancePath: '/variables/extra/properties/a/default',
      });
    });

    it('rejects required that is not a boolean', () => {
      expectInvalid(S, withVariable('extra', { type: 'string', required: 'yes' }), {
        keyword: 'type',
        instancePath: '/variables/extra/required',
      });
    });

    it('rejects an empty condition', () => {
      expectInvalid(S, withVariable('extra', { type: 'string', condition: '' }), {
        keyword: 'minLength',
        instancePath: '/variables/extra/condition',
      });
    });

    it('rejects description and invalidMessage that are not strings', () => {
      expectInvalid(S, withVariable('extra', { description: 1 }), {
        keyword: 'type',
        instancePath: '/variables/extra/description',
      });
      expectInvalid(S, withVariable('extra', { invalidMessage: false }), {
        keyword: 'type',
        instancePath: '/variables/extra/invalidMessage',
      });
    });
  });

  describe('computed', () => {
    it('rejects an empty expression', () => {
      expectInvalid(S, { ...variablesFile, computed: { packageName: '' } }, {
        keyword: 'minLength',
        instancePath: '/computed/packageName',
      });
    });

    it('rejects an expression that is not a string', () => {
      expectInvalid(S, { ...variablesFile, computed: { packageName: ['a'] } }, {
        keyword: 'type',
        instancePath: '/computed/packageName',
      });
    });

    it('rejects a computed name that is not an identifier', () => {
      expectInvalid(S, { ...variablesFile, computed: { 'package-name': 'x' } }, {
        keyword: 'pattern',
        instancePath: '/computed',
      });
    });
  });

  // The spec's table describes the standard variables of a web template; any template may declare
  // its own variables, with any types, enums and defaults (lint warns about a redefined standard name).
  describe('any template, any language', () => {
    it("accepts a Python template's own features enum, without database or author", () => {
      expectValid(S, {
        variables: {
          projectName: { type: 'string', default: 'my_tool', validation: '^[a-z][a-z0-9_]*$' },
          features: { type: 'array', items: { type: 'string', enum: ['tests', 'docker', 'lint'] }, enum: ['tests', 'docker', 'lint'], default: ['tests', 'lint'] },
          pythonVersion: { type: 'string', enum: ['3.11', '3.12', '3.13'], default: '3.12' },
        },
      });
    });

    it('accepts projectName and description without defaults', () => {
      expectValid(S, { variables: { projectName: { type: 'string' }, description: { type: 'string', required: true } } });
    });

    it('accepts a database outside the four engines and features outside the five', () => {
      expectValid(S, withVariable('database', { type: 'string', enum: ['redis', 'duckdb'], default: 'duckdb' }));
      expectValid(S, withVariable('features', { type: 'array', default: ['graphql'] }));
    });

    it('accepts standard names with other types (lint warns, the schema does not refuse)', () => {
      expectValid(S, withVariable('features', { type: 'string', default: 'all' }));
      expectValid(S, withVariable('database', { type: 'number', default: 1 }));
      expectValid(S, withVariable('author', { type: 'string', default: 'Ada' }));
    });

    it('still checks a standard name as a variable: its default must have its declared type', () => {
      expectInvalid(S, withVariable('features', { type: 'array', default: 'api' }), { keyword: 'type', instancePath: '/variables/features/default' });
      expectInvalid(S, withVariable('projectName', { type: 'string', default: 3 }), { keyword: 'type', instancePath: '/variables/projectName/default' });
    });
  });
});
