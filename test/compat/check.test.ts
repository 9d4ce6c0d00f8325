import { describe, expect, it } from 'vitest';

import { checkCompatibility } from '../../src/compat/index.js';
import type { TemplateEntry } from '../../src/core/schema-types.js';

function entry(overrides: Omit<Partial<TemplateEntry>, 'compatibility'> & { compatibility?: Record<string, unknown> } = {}): TemplateEntry {
  return {
    id: 'api',
    name: 'api',
    version: '1.0.0',
    description: 'An API template for tests',
    category: 'backend',
    stability: 'stable',
    downloadUrl: 'https://registry.example.com/api-1.0.0.tgz',
    ...overrides,
  };
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
});
