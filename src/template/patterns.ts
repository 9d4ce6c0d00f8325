/**
 * The validation patterns a template declares (`validation` of a variable, `validate` of a prompt)
 * are regular expressions from strangers, matched against what a user types. One that can
 * backtrack catastrophically would hang `create`: it is refused when the template is loaded and
 * linted, and never run at match time (for a template that reached a registry before this check),
 * and what it is matched against is bounded.
 */
import safeRegex from 'safe-regex2';

/** The longest answer matched against a template's pattern. */
export const MAX_PATTERN_INPUT_LENGTH = 10_000;

/** Why `source` must not be run, or undefined when it may; an invalid expression is not this function's finding. */
export function unsafePatternReason(source: string): string | undefined {
  try {
    new RegExp(source);
  } catch {
    return undefined;
  }
  let safe: boolean;
  try {
    safe = safeRegex(source);
  } catch {
    safe = true; // safe-regex2 could not read it; RegExp could, so leave it be
  }
  return safe ? undefined : 'it is prone to catastrophic backtracking (nested or too many repetitions)';
}

export type PatternOutcome = { matches: boolean } | { refused: string };

/**
 * Matches `text` against the template's pattern `source`, or says why it will not: the pattern is
 * invalid or unsafe, or the text is longer than MAX_PATTERN_INPUT_LENGTH.
 */
export function matchPattern(source: string, text: string): PatternOutcome {
  let regex: RegExp;
  try {
    regex = new RegExp(source);
  } catch {
    return { refused: `the template's validation pattern ${source} is not a valid regular expression` };
  }
  const unsafe = unsafePatternReason(source);
  if (unsafe) return { refused: `the template's validation pattern ${source} is not run: ${unsafe}` };
  if (text.length > MAX_PATTERN_INPUT_LENGTH) return { refused: `is ${text.length} characters long; at most ${MAX_PATTERN_INPUT_LENGTH} are matched against the template's pattern` };
  return { matches: regex.test(text) };
}
