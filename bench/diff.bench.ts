/**
 * Migration diffs (src/migrate/diff.ts, jsdiff underneath) on files of a few thousand lines, the
 * size a dry run shows.
 *
 * The three-way merge against node-diff3's on a file of repeated lines (a third blank, a third `}`),
 * the reason migrate/merge.ts keeps its own merge: node-diff3 took about 0.5 s on 1,000 such lines
 * and 4.3 s on 2,000, mergeThreeWay 45 ms on 2,000 and 0.4 s on 20,000.
 *
 * Run: npx vitest bench --run bench/diff.bench.ts
 */
import { bench, describe } from 'vitest';

import { merge as diff3Merge } from 'node-diff3';

import { diffLines, mergeThreeWay, unifiedDiff } from '../src/migrate/index.js';

const lines = Array.from({ length: 5000 }, (_, i) => `line ${i}`);
const before = `${lines.join('\n')}\n`;
const scattered = `${lines.map((line, i) => (i % 97 === 0 ? `${line} changed` : line)).join('\n')}\n`;
const rewritten = `${lines.map((line) => `${line} rewritten`).join('\n')}\n`;

describe('migration diff, 5,000 lines', () => {
  bench('diffLines, 52 scattered changes', () => {
    diffLines(before, scattered);
  });
  bench('unifiedDiff, 52 scattered changes', () => {
    unifiedDiff(before, scattered, { oldPath: 'f', newPath: 'f' });
  });
  bench('unifiedDiff, every line changed', () => {
    unifiedDiff(before, rewritten, { oldPath: 'f', newPath: 'f' });
  });
});

const repeated = Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? '}\n' : i % 3 === 1 ? '\n' : `x ${i}\n`));
const repeatedOurs = repeated.map((line, i) => (i % 50 === 2 ? `ours ${i}\n` : line));
const repeatedTheirs = repeated.map((line, i) => (i % 50 === 26 ? `theirs ${i}\n` : line));

describe('three-way merge, 1,000 lines, two thirds blank lines and closing braces', () => {
  bench('mergeThreeWay', () => {
    mergeThreeWay(repeated.join(''), repeatedOurs.join(''), repeatedTheirs.join(''), { ours: 'ours', theirs: 'theirs' });
  });
  bench('node-diff3 merge', () => {
    diff3Merge(repeatedOurs, repeated, repeatedTheirs);
  }, { iterations: 3 });
});
