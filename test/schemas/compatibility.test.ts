import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { expectInvalid, expectValid, without } from './helpers.js';

const range = { min: '20.0.0', max: '22', supported: true, notes: 'LTS lines' };
const matrix = {
  methodologyVersions: [{ min: '2.0.0', supported: true }],
  nodeVersions: [range, { min: '18', max: '19.9.9', supported: false, notes: 'end of life' }],
  npmVersions: [{ min: '10', supported: true }],
  platforms: [
    { name: 'linux', supported: true },
    { name: 'win32', supported: false, notes: 'untested' },
  ],
  frameworks: [{ name: 'react', versions: [{ min: '18', supported: true }], optional: false }],
};

describe('compatibility-matrix schema', () => {
  const S = 'compatibility-matrix';

  it('accepts a full matrix', () => {
    expectValid(S, matrix);
  });

  it('accepts a matrix of empty lists', () => {
    expectValid(S, { methodologyVersions: [], nodeVersions: [], npmVersions: [], platforms: [], frameworks: [] });
  });

  it.each(['methodologyVersions', 'nodeVersions', 'npmVersions', 'platforms', 'frameworks'] as const)(
    'rejects a matrix without %s',
    (field) => {
      expectInvalid(S, without(matrix, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
    },
  );

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...matrix, browsers: [] }, { keyword: 'additionalProperties', instancePath: '' });
  });

  describe('version range', () => {
    it.each(['min', 'supported'] as const)('rejects a range without %s', (field) => {
      expectInvalid(S, { ...matrix, npmVersions: [without(range, field)] }, {
        keyword: 'required',
        instancePath: '/npmVersions/0',
        params: { missingProperty: field },
      });
    });

    it.each(['1', '1.2', '1.2.3'])('accepts version %s as min and max', (version) => {
      expectValid(S, { ...matrix, nodeVersions: [{ min: version, max: version, supported: true }] });
    });

    it.each(['min', 'max'])('rejects a %s that is a range rather than a version', (field) => {
      expectInvalid(S, { ...matrix, nodeVersions: [{ ...range, [field]: '>=20' }] }, {
        keyword: 'pattern',
        instancePath: `/nodeVersions/0/${field}`,
      });
    });

    it('rejects a version with four parts or a leading v', () => {
      expectInvalid(S, { ...matrix, methodologyVersions: [{ min: '1.2.3.4', supported: true }] }, {
        keyword: 'pattern',
        instancePath: '/methodologyVersions/0/min',
      });
      expectInvalid(S, { ...matrix, methodologyVersions: [{ min: 'v1', supported: true }] }, {
        keyword: 'pattern',
        instancePath: '/methodologyVersions/0/min',
      });
    });

    it('rejects supported that is not a boolean, and notes that is not a string', () => {
      expectInvalid(S, { ...matrix, nodeVersions: [{ ...range, supported: 'yes' }] }, {
        keyword: 'type',
        instancePath: '/nodeVersions/0/supported',
      });
      expectInvalid(S, { ...matrix, nodeVersions: [{ ...range, notes: 1 }] }, {
        keyword: 'type',
        instancePath: '/nodeVersions/0/notes',
      });
    });

    it('rejects an unknown field in a range', () => {
      expectInvalid(S, { ...matrix, nodeVersions: [{ ...range, lts: true }] }, {
        keyword: 'additionalProperties',
        instancePath: '/nodeVersions/0',
      });
    });
  });

  describe('platform', () => {
    it.each(['name', 'supported'])('rejects a platform without %s', (field) => {
      const platform: Record<string, unknown> = { name: 'linux', supported: true };
      delete platform[field];
      expectInvalid(S, { ...matrix, platforms: [platform] }, {
        keyword: 'required',
        instancePath: '/platforms/0',
        params: { missingProperty: field },
      });
    });

    it('rejects an empty platform name, non-boolean supported, non-string notes', () => {
      expectInvalid(S, { ...matrix, platforms: [{ name: '', supported: true }] }, {
        keyword: 'minLength',
        instancePath: '/platforms/0/name',
      });
      expectInvalid(S, { ...matrix, platforms: [{ name: 'linux', supported: 1 }] }, {
        keyword: 'type',
        instancePath: '/platforms/0/supported',
      });
      expectInvalid(S, { ...matrix, platforms: [{ name: 'linux', supported: true, notes: [] }] }, {
        keyword: 'type',
        instancePath: '/platforms/0/notes',
      });
    });

    it('rejects a plain platform name (the matrix uses objects)', () => {
      expectInvalid(S, { ...matrix, platforms: ['linux'] }, { keyword: 'type', instancePath: '/platforms/0' });
    });

    it('rejects an unknown field in a platform', () => {
      expectInvalid(S, { ...matrix, platforms: [{ name: 'linux', supported: true, arch: 'x64' }] }, {
        keyword: 'additionalProperties',
        instancePath: '/platforms/0',
      });
    });
  });

  describe('framework', () => {
    it.each(['name', 'versions', 'optional'])('rejects a framework without %s', (field) => {
      const framework: Record<string, unknown> = { name: 'react', versions: [], optional: true };
      delete framework[field];
      expectInvalid(S, { ...matrix, frameworks: [framework] }, {
        keyword: 'required',
        instancePath: '/frameworks/0',
        params: { missingProperty: field },
      });
    });

    it('checks framework versions as version ranges', () => {
      expectInvalid(S, { ...matrix, frameworks: [{ name: 'react', versions: [{ min: '^18', supported: true }], optional: true }] }, {
        keyword: 'pattern',
        instancePath: '/frameworks/0/versions/0/min',
      });
    });

    it('rejects an empty name, a non-boolean optional, and an unknown field', () => {
      expectInvalid(S, { ...matrix, frameworks: [{ name: '', versions: [], optional: true }] }, {
        keyword: 'minLength',
        instancePath: '/frameworks/0/name',
      });
      expectInvalid(S, { ...matrix, frameworks: [{ name: 'react', versions: [], optional: 'no' }] }, {
        keyword: 'type',
        instancePath: '/frameworks/0/optional',
      });
      expectInvalid(S, { ...matrix, frameworks: [{ name: 'react', versions: [], optional: true, url: 'x' }] }, {
        keyword: 'additionalProperties',
        instancePath: '/frameworks/0',
      });
    });
  });
});

describe('compatibility-environment schema', () => {
  const S = 'compatibility-environment';
  const environment = { methodologyVersion: '2.3.0', nodeVersion: 'v20.11.1', npmVersion: '10.2.4', platform: 'linux' };

  it('accepts an environment', () => {
    expectValid(S, environment);
  });

  it.each(['methodologyVersion', 'nodeVersion', 'npmVersion', 'platform'] as const)('rejects an environment without %s', (field) => {
    expectInvalid(S, without(environment, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it.each(['20', '20.11', '20.11.1', 'v20.11.1', '23.0.0-nightly20240101'])('accepts installed version %s', (version) => {
    expectValid(S, { ...environment, nodeVersion: version });
  });

  it.each(['methodologyVersion', 'nodeVersion', 'npmVersion'])('rejects a %s that is not a version', (field) => {
    expectInvalid(S, { ...environment, [field]: '>=20' }, { keyword: 'pattern', instancePath: `/${field}` });
    expectInvalid(S, { ...environment, [field]: 'latest' }, { keyword: 'pattern', instancePath: `/${field}` });
  });

  it('rejects an empty platform', () => {
    expectInvalid(S, { ...environment, platform: '' }, { keyword: 'minLength', instancePath: '/platform' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...environment, arch: 'x64' }, { keyword: 'additionalProperties', instancePath: '' });
  });
});

describe('compatibility-result schema', () => {
  const S = 'compatibility-result';

  it('accepts a compatible result with warnings', () => {
    expectValid(S, { compatible: true, issues: [], warnings: ['feature legacyRouter is deprecated'] });
  });

  it('accepts an incompatible result with issues', () => {
    expectValid(S, { compatible: false, issues: ['platform win32 is not supported'], warnings: [] });
  });

  it.each(['compatible', 'issues', 'warnings'])('rejects a result without %s', (field) => {
    const result: Record<string, unknown> = { compatible: true, issues: [], warnings: [] };
    delete result[field];
    expectInvalid(S, result, { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects compatible true with issues', () => {
    expectInvalid(S, { compatible: true, issues: ['template not found'], warnings: [] }, {
      keyword: 'maxItems',
      instancePath: '/issues',
    });
  });

  it('rejects compatible false without issues', () => {
    expectInvalid(S, { compatible: false, issues: [], warnings: [] }, { keyword: 'minItems', instancePath: '/issues' });
    const error = schemaErrors(S, { compatible: false, issues: [], warnings: [] }).find((e) => e.keyword === 'minItems');
    expect(error?.parentSchema?.['x-messages']).toEqual({ minItems: 'must list at least one issue when compatible is false' });
  });

  it('rejects compatible that is not a boolean', () => {
    expectInvalid(S, { compatible: 'yes', issues: ['x'], warnings: [] }, { keyword: 'type', instancePath: '/compatible' });
  });

  it('rejects issues and warnings that are not non-empty strings', () => {
    expectInvalid(S, { compatible: false, issues: [''], warnings: [] }, { keyword: 'minLength', instancePath: '/issues/0' });
    expectInvalid(S, { compatible: true, issues: [], warnings: [{ text: 'x' }] }, { keyword: 'type', instancePath: '/warnings/0' });
    expectInvalid(S, { compatible: true, issues: [], warnings: [''] }, { keyword: 'minLength', instancePath: '/warnings/0' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { compatible: true, issues: [], warnings: [], score: 1 }, { keyword: 'additionalProperties', instancePath: '' });
  });
});
