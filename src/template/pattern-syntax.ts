/**
 * The parser of a template's validation pattern: a JavaScript regular expression source (no
 * flags, as `new RegExp(source)` reads it) turned into a tree that `pattern-ambiguity.ts` judges and
 * `patterns.ts` runs. It reads the regular part of the language only: a construct that no
 * linear-time engine can run (backreferences, lookaround) or whose meaning is a legacy accident
 * (octal escapes, `\c` without a letter, escapes of letters that mean nothing) is refused, naming it,
 * never guessed at. Characters are Unicode code points (a surrogate pair is one character).
 */

/** Sorted, disjoint, non-adjacent inclusive ranges of code points. */
export type CharSet = readonly (readonly [number, number])[];

export type PatternNode =
  | { kind: 'chars'; set: CharSet }
  | { kind: 'assertion'; what: 'start' | 'end' | 'word-boundary' | 'not-word-boundary' }
  | { kind: 'sequence'; items: PatternNode[] }
  | { kind: 'alternation'; options: PatternNode[] }
  | { kind: 'group'; body: PatternNode }
  /** `max` is Infinity for `*`, `+` and `{n,}`; `start`/`end` are the repetition's place in the source. */
  | { kind: 'repeat'; body: PatternNode; min: number; max: number; start: number; end: number };

/** A construct of the source that patterns may not use; `feature` names it in words with its text. */
export class PatternFeatureError extends Error {
  constructor(readonly feature: string) {
    super(`it uses ${feature}, which validation patterns do not support`);
    this.name = 'PatternFeatureError';
  }
}

/** The largest count of a `{n,m}` repetition (RE2's limit). */
const MAX_REPEAT_COUNT = 1000;

const MAX_CODE_POINT = 0x10ffff;

function charSet(ranges: Iterable<readonly [number, number]>): CharSet {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = merged[merged.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return merged;
}

function complement(set: CharSet): CharSet {
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of set) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

export function overlaps(a: CharSet, b: CharSet): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const [alo, ahi] = a[i] as readonly [number, number];
    const [blo, bhi] = b[j] as readonly [number, number];
    if (ahi < blo) i++;
    else if (bhi < alo) j++;
    else return true;
  }
  return false;
}

const single = (code: number): CharSet => [[code, code]];
const DIGITS: CharSet = [[0x30, 0x39]];
const WORD: CharSet = charSet([[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]]);
/** JavaScript's `\s`: WhiteSpace and LineTerminator. */
const SPACE: CharSet = charSet([
  [0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff],
]);
/** What `.` does not match without the `s` flag: the line terminators. */
const DOT: CharSet = complement(charSet([[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]]));

const CLASS_ESCAPES: Readonly<Record<string, CharSet>> = {
  d: DIGITS,
  D: complement(DIGITS),
  w: WORD,
  W: complement(WORD),
  s: SPACE,
  S: complement(SPACE),
};
const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 0x09, n: 0x0a, v: 0x0b, f: 0x0c, r: 0x0d };

const isHex = (text: string): boolean => /^[0-9A-Fa-f]+$/.test(text);
const isAsciiLetterOrDigit = (char: string): boolean => /^[A-Za-z0-9]$/.test(char);
const QUANTIFIER_BRACES = /^\{(\d+)(?:(,)(\d*))?\}/;

/** One parse of one source: a cursor over its UTF-16 units that reads code points. */
class Parser {
  private at = 0;

  constructor(private readonly source: string) {}

  parse(): PatternNode {
    const node = this.disjunction();
    if (this.at < this.source.length) throw new PatternFeatureError(`an unmatched ${JSON.stringify(this.source[this.at])}`);
    return node;
  }

  private peek(offset = 0): string | undefined {
    return this.source[this.at + offset];
  }

  private disjunction(): PatternNode {
    const options = [this.alternative()];
    while (this.peek() === '|') {
      this.at++;
      options.push(this.alternative());
    }
    return options.length === 1 ? (options[0] as PatternNode) : { kind: 'alternation', options };
  }

  private alternative(): PatternNode {
    const items: PatternNode[] = [];
    for (let char = this.peek(); char !== undefined && char !== '|' && char !== ')'; char = this.peek()) {
      const start = this.at;
      const atom = this.atom();
      items.push(atom.kind === 'assertion' ? atom : this.quantified(atom, start));
    }
    return items.length === 1 ? (items[0] as PatternNode) : { kind: 'sequence', items };
  }

  private quantified(atom: PatternNode, start: number): PatternNode {
    let min: number;
    let max: number;
    const char = this.peek();
    if (char === '*' || char === '+' || char === '?') {
      this.at++;
      [min, max] = char === '*' ? [0, Infinity] : char === '+' ? [1, Infinity] : [0, 1];
    } else if (char === '{' && QUANTIFIER_BRACES.test(this.source.slice(this.at))) {
      const [text, low, comma, high] = QUANTIFIER_BRACES.exec(this.source.slice(this.at)) as RegExpExecArray;
      this.at += text.length;
      min = Number(low);
      max = comma === undefined ? min : high === '' || high === undefined ? Infinity : Number(high);
      if (min > MAX_REPEAT_COUNT || (max !== Infinity && max > MAX_REPEAT_COUNT)) {
        throw new PatternFeatureError(`a repetition count above ${MAX_REPEAT_COUNT} (${text})`);
      }
    } else {
      return atom;
    }
    if (this.peek() === '?') this.at++; // lazy or greedy, the same answers match
    return { kind: 'repeat', body: atom, min, max, start, end: this.at };
  }

  private atom(): PatternNode {
    const char = this.peek() as string;
    switch (char) {
      case '^':
        this.at++;
        return { kind: 'assertion', what: 'start' };
      case '$':
        this.at++;
        return { kind: 'assertion', what: 'end' };
      case '.':
        this.at++;
        return { kind: 'chars', set: DOT };
      case '(':
        return this.group();
      case '[':
        return { kind: 'chars', set: this.characterClass() };
      case '\\':
        return this.atomEscape();
      case '*':
      case '+':
      case '?':
        throw new PatternFeatureError(`a quantifier with nothing to repeat (${char})`);
      default:
        return { kind: 'chars', set: single(this.literal()) };
    }
  }

  /** The code point at the cursor (a surrogate pair is one), consumed. */
  private literal(): number {
    const code = this.source.codePointAt(this.at) as number;
    this.at += code > 0xffff ? 2 : 1;
    return code;
  }

  private group(): PatternNode {
    const rest = this.source.slice(this.at);
    if (rest.startsWith('(?=') || rest.startsWith('(?!')) throw new PatternFeatureError(`a lookahead (${rest.slice(0, 3)}…)`);
    if (rest.startsWith('(?<=') || rest.startsWith('(?<!')) throw new PatternFeatureError(`a lookbehind (${rest.slice(0, 4)}…)`);
    if (rest.startsWith('(?:')) this.at += 3;
    else if (rest.startsWith('(?<')) {
      const close = rest.indexOf('>');
      if (close < 0) throw new PatternFeatureError('an unterminated group name');
      this.at += close + 1;
    } else if (rest.startsWith('(?')) throw new PatternFeatureError(`inline flags or an unknown group (${rest.slice(0, 3)}…)`);
    else this.at += 1;
    const body = this.disjunction();
    if (this.peek() !== ')') throw new PatternFeatureError('an unterminated group');
    this.at++;
    return { kind: 'group', body };
  }

  private atomEscape(): PatternNode {
    const next = this.peek(1);
    if (next === 'b' || next === 'B') {
      this.at += 2;
      return { kind: 'assertion', what: next === 'b' ? 'word-boundary' : 'not-word-boundary' };
    }
    const escaped = this.escape(false);
    return { kind: 'chars', set: typeof escaped === 'number' ? single(escaped) : escaped };
  }

  /** An escape at the cursor (its backslash included): one code point, or a class escape's set. */
  private escape(inClass: boolean): number | CharSet {
    const next = this.peek(1);
    if (next === undefined) throw new PatternFeatureError('a backslash at the end');
    const text = (length: number): string => this.source.slice(this.at, this.at + length);
    const classEscape = CLASS_ESCAPES[next];
    if (classEscape) {
      this.at += 2;
      return classEscape;
    }
    const control = CONTROL_ESCAPES[next];
    if (control !== undefined) {
      this.at += 2;
      return control;
    }
    if (inClass && next === 'b') {
      this.at += 2;
      return 0x08;
    }
    if (next === 'c') {
      const letter = this.peek(2);
      if (letter === undefined || !/^[A-Za-z]$/.test(letter)) throw new PatternFeatureError(`\\c without a control letter (${text(3)})`);
      this.at += 3;
      return letter.charCodeAt(0) % 32;
    }
    if (next === '0' && !/^[0-9]$/.test(this.peek(2) ?? '')) {
      this.at += 2;
      return 0;
    }
    if (/^[0-9]$/.test(next)) throw new PatternFeatureError(`a backreference or octal escape (${text(2)})`);
    if (next === 'k') throw new PatternFeatureError(`a named backreference (${text(2)}…)`);
    if (next === 'p' || next === 'P') throw new PatternFeatureError(`a Unicode property escape (${text(2)}…), which needs the u flag`);
    if (next === 'x') {
      const hex = this.source.slice(this.at + 2, this.at + 4);
      if (hex.length !== 2 || !isHex(hex)) throw new PatternFeatureError(`\\x without two hexadecimal digits (${text(4)})`);
      this.at += 4;
      return parseInt(hex, 16);
    }
    if (next === 'u') return this.unicodeEscape();
    if (isAsciiLetterOrDigit(next)) throw new PatternFeatureError(`an escape with no meaning (${text(2)})`);
    this.at += 1;
    return this.literal();
  }

  private unicodeEscape(): number {
    const unit = (from: number): number | undefined => {
      const hex = this.source.slice(from + 2, from + 6);
      return this.source.startsWith('\\u', from) && hex.length === 4 && isHex(hex) ? parseInt(hex, 16) : undefined;
    };
    const first = unit(this.at);
    if (first === undefined) throw new PatternFeatureError(`\\u without four hexadecimal digits (${this.source.slice(this.at, this.at + 6)})`);
    const isHigh = first >= 0xd800 && first <= 0xdbff;
    const second = isHigh ? unit(this.at + 6) : undefined;
    if (isHigh && second !== undefined && second >= 0xdc00 && second <= 0xdfff) {
      this.at += 12;
      return 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
    }
    if (first >= 0xd800 && first <= 0xdfff) throw new PatternFeatureError(`a lone surrogate (${this.source.slice(this.at, this.at + 6)})`);
    this.at += 6;
    return first;
  }

  private characterClass(): CharSet {
    this.at++; // [
    const negated = this.peek() === '^';
    if (negated) this.at++;
    const ranges: (readonly [number, number])[] = [];
    const add = (atom: number | CharSet): void => {
      if (typeof atom === 'number') ranges.push([atom, atom]);
      else ranges.push(...atom);
    };
    while (this.peek() !== ']') {
      if (this.peek() === undefined) throw new PatternFeatureError('an unterminated character class');
      const low = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.at++;
        const high = this.classAtom();
        if (typeof low === 'number' && typeof high === 'number') {
          if (low > high) throw new PatternFeatureError('a character range out of order');
          ranges.push([low, high]);
        } else {
          // A class escape as a range's end makes the hyphen a character (a legacy rule): all three count.
          add(low);
          add(0x2d);
          add(high);
        }
      } else {
        add(low);
      }
    }
    this.at++; // ]
    const set = charSet(ranges);
    return negated ? complement(set) : set;
  }

  private classAtom(): number | CharSet {
    return this.peek() === '\\' ? this.escape(true) : this.literal();
  }
}

/** The tree of `source`; throws PatternFeatureError naming a construct patterns may not use. */
export function parsePattern(source: string): PatternNode {
  return new Parser(source).parse();
}
