/**
 * "Did you mean": the closest known name to a misspelt one, by edit distance (insertions,
 * deletions, substitutions and swaps of two neighbouring characters each count 1).
 */

/** The optimal string alignment distance between `a` and `b`, or `limit + 1` once it is sure to pass `limit`. */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (beforePrevious[j - 2] ?? 0) + 1);
      current.push(value);
      best = Math.min(best, value);
    }
    if (best > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** Names longer than this get no suggestion, and are suggested for none. */
const MAX_SUGGESTED_LENGTH = 64;
/** With more known names than this, no suggestion is looked for. */
const MAX_CANDIDATES = 5000;

/**
 * The known name closest to `name`, when one is close enough to be a likely misspelling: at most
 * a third of the longer name's characters apart (at least 1), case differences counting half.
 * Ties go to the name that sorts first.
 */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  // Names come from strangers' templates: the work per suggestion stays small whatever they hold.
  if (name.length > MAX_SUGGESTED_LENGTH) return undefined;
  const candidates = new Set(known);
  if (candidates.size > MAX_CANDIDATES) return undefined;
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (candidate === name || candidate.length > MAX_SUGGESTED_LENGTH) continue;
    const limit = Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3));
    const exact = editDistance(name, candidate, limit);
    const folded = editDistance(name.toLowerCase(), candidate.toLowerCase(), limit);
    const distance = Math.min(exact, folded + 0.5);
    if (distance > limit) continue;
    if (!best || distance < best.distance || (distance === best.distance && candidate < best.name)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** ` (did you mean "features"?)`, or an empty string when no known name is close. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const closest = closestName(name, known);
  return closest === undefined ? '' : ` (did you mean "${closest}"?)`;
}
