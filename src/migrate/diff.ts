/**
 * A small line-based unified diff (Myers' O(ND) algorithm, divide and conquer in linear space),
 * used to show what a migration would change. Good for files of a few thousand lines.
 */

/** One line of an edit script: kept (` `), removed (`-`) or added (`+`). */
export interface DiffLine {
  op: ' ' | '-' | '+';
  /** The line with its line ending, if it had one. */
  text: string;
}

export interface UnifiedDiffOptions {
  /** Path shown in the `---` header; undefined shows `/dev/null` (the file is created). */
  oldPath?: string;
  /** Path shown in the `+++` header; undefined shows `/dev/null` (the file is deleted). */
  newPath?: string;
  /** Unchanged lines shown around each change; 3 unless given. */
  context?: number;
}

/** Splits text into lines, each keeping its `\n` (the last one may have none). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines: string[] = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** The edit script turning the lines of `before` into those of `after`: a shortest one. */
export function diffLines(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  // Lines become small integers, so the inner loops compare numbers.
  const ids = new Map<string, number>();
  const idOf = (line: string): number => {
    let id = ids.get(line);
    if (id === undefined) {
      id = ids.size;
      ids.set(line, id);
    }
    return id;
  };
  const x = Int32Array.from(a, idOf);
  const y = Int32Array.from(b, idOf);
  const ops: ('=' | '-' | '+')[] = [];
  diffRange(x, 0, x.length, y, 0, y.length, ops);

  const result: DiffLine[] = [];
  let i = 0;
  let j = 0;
  for (const op of ops) {
    if (op === '=') {
      result.push({ op: ' ', text: a[i++] ?? '' });
      j++;
    } else if (op === '-') {
      result.push({ op: '-', text: a[i++] ?? '' });
    } else {
      result.push({ op: '+', text: b[j++] ?? '' });
    }
  }
  return result;
}

/** Appends the edit script of a[aLo, aHi) -> b[bLo, bHi) to `ops`. */
function diffRange(a: Int32Array, aLo: number, aHi: number, b: Int32Array, bLo: number, bHi: number, ops: ('=' | '-' | '+')[]): void {
  // Common prefix and suffix first: most edits are small.
  let prefix = 0;
  while (aLo + prefix < aHi && bLo + prefix < bHi && a[aLo + prefix] === b[bLo + prefix]) prefix++;
  let suffix = 0;
  while (aHi - suffix > aLo + prefix && bHi - suffix > bLo + prefix && a[aHi - suffix - 1] === b[bHi - suffix - 1]) suffix++;
  for (let k = 0; k < prefix; k++) ops.push('=');
  const lo1 = aLo + prefix;
  const hi1 = aHi - suffix;
  const lo2 = bLo + prefix;
  const hi2 = bHi - suffix;
  if (lo1 === hi1) {
    for (let k = lo2; k < hi2; k++) ops.push('+');
  } else if (lo2 === hi2) {
    for (let k = lo1; k < hi1; k++) ops.push('-');
  } else {
    const split = middle(a, lo1, hi1, b, lo2, hi2);
    if (split) {
      diffRange(a, lo1, split[0], b, lo2, split[1], ops);
      diffRange(a, split[0], hi1, b, split[1], hi2, ops);
    } else {
      for (let k = lo1; k < hi1; k++) ops.push('-');
      for (let k = lo2; k < hi2; k++) ops.push('+');
    }
  }
  for (let k = 0; k < suffix; k++) ops.push('=');
}

/**
 * Finds where a shortest edit path crosses the middle (the forward and backward searches meet):
 * the point [x, y] to split the problem at, or undefined when the ranges share nothing.
 */
function middle(a: Int32Array, aLo: number, aHi: number, b: Int32Array, bLo: number, bHi: number): [number, number] | undefined {
  const n = aHi - aLo;
  const m = bHi - bLo;
  const maxD = Math.ceil((n + m) / 2);
  const offset = maxD + 1;
  const size = 2 * maxD + 3;
  const forward = new Int32Array(size).fill(-1);
  const backward = new Int32Array(size).fill(-1);
  forward[offset + 1] = 0;
  backward[offset + 1] = 0;
  const delta = n - m;
  const odd = delta % 2 !== 0;
  // Diagonals that ran off the edit graph are not searched again.
  let k1start = 0;
  let k1end = 0;
  let k2start = 0;
  let k2end = 0;
  const at = (v: Int32Array, index: number): number => v[index] ?? -1;

  for (let d = 0; d < maxD; d++) {
    for (let k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
      const i = offset + k1;
      let x1 = k1 === -d || (k1 !== d && at(forward, i - 1) < at(forward, i + 1)) ? at(forward, i + 1) : at(forward, i - 1) + 1;
      let y1 = x1 - k1;
      while (x1 < n && y1 < m && a[aLo + x1] === b[bLo + y1]) {
        x1++;
        y1++;
      }
      forward[i] = x1;
      if (x1 > n) k1end += 2;
      else if (y1 > m) k1start += 2;
      else if (odd) {
        const j = offset + delta - k1;
        if (j >= 0 && j < size && at(backward, j) !== -1 && x1 >= n - at(backward, j)) return [aLo + x1, bLo + y1];
      }
    }
    for (let k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
      const j = offset + k2;
      let x2 = k2 === -d || (k2 !== d && at(backward, j - 1) < at(backward, j + 1)) ? at(backward, j + 1) : at(backward, j - 1) + 1;
      let y2 = x2 - k2;
      while (x2 < n && y2 < m && a[aHi - x2 - 1] === b[bHi - y2 - 1]) {
        x2++;
        y2++;
      }
      backward[j] = x2;
      if (x2 > n) k2end += 2;
      else if (y2 > m) k2start += 2;
      else if (!odd) {
        const i = offset + delta - k2;
        if (i >= 0 && i < size && at(forward, i) !== -1) {
          const x1 = at(forward, i);
          const y1 = x1 - (i - offset);
          if (x1 >= n - x2) return [aLo + x1, bLo + y1];
        }
      }
    }
  }
  return undefined;
}

const NO_NEWLINE = '\\ No newline at end of file';

function range(start: number, count: number): string {
  // An empty range names the line before it, as diff and git do.
  const first = count === 0 ? start - 1 : start;
  return count === 1 ? `${first}` : `${first},${count}`;
}

function formatLine(line: DiffLine): string {
  return line.text.endsWith('\n') ? `${line.op}${line.text}` : `${line.op}${line.text}\n${NO_NEWLINE}\n`;
}

/**
 * A unified diff of two texts: `--- a/<old>` and `+++ b/<new>` headers, then `@@` hunks with
 * `context` unchanged lines around each change. Empty when the texts are equal and the paths are
 * the same; only the headers when only the path changed (a rename).
 */
export function unifiedDiff(before: string | undefined, after: string | undefined, options: UnifiedDiffOptions = {}): string {
  const context = options.context ?? 3;
  const lines = diffLines(before ?? '', after ?? '');
  const header = `--- ${options.oldPath === undefined ? '/dev/null' : `a/${options.oldPath}`}\n+++ ${
    options.newPath === undefined ? '/dev/null' : `b/${options.newPath}`
  }\n`;
  const changed = lines.some((line) => line.op !== ' ');
  if (!changed) return options.oldPath === options.newPath && before !== undefined && after !== undefined ? '' : header;

  // Line numbers (1-based) of each script line in the old and the new text.
  const oldNumbers: number[] = [];
  const newNumbers: number[] = [];
  let oldLine = 1;
  let newLine = 1;
  for (const line of lines) {
    oldNumbers.push(oldLine);
    newNumbers.push(newLine);
    if (line.op !== '+') oldLine++;
    if (line.op !== '-') newLine++;
  }

  let out = header;
  let index = 0;
  while (index < lines.length) {
    // The next change, then extend the hunk while the following change is near enough.
    while (index < lines.length && lines[index]?.op === ' ') index++;
    if (index >= lines.length) break;
    const start = Math.max(0, index - context);
    let end = index;
    for (;;) {
      while (end < lines.length && lines[end]?.op !== ' ') end++;
      let next = end;
      while (next < lines.length && lines[next]?.op === ' ') next++;
      if (next < lines.length && next - end <= 2 * context) end = next;
      else break;
    }
    const stop = Math.min(lines.length, end + context);
    const hunk = lines.slice(start, stop);
    const oldCount = hunk.filter((line) => line.op !== '+').length;
    const newCount = hunk.filter((line) => line.op !== '-').length;
    out += `@@ -${range(oldNumbers[start] ?? 1, oldCount)} +${range(newNumbers[start] ?? 1, newCount)} @@\n`;
    out += hunk.map(formatLine).join('');
    index = stop;
  }
  return out;
}
