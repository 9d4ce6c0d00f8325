import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { MAX_EDIT_LENGTH } from '../../src/migrate/diff.js';
import { mergeThreeWay, type MergeLabels } from '../../src/migrate/merge.js';

const labels: MergeLabels = { ours: 'mine', theirs: 'template' };

/** Text of the given lines, each ended by `eol`. */
const text = (lines: readonly string[], eol = '\n'): string => lines.map((line) => `${line}${eol}`).join('');

/** The ten lines `l1` to `l10`, with the given ones replaced. */
const tenLines = (changes: Record<number, string | string[]> = {}): string =>
  text(Array.from({ length: 10 }, (_, i) => changes[i + 1] ?? `l${i + 1}`).flat());

const merge = (base: string, ours: string, theirs: string, style?: 'merge' | 'diff3') => mergeThreeWay(base, ours, theirs, labels, { style });

describe('mergeThreeWay: changes on different lines', () => {
  it('keeps both a user edit to one part of the file and a template edit to another', () => {
    const base = tenLines();
    const ours = tenLines({ 2: 'user edit' });
    const theirs = tenLines({ 8: 'template edit', 10: ['l10', 'template addition'] });
    expect(merge(base, ours, theirs)).toEqual({ clean: true, conflicts: 0, text: tenLines({ 2: 'user edit', 8: 'template edit', 10: ['l10', 'template addition'] }) });
  });

  it('merges changes separated by a single unchanged line', () => {
    const result = merge(tenLines(), tenLines({ 3: 'ours' }), tenLines({ 5: 'theirs' }));
    expect(result).toEqual({ clean: true, conflicts: 0, text: tenLines({ 3: 'ours', 5: 'theirs' }) });
  });

  it('takes a deletion on one side and an insertion elsewhere on the other', () => {
    const result = merge(tenLines(), tenLines({ 2: [], 3: [] }), tenLines({ 7: ['l7', 'new'] }));
    expect(result).toEqual({ clean: true, conflicts: 0, text: tenLines({ 2: [], 3: [], 7: ['l7', 'new'] }) });
  });

  it('returns theirs when ours is the base, ours when theirs is the base, and either when they are equal', () => {
    const base = tenLines();
    const changed = tenLines({ 4: 'x' });
    expect(merge(base, base, changed)).toEqual({ clean: true, conflicts: 0, text: changed });
    expect(merge(base, changed, base)).toEqual({ clean: true, conflicts: 0, text: changed });
    expect(merge(base, changed, changed)).toEqual({ clean: true, conflicts: 0, text: changed });
  });
});

describe('mergeThreeWay: the same change on both sides', () => {
  it('takes an identical edit made on both sides once, cleanly', () => {
    const result = merge(tenLines(), tenLines({ 2: 'same', 9: 'ours only' }), tenLines({ 2: 'same' }));
    expect(result).toEqual({ clean: true, conflicts: 0, text: tenLines({ 2: 'same', 9: 'ours only' }) });
  });

  it('takes an identical insertion at the same place once, cleanly', () => {
    const result = merge(tenLines(), tenLines({ 4: ['l4', 'added'], 9: 'ours only' }), tenLines({ 4: ['l4', 'added'] }));
    expect(result).toEqual({ clean: true, conflicts: 0, text: tenLines({ 4: ['l4', 'added'], 9: 'ours only' }) });
  });
});

describe('mergeThreeWay: conflicts', () => {
  it('writes one conflict with exact markers when both sides change the same lines differently', () => {
    const result = merge(tenLines(), tenLines({ 5: 'ours five', 6: 'ours six' }), tenLines({ 5: 'theirs five' }));
    expect(result).toEqual({
      clean: false,
      conflicts: 1,
      text: 'l1\nl2\nl3\nl4\n<<<<<<< mine\nours five\nours six\n=======\ntheirs five\nl6\n>>>>>>> template\nl7\nl8\nl9\nl10\n',
    });
  });

  it('conflicts on different insertions at the same place', () => {
    const result = merge('a\nb\n', 'a\nours\nb\n', 'a\ntheirs\nb\n');
    expect(result).toEqual({ clean: false, conflicts: 1, text: 'a\n<<<<<<< mine\nours\n=======\ntheirs\n>>>>>>> template\nb\n' });
  });

  it('conflicts on different insertions into an empty base', () => {
    expect(merge('', 'ours\n', 'theirs\n')).toEqual({ clean: false, conflicts: 1, text: '<<<<<<< mine\nours\n=======\ntheirs\n>>>>>>> template\n' });
  });

  it('conflicts when one side deletes lines the other edits, showing the deletion as an empty side', () => {
    const result = merge('a\nb\nc\nd\n', 'a\nd\n', 'a\nB\nc\nd\n');
    expect(result).toEqual({ clean: false, conflicts: 1, text: 'a\n<<<<<<< mine\n=======\nB\nc\n>>>>>>> template\nd\n' });
  });

  it('conflicts on changes to adjacent lines, as git merge-file does, with both lines in the conflict', () => {
    const result = merge(tenLines(), tenLines({ 3: 'ours' }), tenLines({ 4: 'theirs' }));
    expect(result.clean).toBe(false);
    expect(result.text).toBe('l1\nl2\n<<<<<<< mine\nours\nl4\n=======\nl3\ntheirs\n>>>>>>> template\nl5\nl6\nl7\nl8\nl9\nl10\n');
  });

  it('conflicts on an insertion right after a line the other side edits', () => {
    const result = merge('a\nb\nc\n', 'a\nB\nc\n', 'a\nb\nnew\nc\n');
    expect(result).toEqual({ clean: false, conflicts: 1, text: 'a\n<<<<<<< mine\nB\n=======\nb\nnew\n>>>>>>> template\nc\n' });
  });

  it('counts each conflicting region and merges the clean ones between them', () => {
    const result = merge(tenLines(), tenLines({ 2: 'o2', 5: 'o5', 9: 'o9' }), tenLines({ 2: 't2', 5: 'o5', 9: 't9' }));
    expect(result.conflicts).toBe(2);
    expect(result.clean).toBe(false);
    expect(result.text).toBe(
      'l1\n<<<<<<< mine\no2\n=======\nt2\n>>>>>>> template\nl3\nl4\no5\nl6\nl7\nl8\n<<<<<<< mine\no9\n=======\nt9\n>>>>>>> template\nl10\n',
    );
  });

  it('shows the base lines with their label in the diff3 style', () => {
    const base = 'a\nb\nc\n';
    const ours = 'a\nours\nc\n';
    const theirs = 'a\ntheirs\nc\n';
    expect(mergeThreeWay(base, ours, theirs, { ...labels, base: 'v1.0.0' }, { style: 'diff3' }).text).toBe(
      'a\n<<<<<<< mine\nours\n||||||| v1.0.0\nb\n=======\ntheirs\n>>>>>>> template\nc\n',
    );
    expect(merge(base, ours, theirs, 'diff3').text).toBe('a\n<<<<<<< mine\nours\n||||||| base\nb\n=======\ntheirs\n>>>>>>> template\nc\n');
  });

  it('shows an empty base section for conflicting insertions in the diff3 style', () => {
    expect(merge('a\n', 'a\nours\n', 'a\ntheirs\n', 'diff3').text).toBe('a\n<<<<<<< mine\nours\n||||||| base\n=======\ntheirs\n>>>>>>> template\n');
  });
});

describe('mergeThreeWay: line endings', () => {
  it('reproduces CRLF line endings byte for byte outside conflicts', () => {
    const base = 'a\r\nb\r\nc\r\nd\r\ne\r\n';
    const result = merge(base, 'A\r\nb\r\nc\r\nd\r\ne\r\n', 'a\r\nb\r\nc\r\nd\r\nE\r\n');
    expect(result).toEqual({ clean: true, conflicts: 0, text: 'A\r\nb\r\nc\r\nd\r\nE\r\n' });
  });

  it('treats a change of line ending as a change of the line', () => {
    const result = merge('a\r\nb\r\nc\r\nd\r\n', 'a\nb\r\nc\r\nd\r\n', 'a\r\nb\r\nc\r\nD\r\n');
    expect(result).toEqual({ clean: true, conflicts: 0, text: 'a\nb\r\nc\r\nD\r\n' });
  });

  it('keeps CRLF lines inside a conflict as they are', () => {
    const result = merge('a\r\nb\r\nc\r\n', 'a\r\nours\r\nc\r\n', 'a\r\ntheirs\r\nc\r\n');
    expect(result.text).toBe('a\r\n<<<<<<< mine\nours\r\n=======\ntheirs\r\n>>>>>>> template\nc\r\n');
  });

  it('preserves a missing final newline', () => {
    const result = merge('a\nb\nc\nd\ne', 'A\nb\nc\nd\ne', 'a\nb\nC\nd\ne');
    expect(result).toEqual({ clean: true, conflicts: 0, text: 'A\nb\nC\nd\ne' });
  });

  it('keeps the final newline one side adds while merging the other side', () => {
    const result = merge('a\nb\nc\nd', 'A\nb\nc\nd', 'a\nb\nc\nd\n');
    expect(result).toEqual({ clean: true, conflicts: 0, text: 'A\nb\nc\nd\n' });
  });

  it('ends a conflicting side that lacks a final newline with one, so each marker stays on its own line', () => {
    expect(merge('a\nb', 'a\nours', 'a\ntheirs', 'diff3')).toEqual({
      clean: false,
      conflicts: 1,
      text: 'a\n<<<<<<< mine\nours\n||||||| base\nb\n=======\ntheirs\n>>>>>>> template\n',
    });
  });
});

describe('mergeThreeWay: large inputs', () => {
  const LINES = 20_000;
  const baseLines = Array.from({ length: LINES }, (_, i) => `line ${i}`);
  const edited = (edit: (line: string, i: number) => string[]): string[] => baseLines.flatMap(edit);

  it('merges two 20,000-line files with hundreds of changes on each side', () => {
    const oursEdit = (line: string, i: number) => (i % 100 === 10 ? [`ours ${i}`] : [line]);
    const theirsEdit = (line: string, i: number) => (i % 100 === 60 ? [`theirs ${i}`] : i % 1000 === 500 ? [line, `added after ${i}`] : [line]);
    const result = merge(text(baseLines), text(edited(oursEdit)), text(edited(theirsEdit)));
    expect(result.clean).toBe(true);
    expect(result.text).toBe(text(edited((line, i) => theirsEdit(oursEdit(line, i)[0]!, i))));
  });

  it('merges a side changing more lines than a shortest diff is searched for with a change elsewhere', () => {
    // Every other line of the first 6,000 changed is past MAX_EDIT_LENGTH, so diffLines replaces that whole stretch.
    const rewritten = 6000;
    expect(rewritten).toBeGreaterThan(MAX_EDIT_LENGTH);
    const oursEdit = (line: string, i: number) => (i < rewritten && i % 2 === 0 ? [`ours ${i}`] : [line]);
    const theirsEdit = (line: string, i: number) => (i === 19_000 ? ['theirs'] : i === LINES - 1 ? [line, 'appended'] : [line]);
    const result = merge(text(baseLines), text(edited(oursEdit)), text(edited(theirsEdit)));
    expect(result.clean).toBe(true);
    expect(result.text).toBe(text(edited((line, i) => theirsEdit(oursEdit(line, i)[0]!, i))));
  });

  it('merges two 20,000-line files made mostly of blank lines and closing braces', () => {
    // Repeated lines are what node-diff3's LCS (Hunt-McIlroy with a linear candidate scan) is slow on:
    // about 4 s for 2,000 such lines and minutes for these, past this test's timeout (bench/diff.bench.ts).
    const repeated = Array.from({ length: LINES }, (_, i) => (i % 3 === 0 ? '}' : i % 3 === 1 ? '' : `x ${i}`));
    const oursEdit = (line: string, i: number) => (i % 50 === 2 ? [`ours ${i}`] : [line]);
    const theirsEdit = (line: string, i: number) => (i % 50 === 26 ? [`theirs ${i}`] : [line]);
    const result = merge(text(repeated), text(repeated.flatMap(oursEdit)), text(repeated.flatMap(theirsEdit)));
    expect(result).toEqual({ clean: true, conflicts: 0, text: text(repeated.flatMap((line, i) => theirsEdit(oursEdit(line, i)[0]!, i))) });
  });

  it('reports a conflict where a wholesale rewrite meets a change on the other side', () => {
    const oursEdit = (line: string, i: number) => (i < 6000 && i % 2 === 0 ? [`ours ${i}`] : [line]);
    const theirsEdit = (line: string, i: number) => (i === 3001 ? ['theirs'] : [line]);
    const result = merge(text(baseLines), text(edited(oursEdit)), text(edited(theirsEdit)));
    expect(result.conflicts).toBe(1);
    expect(result.text.startsWith('<<<<<<< mine\nours 0\n')).toBe(true);
    expect(result.text.endsWith('>>>>>>> template\nline 5999\nline 6000\n' + text(baseLines.slice(6001)))).toBe(true);
  });
});

/** Texts of short lines from a small alphabet, so the diffs meet repeated lines, with LF or CRLF endings and maybe no final newline. */
const textArb = fc
  .tuple(fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 12 }), fc.constantFrom('\n', '\r\n'), fc.boolean())
  .map(([lines, eol, finalNewline]) => {
    const joined = lines.join(eol);
    return finalNewline && lines.length > 0 ? joined + eol : joined;
  });

describe('mergeThreeWay: properties', () => {
  it('gives theirs when ours did not change the base', () => {
    fc.assert(fc.property(textArb, textArb, (base, theirs) => merge(base, base, theirs).text === theirs));
  });

  it('gives ours when theirs did not change the base', () => {
    fc.assert(fc.property(textArb, textArb, (base, ours) => merge(base, ours, base).text === ours));
  });

  it('gives the common text, cleanly, when both sides made the same changes', () => {
    fc.assert(
      fc.property(textArb, textArb, (base, both) => {
        const result = merge(base, both, both);
        return result.clean && result.text === both;
      }),
    );
  });

  it('is symmetric: swapping the sides gives the same conflicts, and the same text when clean', () => {
    fc.assert(
      fc.property(textArb, textArb, textArb, fc.constantFrom<'merge' | 'diff3'>('merge', 'diff3'), (base, ours, theirs, style) => {
        const forward = mergeThreeWay(base, ours, theirs, { ours: 'A', theirs: 'B' }, { style });
        const backward = mergeThreeWay(base, theirs, ours, { ours: 'B', theirs: 'A' }, { style });
        expect(backward.conflicts).toBe(forward.conflicts);
        if (forward.clean) expect(backward.text).toBe(forward.text);
      }),
    );
  });

  it('writes one set of markers per conflict and is clean exactly when there are none', () => {
    fc.assert(
      fc.property(textArb, textArb, textArb, (base, ours, theirs) => {
        const result = mergeThreeWay(base, ours, theirs, { ours: 'A', theirs: 'B' }, { style: 'diff3' });
        const count = (marker: string) => result.text.split('\n').filter((line) => line === marker).length;
        expect(result.clean).toBe(result.conflicts === 0);
        for (const marker of ['<<<<<<< A', '||||||| base', '=======', '>>>>>>> B']) expect(count(marker)).toBe(result.conflicts);
      }),
    );
  });

  it('merges changes to disjoint blocks separated by unchanged lines cleanly, keeping every change', () => {
    // Block k holds lines `k.word`, so a diff can only match a line with one of the same block, and the
    // separators between blocks stay matched: each side's changes stay inside their blocks, at least one
    // unchanged line apart. A block both sides change gets the same fresh lines on both, which no
    // alignment can place differently.
    const word = fc.constantFrom('a', 'b', 'c');
    const block = fc.record({
      base: fc.array(word, { maxLength: 3 }),
      edit: fc.constantFrom('none', 'ours', 'theirs', 'both'),
      edited: fc.array(word, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 8 }), fc.constantFrom('\n', '\r\n'), fc.boolean(), (blocks, eol, finalNewline) => {
        const render = (side: 'base' | 'ours' | 'theirs' | 'merged'): string => {
          const lines = blocks.flatMap((b, k) => {
            const changed = side === 'merged' ? b.edit !== 'none' : b.edit === side || (b.edit === 'both' && side !== 'base');
            const content = !changed ? b.base.map((w) => `${k}.${w}`) : b.edit === 'both' ? b.edited.map((w) => `${k}.new.${w}`) : b.edited.map((w) => `${k}.${w}`);
            return [...content, `--- separator ${k} ---`];
          });
          return lines.join(eol) + (finalNewline ? eol : '');
        };
        const result = merge(render('base'), render('ours'), render('theirs'));
        expect(result).toEqual({ clean: true, conflicts: 0, text: render('merged') });
      }),
    );
  });
});
