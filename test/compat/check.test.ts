import { describe, expect, it } from 'vitest';

import { checkCompatibility, declaresRuntime } from '../../src/compat/index.js';
import type { TemplateEntry } from '../../src/core/schema-types.js';
import { templateEntry } from '../helpers/builders.js';

function entry(overrides: Omit<Partial<TemplateEntry>, 'compatibility'> & { compatibility?: Record<string, unknown> } = {}): TemplateEntry {
  return templateEntry('api', overrides);
}

const registry = (...templates: TemplateEntry[]) => ({ templates });

describe('checkCompatibility', () => {
  it('reports an unknown template as an issue', () => {
    expect(checkCompatibility(registry(entry()), 'nope', {})).toEqual({ compatible: false, issues: ['template nope not found'], warnings: [] });
  });

  it('is compatible when every declared range and platform matches', () => {
    const e = entry({ compatibility: { methodologyVersions: ['>=1.0.0 <3'], nodeVersions: ['>=20'], platforms: ['linux', 'darwin'], breaking: false, deprecated: [], removed: [] } });
    expect(checkCompatibility(registry(e), 'api', { methodologyVersion: '2.1.0', nodeVersion: 'v20.11.1', platform: 'linux' })).toEqual({
      compatible: true,
      issues: [],
      warnings: [],
    });
  });

  it('reports a methodology version outside the declared ranges', () => {
    const e = entry({ compatibility: { methodologyVersions: ['>=1.0.0 <2'] } });
    const result = checkCompatibility(registry(e), 'api', { methodologyVersion: '2.0.0' });
    expect(result.compatible).toBe(false);
    expect(result.issues).toEqual(['methodology version 2.0.0 is outside the supported ranges: >=1.0.0 <2']);
  });

  it('reports a node version outside the declared ranges, in the matrix shape too', () => {
    const strings = entry({ compatibility: { nodeVersions: ['^20', '^22'] } });
    expect(checkCompatibility(registry(strings), 'api', { nodeVersion: '18.19.0' }).issues).toHaveLength(1);
    expect(checkCompatibility(registry(strings), 'api', { nodeVersion: '22.1.0' }).compatible).toBe(true);
    const matrix = entry({ compatibility: { nodeVersions: [{ min: '18.0.0', max: '20', supported: true }, { min: '21.0.0', supported: false }] } });
    expect(checkCompatibility(registry(matrix), 'api', { nodeVersion: '20.5.0' }).compatible).toBe(true);
    expect(checkCompatibility(registry(matrix), 'api', { nodeVersion: '22.0.0' }).issues[0]).toMatch(/node version 22.0.0 is outside/);
    expect(checkCompatibility(registry(matrix), 'api', { nodeVersion: '16.0.0' }).compatible).toBe(false);
  });

  it('reports an unsupported platform in both shapes', () => {
    const strings = entry({ compatibility: { platforms: ['linux', 'darwin'] } });
    expect(checkCompatibility(registry(strings), 'api', { platform: 'win32' }).issues).toEqual(['platform win32 is not supported (supported: linux, darwin)']);
    const objects = entry({ compatibility: { platforms: [{ name: 'linux', supported: true }, { name: 'win32', supported: false }] } });
    expect(checkCompatibility(registry(objects), 'api', { platform: 'win32' }).compatible).toBe(false);
    expect(checkCompatibility(registry(objects), 'api', { platform: 'linux' }).compatible).toBe(true);
  });

  it('warns for each deprecated feature without making the template incompatible', () => {
    const e = entry({ compatibility: { deprecated: ['legacy-auth', 'xml-api'] } });
    expect(checkCompatibility(registry(e), 'api', {})).toEqual({
      compatible: true,
      issues: [],
      warnings: ['feature legacy-auth is deprecated', 'feature xml-api is deprecated'],
    });
  });

  it('collects every issue at once', () => {
    const e = entry({ compatibility: { methodologyVersions: ['^1'], nodeVersions: ['>=22'], platforms: ['linux'] } });
    expect(checkCompatibility(registry(e), 'api', { methodologyVersion: '2.0.0', nodeVersion: '20.0.0', platform: 'darwin' }).issues).toHaveLength(3);
  });

  it('checks the version the spec selects (highest stable), or the one asked for', () => {
    const old = entry({ version: '1.0.0', compatibility: { nodeVersions: ['>=18'] } });
    const current = entry({ version: '2.0.0', compatibility: { nodeVersions: ['>=22'] } });
    const beta = entry({ version: '3.0.0', stability: 'beta', compatibility: { nodeVersions: ['>=24'] } });
    const all = registry(old, current, beta);
    expect(checkCompatibility(all, 'api', { nodeVersion: '22.0.0' }).compatible).toBe(true);
    expect(checkCompatibility(all, 'api', { nodeVersion: '20.0.0' }, { version: '1.0.0' }).compatible).toBe(true);
    expect(checkCompatibility(all, 'api', { nodeVersion: '22.0.0' }, { version: '3.0.0' }).compatible).toBe(false);
    expect(checkCompatibility(all, 'api', {}, { version: '9.9.9' }).issues).toEqual(['template api@9.9.9 not found']);
  });

  it('ignores what the environment does not say', () => {
    const e = entry({ compatibility: { methodologyVersions: ['^1'], platforms: ['linux'] } });
    expect(checkCompatibility(registry(e), 'api', {}).compatible).toBe(true);
  });

  it('checks the npm version against dependencies.npm and compatibility.npmVersions', () => {
    const declared = entry({ dependencies: { methodology: '*', node: '>=20', npm: '>=10' }, compatibility: { nodeVersions: ['>=20'] } });
    expect(checkCompatibility(registry(declared), 'api', { nodeVersion: '20.11.0', npmVersion: '10.2.4' })).toEqual({ compatible: true, issues: [], warnings: [] });
    expect(checkCompatibility(registry(declared), 'api', { nodeVersion: '20.11.0', npmVersion: '9.8.1' })).toEqual({
      compatible: false,
      issues: ['npm version 9.8.1 does not satisfy npm >=10 (dependencies.npm)'],
      warnings: [],
    });
    const matrix = entry({ compatibility: { npmVersions: [{ min: '9.0.0', max: '10' }] } });
    expect(checkCompatibility(registry(matrix), 'api', { npmVersion: '11.0.0' }).issues).toEqual(['npm version 11.0.0 is outside the supported ranges: 9.0.0 - 10']);
  });

  it('checks a node range declared only in dependencies, and reports a range found in both places once', () => {
    const onlyDependency = entry({ dependencies: { methodology: '*', node: '>=22' } });
    expect(checkCompatibility(registry(onlyDependency), 'api', { nodeVersion: '20.0.0' }).issues).toEqual(['node version 20.0.0 does not satisfy node >=22 (dependencies.node)']);
    const both = entry({ dependencies: { methodology: '>=1 <3', node: '>=22' }, compatibility: { methodologyVersions: ['>=1 <3'], nodeVersions: ['>=22'] } });
    expect(checkCompatibility(registry(both), 'api', { methodologyVersion: '3.0.0', nodeVersion: '20.0.0' }).issues).toEqual([
      'methodology version 3.0.0 is outside the supported ranges: >=1 <3',
      'node version 20.0.0 is outside the supported ranges: >=22',
    ]);
  });

  it('reports declared runtimes it cannot check as warnings, never silently as compatible', () => {
    const python = entry({ dependencies: { methodology: '*', python: '>=3.11', pip: '>=23', docker: '>=24' } });
    const result = checkCompatibility(registry(python), 'api', { nodeVersion: '20.0.0', npmVersion: '10.0.0', platform: 'linux' });
    expect(result.compatible).toBe(true);
    expect(result.issues).toEqual([]);
    expect(result.warnings).toEqual([
      'not checked: python >=3.11 (only methodology, node and npm versions are checked)',
      'not checked: pip >=23 (only methodology, node and npm versions are checked)',
      'not checked: docker >=24 (only methodology, node and npm versions are checked)',
    ]);
  });

  it('warns for a declared range the environment gives no version for', () => {
    const e = entry({ dependencies: { methodology: '>=1.0.0 <3.0.0', npm: '>=10' }, compatibility: { methodologyVersions: ['>=1.0.0 <3.0.0'], platforms: ['linux'] } });
    expect(checkCompatibility(registry(e), 'api', {}).warnings).toEqual([
      'not checked: methodology >=1.0.0 <3.0.0 (no methodology version given)',
      'not checked: npm >=10 (no npm version given)',
      'not checked: platforms linux (no platform given)',
    ]);
    // "*" declares nothing: no warning for it.
    expect(checkCompatibility(registry(entry({ dependencies: { methodology: '*' }, compatibility: { methodologyVersions: ['*'] } })), 'api', {}).warnings).toEqual([]);
  });

  it('says whether a template declares an npm range (worth finding the local npm version for)', () => {
    expect(declaresRuntime(entry({ dependencies: { methodology: '*', npm: '>=10' } }), 'npm')).toBe(true);
    expect(declaresRuntime(entry({ compatibility: { npmVersions: ['>=10'] } }), 'npm')).toBe(true);
    expect(declaresRuntime(entry({ dependencies: { methodology: '*', node: '>=20' } }), 'npm')).toBe(false);
    expect(declaresRuntime(entry({ dependencies: { methodology: '*', npm: '*' } }), 'npm')).toBe(false);
  });
});
