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

  describe('projectName', () => {
    it('rejects projectName without a default', () => {
      expectInvalid(S, withVariable('projectName', { type: 'string' }), {
        keyword: 'required',
        instancePath: '/variables/projectName',
        params: { missingProperty: 'default' },
      });
    });

    it('rejects a projectName default that breaks the name pattern', () => {
      expectInvalid(S, withVariable('projectName', { type: 'string', default: 'My App' }), {
        keyword: 'pattern',
        instancePath: '/variables/projectName/default',
      });
    });

    it('rejects projectName of a type other than string', () => {
      expectInvalid(S, withVariable('projectName', { type: 'number', default: 'my-app' }), {
        keyword: 'const',
        instancePath: '/variables/projectName/type',
      });
    });
  });

  describe('description', () => {
    it('rejects description without a default', () => {
      expectInvalid(S, withVariable('description', { type: 'string' }), {
        keyword: 'required',
        instancePath: '/variables/description',
        params: { missingProperty: 'default' },
      });
    });

    it('rejects a description of a type other than string', () => {
      expectInvalid(S, withVariable('description', { type: 'object', default: 'x' }), {
        keyword: 'const',
        instancePath: '/variables/description/type',
      });
    });

    it('rejects a description default that is not a string', () => {
      expectInvalid(S, withVariable('description', { default: 42 }), {
        keyword: 'type',
        instancePath: '/variables/description/default',
      });
    });
  });

  describe('author', () => {
    it('rejects author of a type other than object', () => {
      expectInvalid(S, withVariable('author', { type: 'string' }), { keyword: 'const', instancePath: '/variables/author/type' });
    });

    it('rejects author name or email of a type other than string', () => {
      expectInvalid(S, withVariable('author', { type: 'object', properties: { name: { type: 'array' } } }), {
        keyword: 'const',
        instancePath: '/variables/author/properties/name/type',
      });
      expectInvalid(S, withVariable('author', { type: 'object', properties: { email: { type: 'number' } } }), {
        keyword: 'const',
        instancePath: '/variables/author/properties/email/type',
      });
    });
  });

  describe('features', () => {
    it('rejects features of a type other than array', () => {
      expectInvalid(S, withVariable('features', { type: 'string' }), { keyword: 'const', instancePath: '/variables/features/type' });
    });

    it('rejects a default feature outside auth, database, api, testing, docker', () => {
      expectInvalid(S, withVariable('features', { type: 'array', default: ['api', 'graphql'] }), {
        keyword: 'enum',
        instancePath: '/variables/features/default/1',
      });
    });

    it('rejects an allowed feature outside the list, in items.enum or enum', () => {
      expectInvalid(S, withVariable('features', { type: 'array', items: { type: 'string', enum: ['api', 'graphql'] } }), {
        keyword: 'enum',
        instancePath: '/variables/features/items/enum/1',
      });
      expectInvalid(S, withVariable('features', { type: 'array', enum: ['ssr'] }), {
        keyword: 'enum',
        instancePath: '/variables/features/enum/0',
      });
    });

    it('rejects feature items that are not strings', () => {
      expectInvalid(S, withVariable('features', { type: 'array', items: { type: 'number' } }), {
        keyword: 'const',
        instancePath: '/variables/features/items/type',
      });
    });
  });

  describe('database', () => {
    it.each(DATABASES)('accepts default %s', (value) => {
      expectValid(S, withVariable('database', { type: 'string', enum: DATABASES, default: value }));
    });

    it('rejects a database default outside postgresql, mysql, sqlite, mongodb', () => {
      expectInvalid(S, withVariable('database', { type: 'string', default: 'oracle' }), {
        keyword: 'enum',
        instancePath: '/variables/database/default',
      });
    });

    it('rejects an allowed database outside the list', () => {
      expectInvalid(S, withVariable('database', { type: 'string', enum: ['postgresql', 'redis'] }), {
        keyword: 'enum',
        instancePath: '/variables/database/enum/1',
      });
    });

    it('rejects database of a type other than string', () => {
      expectInvalid(S, withVariable('database', { type: 'array' }), { keyword: 'const', instancePath: '/variables/database/type' });
    });
  });
});
