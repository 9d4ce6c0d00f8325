/**
 * A template's own text (its change log, migration guide, step descriptions) as it may appear in
 * a pull request the sync action opens in someone else's repository: its Markdown formatting
 * (headings, lists, emphasis, code) is kept, but nothing in it can act on the reader:
 *
 * - no raw HTML (`<` and `&` are escaped: no tags, comments, autolinks or entities);
 * - no @-mentions (a zero-width space after `@`: nobody is notified, the text reads the same);
 * - no images (`![alt](url)` becomes `alt (url)`: no picture, no request to another host);
 * - links kept as text (`[text](url)` becomes `text (url)`; reference links, definitions and
 *   footnotes are left as plain brackets): the reader sees where a link goes.
 *
 * Code spans and fenced code blocks are left as they are: GitHub renders neither HTML, mentions,
 * images nor links inside them. A fence left open is closed at the end of the text, so that it
 * cannot swallow what the pull request says after it.
 */

const ZERO_WIDTH_SPACE = '&#8203;';

/** Escapes text outside code: HTML, images, links, brackets, mentions. */
function escapeText(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/!\[([^\]\n]*)\]\(\s*([^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, (_all, alt: string, url: string) => `${alt} (${url})`)
    .replace(/\[([^\]\n]*)\]\(\s*([^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, (_all, label: string, url: string) => `${label} (${url})`)
    .replace(/[[\]]/g, '\\$&')
    .replace(/@(?=[A-Za-z0-9_-])/g, `@${ZERO_WIDTH_SPACE}`);
}

/** One line of template text (a reason, a warning), made safe as `safeMarkdown` does: its code spans kept, the rest escaped. */
export function safeMarkdownLine(line: string): string {
  let result = '';
  let from = 0;
  while (from < line.length) {
    const open = line.indexOf('`', from);
    if (open < 0) break;
    const run = /^`+/.exec(line.slice(open))?.[0] ?? '`';
    // A code span ends at the next run of exactly as many backticks.
    const closing = new RegExp(`(?<!\`)\`{${run.length}}(?!\`)`, 'g');
    closing.lastIndex = open + run.length;
    const close = closing.exec(line);
    if (!close) {
      result += escapeText(line.slice(from, open + run.length));
      from = open + run.length;
      continue;
    }
    result += escapeText(line.slice(from, open)) + line.slice(open, close.index + run.length);
    from = close.index + run.length;
  }
  return result + escapeText(line.slice(from));
}

/** Template-supplied Markdown made safe to show in a pull request (see the top of this module). */
export function safeMarkdown(text: string): string {
  const lines: string[] = [];
  let fence: { char: string; length: number } | undefined;
  for (const line of text.split('\n')) {
    const marker = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence) {
      lines.push(line);
      if (marker?.[1]?.startsWith(fence.char) && marker[1].length >= fence.length && (marker[2] ?? '').trim() === '') fence = undefined;
      continue;
    }
    // A backtick fence's info string may not hold a backtick (else it is inline code).
    if (marker?.[1] && !(marker[1].startsWith('`') && (marker[2] ?? '').includes('`'))) {
      fence = { char: marker[1].charAt(0), length: marker[1].length };
      lines.push(line);
      continue;
    }
    lines.push(safeMarkdownLine(line));
  }
  if (fence) lines.push(fence.char.repeat(fence.length));
  return lines.join('\n');
}
