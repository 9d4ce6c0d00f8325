/**
 * Which validation patterns may run, and how: the one place every caller (validate, lint, load,
 * answers, prompts, and through them create, publish and the server's upload check) asks.
 *
 * The patterns a template declares (`validation` of a variable, `validate` of a prompt) are
 * regular expressions from strangers, matched against what a user types. A pattern is refused
 * when it is longer than MAX_PATTERN_LENGTH, uses a construct no linear-time engine runs
 * (backreferences, lookaround; see `pattern-syntax.ts`), or can match the same text in two ways
 * round a loop, which makes a backtracking matcher take exponential time (`^(a+)+$`, `^(a|a)*$`;
 * see `pattern-ambiguity.ts`): other consumers of a published template may run it with one. A
 * pattern that passes is run here by RE2 (re2js, linear time in the answer) with the meaning
 * `new RegExp(source)` gives it, on answers of at most MAX_PATTERN_INPUT_LENGTH characters; so
 * even a template that reached a registry before these checks cannot hang a match.
 */
import type { RE2JS } from 're2js';

import { loadRe2js } from '../core/lazy/re2js.load.js';
import { judgeAmbiguity, MAX_ANALYSIS_STEPS } from './pattern-ambiguity.js';
import { PatternFeatureError, parsePattern, type CharSet, type PatternNode } from './pattern-syntax.js';

/** The longest answer matched against a template's pattern. */
export const MAX_PATTERN_INPUT_LENGTH = 10_000;
/** The longest pattern a template may declare, in characters. */
export const MAX_PATTERN_LENGTH = 1_000;
/**
 * Analysis steps the patterns of one template may take together (`validate` gives them one
 * budget): one pattern takes at most MAX_ANALYSIS_STEPS, and many could otherwise add up.
 */
export const MAX_TEMPLATE_ANALYSIS_STEPS = 1_000_000;

/** What is left of one template's analysis budget; a pattern judged before (remembered) costs nothing. */
export interface AnalysisBudget {
  remaining: number;
}

export const analysisBudget = (): AnalysisBudget => ({ remaining: MAX_TEMPLATE_ANALYSIS_STEPS });

/** Why a pattern is not run: it does not compile, uses an unsupported construct, or is unsafe. */
export type PatternRefusalCode = 'INVALID_REGEX' | 'UNSUPPORTED_PATTERN' | 'UNSAFE_PATTERN';

export type PatternJudgement = { runnable: true } | { runnable: false; code: PatternRefusalCode; reason: string };

type Compiled = { matcher: RE2JS } | { refused: { code: PatternRefusalCode; reason: string } };

const hex = (code: number): string => `\\x{${code.toString(16).toUpperCase()}}`;

function charClass(set: CharSet): string {
  if (set.length === 0) return '[^\\x{0}-\\x{10FFFF}]';
  const [only] = set;
  if (set.length === 1 && only && only[0] === only[1]) return hex(only[0]);
  return `[${set.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join('')}]`;
}

/** The RE2 source of a parsed pattern, every character class spelled out as JavaScript reads it. */
function toRe2(node: PatternNode): string {
  switch (node.kind) {
    case 'chars':
      return charClass(node.set);
    case 'assertion':
      return { start: '^', end: '$', 'word-boundary': '\\b', 'not-word-boundary': '\\B' }[node.what];
    case 'group':
      return `(?:${toRe2(node.body)})`;
    case 'sequence':
      return node.items.map(toRe2).join('');
    case 'alternation':
      return `(?:${node.options.map(toRe2).join('|')})`;
    case 'repeat': {
      const { min, max } = node;
      const quantifier =
        max === Infinity ? (min === 0 ? '*' : min === 1 ? '+' : `{${min},}`) : min === 0 && max === 1 ? '?' : min === max ? `{${min}}` : `{${min},${max}}`;
      return `(?:${toRe2(node.body)})${quantifier}`;
    }
  }
}

/** Why JavaScript cannot compile `source` (its message), or undefined when it can. Compiling runs no text. */
export function patternSyntaxError(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (error) {
    return (error instanceof Error ? error.message : String(error)).split('\n')[0];
  }
}

/** A pattern refused only because the budget ran out: judged again with a fresh one, never remembered. */
const OVER_BUDGET = Symbol('over budget');

function compile(source: string, budget: AnalysisBudget | undefined): Compiled | typeof OVER_BUDGET {
  const refuse = (code: PatternRefusalCode, reason: string): Compiled => ({ refused: { code, reason } });
  const syntaxError = patternSyntaxError(source);
  if (syntaxError !== undefined) return refuse('INVALID_REGEX', `it is not a valid regular expression: ${syntaxError}`);
  if (source.length > MAX_PATTERN_LENGTH) return refuse('UNSUPPORTED_PATTERN', `it is ${source.length} characters long; a pattern is at most ${MAX_PATTERN_LENGTH}`);
  let tree: PatternNode;
  try {
    tree = parsePattern(source);
  } catch (error) {
    if (error instanceof PatternFeatureError) return refuse('UNSUPPORTED_PATTERN', error.message);
    throw error;
  }
  const limit = Math.min(budget ? budget.remaining : MAX_ANALYSIS_STEPS, MAX_ANALYSIS_STEPS);
  const { verdict, steps } = judgeAmbiguity(tree, limit);
  if (budget) budget.remaining = Math.max(0, budget.remaining - steps);
  if (verdict.kind === 'too-complex' && limit < MAX_ANALYSIS_STEPS) return OVER_BUDGET;
  if (verdict.kind === 'too-complex') {
    return refuse('UNSAFE_PATTERN', 'it is too complex to be checked for catastrophic backtracking; simplify its repetitions');
  }
  if (verdict.kind === 'exponential') {
    const part = verdict.repetition ? `${source.slice(verdict.repetition.start, verdict.repetition.end)} ` : 'a repetition ';
    return refuse(
      'UNSAFE_PATTERN',
      `it is prone to catastrophic backtracking: ${part}can match the same text in more than one way${verdict.doublings ? ` (in 2^${verdict.doublings} ways or more)` : ''}, so a failing answer takes exponential time to reject`,
    );
  }
  try {
    return { matcher: loadRe2js().RE2JS.compile(toRe2(tree)) };
  } catch (error) {
    return refuse('UNSUPPORTED_PATTERN', `it cannot be compiled for linear-time matching: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Compiled patterns by source: a template repeats a few over every answer. Bounded. */
const compiled = new Map<string, Compiled>();
const MAX_REMEMBERED_PATTERNS = 1_000;

function compiledPattern(source: string, budget?: AnalysisBudget): Compiled {
  const remembered = compiled.get(source);
  if (remembered) return remembered;
  const fresh = compile(source, budget);
  if (fresh === OVER_BUDGET) {
    const reason = `it was not checked: the template's patterns together take more than ${MAX_TEMPLATE_ANALYSIS_STEPS} analysis steps; use fewer or simpler patterns`;
    return { refused: { code: 'UNSAFE_PATTERN', reason } };
  }
  if (compiled.size >= MAX_REMEMBERED_PATTERNS) compiled.clear();
  compiled.set(source, fresh);
  return fresh;
}

/**
 * Whether a template's pattern may run, or why not (the reason reads after the pattern: "… is
 * refused: <reason>"). With `budget`, the analysis takes its steps from it (one per template).
 */
export function judgePattern(source: string, budget?: AnalysisBudget): PatternJudgement {
  const outcome = compiledPattern(source, budget);
  return 'matcher' in outcome ? { runnable: true } : { runnable: false, ...outcome.refused };
}

export type PatternOutcome = { matches: boolean } | { refused: string };

/**
 * Matches `text` against the template's pattern `source` (anywhere in it, as RegExp's `test`
 * does; anchor the pattern to match all of it), or says why it will not: the pattern is refused
 * (judgePattern), or the text is longer than MAX_PATTERN_INPUT_LENGTH.
 */
export function matchPattern(source: string, text: string): PatternOutcome {
  const outcome = compiledPattern(source);
  if ('refused' in outcome) return { refused: `the template's validation pattern ${source} is not run: ${outcome.refused.reason}` };
  if (text.length > MAX_PATTERN_INPUT_LENGTH) return { refused: `is ${text.length} characters long; at most ${MAX_PATTERN_INPUT_LENGTH} are matched against the template's pattern` };
  return { matches: outcome.matcher.test(text) };
}
