/**
 * Which validation patterns may run, and how: a sound judgement of catastrophic backtracking
 * (exponential ambiguity) over the parsed pattern, constructs no linear-time engine runs refused
 * by name, and matching by RE2 with the meaning JavaScript gives the pattern.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { analysisBudget, judgePattern, matchPattern, MAX_PATTERN_INPUT_LENGTH, MAX_PATTERN_LENGTH, MAX_TEMPLATE_ANALYSIS_STEPS } from '../../src/template/patterns.js';

/** Patterns a backtracking matcher runs in linear or polynomial time. */
const SAFE = [
  '^[a-z][a-z0-9-]*$',
  '^[^@]+@[^@]+\\.[^@]+$',
  '^([a-z][a-z0-9]+)?$',
  '^(?:[a-z][a-z0-9]*)?$',
  '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$',
  '^(\\d{1,3}\\.){3}\\d{1,3}$',
  '^\\d+\\.\\d+\\.\\d+$',
  '^[a-z0-9]+(?:-[a-z0-9]+)*$',
  '^\\w+(?:[-.]\\w+)*@\\w+(?:\\.\\w+)+$',
  '^(a|b)*$',
  '^(ab|cd)+$',
  '^(?:foo|bar|baz)?$',
  '^(a?)+$',
  '^(a|)*$',
  '^[A-Z][A-Za-z0-9]*$',
  '^https?://[^\\s/$.?#][^\\s]*$',
  '^.*$',
  '',
  'x',
  '^\\s*[a-z]+\\s*$',
  '^v?\\d+(\\.\\d+){0,2}$',
  '^[a-z]{2,8}(-[A-Z]{2})?$',
  '^(?<scope>@[a-z]+\\/)?[a-z]+$',
  '^[0-9a-f]{8}(-?[0-9a-f]{4}){3}-?[0-9a-f]{12}$',
  '^(\\d{1,3}\\.?){4}$',
  '^[a-z0-9]{1,63}(\\.[a-z0-9]{1,63}){0,3}$',
];

/** Patterns that can match the same text in two ways round a loop: exponential time on a failing answer. */
const UNSAFE = [
  '^(a+)+$',
  '^(a|a)*$',
  '^(b|b)*$',
  '(x+x+)+y',
  '^(a*)*$',
  '^(a*b*)*$',
  '^(\\w+\\s?)*$',
  '^([a-z]+)+$',
  '^(a|aa)+$',
  '^([a-z]|[a-f0-9])*$',
  '^(?:(?:|)a)*$',
  '^(a|a){1,30}$',
  '^(?:[a-z0-9]+\\.?)*[a-z0-9]+$',
  '^(\\d+)*$',
  '^(.*a){12}$',
  '^(\\w+\\s?){1,12}$',
  '^((a|a){1,5}){1,5}$',
];

describe('judgePattern', () => {
  it.each(SAFE)('lets %j run', (source) => {
    expect(judgePattern(source)).toEqual({ runnable: true });
  });

  it.each(UNSAFE)('refuses %j as prone to catastrophic backtracking', (source) => {
    const judgement = judgePattern(source);
    expect(judgement).toMatchObject({ runnable: false, code: 'UNSAFE_PATTERN' });
    expect(judgement).toHaveProperty('reason', expect.stringMatching(/^it is prone to catastrophic backtracking: .+ can match the same text in more than one way/));
  });

  it('names the repetition that can match the same text in two ways', () => {
    expect(judgePattern('^(a|a)*$')).toHaveProperty('reason', expect.stringContaining(': (a|a)* can match'));
    expect(judgePattern('^(a+)+$')).toHaveProperty('reason', expect.stringContaining(': (a+)+ can match'));
    expect(judgePattern('(x+x+)+y')).toHaveProperty('reason', expect.stringContaining(': (x+x+)+ can match'));
    // A counted repetition has no loop, but one text still has 2^30 ways through it.
    expect(judgePattern('^(a|a){1,30}$')).toHaveProperty('reason', expect.stringContaining(': (a|a){1,30} can match the same text in more than one way (in 2^'));
  });

  it.each([
    ['^(a)\\1$', 'a backreference or octal escape (\\1)'],
    ['^(?<x>a)\\k<x>$', 'a named backreference (\\k…)'],
    ['^(?=a)a$', 'a lookahead ((?=…)'],
    ['^(?!a)b$', 'a lookahead ((?!…)'],
    ['(?<=a)b', 'a lookbehind ((?<=…)'],
    ['^\\p{L}+$', 'a Unicode property escape (\\p…)'],
    ['^\\01$', 'a backreference or octal escape (\\0'],
    ['^\\a$', 'an escape with no meaning (\\a)'],
    ['^a{1001}$', 'a repetition count above 1000 ({1001})'],
  ])('refuses %j, naming the construct it uses', (source, feature) => {
    const judgement = judgePattern(source);
    expect(judgement).toMatchObject({ runnable: false, code: 'UNSUPPORTED_PATTERN' });
    expect(judgement).toHaveProperty('reason', expect.stringContaining(`it uses ${feature}`));
  });

  it('refuses a pattern JavaScript cannot compile, and one longer than the limit', () => {
    expect(judgePattern('([a-z')).toMatchObject({ runnable: false, code: 'INVALID_REGEX' });
    expect(judgePattern(`^${'a'.repeat(MAX_PATTERN_LENGTH)}$`)).toMatchObject({ runnable: false, code: 'UNSUPPORTED_PATTERN', reason: expect.stringContaining(`at most ${MAX_PATTERN_LENGTH}`) });
  });

  it('judges every repetition nested in a safe pattern inside an optional group as safe (the "empty or a name" shape)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SAFE.filter((s) => s.startsWith('^') && s.endsWith('$'))), (source) => {
        const body = source.slice(1, -1);
        expect(judgePattern(`^(${body})?$`)).toEqual({ runnable: true });
      }),
    );
  });

  it('judges a loop over two overlapping alternatives unsafe, whatever the alternatives', () => {
    const piece = fc.constantFrom('a', '[a-z]', '\\w', '[a-c]', 'a+', '[a-z]+');
    fc.assert(
      fc.property(piece, piece, fc.constantFrom('*', '+', '{2,}'), (left, right, loop) => {
        expect(judgePattern(`^(?:${left}|${right})${loop}$`)).toMatchObject({ runnable: false, code: 'UNSAFE_PATTERN' });
      }),
    );
  });
});

describe('the analysis budget of one template', () => {
  /** A pattern whose analysis runs to the limit of one pattern (nested counted repetitions of one class). */
  const heavy = (tag: string): string => `^${tag}(?:[a-z]{0,48}){0,6}$`;

  it('bounds what all its patterns take together: once spent, a pattern not judged before is refused unchecked, and that refusal is not remembered', () => {
    const budget = analysisBudget();
    const verdicts = Array.from({ length: 8 }, (_, n) => judgePattern(heavy(`q${n}`), budget));
    expect(budget.remaining).toBe(0);
    expect(verdicts.at(-1)).toEqual({
      runnable: false,
      code: 'UNSAFE_PATTERN',
      reason: `it was not checked: the template's patterns together take more than ${MAX_TEMPLATE_ANALYSIS_STEPS} analysis steps; use fewer or simpler patterns`,
    });
    // Even a simple new pattern: the budget is what bounds the time.
    expect(judgePattern('^budget-b[a-z]+$', budget)).toMatchObject({ runnable: false, reason: expect.stringContaining('together') });
    // A pattern judged before costs nothing; one refused for the budget alone is judged afresh with another.
    expect(judgePattern('^[a-z][a-z0-9-]*$', budget)).toEqual({ runnable: true });
    expect(judgePattern('^budget-b[a-z]+$', analysisBudget())).toEqual({ runnable: true });
  });
});

describe('matchPattern', () => {
  it('answers as RegExp does for every runnable pattern of the corpus', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'z', 'A', '0', '9', '-', '.', '@', '_', ' ', '\n', '/', ':', 'é', '\u2028', '\u00a0'), maxLength: 12 });
    fc.assert(
      fc.property(fc.constantFrom(...SAFE), text, (source, answer) => {
        expect(matchPattern(source, answer)).toEqual({ matches: new RegExp(source).test(answer) });
      }),
      { numRuns: 3_000 },
    );
  });

  it('reads escapes, classes and braces as JavaScript does', () => {
    const cases: [string, string[]][] = [
      ['^\\s$', [' ', '\t', '\u00a0', '\u3000', '\ufeff', 'a']],
      ['^.$', ['\n', '\r', '\u2028', 'a']],
      ['^[\\w-.]+$', ['a-b.c', 'a+b']],
      ['^a{2}$', ['aa', 'a']],
      ['^a{,2}$', ['a{,2}', 'aa']],
      ['^x{$', ['x{']],
      ['^[\\b]$', ['\b', 'b']],
      ['^\\cJ$', ['\n', 'J']],
      ['^\\x41\\u0042$', ['AB', 'ab']],
      ['^[^]$', ['x', '\n']],
      ['^[]$', ['', 'x']],
      ['^\\/\\.$', ['/.', 'a.']],
      ['\\bfoo\\b', ['a foo b', 'afoob']],
      ['^a*?b+?$', ['aab', 'aa']],
    ];
    for (const [source, answers] of cases) {
      for (const answer of answers) expect([source, answer, matchPattern(source, answer)]).toEqual([source, answer, { matches: new RegExp(source).test(answer) }]);
    }
  });

  it('refuses, with the reason, to run a pattern judgePattern refuses', () => {
    expect(matchPattern('^(a|a)*$', `${'a'.repeat(50)}!`)).toEqual({ refused: expect.stringMatching(/^the template's validation pattern \^\(a\|a\)\*\$ is not run: it is prone to catastrophic backtracking/) });
  });

  it('matches answers of at most MAX_PATTERN_INPUT_LENGTH characters', () => {
    expect(matchPattern('^a*$', 'a'.repeat(MAX_PATTERN_INPUT_LENGTH))).toEqual({ matches: true });
    expect(matchPattern('^a*$', 'a'.repeat(MAX_PATTERN_INPUT_LENGTH + 1))).toEqual({ refused: `is ${MAX_PATTERN_INPUT_LENGTH + 1} characters long; at most ${MAX_PATTERN_INPUT_LENGTH} are matched against the template's pattern` });
  });

  it('runs a polynomially ambiguous pattern on a long failing answer with a linear-time engine', () => {
    // JavaScript's backtracking takes quadratic time here; RE2 answers in one pass.
    expect(matchPattern('^[^@]+@[^@]+\\.[^@]+$', `a@${'.'.repeat(MAX_PATTERN_INPUT_LENGTH - 3)}@`)).toEqual({ matches: false });
  });
});
