import { describe, expect, it } from 'vitest';

import type { TemplateEntry } from '../../src/core/schema-types.js';
import { schemas, selectLatest, sortEntries, STABILITY_ORDER } from '../../src/core/index.js';
import { templateEntry } from '../helpers/builders.js';

type Stability = TemplateEntry['stability'];

function entry(id: string, version: string, stability: Stability = 'stable', downloads = 0, name = id): TemplateEntry {
  return templateEntry(id, { name, version, stability, stats: { downloads } });
}

describe('STABILITY_ORDER', () => {
  it('places every stability the entry and manifest schemas allow, each once', () => {
    const allowed = (name: 'template-entry' | 'template-manifest'): string[] =>
      ((schemas[name] as unknown as { properties: { stability: { enum: string[] } } }).properties.stability.enum).toSorted();
    expect(new Set(STABILITY_ORDER).size).toBe(STABILITY_ORDER.length);
    expect([...STABILITY_ORDER].toSorted()).toEqual(allowed('template-entry'));
    expect([...STABILITY_ORDER].toSorted()).toEqual(allowed('template-manifest'));
  });
});

describe('selectLatest', () => {
  it('prefers the highest stable version over a higher beta', () => {
    const entries = [entry('a', '1.0.0'), entry('a', '2.0.0', 'beta'), entry('a', '1.5.0'), entry('b', '9.0.0')];
    expect(selectLatest(entries, 'a')?.version).toBe('1.5.0');
  });

  it('takes the highest version when none is stable', () => {
    const entries = [entry('a', '0.1.0', 'experimental'), entry('a', '0.3.0', 'deprecated'), entry('a', '0.2.0', 'beta')];
    expect(selectLatest(entries, 'a')?.version).toBe('0.3.0');
  });

  it('compares versions numerically, segment by segment', () => {
    expect(selectLatest([entry('a', '1.9.0'), entry('a', '1.10.0'), entry('a', '1.2.0')], 'a')?.version).toBe('1.10.0');
    expect(selectLatest([entry('a', '10.0.0', 'beta'), entry('a', '9.0.0', 'beta')], 'a')?.version).toBe('10.0.0');
  });

  it('answers null for an unknown id', () => {
    expect(selectLatest([entry('a', '1.0.0')], 'nope')).toBeNull();
    expect(selectLatest([], 'a')).toBeNull();
  });
});

describe('sortEntries', () => {
  it('orders by stability, then downloads descending, then name', () => {
    const entries = [
      entry('dep', '1.0.0', 'deprecated', 1000),
      entry('exp', '1.0.0', 'experimental', 500),
      entry('beta-low', '1.0.0', 'beta', 1),
      entry('stable-b', '1.0.0', 'stable', 10),
      entry('beta-high', '1.0.0', 'beta', 99),
      entry('stable-a', '1.0.0', 'stable', 10),
      entry('stable-top', '1.0.0', 'stable', 11),
    ];
    expect(sortEntries(entries).map((e) => e.id)).toEqual(['stable-top', 'stable-a', 'stable-b', 'beta-high', 'beta-low', 'exp', 'dep']);
  });

  it('returns a new array and leaves the input as it was', () => {
    const entries = [entry('b', '1.0.0'), entry('a', '1.0.0')];
    const sorted = sortEntries(entries);
    expect(sorted).not.toBe(entries);
    expect(entries.map((e) => e.id)).toEqual(['b', 'a']);
    expect(sorted.map((e) => e.id)).toEqual(['a', 'b']);
  });

  it('counts missing stats as zero downloads', () => {
    const noStats = { ...entry('a', '1.0.0'), stats: undefined };
    expect(sortEntries([noStats, entry('b', '1.0.0', 'stable', 1)]).map((e) => e.id)).toEqual(['b', 'a']);
  });
});
