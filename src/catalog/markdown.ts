/**
 * A template's README and change log, as the catalog page shows them: a small, safe subset of
 * Markdown made into view elements (view.ts), never into HTML to parse. What it knows: ATX and
 * setext headings (shifted under the page's own), paragraphs, bullet and numbered lists (nested),
 * block quotes, fenced and indented code, simple tables, thematic breaks; inline code, emphasis,
 * strong, links and autolinks to absolute http(s) URLs only (any other link keeps its text, an
 * image its alt text), hard line breaks. Raw HTML is shown as the text it is; HTML comments are
 * left out.
 *
 * Strangers write these files, so the work is bounded: the text is cut at `MAX_MARKDOWN_CHARS`,
 * nesting at `MAX_DEPTH`, and every inline delimiter finds its closer through tables made once per
 * text, so no input costs more than linear time per level.
 */
import { absoluteHttpUrl } from './html.js';
import { h, type View, type ViewElement } from './view.js';

/** The most characters of Markdown rendered; the rest is left out (and said so). */
const MAX_MARKDOWN_CHARS = 64 * 1024;
/** The deepest nesting of block quotes and lists, and of emphasis in emphasis. */
const MAX_DEPTH = 6;

export interface MarkdownOptions {
  /** The level a `#` heading is shown at (default 3: under the page's own h2); deeper ones follow, h6 at most. */
  headingLevel?: number;
}

/** `markdown` as view elements (blocks). */
export function renderMarkdown(markdown: string, options: MarkdownOptions = {}): View[] {
  const cut = markdown.length > MAX_MARKDOWN_CHARS;
  const source = (cut ? markdown.slice(0, MAX_MARKDOWN_CHARS) : markdown).replace(/\r\n?/g, '\n').replace(HTML_COMMENT, '');
  const blocks = parseBlocks(source.split('\n'), { headingLevel: options.headingLevel ?? 3, depth: 0 });
  if (cut) blocks.push(h('p', { class: 'muted' }, `(cut at ${MAX_MARKDOWN_CHARS / 1024} KiB)`));
  return blocks;
}

// Spelt so that the page's inline script never holds the characters that open an HTML comment.
const HTML_COMMENT = /<![-]{2}[\s\S]*?-->/g;

interface BlockContext {
  headingLevel: number;
  depth: number;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})[^`]*$/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$/;
const THEMATIC = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+(.*)|$)/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const BLANK = /^[ \t]*$/;

const isBlank = (line: string): boolean => BLANK.test(line);
const indentOf = (line: string): number => /^ */.exec(line.replace(/\t/g, '    '))?.[0].length ?? 0;

/** Whether `line` starts a block other than a paragraph (it ends a paragraph before it). */
function startsBlock(line: string): boolean {
  return FENCE.test(line) || ATX.test(line) || THEMATIC.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function heading(level: number, context: BlockContext, text: string): ViewElement {
  const shown = Math.min(6, context.headingLevel + level - 1);
  return h(`h${shown}`, null, inline(text.trim(), context.depth));
}

function parseBlocks(lines: readonly string[], context: BlockContext): View[] {
  const out: View[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (isBlank(line)) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1] as string;
      const indent = indentOf(line);
      const code: string[] = [];
      i++;
      while (i < lines.length) {
        const current = lines[i] as string;
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(current);
        if (close && (close[1] as string)[0] === marker[0] && (close[1] as string).length >= marker.length) {
          i++;
          break;
        }
        code.push(current.replace(new RegExp(`^ {0,${indent}}`), ''));
        i++;
      }
      out.push(h('pre', null, h('code', null, code.join('\n'))));
      continue;
    }
    const atx = ATX.exec(line);
    if (atx) {
      out.push(heading((atx[1] as string).length, context, (atx[2] as string).replace(/[ \t]+#+[ \t]*$/, '').replace(/^#+[ \t]*$/, '')));
      i++;
      continue;
    }
    if (THEMATIC.test(line)) {
      out.push(h('hr'));
      i++;
      continue;
    }
    if (indentOf(line) >= 4) {
      const code: string[] = [];
      while (i < lines.length && (indentOf(lines[i] as string) >= 4 || isBlank(lines[i] as string))) code.push((lines[i++] as string).replace(/^(?: {4}|\t)/, ''));
      while (code.length > 0 && isBlank(code[code.length - 1] as string)) code.pop();
      out.push(h('pre', null, h('code', null, code.join('\n'))));
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && !isBlank(lines[i] as string)) {
        const match = QUOTE.exec(lines[i] as string);
        if (!match && startsBlock(lines[i] as string)) break;
        quoted.push(match ? (match[1] as string) : (lines[i] as string));
        i++;
      }
      out.push(context.depth >= MAX_DEPTH ? h('blockquote', null, h('p', null, quoted.join('\n'))) : h('blockquote', null, parseBlocks(quoted, { ...context, depth: context.depth + 1 })));
      continue;
    }
    const item = ITEM.exec(line);
    if (item) {
      i = parseList(lines, i, context, out);
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && isTableDivider(lines[i + 1] as string)) {
      i = parseTable(lines, i, context, out);
      continue;
    }
    // A paragraph: up to a blank line or another block; a setext underline makes it a heading.
    const text: string[] = [line];
    i++;
    let setext = 0;
    while (i < lines.length) {
      const current = lines[i] as string;
      if (isBlank(current)) break;
      const underline = SETEXT.exec(current);
      if (underline) {
        setext = (underline[1] as string)[0] === '=' ? 1 : 2;
        i++;
        break;
      }
      if (startsBlock(current)) break;
      text.push(current);
      i++;
    }
    const joined = text.map((part) => part.replace(/^[ \t]+/, '')).join('\n');
    out.push(setext > 0 ? heading(setext, context, joined) : h('p', null, inline(joined, context.depth)));
  }
  return out;
}

/** A list starting at `lines[start]`; returns the index after it. */
function parseList(lines: readonly string[], start: number, context: BlockContext, out: View[]): number {
  const first = ITEM.exec(lines[start] as string) as RegExpExecArray;
  const ordered = /\d/.test(first[2] as string);
  const marker = ordered ? (first[2] as string).slice(-1) : (first[2] as string);
  const items: string[][] = [];
  let loose = false;
  let i = start;
  let current: string[] | undefined;
  let contentIndent = 0;
  let blankBefore = false;
  let hasText = false;
  while (i < lines.length) {
    const line = lines[i] as string;
    const match = ITEM.exec(line);
    const sameList = match !== null && (ordered ? /\d/.test(match[2] as string) && (match[2] as string).endsWith(marker) : match[2] === marker);
    if (match && sameList && indentOf(line) < Math.max(contentIndent, 1)) {
      if (blankBefore && current) loose = true;
      current = [match[4] ?? ''];
      hasText = (match[4] ?? '').trim() !== '';
      items.push(current);
      contentIndent = (match[1] as string).length + (match[2] as string).length + Math.min(4, Math.max(1, (match[3] as string).length - (match[4] ?? '').length || 1));
      blankBefore = false;
      i++;
      continue;
    }
    if (isBlank(line)) {
      blankBefore = true;
      current?.push('');
      i++;
      continue;
    }
    if (indentOf(line) >= contentIndent && current) {
      if (blankBefore && hasText) loose = true;
      current.push(line.replace(/\t/g, '    ').slice(contentIndent));
      hasText = true;
      blankBefore = false;
      i++;
      continue;
    }
    // A lazy continuation of the item's paragraph.
    if (!blankBefore && current && !startsBlock(line)) {
      current.push(line);
      i++;
      continue;
    }
    break;
  }
  const start1 = ordered ? Number.parseInt(first[2] as string, 10) : 1;
  const rendered = items.map((parts) => {
    while (parts.length > 0 && isBlank(parts[parts.length - 1] as string)) parts.pop();
    if (context.depth >= MAX_DEPTH) return h('li', null, inline(parts.join('\n'), context.depth));
    const blocks = parseBlocks(parts, { ...context, depth: context.depth + 1 });
    // A tight list shows its paragraphs without their margins.
    const shown = loose ? blocks : blocks.flatMap((block) => (typeof block !== 'string' && block.tag === 'p' ? block.children : [block]));
    return h('li', null, shown);
  });
  out.push(ordered ? h('ol', start1 === 1 ? null : { start: start1 }, rendered) : h('ul', null, rendered));
  return i;
}

/** A table's divider row: `| --- | :-: |`, each cell dashes with optional colons. */
function isTableDivider(line: string): boolean {
  if (!line.includes('-') || indentOf(line) >= 4) return false;
  return cells(line).every((cell) => /^:?-+:?$/.test(cell));
}

/** Splits a table row on its unescaped pipes. */
function cells(row: string): string[] {
  let text = row.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

/** A table starting at `lines[start]` (its head, then the divider); returns the index after it. */
function parseTable(lines: readonly string[], start: number, context: BlockContext, out: View[]): number {
  const head = cells(lines[start] as string);
  let i = start + 2;
  const rows: string[][] = [];
  while (i < lines.length && !isBlank(lines[i] as string) && (lines[i] as string).includes('|') && !startsBlock(lines[i] as string)) rows.push(cells(lines[i++] as string));
  out.push(
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        null,
        h('thead', null, h('tr', null, head.map((cell) => h('th', { scope: 'col' }, inline(cell, context.depth))))),
        h('tbody', null, rows.map((row) => h('tr', null, head.map((_, k) => h('td', null, inline(row[k] ?? '', context.depth)))))),
      ),
    ),
  );
  return i;
}

// ---------------------------------------------------------------------------------------------
// Inline
// ---------------------------------------------------------------------------------------------

const PUNCTUATION = /[!-/:-@[-`{-~]/;
const BARE_URL = /\bhttps?:\/\/[^\s<>"'`]+/g;

/** `text` with its bare http(s) URLs made links. */
function autolinked(text: string): View[] {
  const out: View[] = [];
  let from = 0;
  for (const match of text.matchAll(BARE_URL)) {
    const url = trimmedUrl(match[0]);
    const at = match.index;
    const href = absoluteHttpUrl(url);
    if (!href) continue;
    if (at > from) out.push(text.slice(from, at));
    out.push(anchor(href, [url]));
    from = at + url.length;
  }
  if (from < text.length) out.push(text.slice(from));
  return out;
}

/** A bare URL without the sentence punctuation after it (a closing parenthesis only when unbalanced). */
function trimmedUrl(found: string): string {
  let opens = 0;
  let closes = 0;
  for (const char of found) {
    if (char === '(') opens++;
    else if (char === ')') closes++;
  }
  let end = found.length;
  for (;;) {
    const last = found[end - 1];
    if (last === ')' && closes > opens) closes--;
    else if (last === undefined || !'.,;:!?'.includes(last)) break;
    end--;
  }
  return found.slice(0, end);
}

function anchor(href: string, children: View[]): ViewElement {
  return h('a', { href, rel: 'nofollow noopener noreferrer' }, children);
}

/** For each position, the next position (at or after it) holding `char`, or -1; made once per text. */
function nextOf(text: string, char: string): Int32Array {
  const next = new Int32Array(text.length + 1).fill(-1);
  for (let k = text.length - 1; k >= 0; k--) next[k] = text[k] === char ? k : (next[k + 1] as number);
  return next;
}

/** Runs of one delimiter character: where each starts and how long it is, in order. */
interface Runs {
  starts: number[];
  lengths: number[];
  /** For each run, the index of the next run (after it) at least 2 long, or -1. */
  nextDouble: Int32Array;
}

function runsOf(text: string, char: string): Runs {
  const starts: number[] = [];
  const lengths: number[] = [];
  for (let k = 0; k < text.length; k++) {
    if (text[k] !== char || (k > 0 && text[k - 1] === '\\')) continue;
    let end = k;
    while (end < text.length && text[end] === char) end++;
    starts.push(k);
    lengths.push(end - k);
    k = end - 1;
  }
  const nextDouble = new Int32Array(starts.length).fill(-1);
  for (let r = starts.length - 2; r >= 0; r--) nextDouble[r] = (lengths[r + 1] as number) >= 2 ? r + 1 : (nextDouble[r + 1] as number);
  return { starts, lengths, nextDouble };
}

/** The index of the run starting at `at` (binary search). */
function runAt(runs: Runs, at: number): number {
  let low = 0;
  let high = runs.starts.length - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const start = runs.starts[mid] as number;
    if (start === at) return mid;
    if (start < at) low = mid + 1;
    else high = mid - 1;
  }
  return -1;
}

const isWordChar = (char: string | undefined): boolean => char !== undefined && /[\p{L}\p{N}]/u.test(char);
const isSpace = (char: string | undefined): boolean => char === undefined || /\s/.test(char);

/** The inline elements of one paragraph's text. */
export function inline(text: string, depth = 0): View[] {
  const out: View[] = [];
  let plain = '';
  const flush = (): void => {
    if (plain !== '') out.push(...autolinked(plain));
    plain = '';
  };
  const closeBracket = nextOf(text, ']');
  const closeParen = nextOf(text, ')');
  const closeAngle = nextOf(text, '>');
  const delimiters: Record<string, Runs> = { '*': runsOf(text, '*'), _: runsOf(text, '_') };
  const ticks = runsOf(text, '`');
  /** Backtick runs by length, in order, for the closer of a code span. */
  const ticksByLength = new Map<number, number[]>();
  ticks.starts.forEach((start, r) => {
    const length = ticks.lengths[r] as number;
    const list = ticksByLength.get(length);
    if (list) list.push(start);
    else ticksByLength.set(length, [start]);
  });
  const nextTicks = (length: number, after: number): number => {
    const list = ticksByLength.get(length) ?? [];
    let low = 0;
    let high = list.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((list[mid] as number) < after) low = mid + 1;
      else high = mid;
    }
    return low < list.length ? (list[low] as number) : -1;
  };

  let i = 0;
  while (i < text.length) {
    const char = text[i] as string;
    if (char === '\\' && i + 1 < text.length) {
      const next = text[i + 1] as string;
      if (next === '\n') {
        flush();
        out.push(h('br'));
        i += 2;
        continue;
      }
      if (PUNCTUATION.test(next)) {
        plain += next;
        i += 2;
        continue;
      }
    }
    if (char === '\n') {
      if (plain.endsWith('  ')) {
        plain = plain.replace(/ +$/, '');
        flush();
        out.push(h('br'));
      } else {
        plain += '\n';
      }
      i++;
      continue;
    }
    if (char === '`') {
      let length = 1;
      while (text[i + length] === '`') length++;
      const close = nextTicks(length, i + length);
      if (close !== -1) {
        flush();
        let code = text.slice(i + length, close).replace(/\n/g, ' ');
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') code = code.slice(1, -1);
        out.push(h('code', null, code));
        i = close + length;
      } else {
        plain += '`'.repeat(length);
        i += length;
      }
      continue;
    }
    if (char === '<') {
      const close = closeAngle[i + 1] ?? -1;
      const inside = close === -1 ? '' : text.slice(i + 1, close);
      const href = /^https?:\/\/[^\s<>]*$/i.test(inside) ? absoluteHttpUrl(inside) : undefined;
      if (href) {
        flush();
        out.push(anchor(href, [inside]));
        i = close + 1;
        continue;
      }
    }
    if (char === '[' || (char === '!' && text[i + 1] === '[')) {
      const image = char === '!';
      const open = image ? i + 1 : i;
      const close = closeBracket[open + 1] ?? -1;
      if (close !== -1 && text[close + 1] === '(') {
        const end = closeParen[close + 2] ?? -1;
        if (end !== -1) {
          const target = text.slice(close + 2, end).trim();
          const url = /^<?([^\s>]*)>?(?:\s+["'(].*["')])?$/.exec(target)?.[1];
          const label = text.slice(open + 1, close);
          flush();
          if (image) {
            if (label.trim() !== '') out.push(label);
          } else {
            const href = url === undefined ? undefined : absoluteHttpUrl(url);
            const children = depth >= MAX_DEPTH ? [label] : inlineWithoutLinks(label, depth + 1);
            out.push(href ? anchor(href, children) : h('span', null, children));
          }
          i = end + 1;
          continue;
        }
      }
    }
    if (char === '*' || char === '_') {
      const runs = delimiters[char] as Runs;
      const r = runAt(runs, i);
      const length = r === -1 ? 1 : (runs.lengths[r] as number);
      const opens = !isSpace(text[i + length]) && (char === '*' || !isWordChar(text[i - 1]));
      if (r !== -1 && opens && depth < MAX_DEPTH) {
        const strong = length >= 2;
        const closer = strong ? (runs.nextDouble[r] as number) : r + 1 < runs.starts.length ? r + 1 : -1;
        const closeAt = closer === -1 ? -1 : (runs.starts[closer] as number);
        const closes = closeAt !== -1 && !isSpace(text[closeAt - 1]) && (char === '*' || !isWordChar(text[closeAt + (runs.lengths[closer] as number)]));
        if (closes) {
          const width = strong ? 2 : 1;
          flush();
          // The opener's extra delimiters (`***`) stay text inside.
          const inner = text.slice(i + width, closeAt);
          out.push(h(strong ? 'strong' : 'em', null, inline(inner, depth + 1)));
          plain += char.repeat(Math.max(0, (runs.lengths[closer] as number) - width));
          i = closeAt + (runs.lengths[closer] as number);
          continue;
        }
      }
      plain += char.repeat(length);
      i += length;
      continue;
    }
    plain += char;
    i++;
  }
  flush();
  return out;
}

/** A link's text: its inline elements, links among them shown as their text. */
function inlineWithoutLinks(text: string, depth: number): View[] {
  return inline(text, depth).map((view) => (typeof view !== 'string' && view.tag === 'a' ? h('span', null, view.children) : view));
}
