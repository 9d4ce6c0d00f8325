/**
 * Globs from strangers (a template's `updatePolicy`, a lock's `skip`) matched in time linear in the
 * path: the glob becomes a small automaton run over the path once, holding a set of states, never a
 * backtracking regular expression (`*a*a*a*a...b` against a long name would take a backtracking
 * matcher, picomatch's included, years).
 *
 * The syntax, on `/`-separated paths (dotfiles are matched like any other name):
 *
 * - `*` any run of characters within one segment, `?` one character other than `/`;
 * - `**` as a whole segment: any number of segments (`src/**` matches `src/a/b.ts` and `src`,
 *   `**\/*.md` matches `a.md` and `docs/a.md`, a lone `**` matches everything); elsewhere it is `*`;
 * - `[abc]`, `[a-z]`, `[!abc]` or `[^abc]` one character of (or not of) a set, never `/`;
 * - `{a,b}` either alternative (nested allowed, at most 64 expansions);
 * - `\` makes the next character plain.
 */

/** Longest glob accepted. */
const MAX_GLOB_LENGTH = 1024;
/** Most globs a `{...}` expansion may give. */
const MAX_EXPANSIONS = 64;

/** A glob that cannot be compiled: too long, or too many brace expansions. */
export class GlobError extends Error {
  override readonly name = 'GlobError';
}

type Token =
  | { kind: 'char'; char: string }
  | { kind: 'one' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; chars: string; ranges: [string, string][] }
  /** `**\/`: nothing, or any text ending in `/`. */
  | { kind: 'segments' }
  /** `/**` at the end: nothing, or `/` and anything. */
  | { kind: 'below' }
  /** A lone `**`: anything. */
  | { kind: 'all' };

/** The index of the `}` closing the `{` at `open`, or -1. */
function closingBrace(glob: string, open: number): number {
  let depth = 0;
  for (let i = open; i < glob.length; i++) {
    const char = glob[i];
    if (char === '\\') i++;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return i;
  }
  return -1;
}

/** The alternatives of the brace group `glob[open..close]`, split at its top-level commas. */
function alternatives(glob: string, open: number, close: number): string[] | undefined {
  const parts: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i < close; i++) {
    const char = glob[i];
    if (char === '\\') i++;
    else if (char === '{') depth++;
    else if (char === '}') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(glob.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(glob.slice(start, close));
  return parts.length > 1 ? parts : undefined;
}

/** Every glob `{a,b}` groups stand for. */
function expandBraces(glob: string): string[] {
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i];
    if (char === '\\') {
      i++;
      continue;
    }
    if (char !== '{') continue;
    const close = closingBrace(glob, i);
    const parts = close < 0 ? undefined : alternatives(glob, i, close);
    if (!parts) continue;
    const head = glob.slice(0, i);
    const tails = expandBraces(glob.slice(close + 1));
    const expanded: string[] = [];
    for (const part of parts) {
      for (const middle of expandBraces(part)) {
        for (const tail of tails) {
          expanded.push(`${head}${middle}${tail}`);
          if (expanded.length > MAX_EXPANSIONS) throw new GlobError(`glob ${JSON.stringify(glob)} has more than ${MAX_EXPANSIONS} {...} alternatives`);
        }
      }
    }
    return expanded;
  }
  return [glob];
}

/** `[...]` at `open`: the class token and the index after `]`, or undefined when it is not closed. */
function readClass(glob: string, open: number): { token: Token; end: number } | undefined {
  let i = open + 1;
  const negated = glob[i] === '!' || glob[i] === '^';
  if (negated) i++;
  let chars = '';
  const ranges: [string, string][] = [];
  let first = true;
  for (; i < glob.length; i++) {
    let char = glob[i] as string;
    if (char === ']' && !first) return { token: { kind: 'class', negated, chars, ranges }, end: i + 1 };
    first = false;
    if (char === '\\' && i + 1 < glob.length) char = glob[++i] as string;
    if (glob[i + 1] === '-' && glob[i + 2] !== undefined && glob[i + 2] !== ']') {
      let to = glob[i + 2] as string;
      i += 2;
      if (to === '\\' && i + 1 < glob.length) to = glob[++i] as string;
      ranges.push([char, to]);
    } else chars += char;
  }
  return undefined;
}

function tokenize(glob: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i] as string;
    if (char === '\\') {
      if (i + 1 < glob.length) tokens.push({ kind: 'char', char: glob[++i] as string });
      continue;
    }
    if (char === '*') {
      let end = i;
      while (glob[end] === '*') end++;
      const wholeSegment = end - i >= 2 && (i === 0 || glob[i - 1] === '/') && (end === glob.length || glob[end] === '/');
      if (!wholeSegment) tokens.push({ kind: 'star' });
      else if (end < glob.length) {
        tokens.push({ kind: 'segments' });
        end++; // the `/` is part of it
      } else if (i === 0) tokens.push({ kind: 'all' });
      else {
        tokens.pop(); // the `/` before it
        tokens.push({ kind: 'below' });
      }
      i = end - 1;
      continue;
    }
    if (char === '?') {
      tokens.push({ kind: 'one' });
      continue;
    }
    if (char === '[') {
      const found = readClass(glob, i);
      if (found) {
        tokens.push(found.token);
        i = found.end - 1;
        continue;
      }
    }
    tokens.push({ kind: 'char', char });
  }
  return tokens;
}

function inClass(token: Extract<Token, { kind: 'class' }>, char: string): boolean {
  const found = token.chars.includes(char) || token.ranges.some(([from, to]) => from <= char && char <= to);
  return found !== token.negated;
}

/**
 * Whether `path` matches `tokens`: a set of states (state `k` waits for token `k`; `n` accepts; `n
 * + 1 + k` is inside the `segments` or `below` token `k`) advanced once per character.
 */
function run(tokens: readonly Token[], path: string): boolean {
  const n = tokens.length;
  const size = 2 * n + 1;
  let current = new Uint8Array(size);
  let next = new Uint8Array(size);
  const add = (set: Uint8Array, state: number): void => {
    // Epsilon moves: a `*`, `**` or `segments`/`below` token may match nothing.
    for (let s = state; s <= n && set[s] === 0; s++) {
      set[s] = 1;
      const kind = tokens[s]?.kind;
      if (kind !== 'star' && kind !== 'segments' && kind !== 'below' && kind !== 'all') break;
    }
  };
  add(current, 0);
  for (const char of path) {
    next.fill(0);
    let alive = false;
    for (let s = 0; s < size; s++) {
      if (current[s] === 0) continue;
      if (s > n) {
        // Inside `segments` (any text up to a `/`, then the next token) or `below` (anything).
        const k = s - n - 1;
        next[s] = 1;
        if (tokens[k]?.kind === 'segments' && char === '/') add(next, k + 1);
        if (tokens[k]?.kind === 'below') add(next, k + 1);
        alive = true;
        continue;
      }
      const token = tokens[s];
      if (!token) continue;
      switch (token.kind) {
        case 'char':
          if (char === token.char) add(next, s + 1);
          break;
        case 'one':
          if (char !== '/') add(next, s + 1);
          break;
        case 'class':
          if (char !== '/' && inClass(token, char)) add(next, s + 1);
          break;
        case 'star':
          if (char !== '/') add(next, s);
          break;
        case 'all':
          add(next, s);
          break;
        case 'segments':
          next[n + 1 + s] = 1;
          if (char === '/') add(next, s + 1);
          break;
        case 'below':
          if (char === '/') {
            next[n + 1 + s] = 1;
            add(next, s + 1);
          }
          break;
      }
    }
    for (let s = 0; s < size && !alive; s++) alive = next[s] === 1;
    if (!alive) return false;
    [current, next] = [next, current];
  }
  return current[n] === 1;
}

/**
 * A matcher of `/`-separated paths for `glob` (see the module comment). Throws GlobError for a glob
 * longer than MAX_GLOB_LENGTH or with more than 64 brace expansions.
 */
export function globMatcher(glob: string): (path: string) => boolean {
  if (glob.length > MAX_GLOB_LENGTH) throw new GlobError(`a glob must be at most ${MAX_GLOB_LENGTH} characters`);
  const compiled = expandBraces(glob).map(tokenize);
  return (path) => compiled.some((tokens) => run(tokens, path));
}
