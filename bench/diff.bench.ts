/**
 * Migration diffs (src/migrate/diff.ts, jsdiff underneath) on files of a few thousand lines, the
 * size a dry run shows.
 *
 * Run: npx vitest bench --run bench/diff.bench.ts
 */
import { bench, describe } from 'vitest';

import { diffLines, unifiedDiff } from '../src/migrate/index.js';

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
