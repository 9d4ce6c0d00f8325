import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { compareVersions, isTemplateVersion, isValidRange, satisfiesRange, schemaErrors, VERSION_PATTERN } from '../../src/core/index.js';
import { validManifest } from '../helpers/fixtures.js';

describe('compareVersions', () => {
  it('compares segment by segment numerically, not as text', () => {
    expect(compareVersions('1.10.0', '1.9.0')).toBe(1);
    expect(compareVersions('1.9.0', '1.10.0')).toBe(-1);
    expect(compareVersions('2.0.0', '10.0.0')).toBe(-1);
  });

  it('returns 0 for equal versions', () => {
    expect(compareVersions('1.2.3', '1.2.3')).toBe(0);
  });

  it('counts a missing segment as 0', () => {
    expect(compareVersions('1.0', '1.0.0')).toBe(0);
    expect(compareVersions('1', '1.0.1')).toBe(-1);
    expect(compareVersions('1.0.0.1', '1.0.0')).toBe(1);
  });

  it('orders the major segment before minor and patch', () => {
    expect(compareVersions('2.0.0', '1.99.99')).toBe(1);
    expect(compareVersions('1.2.0', '1.1.99')).toBe(1);
  });
});

describe('version ranges', () => {
  it('accepts ranges semver understands', () => {
    for (const range of ['>=1.0.0', '^20', '1.x', '>=1.0.0 <3.0.0', '*', '~1.2.3 || ^2']) {
      expect(isValidRange(range), range).toBe(true);
    }
  });

  it('rejects text that is not a range', () => {
    for (const range of ['', 'latest', '>=>1', 'one point oh']) {
      expect(isValidRange(range), range).toBe(false);
    }
  });

  it('checks a version against a range', () => {
    expect(satisfiesRange('20.11.1', '>=20')).toBe(true);
    expect(satisfiesRange('18.0.0', '>=20')).toBe(false);
    expect(satisfiesRange('v20.1.0', '^20')).toBe(true);
  });
});

describe('the version rule (strict SemVer numbers)', () => {
  const valid = ['0.0.0', '1.2.3', '10.20.30', '999999999999999.999999999999999.999999999999999'];
  const invalid = ['01.2.3', '1.02.3', '1.2.03', '00.0.0', '1000000000000000.0.0', '9007199254740992.0.0', '1.2', '1.2.3.4', 'v1.2.3', '1.2.3-beta', ' 1.2.3', '1.2.3\n', '١.٢.٣'];

  it('takes MAJOR.MINOR.PATCH numbers without leading zeros, each at most 15 digits, so every version has one spelling and compares exactly', () => {
    for (const version of valid) expect(isTemplateVersion(version), version).toBe(true);
    for (const version of invalid) expect(isTemplateVersion(version), version).toBe(false);
    for (const version of valid) expect(Number.isSafeInteger(Number(version.split('.')[0]))).toBe(true);
  });

  it('is the rule of the manifest and registry entry schemas', () => {
    for (const version of [...valid, ...invalid]) {
      const manifestErrors = schemaErrors('template-manifest', { ...validManifest, version });
      expect(manifestErrors.length === 0, version).toBe(VERSION_PATTERN.test(version));
    }
    const errors = schemaErrors('template-manifest', { ...validManifest, version: '01.0.0' });
    expect(errors).toEqual([expect.objectContaining({ instancePath: '/version', keyword: 'pattern' })]);
    // Every schema with a template version field spells the same rule (compatibility-* hold runtime versions: v20, 3.12).
    const patterns = new Set<string>();
    for (const file of readdirSync('schemas').filter((name) => !name.startsWith('compatibility-'))) {
      JSON.stringify(JSON.parse(readFileSync(path.join('schemas', file), 'utf8')), (key, value: unknown) => {
        if (/version$/i.test(key) && typeof value === 'object' && value !== null && 'pattern' in value && typeof value.pattern === 'string' && value.pattern.includes('\\d')) {
          patterns.add(value.pattern);
        }
        return value;
      });
    }
    expect([...patterns]).toEqual([VERSION_PATTERN.source]);
  });
});
