import { describe, expect, it } from 'vitest';

import { MAX_EDIT_LENGTH } from '../../src/migrate/diff.js';
import { diffLines, runMigrations, unifiedDiff, type FileChange } from '../../src/migrate/index.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, snapshot, step } from './helpers.js';

describe('dry run', () => {
  it('writes nothing and returns the plan with a unified diff per file', async () => {
    const dir = await tempDir('tr-migrate-');
    const tree = {
      'src/app.ts': 'line 1\nline 2\nline 3\nold line\nline 5\nline 6\nline 7\nline 8\n',
      'obsolete.txt': 'gone\n',
      'name.txt': 'same\n',
      '.template-lock.json': JSON.stringify({ lockfileVersion: 1, template: { name: 'demo', version: '1.0.0' }, generatedAt: '', answers: {}, computed: {}, files: {} }),
    };
    await writeTree(dir, tree);
    const changes: FileChange[] = [
      { type: 'update', path: 'src/app.ts', content: 'line 1\nline 2\nline 3\nnew line\nline 5\nline 6\nline 7\nline 8\n' },
      { type: 'create', path: 'README.md', content: '# Hello\n' },
      { type: 'delete', path: 'obsolete.txt' },
      { type: 'rename', path: 'name.txt', newPath: 'renamed.txt' },
    ];
    const before = await snapshot(dir);
    const result = await runMigrations([step('s', '1.0.0', '1.1.0', { changes, breaking: true })], context(dir, { dryRun: true, backup: true }));

    expect(result.success).toBe(true);
    expect(result.applied).toEqual(['s']);
    expect(result.backupDir).toBeUndefined();
    expect(await snapshot(dir)).toEqual(before);

    expect(result.plan.map((file) => [file.type, file.path, file.newPath])).toEqual([
      ['update', 'src/app.ts', undefined],
      ['create', 'README.md', undefined],
      ['delete', 'obsolete.txt', undefined],
      ['rename', 'name.txt', 'renamed.txt'],
    ]);
    const [update, create, remove, rename] = result.plan;
    expect(update?.before).toBe(tree['src/app.ts']);
    expect(update?.after).toBe(changes[0]?.content);
    expect(update?.diff.split('\n')).toEqual([
      '--- a/src/app.ts',
      '+++ b/src/app.ts',
      '@@ -1,7 +1,7 @@',
      ' line 1',
      ' line 2',
      ' line 3',
      '-old line',
      '+new line',
      ' line 5',
      ' line 6',
      ' line 7',
      '',
    ]);
    expect(create?.before).toBeUndefined();
    expect(create?.diff).toBe('--- /dev/null\n+++ b/README.md\n@@ -0,0 +1 @@\n+# Hello\n');
    expect(remove?.after).toBeUndefined();
    expect(remove?.diff).toBe('--- a/obsolete.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n');
    expect(rename?.diff).toBe('--- a/name.txt\n+++ b/renamed.txt\n');
  });

  it('shows the net effect of several steps on one file', async () => {
    const dir = await tempDir('tr-migrate-');
    await writeTree(dir, { 'a.txt': 'one\n' });
    const steps = [
      step('s1', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'two\n' }] }),
      step('s2', '1.0.0', '1.2.0', { changes: [{ type: 'rename', path: 'a.txt', newPath: 'b.txt' }] }),
      step('s3', '1.0.0', '1.3.0', { changes: [{ type: 'create', path: 'tmp.txt', content: 'x' }, { type: 'delete', path: 'tmp.txt' }] }),
    ];
    const result = await runMigrations(steps, context(dir, { dryRun: true }));
    expect(result.plan).toEqual([
      { path: 'a.txt', type: 'rename', newPath: 'b.txt', before: 'one\n', after: 'two\n', diff: '--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-one\n+two\n' },
    ]);
  });
});

describe('unified diff', () => {
  it('separates changes more than 6 unchanged lines apart into hunks, and merges closer ones', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `l${i + 1}`);
    const edited = lines.map((line) => (line === 'l5' || line === 'l10' || line === 'l25' ? `${line}!` : line));
    const diff = unifiedDiff(`${lines.join('\n')}\n`, `${edited.join('\n')}\n`, { oldPath: 'f', newPath: 'f' });
    expect(diff.split('\n').filter((line) => line.startsWith('@@'))).toEqual(['@@ -2,12 +2,12 @@', '@@ -22,7 +22,7 @@']);
  });

  it('marks a last line without a newline', () => {
    expect(unifiedDiff('a\nb', 'a\nc', { oldPath: 'f', newPath: 'f' })).toBe(
      '--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n',
    );
  });

  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\n', 'a\n', { oldPath: 'f', newPath: 'f' })).toBe('');
  });

  it('finds a shortest edit script', () => {
    let seed = 7;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const lcs = (a: string[], b: string[]): number => {
      const table = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
      for (let i = a.length - 1; i >= 0; i--)
        for (let j = b.length - 1; j >= 0; j--) table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
      return table[0]![0]!;
    };
    for (let round = 0; round < 500; round++) {
      const make = (): string[] => Array.from({ length: Math.floor(random() * 10) }, () => 'abc'[Math.floor(random() * 3)]!);
      const a = make();
      const b = make();
      const text = (lines: string[]): string => lines.map((l) => `${l}\n`).join('');
      const script = diffLines(text(a), text(b));
      expect(script.filter((l) => l.op !== '+').map((l) => l.text).join('')).toBe(text(a));
      expect(script.filter((l) => l.op !== '-').map((l) => l.text).join('')).toBe(text(b));
      expect(script.filter((l) => l.op !== ' ').length).toBe(a.length + b.length - 2 * lcs(a, b));
    }
  });

  it('shows a file rewritten past the edit limit as its differing middle removed then added, between the common lines', () => {
    const count = MAX_EDIT_LENGTH;
    const middle = Array.from({ length: count }, (_, i) => `old ${i}\n`);
    const rewritten = middle.map((line) => line.replace('old', 'new'));
    const before = ['head 1\n', 'head 2\n', 'head 3\n', 'head 4\n', ...middle, 'tail 1\n', 'tail 2\n', 'tail 3\n', 'tail 4'].join('');
    const after = ['head 1\n', 'head 2\n', 'head 3\n', 'head 4\n', ...rewritten, 'tail 1\n', 'tail 2\n', 'tail 3\n', 'tail 4'].join('');

    const script = diffLines(before, after);
    expect(script.filter((l) => l.op !== '+').map((l) => l.text).join('')).toBe(before);
    expect(script.filter((l) => l.op !== '-').map((l) => l.text).join('')).toBe(after);
    expect(script.map((l) => l.op).join('')).toBe(`${' '.repeat(4)}${'-'.repeat(count)}${'+'.repeat(count)}${' '.repeat(4)}`);

    const diff = unifiedDiff(before, after, { oldPath: 'f', newPath: 'f' }).split('\n');
    expect(diff.slice(0, 6)).toEqual(['--- a/f', '+++ b/f', `@@ -2,${count + 6} +2,${count + 6} @@`, ' head 2', ' head 3', ' head 4']);
    expect(diff.filter((line) => line.startsWith('-') && !line.startsWith('---'))).toEqual(middle.map((line) => `-${line.trimEnd()}`));
    expect(diff.filter((line) => line.startsWith('+') && !line.startsWith('+++'))).toEqual(rewritten.map((line) => `+${line.trimEnd()}`));
    expect(diff.slice(-4)).toEqual([' tail 1', ' tail 2', ' tail 3', '']);
  });

  // How fast is measured by `npm run bench` (bench/diff.bench.ts), not here.
  it('diffs a file of a few thousand lines line by line, one hunk per distant change', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i}`);
    const edited = lines.map((line, i) => (i % 97 === 0 ? `${line} changed` : line));
    const before = `${lines.join('\n')}\n`;
    const after = `${edited.join('\n')}\n`;
    const script = diffLines(before, after);
    expect(script.filter((l) => l.op === '-').map((l) => l.text)).toEqual(lines.filter((_, i) => i % 97 === 0).map((l) => `${l}\n`));
    expect(script.filter((l) => l.op === '+')).toHaveLength(52);
    expect(script.filter((l) => l.op === ' ')).toHaveLength(5000 - 52);
    const hunks = unifiedDiff(before, after, { oldPath: 'f', newPath: 'f' }).split('\n').filter((line) => line.startsWith('@@'));
    expect(hunks).toHaveLength(52);
    expect(hunks[0]).toBe('@@ -1,4 +1,4 @@');
    expect(hunks[1]).toBe('@@ -95,7 +95,7 @@');
  });
});
