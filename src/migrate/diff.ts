/**
 * Line diffs of migrated files, built on jsdiff (`diff`): its shortest edit script and hunks,
 * printed in the unified format of `diff -u` and git (`@@ -1 +1 @@` for one-line ranges).
 *
 * A shortest script costs time quadratic in its length, so past MAX_EDIT_LENGTH changed lines
 * (a file rewritten almost whole) the diff keeps the common first and last lines and shows the
 * differing middle removed then added: still a correct diff, in milliseconds instead of seconds.
 */
import { loadDiff } from '../core/lazy/diff.load.js';

/** Most changed lines (removed + added) for which a shortest edit script is searched. */
export const MAX_EDIT_LENGTH = 2000;

const NO_NEWLINE = '\\ No newline at end of file';

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

/** The script past MAX_EDIT_LENGTH: common first lines kept, the middle removed then added, common last lines kept. */
function middleReplaced(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const line = (op: DiffLine['op']) => (text: string): DiffLine => ({ op, text });
  return [
    ...a.slice(0, prefix).map(line(' ')),
    ...a.slice(prefix, a.length - suffix).map(line('-')),
    ...b.slice(prefix, b.length - suffix).map(line('+')),
    ...a.slice(a.length - suffix).map(line(' ')),
  ];
}

/**
 * The edit script turning the lines of `before` into those of `after`: a shortest one, up to
 * MAX_EDIT_LENGTH changed lines (past it, the differing middle is replaced whole).
 */
export function diffLines(before: string, after: string): DiffLine[] {
  const changes = loadDiff().diffLines(before, after, { maxEditLength: MAX_EDIT_LENGTH });
  if (changes === undefined) return middleReplaced(before, after);
  const script: DiffLine[] = [];
  for (const change of changes) {
    const op = change.added ? '+' : change.removed ? '-' : ' ';
    for (const text of splitLines(change.value)) script.push({ op, text });
  }
  return script;
}

/** A hunk range: an empty one names the line before it, and a one-line one has no count, as diff and git print them. */
function range(start: number, count: number): string {
  const first = count === 0 ? start - 1 : start;
  return count === 1 ? `${first}` : `${first},${count}`;
}

/**
 * A unified diff of two texts: `--- a/<old>` and `+++ b/<new>` headers, then `@@` hunks with
 * `context` unchanged lines around each change (changes closer than twice that share a hunk),
 * and `\ No newline at end of file` after a last line without one. Empty when the texts are
 * equal and the paths are the same; only the headers when only the path changed (a rename).
 */
export function unifiedDiff(before: string | undefined, after: string | undefined, options: UnifiedDiffOptions = {}): string {
  const oldName = options.oldPath === undefined ? '/dev/null' : `a/${options.oldPath}`;
  const newName = options.newPath === undefined ? '/dev/null' : `b/${options.newPath}`;
  const header = `--- ${oldName}\n+++ ${newName}\n`;
  const context = options.context ?? 3;
  const patch = loadDiff().structuredPatch(oldName, newName, before ?? '', after ?? '', undefined, undefined, { context, maxEditLength: MAX_EDIT_LENGTH });
  if (patch === undefined) return header + middleReplacedHunk(before ?? '', after ?? '', context);
  if (patch.hunks.length === 0) return options.oldPath === options.newPath && before !== undefined && after !== undefined ? '' : header;
  let out = header;
  for (const hunk of patch.hunks) {
    out += `@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@\n`;
    for (const line of hunk.lines) out += `${line}\n`;
  }
  return out;
}

/** The one hunk of a diff past MAX_EDIT_LENGTH: the replaced middle with `context` kept lines around it. */
function middleReplacedHunk(before: string, after: string, context: number): string {
  const script = middleReplaced(before, after);
  const first = script.findIndex((line) => line.op !== ' ');
  let last = script.length - 1;
  while (last > first && script[last]?.op === ' ') last--;
  // The kept lines before the hunk are the same in both texts, so it starts at the same line in each.
  const start = Math.max(0, first - context);
  const hunk = script.slice(start, Math.min(script.length, last + 1 + context));
  const oldCount = hunk.filter((line) => line.op !== '+').length;
  const newCount = hunk.filter((line) => line.op !== '-').length;
  const print = ({ op, text }: DiffLine): string => (text.endsWith('\n') ? `${op}${text}` : `${op}${text}\n${NO_NEWLINE}\n`);
  return `@@ -${range(start + 1, oldCount)} +${range(start + 1, newCount)} @@\n${hunk.map(print).join('')}`;
}
