import { COMMAND_SUMMARIES } from './commands/summaries.js';

/**
 * `template-registry --help` without the command parser: the same text commander prints for the
 * root command (test/cli/root-help.test.ts compares them), laid out by the same rules, so asking for
 * help loads nothing but the summaries.
 */

export const ROOT_DESCRIPTION = 'Publish, find, generate from and upgrade versioned project templates.';
export const NO_COLOR_HELP = 'no colours (colours are used only on a terminal; NO_COLOR=1 and FORCE_COLOR=1 also work)';

/** Commander's minimum description width: narrower, descriptions are not wrapped. */
const MIN_WIDTH_TO_WRAP = 40;

/** Wraps `text` at whitespace to `width` columns (commander's `boxWrap`). */
function wrap(text: string, width: number): string {
  if (width < MIN_WIDTH_TO_WRAP) return text;
  const lines: string[] = [];
  const chunks = text.match(/\s*\S+/g) ?? [''];
  let line = chunks[0] ?? '';
  for (const chunk of chunks.slice(1)) {
    if (line.length + chunk.length <= width) line += chunk;
    else {
      lines.push(line);
      line = chunk.trimStart();
    }
  }
  lines.push(line);
  return lines.join('\n');
}

/** One `term  description` row, the description wrapped in its column. */
function item(term: string, termWidth: number, description: string, helpWidth: number): string {
  const remaining = helpWidth - termWidth - 2 - 2;
  const wrapped = remaining < MIN_WIDTH_TO_WRAP ? description : wrap(description, remaining).replace(/\n/g, `\n${' '.repeat(termWidth + 2)}`);
  return `  ${term.padEnd(termWidth)}  ${wrapped.replace(/\n/g, '\n  ')}`;
}

/** The root help text for a terminal `helpWidth` columns wide (80 when not a terminal, as commander). */
export function rootHelp(helpWidth = 80): string {
  const options: [string, string][] = [
    ['-V, --version', 'output the version number'],
    ['--no-color', NO_COLOR_HELP],
    ['-h, --help', 'display help for command'],
  ];
  const commands: [string, string][] = [...Object.values(COMMAND_SUMMARIES).map(({ term, description }): [string, string] => [term, description]), ['help [command]', 'display help for command']];
  const termWidth = Math.max(...[...options, ...commands].map(([term]) => term.length));
  return [
    'Usage: template-registry [options] [command]',
    '',
    wrap(ROOT_DESCRIPTION, helpWidth),
    '',
    'Options:',
    ...options.map(([term, description]) => item(term, termWidth, description, helpWidth)),
    '',
    'Commands:',
    ...commands.map(([term, description]) => item(term, termWidth, description, helpWidth)),
    '',
  ].join('\n');
}
