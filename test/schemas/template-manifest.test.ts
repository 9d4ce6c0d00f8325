import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { expectInvalid, expectValid, without } from './helpers.js';

const S = 'template-manifest';

const manifest = {
  $schema: '../../schemas/template-manifest.schema.json',
  name: 'react-app',
  version: '1.2.3',
  description: 'A React single-page application.',
  category: 'frontend',
  stability: 'stable',
  methodologyVersion: '>=2.0.0 <3',
  author: { name: 'Ada Lovelace', email: 'ada@example.com' },
  repository: { type: 'git', url: 'https://example.com/ada/react-app.git' },
  license: 'MIT',
  keywords: ['react', 'spa'],
  dependencies: { node: '>=20', npm: '^10.0.0' },
  features: ['auth', 'api'],
  changelog: 'CHANGELOG.md',
  migration: { from: ['^1.0.0', '0.9.x'], guide: 'docs/migration.md' },
  compatibility: { breaking: false, deprecated: ['legacyRouter'], removed: [] },
  customization: { variables: 'template.vars.json', prompts: 'template.prompts.json' },
  content: 'template',
  files: [{ path: 'docker/**', when: "features contains 'docker'" }],
  test: { command: 'npm test', timeoutSeconds: 600 },
};

describe('template-manifest schema', () => {
  it('accepts a manifest using every field', () => {
    expectValid(S, manifest);
  });

  it('accepts a manifest with only the required fields', () => {
    expectValid(S, { name: 'a', version: '0.0.0', description: '0123456789', category: 'backend' });
  });

  it.each(['name', 'version', 'description', 'category'] as const)('rejects a manifest without %s', (field) => {
    expectInvalid(S, without(manifest, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects an unknown top-level field', () => {
    expectInvalid(S, { ...manifest, nmae: 'typo' }, {
      keyword: 'additionalProperties',
      instancePath: '',
      params: { additionalProperty: 'nmae' },
    });
  });

  describe('name', () => {
    it.each(['a', 'my-app', 'app2', 'a-1-b'])('accepts %s', (name) => {
      expectValid(S, { ...manifest, name });
    });

    it.each(['React-App', '1app', '-app', 'my_app', 'my app', ''])('rejects "%s"', (name) => {
      expectInvalid(S, { ...manifest, name }, { keyword: 'pattern', instancePath: '/name' });
    });

    it('carries a plain-words message for the pattern', () => {
      const [error] = schemaErrors(S, { ...manifest, name: 'Bad' });
      expect(error?.parentSchema?.['x-messages']).toEqual({
        pattern: 'must start with a lower-case letter and contain only a-z, 0-9 and -',
        maxLength: "must be at most 214 characters (npm's limit: a name becomes a file name in every registry)",
      });
    });
  });

  describe('version', () => {
    it.each(['0.0.0', '1.2.3', '10.20.30'])('accepts %s', (version) => {
      expectValid(S, { ...manifest, version });
    });

    it('rejects a version without a patch part', () => {
      expectInvalid(S, { ...manifest, version: '1.2' }, { keyword: 'pattern', instancePath: '/version' });
    });

    it.each(['v1.2.3', '1.2.3-beta.1', '1.2.3.4', '1.x.0', 'latest'])('rejects %s', (version) => {
      expectInvalid(S, { ...manifest, version }, { keyword: 'pattern', instancePath: '/version' });
    });
  });

  describe('description', () => {
    it('accepts a description of exactly 10 characters', () => {
      expectValid(S, { ...manifest, description: '0123456789' });
    });

    it('rejects a description shorter than 10 characters', () => {
      expectInvalid(S, { ...manifest, description: '012345678' }, {
        keyword: 'minLength',
        instancePath: '/description',
        params: { limit: 10 },
      });
    });
  });

  describe('category and stability', () => {
    it.each(['frontend', 'backend', 'fullstack', 'mobile', 'desktop'])('accepts category %s', (category) => {
      expectValid(S, { ...manifest, category });
    });

    it('rejects a category outside the list', () => {
      expectInvalid(S, { ...manifest, category: 'cli' }, { keyword: 'enum', instancePath: '/category' });
    });

    it.each(['experimental', 'beta', 'stable', 'deprecated'])('accepts stability %s', (stability) => {
      expectValid(S, { ...manifest, stability });
    });

    it('rejects a stability outside the list', () => {
      expectInvalid(S, { ...manifest, stability: 'alpha' }, { keyword: 'enum', instancePath: '/stability' });
    });
  });

  describe('version ranges', () => {
    it.each(['^2.0.0', '>=1.0.0 <2', '1.x', '*', '~1.2'])('accepts methodologyVersion %s', (methodologyVersion) => {
      expectValid(S, { ...manifest, methodologyVersion });
    });

    it.each(['not a range', '', '>>1', '1.2.3.4'])('rejects methodologyVersion "%s"', (methodologyVersion) => {
      expectInvalid(S, { ...manifest, methodologyVersion }, { keyword: 'format', instancePath: '/methodologyVersion' });
    });

    it('rejects a dependency whose value is not a version range', () => {
      expectInvalid(S, { ...manifest, dependencies: { node: 'twenty' } }, {
        keyword: 'format',
        instancePath: '/dependencies/node',
        params: { format: 'semver-range' },
      });
    });

    it('accepts any runtime name as a dependency key', () => {
      expectValid(S, { ...manifest, dependencies: { pnpm: '>=9', methodology: '^2' } });
    });

    it('rejects a migration.from entry that is not a version range', () => {
      expectInvalid(S, { ...manifest, migration: { from: ['^1.0.0', 'old'] } }, {
        keyword: 'format',
        instancePath: '/migration/from/1',
      });
    });

    it('rejects an empty migration guide path', () => {
      expectInvalid(S, { ...manifest, migration: { guide: '' } }, { keyword: 'minLength', instancePath: '/migration/guide' });
    });
  });

  describe('author', () => {
    it('accepts an author with a name only', () => {
      expectValid(S, { ...manifest, author: { name: 'Ada' } });
    });

    it('rejects an author without a name', () => {
      expectInvalid(S, { ...manifest, author: { email: 'ada@example.com' } }, {
        keyword: 'required',
        instancePath: '/author',
        params: { missingProperty: 'name' },
      });
    });

    it('rejects an empty author name', () => {
      expectInvalid(S, { ...manifest, author: { name: '' } }, { keyword: 'minLength', instancePath: '/author/name' });
    });

    it('rejects an author e-mail that is not an e-mail address', () => {
      expectInvalid(S, { ...manifest, author: { name: 'Ada', email: 'ada-at-example' } }, {
        keyword: 'format',
        instancePath: '/author/email',
        params: { format: 'email' },
      });
    });
  });

  describe('other documented fields', () => {
    it('rejects a repository url that is not a string', () => {
      expectInvalid(S, { ...manifest, repository: { type: 'git', url: 42 } }, { keyword: 'type', instancePath: '/repository/url' });
    });

    it('rejects a repository type that is not a string', () => {
      expectInvalid(S, { ...manifest, repository: { type: true } }, { keyword: 'type', instancePath: '/repository/type' });
    });

    it('rejects a license that is not a string', () => {
      expectInvalid(S, { ...manifest, license: ['MIT'] }, { keyword: 'type', instancePath: '/license' });
    });

    it('rejects keywords that are not strings', () => {
      expectInvalid(S, { ...manifest, keywords: ['react', 1] }, { keyword: 'type', instancePath: '/keywords/1' });
    });

    it('rejects features that are not strings', () => {
      expectInvalid(S, { ...manifest, features: [{ name: 'auth' }] }, { keyword: 'type', instancePath: '/features/0' });
    });

    it('rejects an empty changelog path', () => {
      expectInvalid(S, { ...manifest, changelog: '' }, { keyword: 'minLength', instancePath: '/changelog' });
    });

    it('rejects compatibility.breaking that is not a boolean', () => {
      expectInvalid(S, { ...manifest, compatibility: { breaking: 'yes' } }, {
        keyword: 'type',
        instancePath: '/compatibility/breaking',
      });
    });

    it('rejects compatibility.deprecated and removed entries that are not strings', () => {
      expectInvalid(S, { ...manifest, compatibility: { deprecated: [1] } }, {
        keyword: 'type',
        instancePath: '/compatibility/deprecated/0',
      });
      expectInvalid(S, { ...manifest, compatibility: { removed: [null] } }, {
        keyword: 'type',
        instancePath: '/compatibility/removed/0',
      });
    });

    it('rejects empty customization paths', () => {
      expectInvalid(S, { ...manifest, customization: { variables: '' } }, {
        keyword: 'minLength',
        instancePath: '/customization/variables',
      });
      expectInvalid(S, { ...manifest, customization: { prompts: '' } }, {
        keyword: 'minLength',
        instancePath: '/customization/prompts',
      });
    });
  });

  describe('extension fields', () => {
    it('accepts $schema, content, files and test', () => {
      expectValid(S, {
        name: 'a',
        version: '1.0.0',
        description: 'extensions only',
        category: 'backend',
        $schema: 'https://template-registry.dev/schemas/template-manifest.schema.json',
        content: 'src',
        files: [{ path: '**/*.docker', when: 'docker' }],
        test: { command: 'npm test' },
      });
    });

    it('rejects a $schema that is not a string', () => {
      expectInvalid(S, { ...manifest, $schema: { $ref: 'x' } }, { keyword: 'type', instancePath: '/$schema' });
    });

    it('rejects a conditional file with an empty path or condition', () => {
      expectInvalid(S, { ...manifest, files: [{ path: '', when: 'docker' }] }, { keyword: 'minLength', instancePath: '/files/0/path' });
      expectInvalid(S, { ...manifest, files: [{ path: 'docker/**', when: '' }] }, { keyword: 'minLength', instancePath: '/files/0/when' });
    });

    it('rejects an empty test command', () => {
      expectInvalid(S, { ...manifest, test: { command: '' } }, { keyword: 'minLength', instancePath: '/test/command' });
    });

    it('rejects an empty content folder', () => {
      expectInvalid(S, { ...manifest, content: '' }, { keyword: 'minLength', instancePath: '/content' });
    });

    it('rejects a conditional file without when', () => {
      expectInvalid(S, { ...manifest, files: [{ path: 'docker/**' }] }, {
        keyword: 'required',
        instancePath: '/files/0',
        params: { missingProperty: 'when' },
      });
    });

    it('rejects a conditional file without path, or with an unknown field', () => {
      expectInvalid(S, { ...manifest, files: [{ when: 'docker' }] }, {
        keyword: 'required',
        instancePath: '/files/0',
        params: { missingProperty: 'path' },
      });
      expectInvalid(S, { ...manifest, files: [{ path: 'a', when: 'b', unless: 'c' }] }, {
        keyword: 'additionalProperties',
        instancePath: '/files/0',
      });
    });

    it('rejects a test section without a command', () => {
      expectInvalid(S, { ...manifest, test: { timeoutSeconds: 10 } }, {
        keyword: 'required',
        instancePath: '/test',
        params: { missingProperty: 'command' },
      });
    });

    it('accepts test timeouts from 1 to 3600 seconds', () => {
      expectValid(S, { ...manifest, test: { command: 'x', timeoutSeconds: 1 } });
      expectValid(S, { ...manifest, test: { command: 'x', timeoutSeconds: 3600 } });
    });

    it('rejects a test timeout of 0, above 3600, or fractional', () => {
      expectInvalid(S, { ...manifest, test: { command: 'x', timeoutSeconds: 0 } }, {
        keyword: 'minimum',
        instancePath: '/test/timeoutSeconds',
      });
      expectInvalid(S, { ...manifest, test: { command: 'x', timeoutSeconds: 3601 } }, {
        keyword: 'maximum',
        instancePath: '/test/timeoutSeconds',
      });
      expectInvalid(S, { ...manifest, test: { command: 'x', timeoutSeconds: 1.5 } }, {
        keyword: 'type',
        instancePath: '/test/timeoutSeconds',
      });
    });

    it('rejects an unknown field in the test section', () => {
      expectInvalid(S, { ...manifest, test: { command: 'x', retries: 2 } }, {
        keyword: 'additionalProperties',
        instancePath: '/test',
      });
    });
  });
});
