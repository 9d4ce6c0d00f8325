import { describe, it } from 'vitest';

import { clone, expectInvalid, expectValid, without } from './helpers.js';

const entry = {
  id: 'react-app',
  name: 'React App',
  version: '2.1.0',
  description: 'A React single-page application.',
  category: 'frontend',
  stability: 'stable',
  downloadUrl: 'https://registry.example.com/templates/react-app-2.1.0.tgz',
  documentationUrl: 'https://docs.example.com/react-app',
  repositoryUrl: 'https://example.com/ada/react-app',
  author: { name: 'Ada', email: 'ada@example.com', url: 'https://ada.example.com', organization: 'Analytical' },
  license: 'MIT',
  tags: ['react', 'spa'],
  features: ['auth', 'api'],
  dependencies: { methodology: '^2.0.0', node: '>=20', npm: '>=10', docker: '>=24', pnpm: 'whatever the registry says' },
  compatibility: {
    methodologyVersions: ['^2.0.0'],
    nodeVersions: ['>=20 <23'],
    platforms: ['linux', 'darwin'],
    breaking: false,
    deprecated: ['legacyRouter'],
    removed: [],
  },
  stats: { downloads: 1200, stars: 40, forks: 3, issues: 0, lastDownload: '2024-05-01T10:00:00Z' },
  createdAt: '2024-01-01T00:00:00Z',
  updatedAt: '2024-05-01T10:00:00.000+02:00',
  integrity: 'sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==',
  sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  size: 20480,
};

const category = { id: 'frontend', name: 'Frontend', description: 'Browser apps', icon: 'browser', templates: ['react-app'] };

const registry = {
  templates: [entry, { ...entry, version: '2.0.0', stability: 'deprecated' }],
  categories: [category],
  tags: ['react', 'spa'],
  lastUpdated: '2024-05-01T10:00:00Z',
};

describe('template-entry schema', () => {
  const S = 'template-entry';

  it('accepts an entry using every field', () => {
    expectValid(S, entry);
  });

  it('accepts an entry with only the required fields', () => {
    expectValid(S, {
      id: 'x',
      name: 'X',
      version: '0.1.0',
      description: '',
      category: 'misc',
      stability: 'experimental',
      downloadUrl: 'x.tgz',
    });
  });

  it.each(['id', 'name', 'version', 'description', 'category', 'stability', 'downloadUrl'] as const)(
    'rejects an entry without %s',
    (field) => {
      expectInvalid(S, without(entry, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
    },
  );

  it('accepts unknown fields, at the top and inside nested objects (interoperability)', () => {
    expectValid(S, {
      ...entry,
      screenshots: ['a.png'],
      author: { ...entry.author, twitter: '@ada' },
      stats: { ...entry.stats, watchers: 2 },
      compatibility: { ...entry.compatibility, browsers: ['chrome'] },
    });
  });

  it.each(['id', 'name', 'category', 'downloadUrl'])('rejects an empty %s', (field) => {
    expectInvalid(S, { ...entry, [field]: '' }, { keyword: 'minLength', instancePath: `/${field}` });
  });

  it('rejects a description that is not a string', () => {
    expectInvalid(S, { ...entry, description: null }, { keyword: 'type', instancePath: '/description' });
  });

  it('rejects a version without a patch part', () => {
    expectInvalid(S, { ...entry, version: '2.1' }, { keyword: 'pattern', instancePath: '/version' });
  });

  it('rejects a version with a leading v', () => {
    expectInvalid(S, { ...entry, version: 'v2.1.0' }, { keyword: 'pattern', instancePath: '/version' });
  });

  it.each(['experimental', 'beta', 'stable', 'deprecated'])('accepts stability %s', (stability) => {
    expectValid(S, { ...entry, stability });
  });

  it('rejects a stability outside the list', () => {
    expectInvalid(S, { ...entry, stability: 'retired' }, { keyword: 'enum', instancePath: '/stability' });
  });

  it.each(['documentationUrl', 'repositoryUrl', 'license'])('rejects a %s that is not a string', (field) => {
    expectInvalid(S, { ...entry, [field]: 1 }, { keyword: 'type', instancePath: `/${field}` });
  });

  it.each(['tags', 'features'])('rejects %s entries that are not strings', (field) => {
    expectInvalid(S, { ...entry, [field]: ['ok', 2] }, { keyword: 'type', instancePath: `/${field}/1` });
  });

  it.each(['createdAt', 'updatedAt'])('rejects a %s that is not a date-time', (field) => {
    expectInvalid(S, { ...entry, [field]: '2024-01-01' }, {
      keyword: 'format',
      instancePath: `/${field}`,
      params: { format: 'date-time' },
    });
  });

  describe('author', () => {
    it('rejects an author without a name', () => {
      expectInvalid(S, { ...entry, author: { email: 'ada@example.com' } }, {
        keyword: 'required',
        instancePath: '/author',
        params: { missingProperty: 'name' },
      });
    });

    it('rejects an empty author name', () => {
      expectInvalid(S, { ...entry, author: { name: '' } }, { keyword: 'minLength', instancePath: '/author/name' });
    });

    it('rejects an author e-mail that is not an e-mail address', () => {
      expectInvalid(S, { ...entry, author: { name: 'Ada', email: 'ada' } }, { keyword: 'format', instancePath: '/author/email' });
    });

    it('rejects author url and organization that are not strings', () => {
      expectInvalid(S, { ...entry, author: { name: 'Ada', url: 1 } }, { keyword: 'type', instancePath: '/author/url' });
      expectInvalid(S, { ...entry, author: { name: 'Ada', organization: {} } }, {
        keyword: 'type',
        instancePath: '/author/organization',
      });
    });
  });

  describe('dependencies', () => {
    it('rejects dependencies without methodology', () => {
      expectInvalid(S, { ...entry, dependencies: { node: '>=20' } }, {
        keyword: 'required',
        instancePath: '/dependencies',
        params: { missingProperty: 'methodology' },
      });
    });

    it.each(['methodology', 'node', 'npm', 'docker'])('rejects a %s dependency that is not a version range', (tool) => {
      expectInvalid(S, { ...entry, dependencies: { methodology: '^2', [tool]: 'latest-ish' } }, {
        keyword: 'format',
        instancePath: `/dependencies/${tool}`,
        params: { format: 'semver-range' },
      });
    });

    it('accepts further dependency keys with any string value', () => {
      expectValid(S, { ...entry, dependencies: { methodology: '^2', postgres: '16 or later' } });
    });

    it('rejects a further dependency key whose value is not a string', () => {
      expectInvalid(S, { ...entry, dependencies: { methodology: '^2', postgres: 16 } }, {
        keyword: 'type',
        instancePath: '/dependencies/postgres',
      });
    });
  });

  describe('compatibility', () => {
    it.each(['methodologyVersions', 'nodeVersions'])('rejects %s entries that are not version ranges', (field) => {
      expectInvalid(S, { ...entry, compatibility: { [field]: ['>=1', 'soon'] } }, {
        keyword: 'format',
        instancePath: `/compatibility/${field}/1`,
        params: { format: 'semver-range' },
      });
    });

    it('accepts platforms as objects with name and supported', () => {
      expectValid(S, {
        ...entry,
        compatibility: {
          platforms: [
            { name: 'linux', supported: true },
            { name: 'win32', supported: false, notes: 'paths' },
          ],
        },
      });
    });

    it('rejects a platform object without supported', () => {
      expectInvalid(S, { ...entry, compatibility: { platforms: [{ name: 'linux' }] } }, {
        keyword: 'required',
        instancePath: '/compatibility/platforms/0',
        params: { missingProperty: 'supported' },
      });
    });

    it('rejects a platforms list mixing names and objects', () => {
      expectInvalid(S, { ...entry, compatibility: { platforms: ['linux', { name: 'darwin', supported: true }] } }, {
        keyword: 'anyOf',
        instancePath: '/compatibility/platforms',
      });
    });

    it('rejects an empty platform name', () => {
      expectInvalid(S, { ...entry, compatibility: { platforms: [''] } }, {
        keyword: 'minLength',
        instancePath: '/compatibility/platforms/0',
      });
    });

    it('rejects breaking that is not a boolean', () => {
      expectInvalid(S, { ...entry, compatibility: { breaking: 1 } }, { keyword: 'type', instancePath: '/compatibility/breaking' });
    });

    it.each(['deprecated', 'removed'])('rejects %s entries that are not strings', (field) => {
      expectInvalid(S, { ...entry, compatibility: { [field]: [false] } }, {
        keyword: 'type',
        instancePath: `/compatibility/${field}/0`,
      });
    });
  });

  describe('stats', () => {
    it.each(['downloads', 'stars', 'forks', 'issues'])('rejects a negative %s', (field) => {
      expectInvalid(S, { ...entry, stats: { [field]: -1 } }, { keyword: 'minimum', instancePath: `/stats/${field}` });
    });

    it.each(['downloads', 'stars', 'forks', 'issues'])('rejects %s that is not a number', (field) => {
      expectInvalid(S, { ...entry, stats: { [field]: '12' } }, { keyword: 'type', instancePath: `/stats/${field}` });
    });

    it('rejects lastDownload that is not a string', () => {
      expectInvalid(S, { ...entry, stats: { lastDownload: 1714557600 } }, {
        keyword: 'type',
        instancePath: '/stats/lastDownload',
      });
    });
  });

  describe("this project's extensions", () => {
    it('rejects an integrity that is not a sha512 SRI string', () => {
      expectInvalid(S, { ...entry, integrity: 'sha256-abc=' }, { keyword: 'pattern', instancePath: '/integrity' });
      expectInvalid(S, { ...entry, integrity: 'sha512-abc===' }, { keyword: 'pattern', instancePath: '/integrity' });
    });

    it('rejects a sha256 that is not 64 lower-case hex digits', () => {
      expectInvalid(S, { ...entry, sha256: entry.sha256.toUpperCase() }, { keyword: 'pattern', instancePath: '/sha256' });
      expectInvalid(S, { ...entry, sha256: entry.sha256.slice(1) }, { keyword: 'pattern', instancePath: '/sha256' });
    });

    it('accepts a size of 0', () => {
      expectValid(S, { ...entry, size: 0 });
    });

    it('rejects a negative or fractional size', () => {
      expectInvalid(S, { ...entry, size: -1 }, { keyword: 'minimum', instancePath: '/size' });
      expectInvalid(S, { ...entry, size: 1.5 }, { keyword: 'type', instancePath: '/size' });
    });
  });
});

describe('category schema', () => {
  const S = 'category';

  it('accepts a category using every field', () => {
    expectValid(S, category);
  });

  it('accepts a category with only id and name, and unknown fields', () => {
    expectValid(S, { id: 'backend', name: 'Backend', color: 'blue' });
  });

  it.each(['id', 'name'] as const)('rejects a category without %s', (field) => {
    expectInvalid(S, without(category, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it.each(['id', 'name'])('rejects an empty %s', (field) => {
    expectInvalid(S, { ...category, [field]: '' }, { keyword: 'minLength', instancePath: `/${field}` });
  });

  it.each(['description', 'icon'])('rejects a %s that is not a string', (field) => {
    expectInvalid(S, { ...category, [field]: 3 }, { keyword: 'type', instancePath: `/${field}` });
  });

  it('rejects template ids that are not non-empty strings', () => {
    expectInvalid(S, { ...category, templates: [{ id: 'react-app' }] }, { keyword: 'type', instancePath: '/templates/0' });
    expectInvalid(S, { ...category, templates: [''] }, { keyword: 'minLength', instancePath: '/templates/0' });
  });
});

describe('registry-document schema', () => {
  const S = 'registry-document';

  it('accepts a document with two versions of one template', () => {
    expectValid(S, registry);
  });

  it('accepts an empty registry, and unknown top-level fields', () => {
    expectValid(S, { templates: [], categories: [], tags: [], lastUpdated: '2024-01-01T00:00:00Z', generator: 'other' });
  });

  it.each(['templates', 'categories', 'tags', 'lastUpdated'] as const)('rejects a document without %s', (field) => {
    expectInvalid(S, without(registry, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('checks each template against the template-entry schema', () => {
    const data = clone(registry);
    data.templates[1]!.version = '2.0';
    expectInvalid(S, data, { keyword: 'pattern', instancePath: '/templates/1/version' });
  });

  it('checks each category against the category schema', () => {
    expectInvalid(S, { ...registry, categories: [{ id: 'frontend' }] }, {
      keyword: 'required',
      instancePath: '/categories/0',
      params: { missingProperty: 'name' },
    });
  });

  it('rejects tags that are not strings', () => {
    expectInvalid(S, { ...registry, tags: [['react']] }, { keyword: 'type', instancePath: '/tags/0' });
  });

  it('rejects a lastUpdated that is not a date-time', () => {
    expectInvalid(S, { ...registry, lastUpdated: 'yesterday' }, { keyword: 'format', instancePath: '/lastUpdated' });
  });
});
