import { describe, expect, it } from 'vitest';

import { compareVersions, isValidRange, satisfiesRange } from '../../src/core/index.js';

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
