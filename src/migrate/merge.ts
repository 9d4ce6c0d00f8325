/**
 * Three-way merge of line-based texts, like `git merge-file` and `diff3 -m`: the edit scripts
 * from base to ours and from base to theirs (diffLines) become hunks over ranges of base lines,
 * and the two lists are walked together in base order. A region changed on one side only takes
 * that side; a region both sides changed to the same lines takes them once; anything else both
 * sides touched is a conflict, written between `<<<<<<<`, `=======` and `>>>>>>>` markers (with
 * the base lines after `|||||||` in the diff3 style).
 *
 * Lines are compared with their line endings, so everything outside a conflict is copied byte for
 * byte: CRLF endings and a missing final newline survive the merge. The time is that of the two
 * diffs, which diffLines bounds on large, much-changed inputs, plus a linear walk.
 *
 * Why not node-diff3 (`merge`, `diff3MergeRegions`): its regions and conflicts are the same as these
 * (test/migrate/merge.test.ts passes on it but for the bounded wholesale rewrite), but its LCS
 * (Hunt-McIlroy with a linear scan of the candidates) has no bound on lines that repeat, the blank
 * lines and closing braces every source file is full of: 2,000 such lines take about 4 s against
 * 45 ms here, 5,000 take 30 s, and 20,000 (merge.test.ts "blank lines and closing braces") minutes.
 * A template's files come from strangers, so the merge keeps the bounded jsdiff script (bench/diff.bench.ts).
 */
import { diffLines, type DiffLine, splitLines } from './diff.js';

export interface MergeLabels {
  /** Shown after `<<<<<<<`. */
  ours: string;
  /** Shown after `>>>>>>>`. */
  theirs: string;
  /** Shown after `|||||||` in the diff3 style; `base` unless given. */
  base?: string;
}

export interface MergeResult {
  /** True when no region conflicted. */
  clean: boolean;
  /** The merged text; conflicting regions written with markers. */
  text: string;
  /** How many conflicting regions. */
  conflicts: number;
}

type MergeStyle = 'merge' | 'diff3';

/** One change of one side: base lines [start, end) replaced by `lines` (an insertion when start = end). */
interface Hunk {
  start: number;
  end: number;
  lines: string[];
}

/** Base lines [start, end) and the hunks of each side falling in them. */
interface Region {
  start: number;
  end: number;
  ours: Hunk[];
  theirs: Hunk[];
}

/** The hunks of an edit script: each run of removed and added lines between kept ones. */
function toHunks(script: DiffLine[]): Hunk[] {
  const hunks: Hunk[] = [];
  let line = 0;
  let open: Hunk | undefined;
  for (const { op, text } of script) {
    if (op === ' ') {
      open = undefined;
      line++;
      continue;
    }
    if (open === undefined) {
      open = { start: line, end: line, lines: [] };
      hunks.push(open);
    }
    if (op === '-') open.end = ++line;
    else open.lines.push(text);
  }
  return hunks;
}

/**
 * The hunks of both sides grouped into regions: hunks of different sides share a region when
 * their base ranges overlap or merely touch, so changes meet only where at least one base line is
 * left unchanged by both sides. This is git's rule (xdl_merge conflicts unless one hunk ends
 * strictly before the other starts): an edit of line 3 against an edit of line 4, or an insertion
 * right before or after a line the other side changed, conflicts rather than being guessed at.
 * The hunks of one side never touch (a kept line separates them), so only the other side can
 * chain them into one region.
 */
function toRegions(ours: Hunk[], theirs: Hunk[]): Region[] {
  const tagged = [...ours.map((hunk) => ({ hunk, ours: true })), ...theirs.map((hunk) => ({ hunk, ours: false }))];
  tagged.sort((a, b) => a.hunk.start - b.hunk.start);
  const regions: Region[] = [];
  let current: Region | undefined;
  for (const { hunk, ours: isOurs } of tagged) {
    if (current === undefined || hunk.start > current.end) {
      current = { start: hunk.start, end: hunk.end, ours: [], theirs: [] };
      regions.push(current);
    }
    current.end = Math.max(current.end, hunk.end);
    (isOurs ? current.ours : current.theirs).push(hunk);
  }
  return regions;
}

/** Appends items one by one: a spread of a file-sized array could overflow the call stack. */
function append(out: string[], items: readonly string[]): void {
  for (const item of items) out.push(item);
}

/** One side's lines for a region: the base lines of the region with that side's hunks applied. */
function sideLines(base: readonly string[], region: Region, hunks: readonly Hunk[]): string[] {
  const lines: string[] = [];
  let at = region.start;
  for (const hunk of hunks) {
    append(lines, base.slice(at, hunk.start));
    append(lines, hunk.lines);
    at = hunk.end;
  }
  append(lines, base.slice(at, region.end));
  return lines;
}

/** The lines with a newline added to the last if it has none, so a marker after them starts its own line (as git does). */
function terminated(lines: readonly string[]): string[] {
  const last = lines.at(-1);
  return last === undefined || last.endsWith('\n') ? [...lines] : [...lines.slice(0, -1), `${last}\n`];
}

/** A conflicting region written with markers. */
function conflictLines(ours: readonly string[], base: readonly string[], theirs: readonly string[], labels: MergeLabels, style: MergeStyle): string[] {
  const baseSection = style === 'diff3' ? [`||||||| ${labels.base ?? 'base'}\n`, ...terminated(base)] : [];
  return [`<<<<<<< ${labels.ours}\n`, ...terminated(ours), ...baseSection, '=======\n', ...terminated(theirs), `>>>>>>> ${labels.theirs}\n`];
}

/** A region's merged lines, and whether it conflicted. */
function resolveRegion(base: readonly string[], region: Region, labels: MergeLabels, style: MergeStyle): { lines: string[]; conflict: boolean } {
  const ours = sideLines(base, region, region.ours);
  if (region.theirs.length === 0) return { lines: ours, conflict: false };
  const theirs = sideLines(base, region, region.theirs);
  if (region.ours.length === 0 || ours.join('') === theirs.join('')) return { lines: theirs, conflict: false };
  return { lines: conflictLines(ours, base.slice(region.start, region.end), theirs, labels, style), conflict: true };
}

/** Three-way merge of line-based texts: the changes from base to ours and from base to theirs. */
export function mergeThreeWay(base: string, ours: string, theirs: string, labels: MergeLabels, options: { style?: MergeStyle } = {}): MergeResult {
  if (ours === theirs || base === theirs) return { clean: true, text: ours, conflicts: 0 };
  if (base === ours) return { clean: true, text: theirs, conflicts: 0 };
  const style = options.style ?? 'merge';
  const baseLines = splitLines(base);
  const regions = toRegions(toHunks(diffLines(base, ours)), toHunks(diffLines(base, theirs)));
  const out: string[] = [];
  let conflicts = 0;
  let at = 0;
  for (const region of regions) {
    append(out, baseLines.slice(at, region.start));
    const { lines, conflict } = resolveRegion(baseLines, region, labels, style);
    append(out, lines);
    if (conflict) conflicts++;
    at = region.end;
  }
  append(out, baseLines.slice(at));
  return { clean: conflicts === 0, text: out.join(''), conflicts };
}
